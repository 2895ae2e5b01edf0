package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The Redis side of routing for one process: one Lettuce client (one I/O thread), the L2 {@link
 * RedisRoutingCache} and, once a resolver exists, its {@link RoutingInvalidationSubscriber}.
 *
 * <pre>{@code
 * RedisRouting redis = RedisRouting.connect(uri, cellId, l2Ttl, l2Timeout);
 * WaterfallRoutingResolver resolver = WaterfallRoutingResolver.builder(cellId, ring).l2(redis.cache()).build();
 * redis.subscribe(resolver);
 * }</pre>
 *
 * <p>The same client serves the cell's {@link UplinkHolders} ({@link #uplinkHolders}), over a
 * connection of its own.
 *
 * <p>Nothing here waits for Redis: connections are made in the background, and a process whose
 * Redis is down routes from the ring until it is back.
 */
public final class RedisRouting implements AutoCloseable {
    /** Longest wait for a TCP connect to Redis. */
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(1);

    /**
     * TCP keepalive on the Redis connections: first probe after this much silence, then every
     * {@link #KEEPALIVE_INTERVAL}, {@link #KEEPALIVE_PROBES} unanswered ones and the connection is
     * dead (25 s in all), so a Redis host that vanished without a reset is found and reconnected
     * (the kernel's default waits two hours before its first probe). The idle subscriber needs it
     * most: it sends nothing of its own, and would stay "subscribed" to a dead peer.
     */
    static final Duration KEEPALIVE_IDLE = Duration.ofSeconds(10);

    /** Between two keepalive probes. */
    static final Duration KEEPALIVE_INTERVAL = Duration.ofSeconds(5);

    /** Unanswered keepalive probes that end a connection. */
    static final int KEEPALIVE_PROBES = 3;

    /**
     * {@code TCP_USER_TIMEOUT}: the longest written bytes may go unacknowledged before the kernel
     * ends the connection (its default retransmits for about 15 minutes), so commands to a vanished
     * host fail the connection, and Lettuce reconnects, within this, not one command timeout at a time.
     */
    static final Duration TCP_USER_TIMEOUT = Duration.ofSeconds(15);

    /** Lettuce's reconnect delay after a lost connection: from this, doubling... */
    static final Duration RECONNECT_MIN = Duration.ofMillis(100);

    /** ...up to this. */
    static final Duration RECONNECT_MAX = Duration.ofSeconds(5);

    /** How long {@link #close()} waits for the client's threads to stop. */
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(2);

    /**
     * The quiet period of the client's event loops at {@link #close()}: a loop stops only after
     * this long with no new task. With none, Netty stops a loop right after one pass over its tasks,
     * dropping the tasks those queued, such as the unregistration of a reconnect's channel that
     * releases Lettuce's read buffer (a leak PARANOID detection reported once in CI). Lettuce's own
     * default is 2 s; the shutdown is not awaited, so this costs {@code close()} nothing.
     */
    static final Duration SHUTDOWN_QUIET = Duration.ofMillis(100);

    /**
     * Longest wait of {@link #watchRing} for the first read of the published ring, so that a
     * process starts on it (Envoy's {@code initial_fetch_timeout}): a connect and a command. A
     * first connect that fails ends the wait at once.
     */
    public static final Duration INITIAL_RING_FETCH = CONNECT_TIMEOUT.plus(Duration.ofSeconds(1));

    private final ClientResources resources;
    private final RedisClient client;
    private final RedisURI uri;
    private final RedisRoutingCache cache;
    private final String cellId;
    private volatile @Nullable RoutingInvalidationSubscriber subscriber;
    private @Nullable UplinkHolders holders; // guarded by this
    private @Nullable RingWatcher ringWatcher; // guarded by this

    private RedisRouting(String uri, String cellId, Duration ttl, Duration commandTimeout) {
        this.uri = RedisURI.create(requireNonNull(uri, "uri"));
        if (commandTimeout.isNegative() || commandTimeout.isZero()) {
            throw new IllegalArgumentException("timeout: " + commandTimeout + " (expected: > 0)");
        }
        // The handshake's bound (HELLO, AUTH, SELECT), which Lettuce takes from the URI: 60 s by
        // default, so a Redis that accepts and never answers (a paused container, a proxy whose
        // backend is down) held each attempt a minute (found by a review).
        this.uri.setTimeout(CONNECT_TIMEOUT.plus(commandTimeout));
        this.resources = ClientResources.builder()
                .ioThreadPoolSize(1)
                .computationThreadPoolSize(1)
                .reconnectDelay(Delay.exponential(RECONNECT_MIN, RECONNECT_MAX, 2, TimeUnit.MILLISECONDS))
                .build();
        this.client = RedisClient.create(resources);
        client.setOptions(ClientOptions.builder()
                .autoReconnect(true)
                .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
                .timeoutOptions(TimeoutOptions.enabled(commandTimeout))
                .socketOptions(SocketOptions.builder()
                        .connectTimeout(CONNECT_TIMEOUT)
                        .keepAlive(SocketOptions.KeepAliveOptions.builder()
                                .enable()
                                .idle(KEEPALIVE_IDLE)
                                .interval(KEEPALIVE_INTERVAL)
                                .count(KEEPALIVE_PROBES)
                                .build())
                        .tcpUserTimeout(SocketOptions.TcpUserTimeoutOptions.builder()
                                .enable()
                                .tcpUserTimeout(TCP_USER_TIMEOUT)
                                .build())
                        .build())
                .build());
        this.cache = RedisRoutingCache.start(client, this.uri, cellId, ttl);
        this.cellId = cellId;
    }

    /**
     * Starts connecting to Redis for a cell.
     *
     * @param uri {@code redis://host:port} ({@code spector.routing.redis.uri})
     * @param l2Ttl an entry's time to live ({@code spector.routing.redis.ttl-seconds})
     * @param commandTimeout a command's longest wait ({@code spector.routing.redis.timeout-ms})
     */
    public static RedisRouting connect(String uri, String cellId, Duration l2Ttl, Duration commandTimeout) {
        return new RedisRouting(uri, cellId, l2Ttl, commandTimeout);
    }

    /** Returns L2, for {@link WaterfallRoutingResolver.Builder#l2} and for publishing an owner's moves. */
    public RoutingCache cache() {
        return cache;
    }

    /** Starts the invalidation subscription that feeds a resolver (once). */
    public synchronized void subscribe(WaterfallRoutingResolver resolver) {
        if (subscriber != null) {
            throw new IllegalStateException("already subscribed");
        }
        subscriber = RoutingInvalidationSubscriber.start(client, uri, resolver);
    }

    /**
     * Starts following the cell's published ring ({@link PublishedRing}) and waits at most {@link
     * #INITIAL_RING_FETCH} for its first read (once). Each ring decoded from Redis is offered to
     * {@code sink}, which answers whether it took it; a malformed one is counted in {@code
     * metrics} and ignored. The sink runs on Lettuce's event loop and must not block.
     */
    public void watchRing(Predicate<CellRing> sink, RingMetrics metrics) {
        RingWatcher w;
        synchronized (this) {
            if (ringWatcher != null) {
                throw new IllegalStateException("already watching the ring");
            }
            w = RingWatcher.start(client, uri, cellId, sink, metrics);
            ringWatcher = w;
        }
        w.awaitFirstRead(INITIAL_RING_FETCH);
    }

    /** Returns the ring watcher, or null before {@link #watchRing} (for tests in this package). */
    synchronized @Nullable RingWatcher ringWatcher() {
        return ringWatcher;
    }

    /**
     * Returns the cell's registry of uplink holders, made on the first call (it connects in the
     * background), reading time from {@code clock}; {@link #close()} closes it.
     */
    public synchronized UplinkHolders uplinkHolders(Clock clock) {
        UplinkHolders h = holders;
        if (h == null) {
            h = UplinkHolders.start(client, uri, cellId, clock);
            holders = h;
        }
        return h;
    }

    /** Answers whether L2's connection is up. */
    public boolean isConnected() {
        return cache.isConnected();
    }

    /** Answers whether the invalidation subscription is confirmed. */
    public boolean isSubscribed() {
        RoutingInvalidationSubscriber s = subscriber;
        return s != null && s.isSubscribed();
    }

    @Override
    public void close() {
        RoutingInvalidationSubscriber s = subscriber;
        if (s != null) {
            s.close();
        }
        UplinkHolders h;
        RingWatcher w;
        synchronized (this) {
            h = holders;
            w = ringWatcher;
        }
        if (w != null) {
            w.close();
        }
        if (h != null) {
            h.close();
        }
        cache.close();
        client.shutdown(Duration.ZERO, SHUTDOWN_TIMEOUT);
        var unused = resources.shutdown(SHUTDOWN_QUIET.toMillis(), SHUTDOWN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }
}
