package com.spectrayan.spector.cluster.routing;

import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of the live ring: what became of each read of the published ring. The gateway binds
 * them to Micrometer ({@code spector.ring.*}); this module stays free of any metrics library.
 */
public final class RingMetrics {
    private final LongAdder applied = new LongAdder();
    private final LongAdder ignored = new LongAdder();
    private final LongAdder malformed = new LongAdder();
    private final LongAdder readErrors = new LongAdder();

    /** Published rings swapped in (each superseded the ring held). */
    public long applied() {
        return applied.sum();
    }

    /** Reads that found the ring already held, or an older one. */
    public long ignored() {
        return ignored.sum();
    }

    /** Reads whose stored ring could not be decoded; the held ring stayed. */
    public long malformed() {
        return malformed.sum();
    }

    /** Reads that failed or timed out (Redis down); the held ring stayed. */
    public long readErrors() {
        return readErrors.sum();
    }

    void appliedOne() {
        applied.increment();
    }

    void ignoredOne() {
        ignored.increment();
    }

    void malformedOne() {
        malformed.increment();
    }

    void readErrorOne() {
        readErrors.increment();
    }
}
