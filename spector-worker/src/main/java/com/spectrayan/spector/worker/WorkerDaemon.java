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
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker daemon: keeps {@code uplinks} links to the gateway's {@code /uplink} (each in its own
 * slot, each re-dialled with jittered backoff whenever it is lost), runs the worker half of the
 * relay on each, and serves its relay targets, each an {@code http-forward} to a local upstream.
 * The gateway treats the links as one worker: it spreads relays over them, and losing one costs
 * only that link's relays. When the gateway's host name resolves to several addresses (a headless
 * Service), link {@code k} dials address {@code k mod n} of them, so the links spread over the
 * gateway's replicas.
 */
public final class WorkerDaemon implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WorkerDaemon.class);

    /** How long {@link #close()} lets the event loops finish. */
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(5);

    /** Links a worker keeps by default ({@code --uplinks}). */
    public static final int DEFAULT_UPLINKS = 2;

    /** The most links a worker keeps (the gateway takes 8 per worker by default). */
    public static final int MAX_UPLINKS = 8;

    private final EventLoopGroup group;
    private final UpstreamHttpTransport transport;
    private final List<UplinkDialer> dialers = new ArrayList<>();
    private final @Nullable Channel admin;
    /** The session of each slot's current link, null while it is down. */
    private final AtomicReferenceArray<UplinkSession> sessions;

    private WorkerDaemon(Builder b) {
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        Class<? extends SocketChannel> socket = epoll ? EpollSocketChannel.class : NioSocketChannel.class;
        this.group =
                new MultiThreadIoEventLoopGroup(Math.min(2, Runtime.getRuntime().availableProcessors()), io);
        this.transport = new UpstreamHttpTransport(
                TransportSpec.defaults(), socket, epoll ? EpollDatagramChannel.class : NioDatagramChannel.class);
        Map<String, RelayTarget> targets = new LinkedHashMap<>();
        b.upstreams.forEach((name, uri) -> targets.put(name, new HttpForwardTarget(uri, transport, group)));
        WorkerOptions options =
                WorkerOptions.builder(b.workerId).relayTargets(targets).build();
        this.sessions = new AtomicReferenceArray<>(b.uplinks);
        URI gateway = b.gateway;
        String workerId = b.workerId;
        for (int slot = 0; slot < b.uplinks; slot++) {
            int k = slot;
            UplinkDialer.Builder dialer = UplinkDialer.builder(gateway, workerId, b.token, group)
                    .channelType(socket)
                    .slot(k)
                    .spreadOverAddresses(true)
                    .offerV2(b.v2)
                    .onUplink(channel -> {
                        UplinkSession s = UplinkSession.start(channel, UplinkSession.Role.GATEWAY_UPLINK, options);
                        sessions.set(k, s);
                        log.info(
                                "worker {} connected link {} to {} with targets {}",
                                workerId,
                                k,
                                gateway,
                                targets.keySet());
                        return s;
                    })
                    .onAttemptFailed(error ->
                            log.warn("worker {}: link {} to {} failed: {}", workerId, k, gateway, error.getMessage()));
            Path ca = b.caFile;
            if (ca != null) {
                dialer.caFile(ca);
            }
            dialers.add(dialer.build());
        }
        this.admin = b.adminPort < 0 ? null : startAdmin(b.adminPort, options, epoll);
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
     * Starts a worker that dials {@code gateway} ({@code wss://host[:port]/uplink} or {@code
     * ws://...}) as {@code workerId} with {@code token}, serving one {@code http-forward} target per
     * entry of {@code upstreams}, with {@link #DEFAULT_UPLINKS} links and no admin port.
     */
    public static WorkerDaemon start(URI gateway, String workerId, String token, Map<String, URI> upstreams) {
        return builder(gateway, workerId, token, upstreams).start();
    }

    /** As {@link #start(URI, String, String, Map)}, with a loopback admin port ({@code 0}: any free port). */
    public static WorkerDaemon start(
            URI gateway, String workerId, String token, Map<String, URI> upstreams, int adminPort) {
        return builder(gateway, workerId, token, upstreams).adminPort(adminPort).start();
    }

    /** Returns the options of a worker: its gateway, id, token and targets. */
    public static Builder builder(URI gateway, String workerId, String token, Map<String, URI> upstreams) {
        return new Builder(gateway, workerId, token, upstreams);
    }

    /** Answers whether at least one of the worker's links is connected now. */
    public boolean isConnected() {
        return connectedUplinks() > 0;
    }

    /** Returns how many of the worker's links are connected now. */
    public int connectedUplinks() {
        int n = 0;
        for (UplinkDialer d : dialers) {
            n += d.isConnected() ? 1 : 0;
        }
        return n;
    }

    /** Returns how many links the worker keeps. */
    public int uplinks() {
        return dialers.size();
    }

    /** Returns how many dial attempts were made, over every link. */
    public int attempts() {
        int n = 0;
        for (UplinkDialer d : dialers) {
            n += d.attempts();
        }
        return n;
    }

    /** Returns the relays active on the current links. */
    public int activeRelays() {
        int n = 0;
        for (int i = 0; i < sessions.length(); i++) {
            UplinkSession s = sessions.get(i);
            n += s == null ? 0 : s.activeRelays();
        }
        return n;
    }

    /** Options of a {@link WorkerDaemon}. */
    public static final class Builder {
        private final URI gateway;
        private final String workerId;
        private final String token;
        private final Map<String, URI> upstreams;
        private int adminPort = -1;
        private int uplinks = DEFAULT_UPLINKS;
        private @Nullable Path caFile;
        private boolean v2 = true;

        private Builder(URI gateway, String workerId, String token, Map<String, URI> upstreams) {
            this.gateway = requireNonNull(gateway, "gateway");
            this.workerId = requireNonNull(workerId, "workerId");
            this.token = requireNonNull(token, "token");
            this.upstreams = Map.copyOf(requireNonNull(upstreams, "upstreams"));
        }

        /** Sets the loopback admin port ({@code 0}: any free port; {@code -1}, the default: none). */
        public Builder adminPort(int port) {
            this.adminPort = port;
            return this;
        }

        /** Sets how many links to keep, 1..{@link #MAX_UPLINKS} (default {@link #DEFAULT_UPLINKS}). */
        public Builder uplinks(int n) {
            if (n < 1 || n > MAX_UPLINKS) {
                throw new IllegalArgumentException("uplinks " + n + " is outside 1.." + MAX_UPLINKS);
            }
            this.uplinks = n;
            return this;
        }

        /**
         * Sets whether the links offer uplink protocol v2 before v1 (default true; docs/PROTOCOL.md
         * section 9.1): a gateway that speaks v2 picks it, an older one v1. Off, they speak v1 only.
         */
        public Builder v2(boolean on) {
            this.v2 = on;
            return this;
        }

        /** Trusts only this PEM CA file for a {@code wss://} gateway, instead of the JDK's trust store. */
        public Builder caFile(Path file) {
            this.caFile = requireNonNull(file, "file");
            return this;
        }

        /** Starts the worker: its links dial at once. */
        public WorkerDaemon start() {
            WorkerDaemon daemon = new WorkerDaemon(this);
            daemon.dialers.forEach(UplinkDialer::start);
            return daemon;
        }
    }

    @Override
    public void close() {
        Channel a = admin;
        if (a != null) {
            a.close().syncUninterruptibly();
        }
        dialers.forEach(UplinkDialer::close);
        transport.close();
        group.shutdownGracefully(0, SHUTDOWN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .awaitUninterruptibly(SHUTDOWN_TIMEOUT.toMillis() + 1000);
    }
}
