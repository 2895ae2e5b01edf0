package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * L2 on Redis through Lettuce's asynchronous API. An entry is a hash {@code
 * spector:{cell}:route:{ringKey}} with fields {@code owner}, {@code epoch} and {@code fence} and a
 * time to live; writes go through a script that refuses an entry older than the one held, so the
 * forward-only rule holds across every gateway of the cell; an owner's own write also raises the
 * cell's epoch floor ({@link PublishedRing}) to the entry's epoch ({@link #putOwned}). Invalidations are published on {@code
 * spector:{cell}:route-invalidations}.
 *
 * <p>Every command is bounded by the client's command timeout ({@link RedisRouting}); while the
 * connection is down, commands fail at once instead of queueing, so routing falls to the ring
 * without waiting.
 */
final class RedisRoutingCache implements RoutingCache, AutoCloseable {
    /** Refuses an entry (KEYS[1]) older than the held one (returns 0); stores it with a TTL otherwise. */
    private static final String PUT_ENTRY = """
            local held = redis.call('HMGET', KEYS[1], 'epoch', 'fence')
            if held[1] then
              local e, f = tonumber(held[1]), tonumber(held[2] or '0')
              local ne, nf = tonumber(ARGV[2]), tonumber(ARGV[3])
              if ne < e or (ne == e and nf < f) then return 0 end
            end
            redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'epoch', ARGV[2], 'fence', ARGV[3])
            redis.call('PEXPIRE', KEYS[1], ARGV[4])
            """;

    /** {@link #PUT_ENTRY}, returning 1 when stored: a gateway's write of what an owner's 421 told it. */
    static final String PUT_IF_NOT_OLDER = PUT_ENTRY + "return 1\n";

    /**
     * {@link #PUT_ENTRY}, and, when stored, raises the cell's epoch floor (KEYS[2], {@link
     * PublishedRing#floorKey}, no TTL) to the entry's epoch in the same call, so no ring can be
     * published at an epoch that does not outrank it. An owner's write of its own route (a move's,
     * an override's) only: a gateway never raises the floor, so no owner's 421 (a buggy one's
     * epoch of 2^63-1) can stop every later ring publish (found by a review). The floor is
     * compared as text (length, then chars), as the publish compares it. Returns 1 when stored.
     */
    static final String PUT_OWNED = PUT_ENTRY + """
            local floor = redis.call('GET', KEYS[2])
            local n = ARGV[2]
            if not floor or #n > #floor or (#n == #floor and n > floor) then
              redis.call('SET', KEYS[2], n)
            end
            return 1
            """;

    private final String keyPrefix;
    private final String floorKey;
    private final String channel;
    private final long ttlMillis;
    private final RedisConnectLoop<StatefulRedisConnection<String, String>> loop;

    private RedisRoutingCache(RedisClient client, RedisURI uri, String cellId, Duration ttl) {
        RoutingKey.checkName("cellId", cellId);
        if (ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("ttl: " + ttl + " (expected: > 0)");
        }
        this.keyPrefix = "spector:" + cellId + ":route:";
        this.floorKey = PublishedRing.floorKey(cellId);
        this.channel = channel(cellId);
        this.ttlMillis = ttl.toMillis();
        this.loop = RedisConnectLoop.commands("routing-cache", client, uri);
    }

    /** Creates the cache and starts connecting in the background; it fails fast until connected. */
    static RedisRoutingCache start(RedisClient client, RedisURI uri, String cellId, Duration ttl) {
        RedisRoutingCache cache = new RedisRoutingCache(
                requireNonNull(client, "client"), requireNonNull(uri, "uri"), cellId, requireNonNull(ttl, "ttl"));
        cache.loop.start();
        return cache;
    }

    /** Returns the cell's invalidation channel name. */
    static String channel(String cellId) {
        return "spector:" + cellId + ":route-invalidations";
    }

    /** Answers whether the connection is established and open. */
    boolean isConnected() {
        StatefulRedisConnection<String, String> c = loop.connection();
        return c != null && c.isOpen();
    }

    @Override
    public CompletionStage<Optional<RouteEntry>> get(RoutingKey key) {
        StatefulRedisConnection<String, String> c = loop.connection();
        if (c == null) {
            return notConnected();
        }
        return c.async()
                .hmget(keyPrefix + key.ringKey(), "owner", "epoch", "fence")
                .thenApply(RedisRoutingCache::parse);
    }

    @Override
    public CompletionStage<Boolean> putIfNotOlder(RoutingKey key, RouteEntry entry) {
        return put(PUT_IF_NOT_OLDER, key, entry);
    }

    @Override
    public CompletionStage<Boolean> putOwned(RoutingKey key, RouteEntry entry) {
        return put(PUT_OWNED, key, entry);
    }

    private CompletionStage<Boolean> put(String script, RoutingKey key, RouteEntry entry) {
        StatefulRedisConnection<String, String> c = loop.connection();
        if (c == null) {
            return notConnected();
        }
        return c.async()
                .<Long>eval(
                        script,
                        ScriptOutputType.INTEGER,
                        new String[] {keyPrefix + key.ringKey(), floorKey},
                        entry.owner(),
                        Long.toString(entry.epoch()),
                        Long.toString(entry.fence()),
                        Long.toString(ttlMillis))
                .thenApply(stored -> stored != null && stored == 1L);
    }

    @Override
    public CompletionStage<Long> publish(RouteInvalidation invalidation) {
        StatefulRedisConnection<String, String> c = loop.connection();
        if (c == null) {
            return notConnected();
        }
        return c.async().publish(channel, InvalidationCodec.encode(invalidation));
    }

    @Override
    public void close() {
        loop.close();
    }

    private static Optional<RouteEntry> parse(List<KeyValue<String, String>> fields) {
        if (fields.size() != 3 || !fields.get(0).hasValue() || !fields.get(1).hasValue()) {
            return Optional.empty();
        }
        String owner = fields.get(0).getValue();
        long epoch = Long.parseLong(fields.get(1).getValue());
        long fence = fields.get(2).hasValue() ? Long.parseLong(fields.get(2).getValue()) : RouteEntry.NO_FENCE;
        return Optional.of(new RouteEntry(owner, epoch, fence));
    }

    private static <T> CompletionStage<T> notConnected() {
        return CompletableFuture.failedFuture(new RedisConnectionException("not connected to Redis yet"));
    }
}
