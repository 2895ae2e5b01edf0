package com.spectrayan.spector.uplink;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Tells a relayed request's target (or a caller's relay) that the exchange is over before it
 * ended: a cancel, a deadline, the uplink closing. Like the web platform's {@code AbortSignal}.
 * Thread-safe; listeners run once, on the thread that aborts.
 */
public final class AbortSignal {
    private final List<Consumer<Throwable>> listeners = new ArrayList<>(); // Guarded by this.
    private @Nullable Throwable reason; // Guarded by this.

    /** Aborts with a reason (once; later calls are ignored) and runs the listeners. */
    public void abort(Throwable why) {
        List<Consumer<Throwable>> run = take(why);
        if (run != null) {
            for (Consumer<Throwable> l : run) {
                l.accept(why);
            }
        }
    }

    /** Sets the reason and takes the listeners to run, or returns null when it aborted before. */
    private synchronized @Nullable List<Consumer<Throwable>> take(Throwable why) {
        if (reason != null) {
            return null;
        }
        reason = why;
        List<Consumer<Throwable>> run = new ArrayList<>(listeners);
        listeners.clear();
        return run;
    }

    /**
     * Aborts with a reason at once, so {@link #reason} says so from this call on, and runs the
     * listeners on {@code executor} (here when it refuses them): a worker settles a relay on its
     * link's event loop and runs a target's work on its executor, and a target that checks the
     * signal before it sends its request must see the cancel then, not when the executor got to
     * it (a cancelled DELETE was still sent upstream, found by a review).
     */
    public void abortVia(Executor executor, Throwable why) {
        List<Consumer<Throwable>> run = take(why);
        if (run == null || run.isEmpty()) {
            return;
        }
        Runnable listen = () -> {
            for (Consumer<Throwable> l : run) {
                l.accept(why);
            }
        };
        try {
            executor.execute(listen);
        } catch (RejectedExecutionException e) {
            listen.run(); // the executor is gone: here rather than never
        }
    }

    /** Answers whether the signal aborted. */
    public synchronized boolean isAborted() {
        return reason != null;
    }

    /** Returns why the signal aborted, or null. */
    public synchronized @Nullable Throwable reason() {
        return reason;
    }

    /**
     * Forgets a listener added with {@link #onAbort} (the same instance), so a signal that
     * outlives the work it guarded (one per connection, say) does not keep that work reachable.
     */
    public void removeOnAbort(Consumer<Throwable> listener) {
        synchronized (this) {
            listeners.remove(listener);
        }
    }

    /** Returns the listeners registered and not yet run or removed (diagnostics and tests). */
    public synchronized int listenerCount() {
        return listeners.size();
    }

    /** Runs a listener on abort (at once when already aborted). */
    public void onAbort(Consumer<Throwable> listener) {
        Throwable already;
        synchronized (this) {
            already = reason;
            if (already == null) {
                listeners.add(listener);
                return;
            }
        }
        listener.accept(already);
    }
}
