package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.uplink.BodySource;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import org.jspecify.annotations.Nullable;

/**
 * The caller's view of a relayed response body: parts queue as they arrive (v1's relay-chunk
 * pushes, v2's DATA frames), and the caller pulls them. The exchange bounds how much may queue: v1
 * by failing a reader that fell behind, v2 by the stream's window, whose credit goes back only as
 * the reader takes the bytes ({@code onTaken}).
 *
 * <p>Ownership: the body owns each part it was offered until a reader takes it ({@link #nextBuf}
 * hands it on as it is; {@link #next} copies it out and releases it); a part dropped by a failure,
 * a cancel, or offered after the end is released here.
 *
 * <p>Done: once the body ended or failed and holds no part (the reader took them all, or they were
 * dropped), it holds nothing and never will again; {@code onDone} then runs, once. A v2 exchange
 * keeps its worker's relay slot until then ({@link RelayExchange}), so the parts a worker's ended
 * streams leave here are bounded by its slots as its open streams' are by their windows.
 *
 * <p>Concurrency: the state is guarded by {@code this}; a reader's future is completed, and {@code
 * onReaderCancel}, {@code onTaken} and {@code onDone} run, only after the lock is released, so a
 * reader's callback may call back in. {@code onDone} runs before the read that takes the last part,
 * the end or the failure completes, so a reader that took the body knows its slot went back.
 */
final class ResponseBody implements BodySource {
    /**
     * The most bytes one {@link #nextBuf} hands out when several parts wait: they go as one
     * composite (no copy), so a reader that writes to a socket makes one write and one flush for
     * what arrived while it wrote the last, not one per 16 KiB DATA frame.
     */
    static final int MAX_COALESCED_BYTES = 256 * 1024;

    /** The most parts one {@link #nextBuf} coalesces (the composite's components). */
    static final int MAX_COALESCED_PARTS = 64;

    private final Consumer<Throwable> onReaderCancel;
    private final IntConsumer onTaken;
    private final Runnable onDone;
    private final ArrayDeque<ByteBuf> parts = new ArrayDeque<>(); // Guarded by this.
    private long buffered; // Guarded by this.
    /** Every v1 relay's unread bytes together (GatewayRelay's), kept with {@link #buffered}; null: not counted. */
    private final @Nullable AtomicLong unreadAll;

    private boolean ended; // Guarded by this.
    private @Nullable Throwable failure; // Guarded by this.
    private @Nullable CompletableFuture<@Nullable ByteBuf> waiting; // Guarded by this.
    /** {@code onDone} ran, or is about to run on the thread that set this. Guarded by this. */
    private boolean done;

    ResponseBody(Consumer<Throwable> onReaderCancel) {
        this(onReaderCancel, taken -> {});
    }

    /** A body that tells {@code onTaken} how many bytes each read took (v2: the credit to return). */
    ResponseBody(Consumer<Throwable> onReaderCancel, IntConsumer onTaken) {
        this(onReaderCancel, onTaken, null, () -> {});
    }

    /**
     * A body whose unread bytes also count in {@code unreadAll} (v1: every relay's together; null:
     * not counted), and that runs {@code onDone} once it holds nothing and never will again (see
     * the class's notes).
     */
    ResponseBody(
            Consumer<Throwable> onReaderCancel, IntConsumer onTaken, @Nullable AtomicLong unreadAll, Runnable onDone) {
        this.onReaderCancel = onReaderCancel;
        this.onTaken = onTaken;
        this.unreadAll = unreadAll;
        this.onDone = onDone;
    }

    /**
     * Answers, under the lock, whether the body just became done (ended or failed, no part
     * queued) and marks it, so that exactly one caller runs {@code onDone} after the lock.
     */
    private boolean becameDone() {
        assert Thread.holdsLock(this);
        if (done || (!ended && failure == null) || !parts.isEmpty()) {
            return false;
        }
        done = true;
        return true;
    }

    /** Moves {@link #buffered} by {@code delta}, and every relay's count with it. Under the lock. */
    private void account(long delta) {
        buffered += delta;
        AtomicLong all = unreadAll;
        if (all != null && delta != 0) {
            all.addAndGet(delta);
        }
    }

    /** Queues a part it now owns (or hands it to a waiting reader); returns the bytes now unread. */
    long offer(ByteBuf part) {
        CompletableFuture<@Nullable ByteBuf> reader;
        synchronized (this) {
            if (ended || failure != null || !part.isReadable()) {
                part.release();
                return buffered;
            }
            reader = waiting;
            waiting = null;
            if (reader == null) {
                parts.add(part);
                account(part.readableBytes());
                return buffered;
            }
        }
        int n = part.readableBytes();
        if (!reader.complete(part)) {
            part.release();
        }
        onTaken.accept(n);
        return 0;
    }

    /** Ends the body after the queued parts. */
    void end() {
        CompletableFuture<@Nullable ByteBuf> reader;
        boolean nowDone;
        synchronized (this) {
            if (ended || failure != null) {
                return;
            }
            ended = true;
            reader = waiting;
            waiting = null;
            nowDone = becameDone();
        }
        if (nowDone) {
            onDone.run(); // before the reader hears the end: what it learns next is already so
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
        CompletableFuture<@Nullable ByteBuf> reader;
        ArrayDeque<ByteBuf> dropped = null;
        boolean nowDone;
        synchronized (this) {
            if (ended || failure != null) {
                return;
            }
            failure = why;
            if (dropQueued && !parts.isEmpty()) {
                dropped = dropQueued();
            }
            reader = waiting; // a reader waits only when nothing is queued
            waiting = null;
            nowDone = becameDone();
        }
        failed(dropped, nowDone, reader, why);
    }

    /**
     * Fails the body at once with {@code why}, dropping the queued parts, even after its end or a
     * failure behind them: the reader's time is up (the relay's deadline, the caller's abort), so
     * it reads a failure rather than the rest. Nothing once the body is done (the reader took
     * everything, the end or the failure included).
     */
    void abandon(Throwable why) {
        ArrayDeque<ByteBuf> dropped;
        CompletableFuture<@Nullable ByteBuf> reader;
        boolean nowDone;
        synchronized (this) {
            if (done) {
                return;
            }
            if (failure == null) {
                failure = why; // read before the end (nextBuf): the reader sees it, never a short end
            }
            dropped = dropQueued();
            reader = waiting; // a reader waits only when nothing is queued and the body is open
            waiting = null;
            nowDone = becameDone();
        }
        failed(dropped, nowDone, reader, why);
    }

    /**
     * The second step of a failure, outside the lock: releases what was dropped, runs {@code onDone}
     * when the body became done, and fails the waiting reader.
     */
    private void failed(
            @Nullable ArrayDeque<ByteBuf> dropped,
            boolean nowDone,
            @Nullable CompletableFuture<@Nullable ByteBuf> reader,
            Throwable why) {
        release(dropped);
        if (nowDone) {
            onDone.run();
        }
        if (reader != null) {
            reader.completeExceptionally(why);
        }
    }

    /** Takes the queued parts out (the caller releases them after the lock) and uncounts them. */
    private ArrayDeque<ByteBuf> dropQueued() {
        assert Thread.holdsLock(this);
        ArrayDeque<ByteBuf> dropped = new ArrayDeque<>(parts);
        parts.clear();
        account(-buffered);
        return dropped;
    }

    @Override
    public CompletionStage<@Nullable ByteBuffer> next() {
        return nextBuf().thenApply(part -> {
            if (part == null) {
                return null;
            }
            try {
                ByteBuffer out = ByteBuffer.allocate(part.readableBytes());
                part.readBytes(out);
                return out.flip();
            } finally {
                part.release();
            }
        });
    }

    @Override
    public CompletionStage<@Nullable ByteBuf> nextBuf() {
        ByteBuf part;
        boolean nowDone;
        synchronized (this) {
            if (waiting != null) {
                return CompletableFuture.failedFuture(
                        new IllegalStateException("next() called while a previous next() is outstanding"));
            }
            part = parts.poll();
            if (part == null) {
                Throwable failed = failure;
                if (failed != null) {
                    return CompletableFuture.failedFuture(failed);
                }
                if (ended) {
                    return CompletableFuture.completedFuture(null);
                }
                CompletableFuture<@Nullable ByteBuf> reader = new CompletableFuture<>();
                waiting = reader;
                return reader;
            }
            ByteBuf next = parts.peek();
            if (next != null && part.readableBytes() + next.readableBytes() <= MAX_COALESCED_BYTES) {
                CompositeByteBuf batch = part.alloc().compositeBuffer(MAX_COALESCED_PARTS);
                batch.addComponent(true, part);
                while (next != null
                        && batch.numComponents() < MAX_COALESCED_PARTS
                        && batch.readableBytes() + next.readableBytes() <= MAX_COALESCED_BYTES) {
                    batch.addComponent(true, parts.poll());
                    next = parts.peek();
                }
                part = batch;
            }
            account(-part.readableBytes());
            nowDone = becameDone(); // the last part of an ended (or failed after it) body
        }
        onTaken.accept(part.readableBytes());
        if (nowDone) {
            onDone.run();
        }
        return CompletableFuture.completedFuture(part);
    }

    @Override
    public void cancel(Throwable reason) {
        ArrayDeque<ByteBuf> dropped = null;
        boolean nowDone = false;
        synchronized (this) {
            if (ended || failure != null) {
                dropped = dropQueued();
                nowDone = becameDone();
            }
        }
        if (dropped != null) {
            release(dropped);
            if (nowDone) {
                onDone.run();
            }
            return;
        }
        fail(reason);
        onReaderCancel.accept(reason);
    }

    /** Returns the bytes queued and not yet read. */
    synchronized long unread() {
        return buffered;
    }

    private static void release(@Nullable ArrayDeque<ByteBuf> dropped) {
        if (dropped != null) {
            for (ByteBuf b : dropped) {
                b.release();
            }
        }
    }
}
