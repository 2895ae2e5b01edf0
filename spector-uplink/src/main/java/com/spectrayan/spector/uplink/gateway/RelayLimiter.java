package com.spectrayan.spector.uplink.gateway;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * An asynchronous counting semaphore: the relays at once to one worker. A waiter that gives up
 * cancels its stage and is skipped when a permit frees. The share of switched upgrades is one
 * used only through {@link #tryAcquire}, so it never has waiters.
 *
 * <p>Once the last permit is released with nobody waiting, the limiter retires: it runs {@code
 * onRetired} (its owner forgets it, so a worker that is gone leaves no state behind) and refuses
 * further {@link #acquire}s, which then go to a new limiter. Waiters exist only while every permit
 * is held, so a limiter with waiters always sees another release.
 */
final class RelayLimiter {
    private final int max;
    private final Consumer<RelayLimiter> onRetired;
    private final ArrayDeque<CompletableFuture<Void>> waiters = new ArrayDeque<>(); // Guarded by this.
    private int running; // Guarded by this.
    private boolean retired; // Guarded by this.

    RelayLimiter(int max, Consumer<RelayLimiter> onRetired) {
        if (max < 1) {
            throw new IllegalArgumentException("max: " + max + " (expected: at least 1)");
        }
        this.max = max;
        this.onRetired = onRetired;
    }

    /**
     * Returns a stage completing once a permit is held (cancel it to stop waiting), or null when
     * this limiter retired: take a new one.
     */
    @Nullable
    CompletableFuture<Void> acquire() {
        synchronized (this) {
            if (retired) {
                return null;
            }
            if (running < max) {
                running++;
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> waiter = new CompletableFuture<>();
            waiters.add(waiter);
            return waiter;
        }
    }

    /** What {@link #tryAcquire} answers. */
    enum Try {
        /** A permit is held. */
        HELD,
        /** Every permit is held: refused, nothing to release. */
        FULL,
        /** This limiter retired: take a new one. */
        RETIRED
    }

    /** Takes a permit when one is free, never waiting. */
    synchronized Try tryAcquire() {
        if (retired) {
            return Try.RETIRED;
        }
        if (running < max) {
            running++;
            return Try.HELD;
        }
        return Try.FULL;
    }

    /** Frees a permit, handing it to the oldest waiter still waiting; retires once idle. */
    void release() {
        while (true) {
            CompletableFuture<Void> next;
            synchronized (this) {
                next = waiters.poll();
                if (next == null) {
                    running--;
                    if (running > 0 || retired) {
                        return;
                    }
                    retired = true;
                }
            }
            if (next == null) {
                onRetired.accept(this);
                return;
            }
            if (next.complete(null)) {
                return;
            }
        }
    }

    /** Returns the most permits held at once. */
    int max() {
        return max;
    }

    /** Returns the permits held. */
    synchronized int running() {
        return running;
    }
}
