package com.spectrayan.spector.uplink;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.RejectedExecutionException;
import org.junit.jupiter.api.Test;

/**
 * {@link AbortSignal#abortVia}: the reason is there at once, the listeners run on the executor. A
 * worker settled a cancelled relay on its link's loop and aborted its signal in a task of its
 * executor, so a target that looked at the signal before sending its request (a DELETE with no
 * body) found none and sent it (found by a review).
 */
final class AbortSignalTest {
    @Test
    void abortVia_setsTheReasonAtOnce_andRunsTheListenersOnTheExecutor() {
        AbortSignal signal = new AbortSignal();
        List<Throwable> heard = new ArrayList<>();
        signal.onAbort(heard::add);
        ArrayDeque<Runnable> executor = new ArrayDeque<>();
        CancellationException why = new CancellationException("reset");

        signal.abortVia(executor::add, why);

        assertThat(signal.reason()).as("before the executor ran anything").isSameAs(why);
        assertThat(heard).isEmpty();
        executor.remove().run();
        assertThat(heard).containsExactly(why);

        signal.abortVia(executor::add, new CancellationException("again"));
        signal.abort(new CancellationException("and again"));
        assertThat(executor).as("once").isEmpty();
        assertThat(signal.reason()).isSameAs(why);
    }

    @Test
    void abortVia_anExecutorThatRefuses_runsTheListenersHere() {
        AbortSignal signal = new AbortSignal();
        List<Throwable> heard = new ArrayList<>();
        signal.onAbort(heard::add);
        CancellationException why = new CancellationException("reset");

        signal.abortVia(
                task -> {
                    throw new RejectedExecutionException("shut down");
                },
                why);

        assertThat(heard).containsExactly(why);
    }
}
