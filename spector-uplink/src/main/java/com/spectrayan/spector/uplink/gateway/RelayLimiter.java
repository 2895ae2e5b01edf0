package com.spectrayan.spector.uplink.gateway;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;

/**
 * An asynchronous counting semaphore: the relays at once to one worker. A waiter that gives up
 * cancels its stage and is skipped when a permit frees.
 */
final class RelayLimiter {
    private final int max;
    private final ArrayDeque<CompletableFuture<Void>> waiters = new ArrayDeque<>(); // Guarded by this.
    private int running; // Guarded by this.

    RelayLimiter(int max) {
        if (max < 1) {
            throw new IllegalArgumentException("max: " + max + " (expected: at least 1)");
        }
        this.max = max;
    }

    /** Returns a stage completing once a permit is held; cancel it to stop waiting. */
    CompletableFuture<Void> acquire() {
        synchronized (this) {
            if (running < max) {
                running++;
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> waiter = new CompletableFuture<>();
            waiters.add(waiter);
            return waiter;
        }
    }

    /** Frees a permit, handing it to the oldest waiter still waiting. */
    void release() {
        while (true) {
            CompletableFuture<Void> next;
            synchronized (this) {
                next = waiters.poll();
                if (next == null) {
                    running--;
                    return;
                }
            }
            if (next.complete(null)) {
                return;
            }
        }
    }

    /** Returns the permits held. */
    synchronized int running() {
        return running;
    }
}
