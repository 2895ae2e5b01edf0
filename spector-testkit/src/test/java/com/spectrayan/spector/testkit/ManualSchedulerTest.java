package com.spectrayan.spector.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

final class ManualSchedulerTest {
    private final ManualScheduler scheduler = new ManualScheduler();
    private final List<String> ran = new ArrayList<>();

    @Test
    void nothingRunsUntilTheTestDrains() {
        scheduler.execute(() -> ran.add("now"));
        assertThat(ran).isEmpty();
        assertThat(scheduler.runUntilIdle()).isEqualTo(1);
        assertThat(ran).containsExactly("now");
    }

    @Test
    void aDelayedTaskRunsAtItsDueTime_notANanosecondBefore() {
        scheduler.schedule(() -> ran.add("200ms"), 200, TimeUnit.MILLISECONDS);
        scheduler.advance(Duration.ofMillis(200).minusNanos(1));
        assertThat(ran).isEmpty();
        scheduler.advance(Duration.ofNanos(1));
        assertThat(ran).containsExactly("200ms");
        assertThat(scheduler.ticker().read()).isEqualTo(Duration.ofMillis(200).toNanos());
    }

    @Test
    void tasksRunByDueTime_thenBySubmission_andATaskScheduledByAnotherRunsAtItsOwnTime() {
        scheduler.schedule(() -> ran.add("b@20"), 20, TimeUnit.MILLISECONDS);
        scheduler.schedule(
                () -> {
                    ran.add("a@10 at "
                            + TimeUnit.NANOSECONDS.toMillis(scheduler.ticker().read()));
                    scheduler.schedule(
                            () -> ran.add("c@15 at "
                                    + TimeUnit.NANOSECONDS.toMillis(
                                            scheduler.ticker().read())),
                            5,
                            TimeUnit.MILLISECONDS);
                },
                10,
                TimeUnit.MILLISECONDS);
        scheduler.schedule(() -> ran.add("b2@20"), 20, TimeUnit.MILLISECONDS);
        scheduler.advance(Duration.ofMillis(30));
        assertThat(ran).containsExactly("a@10 at 10", "c@15 at 15", "b@20", "b2@20");
    }

    @Test
    void aPeriodicTaskRunsOncePerPeriod_untilCancelled() {
        ScheduledFuture<?> f = scheduler.scheduleAtFixedRate(() -> ran.add("tick"), 100, 100, TimeUnit.MILLISECONDS);
        scheduler.advance(Duration.ofMillis(350));
        assertThat(ran).hasSize(3);
        f.cancel(false);
        scheduler.advance(Duration.ofSeconds(1));
        assertThat(ran).hasSize(3);
        assertThat(scheduler.pending()).isZero();
    }

    @Test
    void aCancelledTaskNeverRuns() {
        ScheduledFuture<?> f = scheduler.schedule(() -> ran.add("x"), 1, TimeUnit.SECONDS);
        assertThat(f.cancel(false)).isTrue();
        scheduler.advance(Duration.ofSeconds(2));
        assertThat(ran).isEmpty();
    }

    @Test
    void aTaskThatResubmitsItselfForever_failsTheDrainAtTheBound() {
        Runnable[] loop = new Runnable[1];
        loop[0] = () -> scheduler.execute(loop[0]);
        scheduler.execute(loop[0]);
        assertThatThrownBy(scheduler::runUntilIdle)
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining(String.valueOf(ManualScheduler.MAX_TASKS_PER_DRAIN));
    }

    @Test
    void afterShutdown_newTasksAreRefused() {
        scheduler.shutdown();
        assertThatThrownBy(() -> scheduler.execute(() -> {}))
                .isInstanceOf(java.util.concurrent.RejectedExecutionException.class);
        assertThat(scheduler.isTerminated()).isTrue();
    }
}
