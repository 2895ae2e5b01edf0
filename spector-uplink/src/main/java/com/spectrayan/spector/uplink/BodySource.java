package com.spectrayan.spector.uplink;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * A body pulled one part at a time: the reader asks for the next part only when it is ready for
 * it, so no side ever queues a whole body. Used for relayed request and response bodies on both
 * halves of the relay.
 *
 * <p>Contract: at most one {@link #next()} is outstanding at a time; it completes with the next
 * part (never empty), with null at the end, or exceptionally when the body failed (a cancel, a
 * deadline, a lost uplink). After the end or a failure, {@code next()} keeps answering the same.
 */
public interface BodySource {
    /** Returns the next part, or null at the end. */
    CompletionStage<@Nullable ByteBuffer> next();

    /** The reader stops reading: the producer releases what it holds and stops producing. */
    void cancel(Throwable reason);
}
