package com.spectrayan.spector.testkit;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.Executors;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.RunnableScheduledFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * A {@link ScheduledExecutorService} whose time is a {@link FakeTicker} and whose tasks run only on
 * the test's thread, when it calls {@link #runUntilIdle()} or {@link #advance(Duration)}. Code under
 * test that takes a scheduler (the relay's deadlines) or an executor (the worker's session) then
 * runs deterministically: after {@code runUntilIdle()} nothing more happens until the test acts,
 * so "nothing was sent" is an exact assertion rather than a wall-clock window, and "the deadline
 * fires at 200 ms, not at 199" is exact too.
 *
 * <p>Order: tasks run by due time, then by submission order; {@link #execute} is due now. A task
 * may submit more; they run in the same drain when due. A drain runs at most {@link
 * #MAX_TASKS_PER_DRAIN} tasks and fails past it (a task that resubmits itself forever is a bug
 * the test should see, not a hang).
 *
 * <p>Threading: tasks may be submitted from any thread (guarded by {@code this}); they run on the
 * thread that drains, never under the lock.
 */
public final class ManualScheduler extends AbstractExecutorService implements ScheduledExecutorService {
    /** Tasks one drain runs at most before it fails. */
    public static final int MAX_TASKS_PER_DRAIN = 100_000;

    private final FakeTicker ticker;
    private final PriorityQueue<Task<?>> queue = new PriorityQueue<>(); // Guarded by this.
    private long submitted; // Guarded by this; the tie-breaker of equal due times.
    private boolean shutdown; // Guarded by this.

    /** A scheduler on a clock of its own, at zero. */
    public ManualScheduler() {
        this(new FakeTicker());
    }

    /** A scheduler on {@code ticker}, shared with the code under test's clock. */
    public ManualScheduler(FakeTicker ticker) {
        this.ticker = requireNonNull(ticker, "ticker");
    }

    /** Returns the clock this scheduler's time is read from. */
    public FakeTicker ticker() {
        return ticker;
    }

    /** Runs every task due now, and those they make due now; returns how many ran. */
    public int runUntilIdle() {
        int ran = 0;
        for (@Nullable Task<?> t; (t = nextDue(ticker.read())) != null; ) {
            if (++ran > MAX_TASKS_PER_DRAIN) {
                throw new AssertionError("more than " + MAX_TASKS_PER_DRAIN + " tasks in one drain: a task loops");
            }
            t.run();
        }
        return ran;
    }

    /**
     * Moves the clock on by {@code d}, stopping at each due time on the way to run what is due
     * then (so a task scheduled by another runs at its own time, not at the end); returns how many
     * tasks ran.
     */
    public int advance(Duration d) {
        if (d.isNegative()) {
            throw new IllegalArgumentException("time does not go back: " + d);
        }
        long target = ticker.read() + d.toNanos();
        int ran = runUntilIdle();
        while (true) {
            long next;
            synchronized (this) {
                Task<?> head = queue.peek();
                next = head == null ? Long.MAX_VALUE : head.due;
            }
            if (next > target) {
                break;
            }
            ticker.advance(next - ticker.read(), TimeUnit.NANOSECONDS);
            ran += runUntilIdle();
        }
        ticker.advance(target - ticker.read(), TimeUnit.NANOSECONDS);
        return ran + runUntilIdle();
    }

    /** Returns how many tasks wait, due or not (cancelled ones are gone). */
    public synchronized int pending() {
        queue.removeIf(Task::isCancelled);
        return queue.size();
    }

    private synchronized @Nullable Task<?> nextDue(long now) {
        while (true) {
            Task<?> head = queue.peek();
            if (head == null || head.due > now) {
                return null;
            }
            queue.poll();
            if (!head.isCancelled()) {
                return head;
            }
        }
    }

    private <V> Task<V> enqueue(Task<V> task) {
        synchronized (this) {
            if (shutdown) {
                throw new RejectedExecutionException("the scheduler is shut down");
            }
            task.order = submitted++;
            queue.add(task);
        }
        return task;
    }

    private long dueIn(long delay, TimeUnit unit) {
        return ticker.read() + Math.max(0, unit.toNanos(delay));
    }

    @Override
    public void execute(Runnable command) {
        enqueue(new Task<Void>(Executors.callable(requireNonNull(command, "command"), null), ticker.read(), 0));
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
        return enqueue(
                new Task<Void>(Executors.callable(requireNonNull(command, "command"), null), dueIn(delay, unit), 0));
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
        return enqueue(new Task<>(requireNonNull(callable, "callable"), dueIn(delay, unit), 0));
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
        return periodic(command, initialDelay, period, unit);
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
        // Tasks take no virtual time, so a fixed delay and a fixed rate are the same schedule.
        return periodic(command, initialDelay, delay, unit);
    }

    private ScheduledFuture<?> periodic(Runnable command, long initialDelay, long period, TimeUnit unit) {
        if (period <= 0) {
            throw new IllegalArgumentException("period " + period + " must be positive");
        }
        return enqueue(new Task<Void>(
                Executors.callable(requireNonNull(command, "command"), null),
                dueIn(initialDelay, unit),
                unit.toNanos(period)));
    }

    @Override
    public synchronized void shutdown() {
        shutdown = true;
    }

    @Override
    public synchronized List<Runnable> shutdownNow() {
        shutdown = true;
        List<Runnable> left = new ArrayList<>(queue);
        queue.clear();
        return left;
    }

    @Override
    public synchronized boolean isShutdown() {
        return shutdown;
    }

    @Override
    public synchronized boolean isTerminated() {
        return shutdown && queue.isEmpty();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
        return isTerminated(); // Nothing runs by itself: waiting cannot change the answer.
    }

    /** One task: its due time on the clock, its submission order, and its period (0: once). */
    private final class Task<V> extends FutureTask<V> implements RunnableScheduledFuture<V> {
        private long due;
        private long order;
        private final long period;

        Task(Callable<V> callable, long due, long period) {
            super(callable);
            this.due = due;
            this.period = period;
        }

        @Override
        public boolean isPeriodic() {
            return period > 0;
        }

        @Override
        public void run() {
            if (period == 0) {
                super.run();
            } else if (runAndReset()) {
                due += period;
                synchronized (ManualScheduler.this) {
                    if (!shutdown) {
                        order = submitted++;
                        queue.add(this);
                    }
                }
            }
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(due - ticker.read(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            if (other instanceof Task<?> t) {
                int byDue = Long.compare(due, t.due);
                return byDue != 0 ? byDue : Long.compare(order, t.order);
            }
            return Long.compare(getDelay(TimeUnit.NANOSECONDS), other.getDelay(TimeUnit.NANOSECONDS));
        }
    }
}
