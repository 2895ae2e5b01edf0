package com.spectrayan.spector.cluster.gateway;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The replay bytes the whole gateway may hold at once ({@link ForwarderSpec#replayBudgetBytes()}),
 * shared by every exchange on every event loop. An exchange reserves a chunk's bytes before it
 * keeps a copy and gives them back when it drops its copy.
 *
 * <p>Bodies read whole before their exchange starts ({@link ForwarderSpec#requestBufferBytes()}, a
 * forwarded one's into its replay copy, a relayed one's into its read-ahead) reserve their declared
 * length up front ({@link #tryReserveAhead}), and may hold at most half of the budget together:
 * clients that declare small bodies and send them slowly can take that half for as long as they
 * last, never the copies that let a streamed body follow a {@code 421}. Past it a small body
 * streams as a large one does.
 *
 * <p>Concurrency: lock-free; {@link #tryReserve} never takes more than is left, so the budget
 * never goes below zero, and {@link #tryReserveAhead} never more than the half.
 */
public final class ReplayBudget {
    private final AtomicLong available;
    /** The most of the budget bodies read ahead of their exchange hold together: half of it. */
    private final long aheadLimit;
    /** What bodies read ahead hold now ({@link #tryReserveAhead}, until {@link #releaseAhead}). */
    private final AtomicLong ahead = new AtomicLong();

    ReplayBudget(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        this.available = new AtomicLong(bytes);
        this.aheadLimit = bytes / 2;
    }

    /** Takes {@code bytes} from the budget, or nothing and answers false when fewer are left. */
    boolean tryReserve(long bytes) {
        long left;
        do {
            left = available.get();
            if (left < bytes) {
                return false;
            }
        } while (!available.compareAndSet(left, left - bytes));
        return true;
    }

    /**
     * Takes {@code bytes} for a body read whole before its exchange starts, within half the budget,
     * or nothing and answers false; {@link #releaseAhead} gives them back.
     */
    public boolean tryReserveAhead(long bytes) {
        long held;
        do {
            held = ahead.get();
            if (bytes > aheadLimit - held) {
                return false;
            }
        } while (!ahead.compareAndSet(held, held + bytes));
        if (tryReserve(bytes)) {
            return true;
        }
        ahead.addAndGet(-bytes);
        return false;
    }

    /** Gives back {@code bytes} an earlier {@link #tryReserveAhead} took. */
    public void releaseAhead(long bytes) {
        ahead.addAndGet(-bytes);
        release(bytes);
    }

    /** Gives back bytes an earlier {@link #tryReserve} took. */
    void release(long bytes) {
        available.addAndGet(bytes);
    }

    /** Returns the bytes left. */
    public long available() {
        return available.get();
    }
}
