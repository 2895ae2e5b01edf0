package com.spectrayan.spector.owner;

import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpResponse;

/** Adds {@code X-Spector-Node} to every response head written, including the codec's own. */
@ChannelHandler.Sharable
final class NodeHeaderHandler extends ChannelOutboundHandlerAdapter {
    private final String nodeId;

    NodeHeaderHandler(String nodeId) {
        this.nodeId = nodeId;
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof HttpResponse response) {
            response.headers().set(SpectorHeaders.NODE, nodeId);
        }
        ctx.write(msg, promise);
    }
}
