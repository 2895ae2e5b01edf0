package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ProblemJson;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpServerExpectContinueHandler;
import io.netty.handler.stream.ChunkedWriteHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small, real owner node on Netty: the demo's, the tests' and the benchmarks' backend. It guards
 * every {@code /api/v1} request with an {@link OwnershipGuard}, streams bodies both ways without
 * aggregating them, and records what it served. With a Redis URI it follows the cell's published
 * ring ({@link com.spectrayan.spector.cluster.routing.PublishedRing}) for its 421s, as the
 * gateways do for their routing.
 *
 * <pre>{@code
 * try (ReferenceOwner owner = ReferenceOwner.start(OwnerSpec.builder("owner-0")
 *         .ringMembers(List.of("owner-0", "owner-1", "owner-2"))
 *         .build())) {
 *     URI base = owner.baseUri(); // http://127.0.0.1:<port>
 *     List<RecordedRequest> seen = owner.requests();
 * }
 * }</pre>
 *
 * <p>Endpoints (every response carries {@code X-Spector-Node}):
 *
 * <ul>
 *   <li>{@code ANY /api/v1/namespaces/{ns}/echo}: JSON of the request, with the body's size and
 *       SHA-256;
 *   <li>{@code GET /api/v1/namespaces/{ns}/stream?bytes=N&chunk=K&delayMs=D}: N bytes, byte i is
 *       {@code i mod 251};
 *   <li>{@code PUT/GET/DELETE /api/v1/namespaces/{ns}/objects/{key}}: objects on disk;
 *   <li>{@code POST /api/v1/namespaces/{ns}/commands}: idempotent commands;
 *   <li>{@code GET /api/v1/namespaces/{ns}/ws} with {@code Upgrade: websocket}: a WebSocket echo
 *       (RFC 6455): text and binary messages come back as sent;
 *   <li>{@code GET /api/v1/events}: server-sent events, resumable with {@code Last-Event-ID};
 *   <li>{@code POST /api/v1/auth/token}: an HS256 token for a tenant;
 *   <li>{@code GET /health}; from loopback only: {@code POST /admin/ownership}, {@code GET
 *       /admin/requests}, {@code GET /admin/stats}.
 * </ul>
 *
 * <p>Threads: one boss loop and {@link OwnerLimits#WORKER_THREADS} worker loops (native epoll when
 * available, NIO otherwise). Handlers never block a loop except for the brief file I/O of
 * objects. Thread-safe; {@link #close()} is idempotent and bounded.
 */
public final class ReferenceOwner implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ReferenceOwner.class);

    // Handler names of a connection's pipeline; a WebSocket upgrade swaps the HTTP ones out.
    static final String CODEC = "codec";
    static final String NODE_HEADER = "node-header";
    static final String EXPECT_CONTINUE = "expect-continue";
    static final String CHUNKED_WRITER = "chunked-writer";
    static final String OWNER = "owner";

    private final OwnerNode node;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;
    private final Channel serverChannel;
    private final ChannelGroup channels;
    private final ScheduledFuture<?> ticker;
    private final @Nullable ScheduledFuture<?> routeRefresher;
    private final @Nullable Path ownedDataDir;
    private final int port;
    private boolean closed; // Guarded by this.

    private ReferenceOwner(
            OwnerNode node,
            EventLoopGroup boss,
            EventLoopGroup workers,
            Channel serverChannel,
            ChannelGroup channels,
            ScheduledFuture<?> ticker,
            @Nullable ScheduledFuture<?> routeRefresher,
            @Nullable Path ownedDataDir) {
        this.node = node;
        this.boss = boss;
        this.workers = workers;
        this.serverChannel = serverChannel;
        this.channels = channels;
        this.ticker = ticker;
        this.routeRefresher = routeRefresher;
        this.ownedDataDir = ownedDataDir;
        this.port = ((InetSocketAddress) serverChannel.localAddress()).getPort();
    }

    /**
     * Starts an owner and returns once it listens.
     *
     * @throws UncheckedIOException when the data directory cannot be made, its ownership file
     *     ({@link OwnershipFile}) cannot be read whole, or the port cannot be bound (within {@link
     *     OwnerLimits#BIND_TIMEOUT})
     */
    public static ReferenceOwner start(OwnerSpec spec) {
        requireNonNull(spec, "spec");
        Path ownedDataDir = null;
        RedisRouting redis = null;
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(
                1, new DefaultThreadFactory("spector-owner-" + spec.nodeId() + "-boss", true), io);
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(
                OwnerLimits.WORKER_THREADS, new DefaultThreadFactory("spector-owner-" + spec.nodeId(), true), io);
        try {
            Path dataDir = spec.dataDir();
            if (dataDir == null) {
                ownedDataDir = Files.createTempDirectory("spector-owner-" + spec.nodeId() + "-");
                dataDir = ownedDataDir;
            }
            ObjectStore objects = new ObjectStore(dataDir);
            String redisUri = spec.redisUri();
            if (redisUri != null) {
                redis = RedisRouting.connect(redisUri, spec.cellId(), Limits.L2_TTL, Limits.L2_TIMEOUT);
            }
            OwnerNode node = new OwnerNode(spec, objects, Clock.systemUTC(), redis);
            // before the port is bound: a node that forgot its moves would serve what it handed away
            int restored = node.restoreOverrides();
            if (restored > 0) {
                log.info(
                        "{}: restored {} ownership overrides from {}",
                        spec.nodeId(),
                        restored,
                        node.ownershipFile.path());
            }
            if (redis != null) {
                // the cell's published ring, as the gateways read it, for this node's 421s
                redis.watchRing(node.guard::offerRing, node.ringMetrics);
            }
            // stayClosed: a connection accepted in the instant close() runs joins the group after it
            // closed; it is closed as it joins instead of staying open for good (a leaked socket)
            ChannelGroup channels =
                    new DefaultChannelGroup("spector-owner-" + spec.nodeId(), GlobalEventExecutor.INSTANCE, true);
            NodeHeaderHandler nodeHeader = new NodeHeaderHandler(spec.nodeId());
            Class<? extends ServerChannel> channelType =
                    epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
            ServerBootstrap bootstrap = new ServerBootstrap()
                    .group(boss, workers)
                    .channel(channelType)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.AUTO_READ, false)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            channels.add(ch);
                            ChannelPipeline p = ch.pipeline();
                            p.addLast(CODEC, new HttpServerCodec(decoderConfig()));
                            p.addLast(NODE_HEADER, nodeHeader);
                            p.addLast(EXPECT_CONTINUE, new HttpServerExpectContinueHandler());
                            p.addLast(CHUNKED_WRITER, new ChunkedWriteHandler());
                            p.addLast(OWNER, new OwnerHandler(node));
                        }
                    });
            ProblemJson.prepare(); // before the first client: a problem rendered at EMFILE must still work
            InetSocketAddress bind = new InetSocketAddress(InetAddress.getByName(spec.bindHost()), spec.port());
            ChannelFuture bound = bootstrap.bind(bind);
            if (!bound.awaitUninterruptibly(OwnerLimits.BIND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                bound.cancel(false);
                throw new UncheckedIOException(new IOException(
                        "bind " + bind + ": no answer within " + OwnerLimits.BIND_TIMEOUT.toMillis() + " ms"));
            }
            if (!bound.isSuccess()) {
                Throwable cause = bound.cause();
                throw new UncheckedIOException(
                        cause instanceof IOException e ? e : new IOException("bind " + bind + " failed", cause));
            }
            long tickMillis = OwnerLimits.TICK_INTERVAL.toMillis();
            ScheduledFuture<?> ticker =
                    workers.next().scheduleAtFixedRate(() -> tick(node), tickMillis, tickMillis, TimeUnit.MILLISECONDS);
            ScheduledFuture<?> routeRefresher = null;
            if (redis != null) {
                // the routes of the keys this node took, kept in L2 for as long as it holds them
                long refreshMillis = spec.routeRefresh().toMillis();
                routeRefresher = workers.next()
                        .scheduleAtFixedRate(
                                node::refreshOwnRoutes, refreshMillis, refreshMillis, TimeUnit.MILLISECONDS);
            }
            ReferenceOwner owner = new ReferenceOwner(
                    node, boss, workers, bound.channel(), channels, ticker, routeRefresher, ownedDataDir);
            log.info(
                    "{} listening on {}:{} ({}, ring {} at epoch {}, data {})",
                    spec.nodeId(),
                    spec.bindHost(),
                    owner.port,
                    epoll ? "epoll" : "nio",
                    node.guard.ring().members(),
                    node.guard.ring().epoch(),
                    dataDir);
            return owner;
        } catch (IOException | RuntimeException e) {
            shutdown(boss, workers);
            if (redis != null) {
                redis.close();
            }
            if (ownedDataDir != null) {
                deleteTree(ownedDataDir);
            }
            if (e instanceof UnknownHostException u) {
                throw new UncheckedIOException("bindHost: " + spec.bindHost() + " (expected: a resolvable host)", u);
            }
            if (e instanceof IOException io2) {
                throw new UncheckedIOException(io2);
            }
            throw (RuntimeException) e;
        }
    }

    private static HttpDecoderConfig decoderConfig() {
        return new HttpDecoderConfig()
                .setMaxInitialLineLength(OwnerLimits.MAX_INITIAL_LINE_BYTES)
                .setMaxHeaderSize(OwnerLimits.MAX_HEADER_BYTES)
                .setMaxChunkSize(OwnerLimits.MAX_CHUNK_BYTES);
    }

    private static void tick(OwnerNode node) {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("node", node.nodeId);
        data.put("at", node.clock.instant().toString());
        node.events.publish("tick", Json.text(data));
    }

    /** Returns this node's id. */
    public String nodeId() {
        return node.nodeId;
    }

    /** Returns the port the node listens on (the chosen one when the spec said 0). */
    public int port() {
        return port;
    }

    /** Returns {@code http://host:port} to reach the node; loopback when it listens on a wildcard. */
    public URI baseUri() {
        InetSocketAddress local = (InetSocketAddress) serverChannel.localAddress();
        InetAddress address = local.getAddress();
        String host = address.isAnyLocalAddress() ? "127.0.0.1" : address.getHostAddress();
        if (host.indexOf(':') >= 0) {
            host = "[" + host + "]";
        }
        return URI.create("http://" + host + ":" + port);
    }

    /** Returns the spec the node was started with. */
    public OwnerSpec spec() {
        return node.spec;
    }

    /** Returns the node's guard, whose overrides {@code POST /admin/ownership} also sets. */
    public OwnershipGuard guard() {
        return node.guard;
    }

    /** Returns the directory objects are kept in. */
    public Path dataDir() {
        return node.objects.root();
    }

    /**
     * Returns this node's last {@code /api/v1} requests (at most 1000), oldest first, as {@code GET
     * /admin/requests} does.
     */
    public List<RecordedRequest> requests() {
        return node.requests.snapshot();
    }

    /** Returns how many commands this node has executed (replays not counted). */
    public long commandExecutions() {
        return node.commandSequence.get();
    }

    /** Answers whether the node's Redis connection is up; false without Redis. */
    public boolean isRedisConnected() {
        RedisRouting redis = node.redis;
        return redis != null && redis.isConnected();
    }

    /** Returns the shared state, for tests in this package. */
    OwnerNode node() {
        return node;
    }

    /**
     * Stops listening, closes every connection, and stops the event loops and the Redis client;
     * each step waits at most {@link OwnerLimits#CLOSE_TIMEOUT}. A temporary data directory made
     * at start is deleted.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        long timeout = OwnerLimits.CLOSE_TIMEOUT.toMillis();
        ticker.cancel(false);
        ScheduledFuture<?> refresher = routeRefresher;
        if (refresher != null) {
            refresher.cancel(false);
        }
        serverChannel.close().awaitUninterruptibly(timeout, TimeUnit.MILLISECONDS);
        channels.close().awaitUninterruptibly(timeout, TimeUnit.MILLISECONDS);
        shutdown(boss, workers);
        RedisRouting redis = node.redis;
        if (redis != null) {
            redis.close();
        }
        if (ownedDataDir != null) {
            deleteTree(ownedDataDir);
        }
        log.info("{} closed", node.nodeId);
    }

    private static void shutdown(EventLoopGroup boss, EventLoopGroup workers) {
        Duration timeout = OwnerLimits.CLOSE_TIMEOUT;
        var b = boss.shutdownGracefully(0, timeout.toMillis(), TimeUnit.MILLISECONDS);
        var w = workers.shutdownGracefully(0, timeout.toMillis(), TimeUnit.MILLISECONDS);
        b.awaitUninterruptibly(timeout.toMillis(), TimeUnit.MILLISECONDS);
        w.awaitUninterruptibly(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static void deleteTree(Path root) {
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, @Nullable IOException e) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            log.debug("could not delete {}: {}", root, e.toString());
        }
    }

    @Override
    public String toString() {
        return "ReferenceOwner{" + node.nodeId + " at " + baseUri() + "}";
    }
}
