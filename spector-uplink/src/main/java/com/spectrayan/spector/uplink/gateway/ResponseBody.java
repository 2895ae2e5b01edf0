package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.uplink.BodySource;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The caller's view of a relayed response body: parts queue as relay-chunk pushes arrive, and
 * the caller pulls them. The exchange bounds how much may queue.
 *
 * <p>Concurrency: the state is guarded by {@code this}; a reader's future is completed, and {@code
 * onReaderCancel} runs, only after the lock is released, so a reader's callback may call back in.
 */
final class ResponseBody implements BodySource {
    private final Consumer<Throwable> onReaderCancel;
    private final ArrayDeque<ByteBuffer> parts = new ArrayDeque<>(); // Guarded by this.
    private long buffered; // Guarded by this.
    private boolean ended; // Guarded by this.
    private @Nullable Throwable failure; // Guarded by this.
    private @Nullable CompletableFuture<@Nullable ByteBuffer> waiting; // Guarded by this.

    ResponseBody(Consumer<Throwable> onReaderCancel) {
        this.onReaderCancel = onReaderCancel;
    }

    /** Queues a part (or hands it to a waiting reader); returns the bytes now unread. */
    long offer(ByteBuffer part) {
        CompletableFuture<@Nullable ByteBuffer> reader;
        synchronized (this) {
            if (ended || failure != null || !part.hasRemaining()) {
                return buffered;
            }
            reader = waiting;
            waiting = null;
            if (reader == null) {
                parts.add(part);
                buffered += part.remaining();
                return buffered;
            }
        }
        reader.complete(part);
        return 0;
    }

    /** Ends the body after the queued parts. */
    void end() {
        CompletableFuture<@Nullable ByteBuffer> reader;
        synchronized (this) {
            if (ended || failure != null) {
                return;
            }
            ended = true;
            reader = waiting;
            waiting = null;
        }
        if (reader != null) {
            reader.complete(null);
        }
    }

    /** Fails the body, dropping the queued parts. */
    void fail(Throwable why) {
        fail(why, true);
    }

    /** Fails the body once the reader has taken the parts already queued. */
    void failAfterQueued(Throwable why) {
        fail(why, false);
    }

    private void fail(Throwable why, boolean dropQueued) {
        CompletableFuture<@Nullable ByteBuffer> reader;
        synchronized (this) {
            if (ended || failure != null) {
                return;
            }
            failure = why;
            if (dropQueued) {
                parts.clear();
                buffered = 0;
            }
            reader = waiting; // a reader waits only when nothing is queued
            waiting = null;
        }
        if (reader != null) {
            reader.completeExceptionally(why);
        }
    }

    @Override
    public CompletionStage<@Nullable ByteBuffer> next() {
        synchronized (this) {
            if (waiting != null) {
                return CompletableFuture.failedFuture(
                        new IllegalStateException("next() called while a previous next() is outstanding"));
            }
            ByteBuffer part = parts.poll();
            if (part != null) {
                buffered -= part.remaining();
                return CompletableFuture.completedFuture(part);
            }
            Throwable failed = failure;
            if (failed != null) {
                return CompletableFuture.failedFuture(failed);
            }
            if (ended) {
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<@Nullable ByteBuffer> reader = new CompletableFuture<>();
            waiting = reader;
            return reader;
        }
    }

    @Override
    public void cancel(Throwable reason) {
        synchronized (this) {
            if (ended || failure != null) {
                parts.clear();
                buffered = 0;
                return;
            }
        }
        fail(reason);
        onReaderCancel.accept(reason);
    }

    /** Returns the bytes queued and not yet read. */
    synchronized long unread() {
        return buffered;
    }
}
