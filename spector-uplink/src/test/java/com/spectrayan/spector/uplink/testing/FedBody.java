package com.spectrayan.spector.uplink.testing;

import com.spectrayan.spector.uplink.BodySource;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The uplink tests' body that the test feeds by hand: {@link #offer} a part, {@link #end}, or
 * {@link #fail}; a read waits for the next of these. Records each read as it starts ({@link
 * #readsStarted}, to wait for the reader) and the first cancel. Thread-safe. (A body that serves
 * itself is {@link ArrayBody}.)
 */
public final class FedBody implements BodySource {
    private final ArrayDeque<Object> queued = new ArrayDeque<>(); // Guarded by this; ByteBuffer, END or a Throwable.
    private @Nullable CompletableFuture<@Nullable ByteBuffer> waiting; // Guarded by this.
    private static final Object END = new Object();
    /** The reads so far. */
    public final AtomicInteger reads = new AtomicInteger();
    /** The number of each read as it starts: a test takes one to wait (bounded) for the reader. */
    public final BlockingQueue<Integer> readsStarted = new LinkedBlockingQueue<>();
    /** Completes with the first cancel's reason. */
    public final CompletableFuture<Throwable> cancelled = new CompletableFuture<>();

    /** Hands out {@code part} at the next read (or the one waiting). */
    public void offer(byte[] part) {
        put(ByteBuffer.wrap(part));
    }

    /** Ends the body at the next read. */
    public void end() {
        put(END);
    }

    /** Fails the next read with {@code error}. */
    public void fail(Throwable error) {
        put(error);
    }

    private void put(Object item) {
        CompletableFuture<@Nullable ByteBuffer> reader;
        synchronized (this) {
            reader = waiting;
            waiting = null;
            if (reader == null) {
                queued.add(item);
                return;
            }
        }
        deliver(reader, item);
    }

    private static void deliver(CompletableFuture<@Nullable ByteBuffer> reader, Object item) {
        if (item instanceof ByteBuffer part) {
            reader.complete(part);
        } else if (item instanceof Throwable error) {
            reader.completeExceptionally(error);
        } else {
            reader.complete(null);
        }
    }

    @Override
    public CompletionStage<@Nullable ByteBuffer> next() {
        readsStarted.add(reads.incrementAndGet());
        CompletableFuture<@Nullable ByteBuffer> reader = new CompletableFuture<>();
        Object item;
        synchronized (this) {
            item = queued.poll();
            if (item == null) {
                waiting = reader;
                return reader;
            }
        }
        deliver(reader, item);
        return reader;
    }

    @Override
    public void cancel(Throwable reason) {
        cancelled.complete(reason);
    }
}
