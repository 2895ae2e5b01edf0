package com.spectrayan.spector.cluster.gateway;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The replay bytes the whole gateway may hold at once ({@link ForwarderSpec#replayBudgetBytes()}),
 * shared by every exchange on every event loop. An exchange reserves a chunk's bytes before it
 * keeps a copy and gives them back when it drops its copy.
 *
 * <p>Concurrency: lock-free; {@link #tryReserve} never takes more than is left, so the budget
 * never goes below zero.
 */
final class ReplayBudget {
    private final AtomicLong available;

    ReplayBudget(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        this.available = new AtomicLong(bytes);
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

    /** Gives back bytes an earlier {@link #tryReserve} took. */
    void release(long bytes) {
        available.addAndGet(bytes);
    }

    /** Returns the bytes left. */
    long available() {
        return available.get();
    }
}
