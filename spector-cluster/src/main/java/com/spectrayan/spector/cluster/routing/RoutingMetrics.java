package com.spectrayan.spector.cluster.routing;

import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of the waterfall, cheap enough for the hot path. The gateway binds them to Micrometer
 * ({@code spector.routing.*}); this module stays free of any metrics library.
 */
public final class RoutingMetrics {
    private final LongAdder l1 = new LongAdder();
    private final LongAdder l2 = new LongAdder();
    private final LongAdder l3 = new LongAdder();
    private final LongAdder redisErrors = new LongAdder();
    private final LongAdder invalidationsReceived = new LongAdder();
    private final LongAdder invalidationsPublished = new LongAdder();
    private final LongAdder fillsDropped = new LongAdder();
    private final LongAdder l1Clears = new LongAdder();
    private final LongAdder misdirected = new LongAdder();

    /** Resolutions answered by L1. */
    public long l1Hits() {
        return l1.sum();
    }

    /** Resolutions answered by L2. */
    public long l2Hits() {
        return l2.sum();
    }

    /** Resolutions answered by L3, the ring. */
    public long l3Hits() {
        return l3.sum();
    }

    /** Redis commands that failed or timed out (each fell to L3 or was skipped). */
    public long redisErrors() {
        return redisErrors.sum();
    }

    /** Invalidations received from other gateways or owners. */
    public long invalidationsReceived() {
        return invalidationsReceived.sum();
    }

    /** Invalidations this process published. */
    public long invalidationsPublished() {
        return invalidationsPublished.sum();
    }

    /** L1 fills dropped because an invalidation raced them. */
    public long fillsDropped() {
        return fillsDropped.sum();
    }

    /** Times L1 was cleared because the invalidation subscription dropped. */
    public long l1Clears() {
        return l1Clears.sum();
    }

    /** Owner 421s reported to the resolver. */
    public long misdirected() {
        return misdirected.sum();
    }

    void resolved(Resolution.Level level) {
        switch (level) {
            case L1 -> l1.increment();
            case L2 -> l2.increment();
            case L3 -> l3.increment();
        }
    }

    void redisError() {
        redisErrors.increment();
    }

    void invalidationReceived() {
        invalidationsReceived.increment();
    }

    void invalidationPublished() {
        invalidationsPublished.increment();
    }

    void fillDropped() {
        fillsDropped.increment();
    }

    void l1Cleared() {
        l1Clears.increment();
    }

    void misdirectedReported() {
        misdirected.increment();
    }
}
