package com.spectrayan.spector.uplink.transport;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Bounded waits that name the rule which broke. */
final class Waits {
    private Waits() {}

    static <T> T done(CompletionStage<T> stage, String rule) {
        try {
            return stage.toCompletableFuture().get(TestGateway.WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError(rule + ": failed instead", e.getCause());
        } catch (TimeoutException e) {
            throw new AssertionError(rule + ": not settled within " + TestGateway.WAIT, e);
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
