package com.spectrayan.spector.uplink.internal.wire;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;

/**
 * The pongs of one WebSocket link, v1 or v2 (RFC 6455 §5.5.2: every ping is answered): at most
 * {@link #MAX_UNSENT} of them wait for the socket at once. A peer that pings and does not read
 * what it is sent would otherwise queue pongs without bound (the uplink review: 600 000 pings ran a
 * 128 MiB gateway out of heap); past the bound the caller closes the link, as v2 does when {@code
 * V2Limits.MAX_QUEUED_CONTROL_FRAMES} of its own control frames wait.
 *
 * <p>Threading: confined to the link's event loop (the handler's reads and the writes' listeners).
 */
public final class Pongs {
    /** Pongs written and not yet taken by the socket; one more ping closes the link. */
    public static final int MAX_UNSENT = 64;

    private int unsent;

    private final ChannelFutureListener written = f -> unsent--;

    /**
     * Answers {@code ping} with a pong of its payload (this takes the ping's buffer). Returns false,
     * and answers nothing, when {@link #MAX_UNSENT} pongs already wait: the peer does not read.
     */
    public boolean answer(ChannelHandlerContext ctx, PingWebSocketFrame ping) {
        if (unsent >= MAX_UNSENT) {
            ping.release();
            return false;
        }
        unsent++;
        ctx.writeAndFlush(new PongWebSocketFrame(ping.content())).addListener(written);
        return true;
    }
}
