package com.spectrayan.spector.uplink.transport;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Bounded waits that name the rule which broke. */
final class Waits {
    private Waits() {}

    static <T> T done(CompletionStage<T> stage, String rule) {
        return done(stage, rule, TestGateway.WAIT);
    }

    /**
     * As {@link #done(CompletionStage, String)} with a bound of its own: for megabytes crossing a
     * real socket under Netty's PARANOID leak tracking, which records every buffer access.
     */
    static <T> T done(CompletionStage<T> stage, String rule, java.time.Duration bound) {
        try {
            return stage.toCompletableFuture().get(bound.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError(rule + ": failed instead", e.getCause());
        } catch (TimeoutException e) {
            throw new AssertionError(rule + ": not settled within " + bound, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(rule, e);
        }
    }

    static <T> T take(BlockingQueue<T> queue, String rule) {
        try {
            T t = queue.poll(TestGateway.WAIT.toMillis(), TimeUnit.MILLISECONDS);
            if (t == null) {
                throw new AssertionError(rule + ": nothing arrived within " + TestGateway.WAIT);
            }
            return t;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(rule, e);
        }
    }

    /**
     * Waits until the condition holds, checking it every few milliseconds, for at most {@link
     * TestGateway#WAIT}; for state another thread changes without telling anyone (counters, maps).
     */
    static void until(BooleanSupplier condition, String rule) {
        long deadline = System.nanoTime() + TestGateway.WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError(rule + ": not within " + TestGateway.WAIT);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
    }

    /** Returns the failure of a stage that must fail within {@link TestGateway#WAIT}, unwrapped. */
    static Throwable failure(CompletionStage<?> stage, String rule) {
        try {
            Object value = stage.toCompletableFuture().get(TestGateway.WAIT.toMillis(), TimeUnit.MILLISECONDS);
            throw new AssertionError(rule + ": expected a failure, got " + value);
        } catch (java.util.concurrent.CancellationException e) {
            return e; // A stage failed with a CancellationException throws it from get() as is.
        } catch (ExecutionException e) {
            Throwable t = e.getCause();
            while (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
                t = t.getCause();
            }
            return t == null ? e : t;
        } catch (TimeoutException e) {
            throw new AssertionError(rule + ": not settled within " + TestGateway.WAIT, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(rule, e);
        }
    }

    static void await(CountDownLatch latch, String rule) {
        try {
            if (!latch.await(TestGateway.WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new AssertionError(
                        rule + ": not within " + TestGateway.WAIT + " (" + latch.getCount() + " left)");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(rule, e);
        }
    }
}
