package com.spectrayan.spector.uplink.worker;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.v2.V2Frame;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.v2.V2Stream;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolConfig;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolConfig;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketVersion;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * A v2 link over a real loopback socket: the gateway end a WebSocket server (port 0), the worker
 * end a WebSocket client that dials it, both through Netty's WebSocket handshake with the
 * subprotocol {@link V2Limits#SUBPROTOCOL}; each end a {@link V2Connection} installed when its
 * handshake completed, each on its own event loop. The worker's listener is {@link SessionLink},
 * the small adapter the transport's {@code V2FrameChannel} is in production: streams to the
 * session's {@code onStream}, CALL frames to its {@code onFrame}, the close to its {@code onClose}.
 */
final class V2LinkPair implements AutoCloseable {
    private static final String PATH = "/uplink";

    /** The bound on closing the channels and the event loops. */
    private static final long SHUTDOWN_MILLIS = 10_000;

    private final EventLoopGroup group;
    private final Channel server;
    final V2Connection gateway;
    final V2Connection worker;
    final UplinkSession session;
    final GatewayListener gatewayListener;

    private V2LinkPair(
            EventLoopGroup group,
            Channel server,
            V2Connection gateway,
            V2Connection worker,
            UplinkSession session,
            GatewayListener gl) {
        this.group = group;
        this.server = server;
        this.gateway = gateway;
        this.worker = worker;
        this.session = session;
        this.gatewayListener = gl;
    }

    /** Connects a gateway end to a worker end whose session serves {@code options} as {@code role}. */
    static V2LinkPair connect(UplinkSession.Role role, WorkerOptions options) {
        V2LinkPair pair = null;
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        try {
            pair = open(group, role, options);
            return pair;
        } finally {
            if (pair == null) {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(SHUTDOWN_MILLIS);
            }
        }
    }

    private static V2LinkPair open(EventLoopGroup group, UplinkSession.Role role, WorkerOptions options) {
        CompletableFuture<V2Connection> gatewayEnd = new CompletableFuture<>();
        GatewayListener gatewayListener = new GatewayListener();
        WebSocketServerProtocolConfig serverConfig = WebSocketServerProtocolConfig.newBuilder()
                .websocketPath(PATH)
                .subprotocols(V2Limits.SUBPROTOCOL)
                .maxFramePayloadLength(V2Limits.MAX_MESSAGE_BYTES)
                .handleCloseFrames(false)
                .build();
        Channel server = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childHandler(pipeline(
                        HttpServerCodec::new,
                        () -> new WebSocketServerProtocolHandler(serverConfig),
                        evt -> evt instanceof WebSocketServerProtocolHandler.HandshakeComplete,
                        ch -> gatewayEnd.complete(
                                V2Connection.install(ch, V2Connection.Role.GATEWAY, gatewayListener))))
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
                .syncUninterruptibly()
                .channel();
        int port = ((InetSocketAddress) server.localAddress()).getPort();

        CompletableFuture<SessionLink> workerEnd = new CompletableFuture<>();
        WebSocketClientProtocolConfig clientConfig = WebSocketClientProtocolConfig.newBuilder()
                .webSocketUri(URI.create("ws://127.0.0.1:" + port + PATH))
                .subprotocol(V2Limits.SUBPROTOCOL)
                .version(WebSocketVersion.V13)
                .maxFramePayloadLength(V2Limits.MAX_MESSAGE_BYTES)
                .handleCloseFrames(false)
                .build();
        new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .handler(pipeline(
                        HttpClientCodec::new,
                        () -> new WebSocketClientProtocolHandler(clientConfig),
                        evt -> evt == WebSocketClientProtocolHandler.ClientHandshakeStateEvent.HANDSHAKE_COMPLETE,
                        ch -> {
                            SessionLink link = new SessionLink();
                            link.connection = V2Connection.install(ch, V2Connection.Role.WORKER, link);
                            link.session = UplinkSession.start(link, role, options);
                            workerEnd.complete(link);
                        }))
                .connect(InetAddress.getLoopbackAddress(), port);
        V2Connection g = Waits.done(gatewayEnd, "the gateway end completes its WebSocket handshake");
        SessionLink w = Waits.done(workerEnd, "the worker end completes its WebSocket handshake");
        return new V2LinkPair(
                group, server, g, requireNonNull(w.connection), requireNonNull(w.session), gatewayListener);
    }

    /**
     * Returns the initializer of one end's pipeline: the HTTP codec, an aggregator for the
     * handshake, the WebSocket protocol handler, then {@code install} on the event loop once
     * {@code handshakeDone} accepts a user event (the handshake completed).
     */
    private static ChannelInitializer<SocketChannel> pipeline(
            Supplier<ChannelHandler> httpCodec,
            Supplier<ChannelHandler> webSocket,
            Predicate<Object> handshakeDone,
            Consumer<Channel> install) {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(SocketChannel ch) {
                ch.pipeline()
                        .addLast(httpCodec.get())
                        .addLast(new HttpObjectAggregator(64 * 1024))
                        .addLast(webSocket.get())
                        .addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                                if (handshakeDone.test(evt)) {
                                    ctx.pipeline().remove(this);
                                    install.accept(ctx.channel());
                                } else {
                                    ctx.fireUserEventTriggered(evt);
                                }
                            }
                        });
            }
        };
    }

    /** Opens a stream at the gateway with {@code head}; {@code endStream} when it has no body. */
    GatewayStream open(RequestHead head, boolean endStream) {
        GatewayStream handler = new GatewayStream();
        handler.attach(gateway.openStream(head, endStream, handler));
        return handler;
    }

    /** Returns the result of {@code task} run on the gateway end's event loop. */
    <T> T onGatewayLoop(Supplier<T> task) {
        return onLoop(gateway, task);
    }

    /** Returns the result of {@code task} run on the worker end's event loop. */
    <T> T onWorkerLoop(Supplier<T> task) {
        return onLoop(worker, task);
    }

    private static <T> T onLoop(V2Connection end, Supplier<T> task) {
        return Waits.done(
                CompletableFuture.supplyAsync(task, end.channel().eventLoop()), "a task on a link end's event loop");
    }

    @Override
    public void close() {
        gateway.close(WebSocketCloseStatus.NORMAL_CLOSURE, "test over");
        gateway.channel().closeFuture().awaitUninterruptibly(SHUTDOWN_MILLIS);
        worker.channel().closeFuture().awaitUninterruptibly(SHUTDOWN_MILLIS);
        server.close().awaitUninterruptibly(SHUTDOWN_MILLIS);
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(SHUTDOWN_MILLIS);
    }

    /** What the gateway end's link told it: the v1 frames of CALLs, and the close. */
    static final class GatewayListener implements V2Connection.Listener {
        final List<Frame> calls = new CopyOnWriteArrayList<>();
        final CompletableFuture<@Nullable Throwable> closed = new CompletableFuture<>();

        @Override
        public void onCall(V2Frame.Call call) {
            calls.add(call.frame());
        }

        @Override
        public void onClosed(@Nullable Throwable cause) {
            closed.complete(cause);
        }
    }

    /**
     * The worker end's listener and the session's {@link FrameChannel}: what the transport's
     * {@code V2FrameChannel} does in production, cut down to what these tests need.
     */
    static final class SessionLink implements V2Connection.Listener, FrameChannel {
        @Nullable
        V2Connection connection;

        @Nullable
        UplinkSession session;

        private UplinkSession session() {
            return requireNonNull(session, "session");
        }

        private V2Connection connection() {
            return requireNonNull(connection, "connection");
        }

        @Override
        public void onStream(V2Stream stream, RequestHead head, boolean endStream) {
            session().onStream(stream, head, endStream);
        }

        @Override
        public void onCall(V2Frame.Call call) {
            try {
                session().onFrame(call.frame());
            } catch (CorruptFrameException e) {
                if (!session().onCorruptFrame(e)) {
                    close("corrupt frame");
                }
            }
        }

        @Override
        public void onClosed(@Nullable Throwable cause) {
            session().onClose(cause);
        }

        @Override
        public CompletionStage<Void> send(Frame frame) {
            connection().sendCall(frame);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public void close(String reason) {
            connection().close(WebSocketCloseStatus.NORMAL_CLOSURE, reason);
        }

        @Override
        public boolean isOpen() {
            return connection().channel().isActive();
        }
    }
}
