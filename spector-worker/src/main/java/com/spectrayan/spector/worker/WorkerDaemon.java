package com.spectrayan.spector.worker;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.gateway.TransportSpec;
import com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.transport.UplinkAcceptor;
import com.spectrayan.spector.uplink.transport.UplinkDialer;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import com.spectrayan.spector.uplink.worker.WorkerOptions;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker daemon: dials the gateway's {@code /uplink} (and again, with jittered backoff, whenever
 * it is lost), runs the worker half of the relay on it, and serves its relay targets, each an
 * {@code http-forward} to a local upstream.
 */
public final class WorkerDaemon implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WorkerDaemon.class);

    /** How long {@link #close()} lets the event loops finish. */
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(5);

    private final EventLoopGroup group;
    private final UpstreamHttpTransport transport;
    private final UplinkDialer dialer;
    private final @Nullable Channel admin;
    private volatile @Nullable UplinkSession session;

    private WorkerDaemon(URI gateway, String workerId, String token, Map<String, URI> upstreams, int adminPort) {
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends SocketChannel> socket = epoll ? EpollSocketChannel.class : NioSocketChannel.class;
        this.group =
                new MultiThreadIoEventLoopGroup(Math.min(2, Runtime.getRuntime().availableProcessors()), io);
        this.transport = new UpstreamHttpTransport(
                TransportSpec.defaults(), socket, epoll ? EpollDatagramChannel.class : NioDatagramChannel.class);
        Map<String, RelayTarget> targets = new LinkedHashMap<>();
        upstreams.forEach((name, uri) -> targets.put(name, new HttpForwardTarget(uri, transport, group)));
        WorkerOptions options =
                WorkerOptions.builder(workerId).relayTargets(targets).build();
        this.dialer = UplinkDialer.builder(gateway, workerId, token, group)
                .channelType(socket)
                .onConnected(channel -> {
                    UplinkSession s = UplinkSession.start(channel, UplinkSession.Role.GATEWAY_UPLINK, options);
                    session = s;
                    log.info("worker {} connected to {} with targets {}", workerId, gateway, targets.keySet());
                    return s;
                })
                .onAttemptFailed(
                        error -> log.warn("worker {}: uplink to {} failed: {}", workerId, gateway, error.getMessage()))
                .build();
        this.admin = adminPort < 0 ? null : startAdmin(adminPort, options, epoll);
    }

    /**
     * The loopback admin port: the same protocol, but every session is {@code LOCAL_ADMIN}, where
     * {@code status.get} answers and the relay operations are FORBIDDEN. Bound to 127.0.0.1 only.
     */
    private Channel startAdmin(int port, WorkerOptions options, boolean epoll) {
        UplinkAcceptor acceptor = UplinkAcceptor.builder(
                        (id, token) -> true, // loopback only: the local user is trusted with status
                        (id, slot, channel) -> UplinkSession.start(channel, UplinkSession.Role.LOCAL_ADMIN, options))
                .build();
        return new ServerBootstrap()
                .group(group)
                .channel(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec()).addLast(acceptor.newHandler());
                    }
                })
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))
                .syncUninterruptibly()
                .channel();
    }

    /** Returns the admin port, or -1 when it is off. */
    public int adminPort() {
        Channel a = admin;
        return a == null ? -1 : ((InetSocketAddress) a.localAddress()).getPort();
    }

    /**
     * Starts a worker that dials {@code gateway} ({@code ws://host:port/uplink}) as {@code workerId}
     * with {@code token}, serving one {@code http-forward} target per entry of {@code upstreams}.
     */
    public static WorkerDaemon start(URI gateway, String workerId, String token, Map<String, URI> upstreams) {
        return start(gateway, workerId, token, upstreams, -1);
    }

    /** Starts a worker with a loopback admin port ({@code 0}: any free port; {@code -1}: none). */
    public static WorkerDaemon start(
            URI gateway, String workerId, String token, Map<String, URI> upstreams, int adminPort) {
        requireNonNull(gateway, "gateway");
        requireNonNull(workerId, "workerId");
        requireNonNull(token, "token");
        WorkerDaemon daemon = new WorkerDaemon(
                gateway, workerId, token, Map.copyOf(requireNonNull(upstreams, "upstreams")), adminPort);
        daemon.dialer.start();
        return daemon;
    }

    /** Answers whether the uplink is connected now. */
    public boolean isConnected() {
        return dialer.isConnected();
    }

    /** Returns how many dial attempts were made. */
    public int attempts() {
        return dialer.attempts();
    }

    /** Returns the relays active on the current uplink. */
    public int activeRelays() {
        UplinkSession s = session;
        return s == null ? 0 : s.activeRelays();
    }

    @Override
    public void close() {
        Channel a = admin;
        if (a != null) {
            a.close().syncUninterruptibly();
        }
        dialer.close();
        transport.close();
        group.shutdownGracefully(0, SHUTDOWN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .awaitUninterruptibly(SHUTDOWN_TIMEOUT.toMillis() + 1000);
    }
}
