package com.spectrayan.spector.bench;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import org.jspecify.annotations.Nullable;

/**
 * The floor a Netty proxy stands on, for side-by-side runs against the gateway and nginx (issue 14;
 * {@code bench/variants-ab.sh}). Not a product: no routing, auth, metrics, log, timeouts or error
 * answers, and one backend connection per client connection, opened when the client connects.
 *
 * <ul>
 *   <li>{@code http}: the research's plain Netty proxy ({@code ../shared/research/proxy-spike.md},
 *       "A"): Netty's HTTP/1 server codec on the client's connection, its client codec on the
 *       backend's, each message passed on as decoded with {@code Connection} removed, written as
 *       read and flushed when a read batch ends. What Netty's two codecs and pipeline cost with
 *       nothing of ours around them.
 *   <li>{@code tcp}: bytes copied from one socket to the other with no codec. What Netty's transport
 *       costs: the floor under any design on Netty.
 * </ul>
 *
 * <p>One event loop (epoll) holds every connection, as the pinned gateway has; a side whose peer
 * cannot take more stops reading until it can (write water marks and auto-read). {@code
 * -Dfloor.hops=N} adds N handlers that only pass every event on to the client's pipeline, after the
 * codec: what a pipeline hop costs, against the handlers the gateway's pipeline has beside its codec.
 *
 * <pre>{@code
 * java -cp bench/target/benchmarks.jar com.spectrayan.spector.bench.FloorProxy http 19020 127.0.0.1:19000
 * }</pre>
 */
public final class FloorProxy {
    private FloorProxy() {}

    /** Pass-through handlers added to the client's pipeline ({@code -Dfloor.hops}). */
    static final int HOPS = Integer.getInteger("floor.hops", 0);

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3 || !(args[0].equals("http") || args[0].equals("tcp"))) {
            System.err.println("usage: FloorProxy http|tcp PORT BACKEND_HOST:PORT");
            System.exit(2);
        }
        boolean http = args[0].equals("http");
        int port = Integer.parseInt(args[1]);
        int colon = args[2].lastIndexOf(':');
        InetSocketAddress backend =
                new InetSocketAddress(args[2].substring(0, colon), Integer.parseInt(args[2].substring(colon + 1)));
        EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        Channel server = new ServerBootstrap()
                .group(loop)
                .channel(EpollServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (http) {
                            ch.pipeline().addLast(new HttpServerCodec());
                        }
                        for (int i = 0; i < HOPS; i++) {
                            ch.pipeline().addLast(new PassThrough());
                        }
                        ch.pipeline().addLast(new Front(backend, http));
                    }
                })
                .bind("127.0.0.1", port)
                .sync()
                .channel();
        System.out.println("FloorProxy " + args[0] + " on 127.0.0.1:" + port + " to " + backend);
        server.closeFuture().sync();
    }

    /** The client's side: opens the backend connection, then passes what it reads to it. */
    private static final class Front extends ChannelInboundHandlerAdapter {
        private final InetSocketAddress backend;
        private final boolean http;
        private @Nullable Channel back;

        Front(InetSocketAddress backend, boolean http) {
            this.backend = backend;
            this.http = http;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            Channel front = ctx.channel();
            new Bootstrap()
                    .group(front.eventLoop())
                    .channel(EpollSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            if (http) {
                                ch.pipeline().addLast(new HttpClientCodec());
                            }
                            ch.pipeline().addLast(new Relay(front, http));
                        }
                    })
                    .connect(backend)
                    .addListener((ChannelFutureListener) f -> {
                        if (f.isSuccess()) {
                            back = f.channel();
                            front.config().setAutoRead(true);
                        } else {
                            front.close();
                        }
                    });
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Channel b = back;
            if (b == null) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (http && msg instanceof HttpMessage m) {
                m.headers().remove(HttpHeaderNames.CONNECTION);
            }
            b.write(msg, b.voidPromise());
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            Channel b = back;
            if (b != null) {
                b.flush();
                ctx.channel().config().setAutoRead(b.isWritable());
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            Channel b = back;
            if (b != null) {
                b.config().setAutoRead(ctx.channel().isWritable());
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            closeOnFlush(back);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** The backend's side: passes what it reads to the client. */
    private static final class Relay extends ChannelInboundHandlerAdapter {
        private final Channel front;
        private final boolean http;

        Relay(Channel front, boolean http) {
            this.front = front;
            this.http = http;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (http && msg instanceof HttpMessage m) {
                m.headers().remove(HttpHeaderNames.CONNECTION);
            }
            front.write(msg, front.voidPromise());
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            front.flush();
            ctx.channel().config().setAutoRead(front.isWritable());
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            front.config().setAutoRead(ctx.channel().isWritable());
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            closeOnFlush(front);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** Passes every event on: a pipeline hop and nothing else. Not sharable, as the gateway's handlers are not. */
    private static final class PassThrough extends ChannelDuplexHandler {}

    private static void closeOnFlush(@Nullable Channel ch) {
        if (ch != null && ch.isActive()) {
            ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
