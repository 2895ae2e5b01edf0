package com.spectrayan.spector.owner;

import io.netty.buffer.ByteBuf;

/**
 * Consumes one request's body as it streams in, on the connection's event loop. The caller owns
 * every buffer it passes and releases it after the call returns; a sink that keeps bytes copies
 * them.
 */
interface BodySink {
    /** Takes the next piece of the body (possibly empty). A thrown failure refuses the request. */
    void onContent(ByteBuf content) throws Exception;

    /** The body ended; the sink answers the request now or later (on the event loop). */
    void onEnd() throws Exception;

    /** The connection closed before the body ended: undo any partial effect (temp files). */
    default void onAbort() {}
}
