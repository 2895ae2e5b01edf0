package com.spectrayan.spector.testkit;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * The tests' one bounded wait: on a stage, a queue, a latch or a condition, each for at most a
 * bound ({@link #WAIT} unless the caller names its own), each failing with an {@link AssertionError}
 * that names the rule which broke and the bound.
 *
 * <p>A test names the rule it is waiting for ("the worker answers status.get"), so a failure reads
 * as the rule that broke, not as a bare timeout. Conditions are polled every millisecond over
 * Awaitility: for state another thread changes without telling anyone (counters, maps). An
 * interrupted wait restores the thread's interrupt flag and fails naming the rule.
 */
public final class Waits {
    /** The default bound on every wait: 10 s, far above what a passing wait takes on a loaded machine. */
    public static final Duration WAIT = Duration.ofSeconds(10);

    /** How often a condition is checked: 1 ms, so a wait ends as soon as its state changed. */
    private static final Duration POLL = Duration.ofMillis(1);

    private Waits() {}

    /** Returns the value of {@code stage}, which must complete within {@link #WAIT}. */
    public static <T> T done(CompletionStage<T> stage, String rule) {
        return done(stage, rule, WAIT);
    }

    /**
     * Returns the value of {@code stage}, which must complete within {@code bound}; for a wait that
     * takes longer by design (megabytes crossing a real socket under Netty's PARANOID leak
     * tracking, which records every buffer access).
     *
     * @throws AssertionError naming {@code rule} and the bound when the stage fails (the failure as
     *     its cause) or is still running past the bound
     */
    public static <T> T done(CompletionStage<T> stage, String rule, Duration bound) {
        requireNonNull(stage, "stage");
        try {
            return stage.toCompletableFuture().get(bound.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            throw new AssertionError(rule + ": failed instead of completing within " + show(bound), unwrap(e));
        } catch (CancellationException e) {
            throw new AssertionError(rule + ": cancelled instead of completing within " + show(bound), e);
        } catch (TimeoutException e) {
            throw new AssertionError(rule + ": not settled within " + show(bound), e);
        } catch (InterruptedException e) {
            throw interrupted(rule, bound, e);
        }
    }

    /**
     * Returns the failure of {@code stage}, which must fail within {@link #WAIT}: the cause unwrapped
     * from every {@link ExecutionException} and {@link CompletionException} around it; a
     * {@link CancellationException} is returned as is.
     */
    public static Throwable failure(CompletionStage<?> stage, String rule) {
        return failure(stage, rule, WAIT);
    }

    /** As {@link #failure(CompletionStage, String)}, within {@code bound}. */
    public static Throwable failure(CompletionStage<?> stage, String rule, Duration bound) {
        requireNonNull(stage, "stage");
        Object value;
        try {
            value = stage.toCompletableFuture().get(bound.toNanos(), TimeUnit.NANOSECONDS);
        } catch (CancellationException e) {
            return e; // A stage failed with a CancellationException throws it from get() as is.
        } catch (ExecutionException e) {
            return unwrap(e);
        } catch (TimeoutException e) {
            throw new AssertionError(rule + ": not settled within " + show(bound), e);
        } catch (InterruptedException e) {
            throw interrupted(rule, bound, e);
        }
        throw new AssertionError(rule + ": expected a failure within " + show(bound) + ", got " + value);
    }

    /** Takes the head of {@code queue}, which must have one within {@link #WAIT}. */
    public static <T> T take(BlockingQueue<T> queue, String rule) {
        return take(queue, rule, WAIT);
    }

    /** As {@link #take(BlockingQueue, String)}, within {@code bound}. */
    public static <T> T take(BlockingQueue<T> queue, String rule, Duration bound) {
        requireNonNull(queue, "queue");
        T t = interruptibly(rule, bound, () -> queue.poll(bound.toNanos(), TimeUnit.NANOSECONDS));
        if (t == null) {
            throw new AssertionError(rule + ": nothing arrived within " + show(bound));
        }
        return t;
    }

    /** Waits for {@code latch} to reach zero within {@link #WAIT}. */
    public static void await(CountDownLatch latch, String rule) {
        await(latch, rule, WAIT);
    }

    /** As {@link #await(CountDownLatch, String)}, within {@code bound}; the failure says how many counts were left. */
    public static void await(CountDownLatch latch, String rule, Duration bound) {
        requireNonNull(latch, "latch");
        if (!interruptibly(rule, bound, () -> latch.await(bound.toNanos(), TimeUnit.NANOSECONDS))) {
            throw new AssertionError(
                    rule + ": not within " + show(bound) + " (" + latch.getCount() + " of the latch left)");
        }
    }

    /** Waits until {@code condition} holds, checking it every millisecond, for at most {@link #WAIT}. */
    public static void until(String rule, BooleanSupplier condition) {
        until(rule, WAIT, condition);
    }

    /** As {@link #until(String, BooleanSupplier)}, for at most {@code bound}. */
    public static void until(String rule, Duration bound, BooleanSupplier condition) {
        requireNonNull(condition, "condition");
        try {
            Awaitility.await(rule)
                    .atMost(bound)
                    .pollDelay(Duration.ZERO)
                    .pollInterval(POLL)
                    .until(condition::getAsBoolean);
        } catch (ConditionTimeoutException e) {
            throw new AssertionError(rule + ": not within " + show(bound), e);
        }
    }

    /**
     * Waits until {@code assertion} passes, running it every millisecond, for at most {@link
     * #WAIT}; past it, fails with the assertion's last failure (which names the rule) as the cause.
     */
    public static void untilAsserted(Runnable assertion) {
        untilAsserted(assertion, WAIT);
    }

    /** As {@link #untilAsserted(Runnable)}, for at most {@code bound}. */
    static void untilAsserted(Runnable assertion, Duration bound) {
        requireNonNull(assertion, "assertion");
        try {
            Awaitility.await()
                    .atMost(bound)
                    .pollDelay(Duration.ZERO)
                    .pollInterval(POLL)
                    .untilAsserted(assertion::run);
        } catch (ConditionTimeoutException e) {
            Throwable last = e.getCause();
            if (!(last instanceof AssertionError)) {
                // The bound passed before an evaluation finished (a loaded machine): run it once
                // more here, so the failure says what the assertion says, not Awaitility's timer.
                try {
                    assertion.run();
                    return; // it holds now, at the bound
                } catch (AssertionError failed) {
                    last = failed;
                }
            }
            throw new AssertionError("not passed within " + show(bound) + ": " + last.getMessage(), last);
        }
    }

    private static Throwable unwrap(ExecutionException e) {
        Throwable t = e;
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** A blocking call that may be interrupted. */
    @FunctionalInterface
    private interface Blocking<T> {
        T call() throws InterruptedException;
    }

    private static <T> T interruptibly(String rule, Duration bound, Blocking<T> blocking) {
        try {
            return blocking.call();
        } catch (InterruptedException e) {
            throw interrupted(rule, bound, e);
        }
    }

    private static AssertionError interrupted(String rule, Duration bound, InterruptedException e) {
        Thread.currentThread().interrupt();
        return new AssertionError(rule + ": interrupted while waiting (at most " + show(bound) + ")", e);
    }

    /** Shows a bound as a person reads it: {@code 10 s}, {@code 250 ms}. */
    static String show(Duration bound) {
        long ms = bound.toMillis();
        return ms % 1000 == 0 ? ms / 1000 + " s" : ms + " ms";
    }
}
