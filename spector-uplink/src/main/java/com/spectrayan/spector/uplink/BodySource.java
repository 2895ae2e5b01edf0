package com.spectrayan.spector.uplink;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BiConsumer;
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
        nextBuf().whenComplete((part, error) -> {
            try {
                executor.execute(() -> then.accept(part, error));
            } catch (RejectedExecutionException e) {
                if (part != null) {
                    part.release();
                }
            }
        });
    }

    /** The reader stops reading: the producer releases what it holds and stops producing. */
    void cancel(Throwable reason);
}
