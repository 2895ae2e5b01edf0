package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.util.ReferenceCountUtil;
import org.jspecify.annotations.Nullable;

/**
 * Takes an HTTP codec out of a live pipeline without losing a byte: a connection that leaves HTTP
 * (a {@code 101}, the gateway's upgrade splice) or whose body bytes go around the decoder (a
 * response body spliced in the kernel, {@link ResponseSplice}).
 *
 * <p>A {@code ByteToMessageDecoder} fires the bytes it read but did not decode when it is removed;
 * a short-lived handler just behind it catches them (and swallows the removal's own read-complete,
 * whose batch is the caller's), so the caller gets them back instead of the next handler.
 */
public final class CodecRemoval {

    /** The name of the short-lived handler that collects what a removed codec fires. */
    public static final String CAPTURE_NAME = "codec-capture";

    private CodecRemoval() {}

    /**
     * Removes an HTTP codec (any {@code ByteToMessageDecoder}, or a combined handler holding one)
     * and returns the bytes it had read but not decoded; empty when there were none. The caller
     * owns the returned buffer. Messages other than bytes fired during the removal go on down the
     * pipeline.
     *
     * <p>Call on the channel's event loop, from a handler or a task, never from inside the codec's
     * own {@code decode}, where Netty defers the removal.
     *
     * @throws IllegalArgumentException when the pipeline has no handler of that name
     * @throws IllegalStateException when called off the channel's event loop
     */
    public static ByteBuf remove(ChannelPipeline pipeline, String name) {
        requireNonNull(pipeline, "pipeline");
        requireNonNull(name, "name");
        ChannelHandlerContext ctx = pipeline.context(name);
        if (ctx == null) {
            throw new IllegalArgumentException("name: " + name + " (expected: a handler of " + pipeline.names() + ")");
        }
        if (!ctx.executor().inEventLoop()) {
            throw new IllegalStateException("remove(" + name + ") off the channel's event loop");
        }
        Capture capture = new Capture();
        pipeline.addAfter(name, CAPTURE_NAME, capture);
        try {
            pipeline.remove(name);
        } catch (RuntimeException e) {
            capture.release();
            throw e;
        } finally {
            pipeline.remove(capture);
        }
        return capture.take();
    }

    private static final class Capture extends ChannelInboundHandlerAdapter {
        private @Nullable ByteBuf held;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof ByteBuf buf)) {
                ctx.fireChannelRead(msg);
                return;
            }
            ByteBuf h = held;
            if (h == null) {
                held = buf;
            } else if (h instanceof CompositeByteBuf composite) {
                composite.addComponent(true, buf);
            } else {
                held = ctx.alloc().compositeBuffer().addComponent(true, h).addComponent(true, buf);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            // The removal's own read-complete: the batch it ends is the caller's.
        }

        ByteBuf take() {
            ByteBuf h = held;
            held = null;
            return h == null ? Unpooled.EMPTY_BUFFER : h;
        }

        void release() {
            ReferenceCountUtil.release(take());
        }
    }
}
