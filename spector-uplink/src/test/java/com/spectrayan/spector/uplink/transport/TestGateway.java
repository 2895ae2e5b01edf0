package com.spectrayan.spector.uplink.transport;

import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.FrameChannel;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.ssl.SslContext;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;

/** A gateway's HTTP server reduced to the uplink acceptor and a 404 for everything else. */
final class TestGateway implements AutoCloseable {
    static final String TOKEN = "s3cret-w1";
    static final Duration WAIT = Duration.ofSeconds(20);

    /**
     * One accepted uplink.
     *
     * @param workerId the worker's id from {@code X-Spector-Worker}
     * @param slot the link's slot from {@code X-Spector-Link} (0 when absent)
     * @param channel the gateway's end
     * @param received what the gateway's end received (passed on to the receiver a test gave)
     */
    record Uplink(String workerId, int slot, FrameChannel channel, RecordingReceiver received) {}

    final BlockingQueue<Uplink> uplinks = new LinkedBlockingQueue<>();
    private final EventLoopGroup group;
    private final ChannelGroup accepted = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
    private final @Nullable BiFunction<String, FrameChannel, FrameChannel.Receiver> extra;

    /** Makes the receiver of an accepted uplink knowing its slot; set once, before any worker dials. */
    interface SlotReceiver {
        FrameChannel.Receiver receiver(String workerId, int slot, FrameChannel channel);
    }

    private volatile @Nullable SlotReceiver slotted;

    /** From now on accepted uplinks get their receiver from {@code receiver}, which is told their slot. */
    void receiveWithSlots(SlotReceiver receiver) {
        this.slotted = receiver;
    }

    private final Channel server;
    private final @Nullable SslContext tls;

    /**
     * Starts a gateway; {@code extra}, when given, makes the receiver of each accepted uplink (as
     * the real gateway's handler does) and records what it needs itself; else each uplink's frames
     * are recorded and the uplink is queued for {@link #nextUplink}.
     */
    TestGateway(
            EventLoopGroup group, int port, @Nullable BiFunction<String, FrameChannel, FrameChannel.Receiver> extra) {
        this(group, port, extra, UplinkAcceptor.DEFAULT_IDLE_TIMEOUT);
    }

    TestGateway(
            EventLoopGroup group,
            int port,
            @Nullable BiFunction<String, FrameChannel, FrameChannel.Receiver> extra,
            Duration idleTimeout) {
        this(group, port, extra, idleTimeout, null, (id, slot) -> null);
    }

    /**
     * A gateway that speaks TLS only, with {@code tls}'s certificate, when given, and admits links
     * with {@code admission}.
     */
    TestGateway(
            EventLoopGroup group,
            int port,
            @Nullable BiFunction<String, FrameChannel, FrameChannel.Receiver> extra,
            Duration idleTimeout,
            @Nullable SslContext tls,
            UplinkAcceptor.Admission admission) {
        this(
                group,
                java.net.InetAddress.getLoopbackAddress(),
                port,
                extra,
                idleTimeout,
                tls,
                admission,
                true,
                UplinkAcceptor.Handshakes.NONE);
    }

    /** A plain gateway bound to {@code host} (another loopback address, say), recording its uplinks. */
    static TestGateway at(EventLoopGroup group, java.net.InetAddress host, int port) {
        return new TestGateway(
                group,
                host,
                port,
                null,
                UplinkAcceptor.DEFAULT_IDLE_TIMEOUT,
                null,
                (id, slot) -> null,
                true,
                UplinkAcceptor.Handshakes.NONE);
    }

    /** A plain gateway on a free port whose acceptor tells {@code handshakes} of each handshake. */
    static TestGateway telling(EventLoopGroup group, UplinkAcceptor.Handshakes handshakes) {
        return onAFreePort(group, null, true, handshakes);
    }

    /** A gateway on a free port that speaks v1 only ({@code UplinkAcceptor.Builder.v2(false)}). */
    static TestGateway speakingV1Only(
            EventLoopGroup group, BiFunction<String, FrameChannel, FrameChannel.Receiver> extra) {
        return onAFreePort(group, extra, false, UplinkAcceptor.Handshakes.NONE);
    }

    private static TestGateway onAFreePort(
            EventLoopGroup group,
            @Nullable BiFunction<String, FrameChannel, FrameChannel.Receiver> extra,
            boolean v2,
            UplinkAcceptor.Handshakes handshakes) {
        return new TestGateway(
                group,
                java.net.InetAddress.getLoopbackAddress(),
                0,
                extra,
                UplinkAcceptor.DEFAULT_IDLE_TIMEOUT,
                null,
                (id, slot) -> null,
                v2,
                handshakes);
    }

    private TestGateway(
            EventLoopGroup group,
            java.net.InetAddress host,
            int port,
            @Nullable BiFunction<String, FrameChannel, FrameChannel.Receiver> extra,
            Duration idleTimeout,
            @Nullable SslContext tls,
            UplinkAcceptor.Admission admission,
            boolean v2,
            UplinkAcceptor.Handshakes handshakes) {
        this.group = group;
        this.tls = tls;
        this.extra = extra;
        String hash = TokenHashes.sha256Hex(TOKEN);
        UplinkAcceptor acceptor = UplinkAcceptor.builder(
                        (workerId, token) -> TokenHashes.matches(hash, token), this::uplink)
                .idleTimeout(idleTimeout)
                .admission(admission)
                .handshakes(handshakes)
                .v2(v2)
                .build();
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        accepted.add(ch);
                        if (tls != null) {
                            ch.pipeline().addLast(tls.newHandler(ch.alloc()));
                        }
                        ch.pipeline()
                                .addLast(new HttpServerCodec())
                                .addLast(acceptor.newHandler())
                                .addLast(new NotFound());
                    }
                });
        this.server = bindWithin(bootstrap, host, port);
    }

    /**
     * Binds, retrying a port that is still in use for at most {@link #WAIT}: a restart on the same
     * port can race the kernel releasing it (or a dialler's socket briefly holding it).
     */
    private static Channel bindWithin(ServerBootstrap bootstrap, java.net.InetAddress host, int port) {
        AtomicReference<Channel> bound = new AtomicReference<>();
        await("port " + port + " can be bound again")
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> {
                    io.netty.channel.ChannelFuture f =
                            bootstrap.bind(new InetSocketAddress(host, port)).awaitUninterruptibly();
                    if (f.isSuccess()) {
                        bound.set(f.channel());
                        return true;
                    }
                    if (!(f.cause() instanceof java.net.BindException)) {
                        throw new AssertionError("could not bind port " + port, f.cause());
                    }
                    return false;
                });
        return java.util.Objects.requireNonNull(bound.get(), "bound");
    }

    private FrameChannel.Receiver uplink(String workerId, int slot, FrameChannel channel) {
        SlotReceiver s = slotted;
        if (s != null) {
            return s.receiver(workerId, slot, channel);
        }
        BiFunction<String, FrameChannel, FrameChannel.Receiver> e = extra;
        if (e != null) {
            return e.apply(workerId, channel);
        }
        RecordingReceiver received = RecordingReceiver.of(channel);
        uplinks.add(new Uplink(workerId, slot, channel, received));
        return received;
    }

    int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    URI uri() {
        InetSocketAddress at = (InetSocketAddress) server.localAddress();
        String host = at.getAddress().getHostAddress();
        return URI.create((tls == null ? "ws://" : "wss://") + (host.contains(":") ? "[" + host + "]" : host) + ":"
                + port() + UplinkAcceptor.PATH);
    }

    Uplink nextUplink(String what) {
        return Waits.take(uplinks, what + ": an uplink is accepted", WAIT);
    }

    @Override
    public void close() {
        server.close().awaitUninterruptibly(WAIT.toMillis());
        accepted.close().awaitUninterruptibly(WAIT.toMillis());
    }

    EventLoopGroup group() {
        return group;
    }

    private static final class NotFound extends SimpleChannelInboundHandler<HttpObject> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
            if (msg instanceof HttpRequest) {
                ctx.writeAndFlush(new DefaultFullHttpResponse(
                                HttpVersion.HTTP_1_1, HttpResponseStatus.NOT_FOUND, Unpooled.EMPTY_BUFFER))
                        .addListener(ChannelFutureListener.CLOSE);
            }
        }
    }
}
