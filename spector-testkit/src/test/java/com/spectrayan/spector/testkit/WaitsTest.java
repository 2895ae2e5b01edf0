package com.spectrayan.spector.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Every wait passes when its thing happens in time and, past its bound, fails naming the rule and the bound. */
final class WaitsTest {
    private static final Duration SHORT = Duration.ofMillis(50);

    @Test
    void done_completedByAnotherThread_returnsTheValue() {
        CompletableFuture<String> stage = new CompletableFuture<>();
        new Thread(() -> stage.complete("v")).start();

        assertThat(Waits.done(stage, "the value comes")).isEqualTo("v");
    }

    @Test
    void done_neverCompleted_failsNamingRuleAndBound() {
        assertThatThrownBy(() -> Waits.done(new CompletableFuture<>(), "the head comes", SHORT))
                .isInstanceOf(AssertionError.class)
                .hasMessage("the head comes: not settled within 50 ms");
    }

    @Test
    void done_failed_failsWithTheUnwrappedCause() {
        IllegalStateException broken = new IllegalStateException("broken");

        assertThatThrownBy(() -> Waits.done(CompletableFuture.failedFuture(broken), "the head comes"))
                .isInstanceOf(AssertionError.class)
                .hasMessage("the head comes: failed instead of completing within 10 s")
                .hasCause(broken);
    }

    @Test
    void failure_wrappedInCompletionExceptions_returnsTheInnermostCause() {
        IllegalStateException broken = new IllegalStateException("broken");
        CompletableFuture<Void> stage =
                CompletableFuture.failedFuture(new CompletionException(new CompletionException(broken)));

        assertThat(Waits.failure(stage, "the call fails")).isSameAs(broken);
    }

    @Test
    void failure_cancelled_returnsTheCancellationExceptionAsIs() {
        CompletableFuture<Void> stage = new CompletableFuture<>();
        stage.cancel(false);

        assertThat(Waits.failure(stage, "the call is cancelled")).isInstanceOf(CancellationException.class);
    }

    @Test
    void failure_completedNormally_failsNamingRuleBoundAndValue() {
        assertThatThrownBy(() -> Waits.failure(CompletableFuture.completedFuture("ok"), "the call fails"))
                .isInstanceOf(AssertionError.class)
                .hasMessage("the call fails: expected a failure within 10 s, got ok");
    }

    @Test
    void failure_neverSettled_failsNamingRuleAndBound() {
        assertThatThrownBy(() -> Waits.failure(new CompletableFuture<>(), "the call fails", SHORT))
                .isInstanceOf(AssertionError.class)
                .hasMessage("the call fails: not settled within 50 ms");
    }

    @Test
    void take_offeredByAnotherThread_returnsIt() {
        BlockingQueue<Integer> queue = new ArrayBlockingQueue<>(1);
        new Thread(() -> queue.add(7)).start();

        assertThat(Waits.take(queue, "the call arrives")).isEqualTo(7);
    }

    @Test
    void take_empty_failsNamingRuleAndBound() {
        assertThatThrownBy(() -> Waits.take(new ArrayBlockingQueue<>(1), "the call arrives", SHORT))
                .isInstanceOf(AssertionError.class)
                .hasMessage("the call arrives: nothing arrived within 50 ms");
    }

    @Test
    void await_countedDownByAnotherThread_returns() {
        CountDownLatch latch = new CountDownLatch(2);
        new Thread(() -> {
                    latch.countDown();
                    latch.countDown();
                })
                .start();

        Waits.await(latch, "both arrive");

        assertThat(latch.getCount()).isZero();
    }

    @Test
    void await_notCountedDown_failsNamingRuleBoundAndWhatIsLeft() {
        CountDownLatch latch = new CountDownLatch(3);
        latch.countDown();

        assertThatThrownBy(() -> Waits.await(latch, "three retries", SHORT))
                .isInstanceOf(AssertionError.class)
                .hasMessage("three retries: not within 50 ms (2 of the latch left)");
    }

    @Test
    void until_conditionTurnsTrue_returns() {
        AtomicInteger polls = new AtomicInteger();

        Waits.until("the third poll", () -> polls.incrementAndGet() >= 3);

        assertThat(polls).hasValueGreaterThanOrEqualTo(3);
    }

    @Test
    void until_neverTrue_failsNamingRuleAndBound() {
        assertThatThrownBy(() -> Waits.until("the slot is free", SHORT, () -> false))
                .isInstanceOf(AssertionError.class)
                .hasMessage("the slot is free: not within 50 ms");
    }

    @Test
    void untilAsserted_assertionPassesLater_returns() {
        AtomicInteger runs = new AtomicInteger();

        Waits.untilAsserted(() -> assertThat(runs.incrementAndGet()).isGreaterThan(2));

        assertThat(runs).hasValueGreaterThan(2);
    }

    @Test
    void untilAsserted_neverPasses_failsWithTheBoundAndTheLastFailure() {
        assertThatThrownBy(() -> Waits.untilAsserted(
                        () -> assertThat(1).as("the slot count").isZero(), SHORT))
                .isInstanceOf(AssertionError.class)
                .hasMessageStartingWith("not passed within 50 ms: [the slot count]")
                .hasCauseInstanceOf(AssertionError.class);
    }

    @Test
    void show_wholeSecondsAndMillis_readAsAPersonWrites() {
        assertThat(Waits.show(Waits.WAIT)).isEqualTo("10 s");
        assertThat(Waits.show(Duration.ofMillis(1500))).isEqualTo("1500 ms");
    }
}
