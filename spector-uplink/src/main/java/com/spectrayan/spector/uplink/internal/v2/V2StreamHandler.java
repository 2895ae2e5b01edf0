package com.spectrayan.spector.uplink.internal.v2;

import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;

/**
 * What one {@link V2Stream} tells its owner (a relay engine): the peer's head and DATA, its reset,
 * the link's loss, and the stream's writability. Every method is called on the link channel's
 * event loop, never while a lock is held; a method that throws resets the stream {@code
 * INTERNAL_ERROR} (and is logged).
 *
 * <p>Exactly one of {@link #onReset} and {@link #onLinkClosed} ends a stream that did not end both
 * ways, once; after it nothing more is called. A stream that ended both ways (END_STREAM each way)
 * gets neither. A reset this side asked for ({@link V2Stream#reset}) is not called back.
 */
public interface V2StreamHandler {
    /**
     * Takes the worker's response head (gateway only): the stream's first frame from the worker.
     *
     * @param endStream whether no DATA follows from the worker (a bodyless response)
     */
    default void onResponseHead(ResponseHead head, boolean endStream) {}

    /**
     * Takes DATA from the peer. The handler owns {@code data} and releases it; it calls {@link
     * V2Stream#consumed} once its consumer took the bytes, which returns their credit to the peer.
     *
     * @param endStream whether this is the peer's last DATA (END_STREAM); {@code data} may be empty
     */
    void onData(ByteBuf data, boolean endStream);

    /**
     * The stream was reset: by the peer (its RESET's code and error object), or by this side for
     * the peer's breach of a stream rule (the code sent, e.g. {@code FLOW_CONTROL_ERROR}), or
     * refused before it opened ({@code REFUSED_STREAM}: the link was closing or going away, or
     * above a GOAWAY's last stream id; nothing of it was processed).
     */
    void onReset(V2ErrorCode code, Frame.@Nullable ErrorFrame error);

    /**
     * The link closed while the stream was open (a connection error either way, the peer's close,
     * the socket's loss, or {@link V2Connection#close}); {@code cause} is null for a clean close.
     */
    void onLinkClosed(@Nullable Throwable cause);

    /**
     * The stream's send queue drained to {@link V2Limits#STREAM_QUEUE_LOW_WATER} after reaching
     * {@link V2Limits#STREAM_QUEUE_HIGH_WATER}: {@link V2Stream#isWritable()} is true again.
     */
    default void onWritabilityChanged() {}
}
