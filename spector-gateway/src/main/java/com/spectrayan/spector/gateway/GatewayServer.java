package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.gateway.ForwarderMetrics;
import com.spectrayan.spector.cluster.gateway.ForwarderSpec;
import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.gateway.HeadBuffers;
import com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport;
import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.cluster.routing.RingMetrics;
import com.spectrayan.spector.cluster.routing.RoutingKeyExtractor;
import com.spectrayan.spector.cluster.routing.RoutingMetrics;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.LogGate;
import com.spectrayan.spector.contract.ProblemJson;
import com.spectrayan.spector.gateway.config.CellSettings;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.gateway.config.RoutingSettings;
import com.spectrayan.spector.gateway.config.ServerSettings;
import com.spectrayan.spector.gateway.config.Specs;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.gateway.GatewayWorkerClient;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.transport.UplinkAcceptor;
import com.spectrayan.spector.uplink.transport.UplinkChannels;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.flow.FlowControlHandler;
import io.netty.util.AttributeKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway process: binds the port (and the TLS port, when {@code spector.server.tls.*} names
 * a certificate; both run the same pipeline), wires routing, the forwarder, auth and metrics from
 * {@link GatewaySettings}, and stops them in order. Its sockets run on {@code spector.server.transport}
 * ({@link IoTransport}: epoll by default, NIO off Linux, io_uring when asked for).
 */
public final class GatewayServer implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(GatewayServer.class);

    /** Client connection write buffer: past the high mark the owner is no longer read. */
    static final WriteBufferWaterMark CLIENT_WATER_MARK = new WriteBufferWaterMark(64 * 1024, 256 * 1024);

    /** How often a worker link is refreshed with {@code status.get} (two misses close it). */
    static final Duration STATUS_REFRESH_INTERVAL = Duration.ofSeconds(30);

    /** The handlers of a client connection that an uplink upgrade leaves behind. */
    private static final List<String> HTTP_ONLY_HANDLERS = List.of("head-watch", "flow", "gateway");

    /** Gives a connection's place in {@code max-connections-per-address} back, once. */
    private static final AttributeKey<Runnable> ADDRESS_RELEASE = AttributeKey.valueOf("spector.address-release");

    /** How long the drain waits for the relays still reading their bodies first to start. */
    static final Duration DEFERRED_STARTS_WITHIN = Duration.ofSeconds(1);

    /** The close reason workers get when the gateway drains: they reconnect, reaching another gateway. */
    static final String DRAIN_CLOSE_REASON = "gateway draining: reconnect";

    /** How long {@link #close()} lets the event loops finish their work. */
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(5);

    /** Connections refused past the limit are logged in one line at most this often (all are counted). */
    static final Duration REFUSED_LOG_INTERVAL = Duration.ofSeconds(10);

    private final IoTransport io;
    /**
     * The event loops, one per core: each accepts on the listeners and serves its connections and
     * their owner connections (as nginx's workers accept; no loop of its own for accepting, which
     * on io_uring cost a ring and about 1 MiB of Netty's per-ring memory at idle: issue 14).
     */
    private final EventLoopGroup workers;
    /** The routes answered here, shared by the client and admin ports (tests read their scrape count). */
    private final LocalEndpoints localEndpoints;

    private final Channel serverChannel;
    private final @Nullable Channel tlsChannel;
    private final @Nullable ServerTls tls;
    private final UpstreamHttpTransport transport;
    private final @Nullable RedisRouting redis;
    private final GatewayMetrics metrics;
    private final WaterfallRoutingResolver resolver;
    private final GatewayForwarder forwarder;
    private final EdgeAuthenticator auth;
    private final WorkerDirectory workerDirectory;
    private final GatewayRelay relay;
    private final CellPeers peers;
    private final AccessLog accessLog;
    private final Drain drain = new Drain();
    private final Duration drainTimeout;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger clientConnections = new AtomicInteger();
    /** {@code spector.server.max-connections-per-address}, both listeners together. */
    private final AddressLimit addressLimit;
    /** Connections refused past {@code spector.server.max-connections-per-address}: logged once per interval. */
    private final LogGate addressRefusedLog = new LogGate(REFUSED_LOG_INTERVAL, System.nanoTime());
    /** Connections refused past {@code spector.server.max-connections}: logged once per interval (any loop). */
    private final LogGate refusedLog = new LogGate(REFUSED_LOG_INTERVAL, System.nanoTime());

    private final LogGate evictedLog = new LogGate(REFUSED_LOG_INTERVAL, System.nanoTime());

    private final SplicePipes splicePipes;
    private final @Nullable AdminListener admin;

    private GatewayServer(GatewaySettings s, EdgeAuthenticator auth, Cors cors) {
        CellSettings cell = s.cell();
        ServerSettings server = s.server();
        RoutingSettings.Redis l2 = s.routing().redis();
        this.auth = auth;
        this.drainTimeout = server.drainTimeout();
        IoTransport io = IoTransport.of(server.transport());
        this.io = io;
        Class<? extends ServerChannel> serverClass = io.serverChannel();
        this.workers = new MultiThreadIoEventLoopGroup(Runtime.getRuntime().availableProcessors(), io.factory());

        OwnershipResolver ownership =
                new OwnershipResolver(CellRing.of(cell.ringEpoch(), cell.ringMembers(), CellRing.Source.CONFIG));
        RoutingMetrics routingMetrics = new RoutingMetrics();
        this.redis = l2.enabled() ? RedisRouting.connect(l2.uri().toString(), cell.id(), l2.ttl(), l2.timeout()) : null;
        WaterfallRoutingResolver.Builder routing = WaterfallRoutingResolver.builder(cell.id(), ownership)
                .l1Ttl(s.routing().caffeine().ttl())
                .l1MaxSize(s.routing().caffeine().maxSize())
                .metrics(routingMetrics);
        RedisRouting r = redis;
        if (r != null) {
            routing.l2(r.cache());
        }
        this.resolver = routing.build();
        if (r != null) {
            r.subscribe(resolver);
        }

        this.transport = new UpstreamHttpTransport(Specs.transport(s), io.socketChannel(), io.datagramChannel());
        ForwarderSpec forwarderSpec = Specs.forwarder(s);
        this.forwarder =
                new GatewayForwarder(resolver, cell.ringMembers(), transport, forwarderSpec, new ForwarderMetrics());

        this.metrics = new GatewayMetrics();
        metrics.bindRouting(routingMetrics);
        metrics.bindForwarder(forwarder, transport);
        RingMetrics ringMetrics = new RingMetrics();
        metrics.bindRing(ringMetrics, forwarder::isOwnerDown);
        metrics.ringChanged(ownership.snapshot());
        if (r != null) {
            // the published ring, when there is one, before the first request (bounded wait)
            r.watchRing(
                    next -> {
                        boolean taken = resolver.offerRing(next);
                        if (taken) {
                            metrics.ringChanged(next);
                        }
                        return taken;
                    },
                    ringMetrics);
        }
        metrics.bindNetty(workers);
        Health health = new Health(ownership, redis, drain::isDraining);
        Set<String> trusted = new HashSet<>();
        for (InetAddress a : server.trustedProxies()) {
            trusted.add(a.getHostAddress());
        }
        this.workerDirectory = new WorkerDirectory(s.uplink().maxLinksPerWorker());
        this.relay = new GatewayRelay(
                workerDirectory,
                s.uplink().relayDeadline(),
                s.uplink().relayMaxPerWorker(),
                s.uplink().relayMaxUpgradesPerWorker(),
                Limits.UNREAD_RELAY_BYTES,
                Limits.UNREAD_RELAY_BYTES_ALL,
                workers.next());
        RelayRoute relayRoute = new RelayRoute(relay, workerDirectory);
        this.peers = CellPeers.create(s, redis, workerDirectory, forwarder, metrics.registry());
        try {
            this.accessLog = AccessLog.open(server.accessLog(), metrics.registry());
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "spector.server.access-log: cannot append to " + server.accessLog() + ": " + e.getMessage(), e);
        }
        this.splicePipes = io.splices() ? new SplicePipes(server.splicePipes()) : SplicePipes.OFF;
        LocalEndpoints local = new LocalEndpoints(health, metrics, cors);
        this.localEndpoints = local;
        GatewayContext context = new GatewayContext(
                forwarder,
                new RoutingKeyExtractor(cell.id()),
                auth,
                cors,
                local,
                metrics,
                Set.copyOf(trusted),
                relayRoute,
                drain,
                new GatewayStatus(
                        cell.id(),
                        resolver,
                        redis,
                        transport,
                        relayRoute,
                        drain,
                        clientConnections::get,
                        forwarder::isOwnerDown),
                BearerTokens.from(s.security().jwt(), cors),
                server.headerTimeout(),
                server.bodyTimeout(),
                server.sendTimeout(),
                s.routing().gateway().streamIdleTimeout(),
                forwarderSpec.requestBufferBytes(),
                peers.hop(),
                accessLog,
                splicePipes,
                new Via(cell.id()));

        Map<String, String> uplinkTokens = s.uplink().tokens();
        UplinkAcceptor uplinks = UplinkAcceptor.builder(
                        (workerId, token) -> {
                            String hash = uplinkTokens.get(workerId);
                            return hash != null && TokenHashes.matches(hash, token);
                        },
                        this::onUplink)
                .admission(workerDirectory::refusal)
                .handshakes(new UplinkHandshakes(context.trustedProxies(), accessLog))
                .v2(s.uplink().v2())
                .build();
        metrics.bindUplinks(workerDirectory, relay, uplinks);
        HttpDecoderConfig decoder = new HttpDecoderConfig()
                .setMaxInitialLineLength(server.maxInitialLineLength())
                .setMaxHeaderSize(server.maxHeaderSize())
                .setMaxChunkSize(64 * 1024)
                // RFC 9112 §2.2, §6.1: a bare LF, or a Transfer-Encoding whose last coding is not
                // chunked, is a malformed request (400), never a guess. Netty's defaults, pinned so
                // a JVM flag cannot turn them off. Content-Length with Transfer-Encoding is decoded
                // by the latter, and the connection closes after the response (§6.1 MUST).
                .setStrictLineParsing(true)
                .setUseRfc9112TransferEncoding(true)
                .setHeadersFactory(RequestHeaders.FACTORY);
        this.addressLimit = new AddressLimit(server.maxConnectionsPerAddress(), Set.copyOf(trusted));
        ClientPipeline plain =
                new ClientPipeline(context, decoder, uplinks, server.idleTimeout(), server.maxConnections(), null);
        ProblemJson.prepare(); // before the first client: a problem rendered at EMFILE must still work
        ServerBootstrap bootstrap = io.clientOptions(new ServerBootstrap())
                .group(workers)
                .channel(serverClass)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.SO_KEEPALIVE, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, CLIENT_WATER_MARK)
                .childHandler(plain);
        this.serverChannel =
                Listen.bind(bootstrap, new InetSocketAddress(server.host(), server.port()), "spector.server.port");
        ServerSettings.Tls tlsSettings = server.tls();
        ServerTls serverTls = null;
        Channel tlsServerChannel = null;
        if (tlsSettings != null) {
            serverTls = ServerTls.start(tlsSettings, server.headerTimeout());
            metrics.bindTls(serverTls);
            ClientPipeline secure = new ClientPipeline(
                    context, decoder, uplinks, server.idleTimeout(), server.maxConnections(), serverTls);
            try {
                tlsServerChannel = Listen.bind(
                        bootstrap.clone().childHandler(secure),
                        new InetSocketAddress(server.host(), tlsSettings.port()),
                        "spector.server.tls.port");
            } catch (RuntimeException e) {
                serverTls.close();
                serverChannel.close().syncUninterruptibly();
                throw e;
            }
            log.info(
                    "gateway TLS listening on {} ({}, {}, ALPN {}), certificate {} from {}, checked every {} ms",
                    tlsServerChannel.localAddress(),
                    serverTls.provider(),
                    String.join("/", ServerTls.PROTOCOLS),
                    String.join(",", ServerTls.ALPN_PROTOCOLS),
                    serverTls.keyPair().describe(),
                    tlsSettings.certificate(),
                    tlsSettings.reloadInterval().toMillis());
        }
        this.tls = serverTls;
        this.tlsChannel = tlsServerChannel;
        peers.start(context, workers, serverClass, decoder);
        this.admin = server.adminPort() == ServerSettings.ADMIN_OFF
                ? null
                : AdminListener.bind(
                        server.host(), server.adminPort(), local, io.factory(), serverClass, server.headerTimeout());
        log.info(
                "gateway listening on {} ({}), cell {}, ring {} at epoch {} from {}, redis {}",
                serverChannel.localAddress(),
                io.label(),
                cell.id(),
                ownership.ring().members(),
                ownership.ring().epoch(),
                ownership.snapshot().source().label(),
                r == null ? "off" : l2.redactedUri());
    }

    /**
     * Builds a client connection's pipeline, the same on both listeners but for the TLS handlers in
     * front. Shared by every connection of one listener; runs on the connection's event loop.
     *
     * <pre>
     *  [tls, tls-watch]  head-watch  codec  uplink  flow  idle  gateway
     *   TLS only          (an uplink upgrade leaves tls, codec and uplink's frame handling)
     * </pre>
     */
    private final class ClientPipeline extends ChannelInitializer<SocketChannel> {
        private final GatewayContext context;
        private final HttpDecoderConfig decoder;
        private final UplinkAcceptor uplinks;
        private final Duration idleTimeout;
        private final int maxConnections;
        private final @Nullable ServerTls tls;

        ClientPipeline(
                GatewayContext context,
                HttpDecoderConfig decoder,
                UplinkAcceptor uplinks,
                Duration idleTimeout,
                int maxConnections,
                @Nullable ServerTls tls) {
            this.context = context;
            this.decoder = decoder;
            this.uplinks = uplinks;
            this.idleTimeout = idleTimeout;
            this.maxConnections = maxConnections;
            this.tls = tls;
        }

        /**
         * Makes room for a new connection at {@code max-connections}, on its event loop: closes the
         * connection of that loop that has waited longest between requests with nothing read (an idle keep-alive, a
         * client that never sent a byte, a TLS handshake that stalls), as nginx closes its reusable
         * connections when it runs out ({@code ngx_drain_connections}). Without it, idle keep-alives
         * refreshed before the idle timeout kept every new client out. Returns false when the loop
         * has none: every connection on it is in an exchange or mid-head. The count stays as it is:
         * the closed one's close takes it back.
         */
        private boolean evictLongestIdle() {
            Channel victim = drain.reusable().longest(); // on the newcomer's loop (initChannel): its list
            if (victim == null) {
                return false;
            }
            long evicted = evictedLog.event(System.nanoTime());
            if (evicted > 0) {
                log.info(
                        "closed {} idle connection(s) for new ones since the last such line: {} open"
                                + " (spector.server.max-connections), logged at most every {} s",
                        evicted,
                        maxConnections,
                        REFUSED_LOG_INTERVAL.toSeconds());
            }
            victim.close();
            return true;
        }

        /**
         * Counts {@code ch} against its address's {@code max-connections-per-address} until it
         * closes, or closes it at once, counted and logged, when its address holds the limit.
         */
        private boolean admitAddress(SocketChannel ch) {
            String ip = ClientConnection.ip(ch.remoteAddress());
            if (addressLimit.tryAcquire(ip)) {
                AtomicBoolean released = new AtomicBoolean();
                Runnable release = () -> {
                    if (released.compareAndSet(false, true)) {
                        addressLimit.release(ip);
                    }
                };
                ch.attr(ADDRESS_RELEASE).set(release); // an accepted uplink gives it back at once
                ch.closeFuture().addListener(f -> release.run());
                return true;
            }
            metrics.connectionRefusedPerAddress();
            long refused = addressRefusedLog.event(System.nanoTime());
            if (refused > 0) {
                log.warn(
                        "refused {} connection(s) since the last such line, the latest from {} (counted as {},"
                                + " which held {} open)"
                                + " (spector.server.max-connections-per-address); all are counted in"
                                + " spector_gateway_connections_refused_per_address_total, logged at most every {} s",
                        refused,
                        ip,
                        AddressLimit.key(ip),
                        addressLimit.held(ip),
                        REFUSED_LOG_INTERVAL.toSeconds());
            }
            ch.close();
            return false;
        }

        @Override
        protected void initChannel(SocketChannel ch) {
            if (addressLimit.enabled() && !admitAddress(ch)) {
                return;
            }
            if (clientConnections.incrementAndGet() > maxConnections && !evictLongestIdle()) {
                clientConnections.decrementAndGet();
                metrics.connectionRefused();
                long refused = refusedLog.event(System.nanoTime());
                if (refused > 0) {
                    log.warn(
                            "refused {} connection(s) since the last such line: {} open (spector.server.max-connections);"
                                    + " all are counted in spector_gateway_connections_refused_total, logged at most"
                                    + " every {} s",
                            refused,
                            maxConnections,
                            REFUSED_LOG_INTERVAL.toSeconds());
                }
                ch.close();
                return;
            }
            ch.closeFuture().addListener(f -> clientConnections.decrementAndGet());
            drain.track(ch);
            ServerTls t = tls;
            if (t != null) {
                // The current context, read once: this connection keeps its certificate for life.
                ch.pipeline()
                        .addLast(ServerTls.HANDLER_NAME, t.newHandler(ch.alloc()))
                        .addLast(ServerTls.WATCH_NAME, t.newWatch());
            } else {
                HeadBuffers.apply(ch); // response heads encoded on the heap (issue 14)
            }
            GatewayHandler gateway = new GatewayHandler(context, t != null, null, idleTimeout, drain.reusable());
            ClientCodec codec = new ClientCodec(decoder, true);
            ch.pipeline()
                    .addLast("head-watch", new GatewayHandler.HeadWatch(gateway))
                    .addLast("codec", codec.decoder())
                    .addLast(ClientCodec.ENCODER_NAME, codec.encoder())
                    .addLast("uplink", uplinks.newHandler())
                    // Pipelined requests wait here, decoded, while an exchange runs.
                    .addLast("flow", new FlowControlHandler())
                    .addLast("gateway", gateway);
        }
    }

    /**
     * Registers link {@code slot} of a worker's accepted uplinks (it joins the worker's other
     * links; a re-dial of a slot replaces the old link in it); returns its client, the receiver of
     * the uplink's frames.
     */
    private FrameChannel.Receiver onUplink(String workerId, int slot, FrameChannel channel) {
        String remote = "in-memory";
        String requestId = null;
        Channel c = UplinkChannels.nettyChannel(channel);
        if (c != null) {
            requestId = c.attr(UplinkHandshakes.REQUEST_ID).get();
            // An uplink is no longer an HTTP connection: its idle close, Expect handling and
            // exchanges end with the upgrade, and the drain closes it through its worker link.
            for (String name : HTTP_ONLY_HANDLERS) {
                if (c.pipeline().get(name) != null) {
                    c.pipeline().remove(name);
                }
            }
            HeadBuffers.restore(c); // WebSocket frames: payloads stay direct
            drain.trackUplink(c);
            Runnable release = c.attr(ADDRESS_RELEASE).getAndSet(null);
            if (release != null) {
                release.run(); // an authenticated worker's links are not one client's connections
            }
            remote = String.valueOf(c.remoteAddress());
        }
        GatewayWorkerClient client = GatewayWorkerClient.over(workerId, channel);
        WorkerLink link = new WorkerLink(workerId, slot, remote, Instant.now(), client);
        if (!workerDirectory.register(link)) {
            log.warn(
                    "worker {} link {} from {} closed at once: over the link limit, request id {}",
                    workerId,
                    slot,
                    remote,
                    requestId);
            return client;
        }
        var unused = link.refresh(workers.next(), Limits.STATUS_TIMEOUT); // learn its targets at once
        link.startRefresh(workers.next(), STATUS_REFRESH_INTERVAL, Limits.STATUS_TIMEOUT);
        log.info(
                "worker {} connected uplink slot {} from {} over {} ({} links now), request id {}",
                workerId,
                slot,
                remote,
                UplinkChannels.protocol(channel),
                workerDirectory.links(workerId).size(),
                requestId);
        return client;
    }

    /** Starts a gateway with edge auth and CORS as the settings say. */
    public static GatewayServer start(GatewaySettings settings) {
        requireNonNull(settings, "settings");
        GatewayServer gateway = new GatewayServer(
                settings, Security.authenticator(settings.security()), Security.cors(settings.cors()));
        gateway.metrics.bindJvm(); // listening already: its event loops answer while this thread binds
        return gateway;
    }

    /** Returns the bound port. */
    public int port() {
        return ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /** Returns the bound TLS port, or -1 when no TLS listener runs ({@code spector.server.tls.*} unset). */
    public int tlsPort() {
        Channel c = tlsChannel;
        return c == null ? -1 : ((InetSocketAddress) c.localAddress()).getPort();
    }

    /** Returns the TLS listener's context holder, or null when none runs. */
    @Nullable
    ServerTls tls() {
        return tls;
    }

    /** Returns the routing resolver (for tests and the status endpoint). */
    public WaterfallRoutingResolver resolver() {
        return resolver;
    }

    /** Returns the forwarder (for tests and metrics). */
    public GatewayForwarder forwarder() {
        return forwarder;
    }

    /** Returns the directory of connected workers (uplinks register here). */
    public WorkerDirectory workerDirectory() {
        return workerDirectory;
    }

    /** Returns the relay onto the workers' uplinks. */
    public GatewayRelay relay() {
        return relay;
    }

    /** Returns the open client connections (uplinks included), as counted against max-connections. */
    public int clientConnections() {
        return clientConnections.get();
    }

    /** Returns {@code spector.server.max-connections-per-address}'s counts (tests). */
    AddressLimit addressLimit() {
        return addressLimit;
    }

    /** Returns the routes the gateway answers itself (tests). */
    LocalEndpoints localEndpoints() {
        return localEndpoints;
    }

    /** Returns the gateway's meters (tests: a meter of their own in its scrape). */
    GatewayMetrics metrics() {
        return metrics;
    }

    /** Returns the channels of the open client connections, uplinks excluded (tests). */
    ChannelGroup clientChannels() {
        return drain.connections();
    }

    /** Returns the connections that became uplinks (tests). */
    ChannelGroup uplinkChannels() {
        return drain.uplinks();
    }

    /** Returns the bound admin port, or -1 when the admin listener is off ({@code spector.server.admin-port}). */
    public int adminPort() {
        AdminListener a = admin;
        return a == null ? -1 : a.port();
    }

    /** Returns the admin listener, or null when it is off (tests). */
    @Nullable
    AdminListener admin() {
        return admin;
    }

    /** The transport its sockets run on ({@code spector.server.transport}, {@code auto} resolved). */
    IoTransport ioTransport() {
        return io;
    }

    /** Returns the traffic event loops (tests: to hold them busy). */
    EventLoopGroup eventLoops() {
        return workers;
    }

    /** Returns the bound peer port, or -1 when the peer listener is off. */
    public int peerPort() {
        return peers.port();
    }

    /** Returns the hops in flight from this replica to {@code workerId}'s holder (PeerHop; tests). */
    int peerHopsInFlight(String workerId) {
        return peers.hop().hopsInFlight(workerId);
    }

    /** Returns the open connections of the peer port. */
    int peerConnections() {
        return peers.connections();
    }

    /** Returns the client connections holding a pipe for spliced response bodies ({@link SplicePipes}). */
    int splicePipesHeld() {
        return splicePipes.held();
    }

    /** Returns the open owner connections. */
    public int ownerConnections() {
        return transport.openConnections();
    }

    /** Answers whether the gateway is draining: readiness DOWN, no new connections. */
    public boolean isDraining() {
        return drain.isDraining();
    }

    /**
     * Stops gracefully, as on SIGTERM: stops accepting, answers readiness DOWN, sends the worker
     * uplinks away (each closes with 1001 and {@value #DRAIN_CLOSE_REASON} once no relay runs on it,
     * and its worker re-dials another gateway at once), lets in-flight exchanges (forwarded and
     * relayed) finish for up to {@code spector.server.drain-timeout}, then closes everything else.
     * Exchanges and uplinks still busy at the timeout are cut.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        long started = System.nanoTime();
        drain.begin();
        serverChannel.close().syncUninterruptibly();
        Channel tc = tlsChannel;
        if (tc != null) {
            tc.close().syncUninterruptibly();
        }
        // The uplinks go first, before the exchanges drain: the registry marks them moving, and each
        // closes with 1001 (its worker re-dials it elsewhere at once) as soon as no relay runs on
        // it, so the worker's relays move to its other links and the re-dialled one, not to a
        // replica that is about to stop. A hop that still arrives here is refused 421 and taken
        // elsewhere by its caller.
        peers.withdraw();
        drain.startDeferredRelays(DEFERRED_STARTS_WITHIN); // small bodies read first: their relays start now
        int uplinks = workerDirectory.goAway(DRAIN_CLOSE_REASON);
        log.info(
                "draining: stopped accepting; {} exchanges in flight get up to {} ms; {} uplinks sent away",
                drain.inFlight(),
                drainTimeout.toMillis(),
                uplinks);
        int left = drain.awaitIdle(drainTimeout);
        if (left > 0) {
            log.warn(
                    "drain timeout of {} ms passed with {} exchanges in flight: cutting them",
                    drainTimeout.toMillis(),
                    left);
        }
        for (WorkerLink link : workerDirectory.liveLinks()) {
            link.goAwayNow(DRAIN_CLOSE_REASON); // still carrying a relay at the timeout: cut
        }
        if (!drain.awaitUplinksClosed(SHUTDOWN_TIMEOUT)) {
            log.warn("uplinks still open {} after their close: cutting them", SHUTDOWN_TIMEOUT);
        }
        peers.close();
        drain.closeAll();
        // A connection's close completes before its loop runs its last events (channelInactive,
        // queued behind it), where a cut exchange writes its access log line: the exchanges end
        // (each writes its line before it leaves the drain's count), and each loop runs what is
        // left, before the log closes (found by a review: those lines were dropped uncounted; one
        // pass of the loops was not always enough, the end of a cut stream taking more than one).
        int unended = drain.awaitIdle(SHUTDOWN_TIMEOUT);
        if (unended > 0) {
            log.warn(
                    "{} cut exchanges did not end within {}: their access log lines may be missing",
                    unended,
                    SHUTDOWN_TIMEOUT);
        }
        for (io.netty.util.concurrent.EventExecutor loop : workers) {
            loop.submit(() -> {}).awaitUninterruptibly(SHUTDOWN_TIMEOUT.toMillis());
        }
        log.info(
                "drained in {} ms: {} exchanges cut, {} uplinks closed",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started),
                left,
                uplinks);
        AdminListener a = admin;
        if (a != null) {
            a.close(); // after the drain: readiness answered OUT_OF_SERVICE through it
        }
        accessLog.close();
        transport.close();
        ServerTls t = tls;
        if (t != null) {
            t.close();
        }
        workers.shutdownGracefully(0, SHUTDOWN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .awaitUninterruptibly(SHUTDOWN_TIMEOUT.toMillis() + 1000);
        localEndpoints.close(); // both ports are closed: no scrape comes any more
        RedisRouting r = redis;
        if (r != null) {
            r.close();
        }
        metrics.registry().close();
        auth.close();
        log.info("gateway stopped");
    }
}
