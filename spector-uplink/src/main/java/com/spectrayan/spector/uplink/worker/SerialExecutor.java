package com.spectrayan.spector.uplink.worker;

import static java.util.Objects.requireNonNull;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs tasks one at a time, in submission order, on a delegate executor: the single thread of
 * control that owns one session's state, so that state needs no lock.
 */
final class SerialExecutor implements Executor {
    private static final Logger log = LoggerFactory.getLogger(SerialExecutor.class);

    private final Executor delegate;
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();

    SerialExecutor(Executor delegate) {
        this.delegate = requireNonNull(delegate, "delegate");
    }

    @Override
    public void execute(Runnable task) {
        tasks.add(requireNonNull(task, "task"));
        schedule();
    }

    private void schedule() {
        if (!tasks.isEmpty() && scheduled.compareAndSet(false, true)) {
            delegate.execute(this::drain);
        }
    }

    private void drain() {
        try {
            Runnable task;
            while ((task = tasks.poll()) != null) {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    log.error("uplink session task failed: {}", e.getMessage(), e);
                }
            }
        } finally {
            scheduled.set(false);
            schedule();
        }
    }
}
