package com.spectrayan.spector.contract;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A log line a client can cause at any rate, written at most once per interval and saying how many
 * events it stands for: a flood of them (connections past {@code spector.server.max-connections},
 * uplink handshakes with a bad token) must not become a flood of lines. slf4j-simple writes each
 * line to standard error on the thread that logs, an event loop, so a line per event would make
 * the flood's cost the log's: every connection on the loop stalled behind a slow log pipe.
 *
 * <p>Thread-safety: lock-free; any thread. Every event is counted by exactly one line (the first
 * due after it), or by none yet.
 */
public final class LogGate {
    private final long intervalNanos;
    /** When the next line may be written ({@link System#nanoTime}). */
    private final AtomicLong nextNanos;
    /** Events since the last line. */
    private final AtomicLong events = new AtomicLong();

    /** A gate whose first line is due at {@code nowNanos}. */
    public LogGate(Duration interval, long nowNanos) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("interval: " + interval + " (expected: > 0)");
        }
        this.intervalNanos = interval.toNanos();
        this.nextNanos = new AtomicLong(nowNanos);
    }

    /**
     * Counts one event at {@code nowNanos}; returns how many events the line due now stands for
     * (this one and those since the last line), or 0 when no line is due.
     */
    public long event(long nowNanos) {
        events.incrementAndGet();
        long next = nextNanos.get();
        if (nowNanos - next < 0 || !nextNanos.compareAndSet(next, nowNanos + intervalNanos)) {
            return 0;
        }
        return events.getAndSet(0);
    }
}
