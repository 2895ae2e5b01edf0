package com.spectrayan.spector.uplink;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.EventExecutor;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A body pulled one part at a time: the reader asks for the next part only when it is ready for
 * it, so no side ever queues a whole body. Used for relayed request and response bodies on both
 * halves of the relay.
 *
 * <p>Contract: at most one {@link #next()} is outstanding at a time; it completes with the next
 * part (never empty), with null at the end, or exceptionally when the body failed (a cancel, a
 * deadline, a lost uplink). After the end or a failure, {@code next()} keeps answering the same.
 * A reader uses {@link #next()} or {@link #nextBuf()}, one or the other, one read at a time.
 *
 * <p>Zero copy: a producer that holds its bytes in Netty buffers (a socket's reads, a v2 DATA
 * frame) overrides {@link #nextBuf()} to hand them on as they are, and a reader that writes to a
 * socket calls it: the bytes go from socket to socket without a copy. {@link #next()} then copies.
 */
public interface BodySource {
    /** Returns the next part, or null at the end. */
    CompletionStage<@Nullable ByteBuffer> next();

    /**
     * Returns the next part as a buffer the reader now owns (it releases it, or writes it to a
     * channel, which does), or null at the end; same contract as {@link #next()}. The default
     * wraps {@link #next()}'s part without a copy.
     */
    default CompletionStage<@Nullable ByteBuf> nextBuf() {
        return next().thenApply(part -> part == null ? null : Unpooled.wrappedBuffer(part));
    }

    /**
     * Reads the next part as {@link #nextBuf()} does and hands it (or the failure) to {@code then}
     * on {@code executor}, typically the reader's event loop, where its state lives. When the
     * executor refuses the task (it shut down) {@code then} is not called and the part is
     * released here, so a part nobody can take never leaks.
     */
    default void nextBufOn(Executor executor, BiConsumer<@Nullable ByteBuf, @Nullable Throwable> then) {
        handOn(nextBuf(), executor, then);
    }

    /**
     * {@link #nextBufOn} for a {@link #nonBlocking()} producer confined to {@code loop}: a reader
     * on that loop has {@code read} run with {@code then} there (inline when it is on it, the part
     * handed over before this returns when one is ready), any other reader is served as the
     * default {@link #nextBufOn} serves it. When the loop refuses the task, {@code then} gets the
     * refusal.
     */
    static void nextBufOnLoop(
            BodySource source,
            EventExecutor loop,
            Executor executor,
            BiConsumer<@Nullable ByteBuf, @Nullable Throwable> then,
            Consumer<BiConsumer<@Nullable ByteBuf, @Nullable Throwable>> read) {
        if (executor != loop) {
            handOn(source.nextBuf(), executor, then);
        } else if (loop.inEventLoop()) {
            read.accept(then);
        } else {
            try {
                loop.execute(() -> read.accept(then));
            } catch (RejectedExecutionException e) {
                then.accept(null, e); // nobody runs the producer any more
            }
        }
    }

    /**
     * {@link #nextBuf()} for a {@link #nonBlocking()} producer confined to {@code loop}: runs
     * {@code read} there and completes the stage with what it hands over; a part the reader gave
     * up on is released.
     */
    static CompletionStage<@Nullable ByteBuf> nextBufFromLoop(
            EventExecutor loop, Consumer<BiConsumer<@Nullable ByteBuf, @Nullable Throwable>> read) {
        java.util.concurrent.CompletableFuture<@Nullable ByteBuf> f = new java.util.concurrent.CompletableFuture<>();
        loop.execute(() -> read.accept((b, error) -> {
            if (error != null) {
                f.completeExceptionally(error);
            } else if (!f.complete(b) && b != null) {
                b.release();
            }
        }));
        return f;
    }

    private static void handOn(
            CompletionStage<@Nullable ByteBuf> part,
            Executor executor,
            BiConsumer<@Nullable ByteBuf, @Nullable Throwable> then) {
        part.whenComplete((b, error) -> {
            try {
                executor.execute(() -> then.accept(b, error));
            } catch (RejectedExecutionException e) {
                if (b != null) {
                    b.release();
                }
            }
        });
    }

    /**
     * Answers whether {@link #nextBuf()}, {@link #nextBufOn} and {@link #cancel} return without
     * blocking the calling thread and run no user code on it, so a reader on an event loop may call
     * them there instead of on a worker pool (a producer that lives on a Netty event loop: a
     * socket's reads, a v2 stream's DATA). Such a producer also completes {@link #nextBufOn} on the
     * caller's thread, before it returns, when {@code executor} is the event loop it runs on, the
     * caller is on it and a part is ready: a reader that calls it in a loop must expect that (and
     * loop rather than recurse). The default is false: the reader hops to its executor first.
     */
    default boolean nonBlocking() {
        return false;
    }

    /** The reader stops reading: the producer releases what it holds and stops producing. */
    void cancel(Throwable reason);

    /**
     * Returns this body again from its first byte, as a new source, or null when it cannot be sent
     * again (the default: a body streamed from the client is gone once read). A relay asks after a
     * worker's link refused its stream ({@code REFUSED_STREAM}: nothing of it was processed, RFC
     * 9113 section 8.7) once parts of the body had gone out on it, to send it on another link; it
     * asks with no read of this source outstanding, and reads this source no more. A producer that
     * keeps every part it handed out (a body read whole before the relay started) answers a source
     * that gives those parts again, each read a new reference, then reads on where this one
     * stopped; it fails once the producer let the parts go. Any thread.
     */
    default @Nullable BodySource replay() {
        return null;
    }

    /**
     * Answers whether {@link #replay} would give this body again now (the producer keeps every
     * part it handed out): a relay refused while a read of it is outstanding waits for that read
     * only then, and fails at once for a body that cannot be sent again. {@link #replay} still
     * decides. The default is false. Any thread.
     */
    default boolean canReplay() {
        return false;
    }
}
