package com.spectrayan.spector.bench;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
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
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
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
 *   <li>{@code heads}: heads kept as the bytes they came in ({@link Heads}): each head's lines
 *       scanned once for its framing ({@code Content-Length}) and its {@code Connection} line, passed
 *       on as slices of the read buffer with that line left out, the body as slices counted off its
 *       length. What a codec that edits heads in place (HAProxy's design) would cost, to set against
 *       {@code http}: only {@code Content-Length} framing, no chunked bodies, no checks.
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

    /** The transport: {@code epoll} (default) or {@code uring} ({@code -Dfloor.io}). */
    static final boolean URING = "uring".equals(System.getProperty("floor.io", "epoll"));

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3 || !(args[0].equals("http") || args[0].equals("tcp") || args[0].equals("heads"))) {
            System.err.println("usage: FloorProxy http|tcp|heads PORT BACKEND_HOST:PORT");
            System.exit(2);
        }
        boolean http = args[0].equals("http");
        boolean heads = args[0].equals("heads");
        int port = Integer.parseInt(args[1]);
        int colon = args[2].lastIndexOf(':');
        InetSocketAddress backend =
                new InetSocketAddress(args[2].substring(0, colon), Integer.parseInt(args[2].substring(colon + 1)));
        EventLoopGroup loop =
                new MultiThreadIoEventLoopGroup(1, URING ? IoUringIoHandler.newFactory() : EpollIoHandler.newFactory());
        Channel server = new ServerBootstrap()
                .group(loop)
                .channel(URING ? IoUringServerSocketChannel.class : EpollServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        if (http) {
                            ch.pipeline().addLast(new HttpServerCodec());
                        } else if (heads) {
                            ch.pipeline().addLast(new Heads(false));
                        }
                        for (int i = 0; i < HOPS; i++) {
                            ch.pipeline().addLast(new PassThrough());
                        }
                        ch.pipeline().addLast(new Front(backend, http, heads));
                    }
                })
                .bind("127.0.0.1", port)
                .sync()
                .channel();
        System.out.println(
                "FloorProxy " + args[0] + (URING ? " (io_uring)" : "") + " on 127.0.0.1:" + port + " to " + backend);
        server.closeFuture().sync();
    }

    /**
     * Passes what one side reads to the other (its peer), flushing the peer when a read batch ends;
     * a side stops reading while its peer cannot take more.
     */
    private static class Relay extends ChannelInboundHandlerAdapter {
        /** HTTP objects pass (Netty's codecs): their {@code Connection} header is removed. */
        final boolean http;
        /** The other side's channel; null until the client's backend connection is made. */
        @Nullable
        Channel peer;

        Relay(@Nullable Channel peer, boolean http) {
            this.peer = peer;
            this.http = http;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Channel p = peer;
            if (p == null) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (http && msg instanceof HttpMessage m) {
                m.headers().remove(HttpHeaderNames.CONNECTION);
            }
            p.write(msg, p.voidPromise());
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            Channel p = peer;
            if (p != null) {
                p.flush();
                ctx.channel().config().setAutoRead(p.isWritable());
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            Channel p = peer;
            if (p != null) {
                p.config().setAutoRead(ctx.channel().isWritable());
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            closeOnFlush(peer);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** The client's side: opens its backend connection when the client connects, then relays to it. */
    private static final class Front extends Relay {
        private final InetSocketAddress backend;
        private final boolean heads;

        Front(InetSocketAddress backend, boolean http, boolean heads) {
            super(null, http);
            this.backend = backend;
            this.heads = heads;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            Channel front = ctx.channel();
            new Bootstrap()
                    .group(front.eventLoop())
                    .channel(URING ? IoUringSocketChannel.class : EpollSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            if (http) {
                                ch.pipeline().addLast(new HttpClientCodec());
                            } else if (heads) {
                                ch.pipeline().addLast(new Heads(true));
                            }
                            ch.pipeline().addLast(new Relay(front, http));
                        }
                    })
                    .connect(backend)
                    .addListener((ChannelFutureListener) f -> {
                        if (f.isSuccess()) {
                            peer = f.channel();
                            front.config().setAutoRead(true);
                        } else {
                            front.close();
                        }
                    });
        }
    }

    /**
     * Heads as bytes: finds each head's end in the read buffer, reads its framing and drops its
     * {@code Connection} line while scanning its lines once, and passes the head on as slices of
     * that buffer and the body as slices counted off {@code Content-Length} (a response without one
     * runs to the close). A head that arrives in parts is gathered first. Nothing else is checked:
     * a floor to measure, not a parser to trust.
     */
    private static final class Heads extends ChannelInboundHandlerAdapter {
        /** The longest head gathered; past it the connection closes. */
        static final int MAX_HEAD = 16 * 1024;

        private static final byte[] CONTENT_LENGTH = "content-length".getBytes(StandardCharsets.US_ASCII);
        private static final byte[] CONNECTION = "connection".getBytes(StandardCharsets.US_ASCII);
        private static final byte[] TRANSFER_ENCODING = "transfer-encoding".getBytes(StandardCharsets.US_ASCII);

        private final boolean response;
        /** What is read and not yet passed on: part of a head, or bytes behind one. */
        private @Nullable ByteBuf pending;
        /** Body bytes still to pass on before the next head; -1: all, until the close. */
        private long bodyLeft;

        Heads(boolean response) {
            this.response = response;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf in = (ByteBuf) msg;
            ByteBuf buf = pending;
            if (buf != null) {
                ByteBuf joined = ctx.alloc().buffer(buf.readableBytes() + in.readableBytes());
                joined.writeBytes(buf).writeBytes(in);
                buf.release();
                in.release();
                buf = joined;
            } else {
                buf = in;
            }
            pending = null;
            try {
                pass(ctx, buf);
            } finally {
                if (buf.isReadable() && ctx.channel().isActive()) {
                    pending = buf;
                } else {
                    buf.release();
                }
            }
        }

        private void pass(ChannelHandlerContext ctx, ByteBuf buf) {
            while (buf.isReadable()) {
                if (bodyLeft != 0) {
                    int n = bodyLeft < 0 ? buf.readableBytes() : (int) Math.min(bodyLeft, buf.readableBytes());
                    ctx.fireChannelRead(buf.readRetainedSlice(n));
                    if (bodyLeft > 0) {
                        bodyLeft -= n;
                    }
                    continue;
                }
                int start = buf.readerIndex();
                int limit = buf.writerIndex();
                int line = buf.indexOf(start, limit, (byte) '\n'); // the start line's end
                if (line < 0) {
                    tooLong(ctx, buf);
                    return;
                }
                long length = -1;
                int dropFrom = -1;
                int dropTo = -1;
                int status = response ? statusOf(buf, start) : 0;
                int end = -1;
                while (true) {
                    int from = line + 1;
                    line = buf.indexOf(from, limit, (byte) '\n');
                    if (line < 0) {
                        break;
                    }
                    int textEnd = line > from && buf.getByte(line - 1) == '\r' ? line - 1 : line;
                    if (textEnd == from) {
                        end = line + 1; // the empty line: the head ends here
                        break;
                    }
                    int colon = buf.indexOf(from, textEnd, (byte) ':');
                    if (colon < 0) {
                        continue;
                    }
                    if (named(buf, from, colon, CONTENT_LENGTH)) {
                        length = digits(buf, colon + 1, textEnd);
                    } else if (named(buf, from, colon, CONNECTION)) {
                        dropFrom = from;
                        dropTo = line + 1;
                    } else if (named(buf, from, colon, TRANSFER_ENCODING)) {
                        ctx.close(); // not in this floor
                        buf.skipBytes(buf.readableBytes());
                        return;
                    }
                }
                if (end < 0) {
                    tooLong(ctx, buf);
                    return;
                }
                if (dropFrom < 0) {
                    ctx.fireChannelRead(buf.readRetainedSlice(end - start));
                } else {
                    ctx.fireChannelRead(buf.readRetainedSlice(dropFrom - start));
                    buf.skipBytes(dropTo - dropFrom);
                    ctx.fireChannelRead(buf.readRetainedSlice(end - dropTo));
                }
                bodyLeft = length >= 0 ? length : response && status != 204 && status != 304 ? -1 : 0;
            }
        }

        private static void tooLong(ChannelHandlerContext ctx, ByteBuf buf) {
            if (buf.readableBytes() > MAX_HEAD) {
                ctx.close();
                buf.skipBytes(buf.readableBytes());
            }
        }

        private static int statusOf(ByteBuf buf, int start) {
            int at = start + "HTTP/1.1 ".length();
            return (buf.getByte(at) - '0') * 100 + (buf.getByte(at + 1) - '0') * 10 + (buf.getByte(at + 2) - '0');
        }

        private static boolean named(ByteBuf buf, int from, int colon, byte[] name) {
            if (colon - from != name.length) {
                return false;
            }
            for (int i = 0; i < name.length; i++) {
                if ((buf.getByte(from + i) | 0x20) != name[i]) {
                    return false;
                }
            }
            return true;
        }

        private static long digits(ByteBuf buf, int from, int to) {
            long n = 0;
            for (int i = from; i < to; i++) {
                byte b = buf.getByte(i);
                if (b >= '0' && b <= '9') {
                    n = n * 10 + (b - '0');
                }
            }
            return n;
        }

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) {
            ByteBuf buf = pending;
            if (buf != null) {
                pending = null;
                buf.release();
            }
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
