package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * Which gateway replicas of a cell hold uplinks of which worker, in Redis, so that a replica
 * without a link to a worker can hand a relay to one with a link (the peer hop).
 *
 * <p>Data: one hash per worker, {@code spector:<cell>:uplinks:<workerId>}. A field is a holding
 * replica's peer address ({@code host:port}), its value {@code {"links":N,"until":<epoch ms>}}: N
 * links, believed until {@code until}.
 *
 * <pre>
 *   spector:cell-a:uplinks:w1
 *     10.0.0.7:7090  {"links":2,"until":1767225610000}
 *     10.0.0.8:7090  {"links":1,"until":1767225611500}
 *     10.0.0.9:7090  {"links":0,"until":1767225602000}      moving: 10.0.0.9 is draining
 * </pre>
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Writers.</b> A replica {@link #put puts} its field when its link count for the worker
 *       changes and again every {@link #REFRESH_INTERVAL}, with {@code until} = now + {@link
 *       #FIELD_TTL}, and sets the key's expiry to {@link #KEY_TTL} (so the hash of a worker no
 *       replica refreshes vanishes); it {@link #remove removes} the field when its last link of
 *       the worker closes. Redis 7.0 has no per-field expiry (HEXPIRE came in 7.4), so a field
 *       outlives a replica that died without removing it.
 *   <li><b>Moving.</b> A draining replica instead writes {@link #moving} fields: {@code "links":0},
 *       believed for {@link #MOVING_TTL}. Such a field is no holder; it tells a reader that the
 *       worker's links are being re-dialled (the drain closed them with 1001 Going Away), so a
 *       relay that finds no holder may wait a moment for the new one instead of failing at once.
 *   <li><b>Readers</b> therefore check {@code until} themselves: a field past it, or one that
 *       cannot be read, is not a holder, and the reader deletes it, but only when it still holds
 *       what the reader saw (a script compares first), so a holder's refresh that lands in between
 *       is never lost.
 *   <li><b>Clock skew.</b> {@code until} is written from the writer's clock and read against the
 *       reader's. A reader whose clock runs {@code s} ahead of a writer's sees that writer's fields
 *       expire {@code s} early: past {@link #FIELD_TTL} − {@link #REFRESH_INTERVAL} (7 s) of skew
 *       it deletes live fields, and relays through it to those workers fail 503 until the holder's
 *       next refresh writes its field again (at most {@link #REFRESH_INTERVAL} later), over and
 *       over. A reader {@code s} behind believes a dead replica's field {@code s} longer, and sends
 *       relays to an address that refuses them (503 at once, never a hang). Keep the replicas'
 *       clocks within a second or two (NTP); the peer hop's MAC refuses skew past 30 s anyway.
 *   <li><b>Bounded.</b> Every command has the client's command timeout and fails at once while
 *       the connection is down (no queueing): a replica that cannot read the registry relays to its
 *       own links only.
 * </ul>
 *
 * <p>Thread-safety: safe from any thread; answers complete on Lettuce's I/O thread.
 */
public final class UplinkHolders implements AutoCloseable {
    /** How often a holder writes its fields again. */
    public static final Duration REFRESH_INTERVAL = Duration.ofSeconds(3);

    /** How long a field is believed after it was written: three refreshes and a margin. */
    public static final Duration FIELD_TTL = Duration.ofSeconds(10);

    /** The expiry of a worker's hash, set on every write: a worker no replica refreshes vanishes. */
    public static final Duration KEY_TTL = Duration.ofSeconds(30);

    /** How long a {@link #moving} field is believed: a worker re-dials a drained link well within it. */
    public static final Duration MOVING_TTL = Duration.ofSeconds(2);

    /** The longest value read as a field (a real one is under 50 chars). */
    static final int MAX_VALUE_CHARS = 256;

    /** Sets one field and the key's expiry. */
    static final String PUT = """
            redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
            redis.call('PEXPIRE', KEYS[1], ARGV[3])
            return 1
            """;

    /** Deletes a field only while it holds what the reader saw. Returns 1 or 0. */
    static final String DELETE_IF_UNCHANGED = """
            if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
              return redis.call('HDEL', KEYS[1], ARGV[1])
            end
            return 0
            """;

    private static final ObjectMapper MAPPER = JsonMapper.builder().build();

    private final String keyPrefix;
    private final Clock clock;
    private final RedisConnectLoop<StatefulRedisConnection<String, String>> loop;

    /**
     * One replica that holds links of a worker.
     *
     * @param address the replica's peer address, {@code host:port}
     * @param links how many links of the worker it holds; 0 for a {@link #moving} field
     * @param untilMillis until when (epoch ms, the writer's clock) the entry is believed
     */
    public record Holder(String address, int links, long untilMillis) {
        public Holder {
            requireNonNull(address, "address");
        }

        /** Answers whether this is a draining replica's {@link #moving} field: no holder, links on their way. */
        public boolean moving() {
            return links == 0;
        }
    }

    private UplinkHolders(RedisClient client, RedisURI uri, String cellId, Clock clock) {
        RoutingKey.checkName("cellId", cellId);
        this.keyPrefix = "spector:" + cellId + ":uplinks:";
        this.clock = requireNonNull(clock, "clock");
        this.loop = RedisConnectLoop.commands("uplink-holders", client, uri);
    }

    /** Creates the registry and starts connecting in the background; it fails fast until connected. */
    static UplinkHolders start(RedisClient client, RedisURI uri, String cellId, Clock clock) {
        UplinkHolders h =
                new UplinkHolders(requireNonNull(client, "client"), requireNonNull(uri, "uri"), cellId, clock);
        h.loop.start();
        return h;
    }

    /** Returns the Redis key of a worker's hash. */
    String key(String workerId) {
        return keyPrefix + workerId;
    }

    /** Answers whether the connection is established and open. */
    public boolean isConnected() {
        StatefulRedisConnection<String, String> c = loop.connection();
        return c != null && c.isOpen();
    }

    /**
     * Writes that the replica at {@code address} holds {@code links} (at least 1) links of {@code
     * workerId}, believed for {@link #FIELD_TTL} from now, and sets the hash's expiry to {@link
     * #KEY_TTL}.
     */
    public CompletionStage<Void> put(String workerId, String address, int links) {
        if (links < 1) {
            throw new IllegalArgumentException("links: " + links + " (expected: >= 1; remove() for none)");
        }
        StatefulRedisConnection<String, String> c = loop.connection();
        if (c == null) {
            return notConnected();
        }
        return write(c, workerId, address, links, FIELD_TTL);
    }

    /**
     * Writes that the replica at {@code address} is draining and its links of {@code workerId} are
     * moving: no holder, believed for {@link #MOVING_TTL} from now (the key's expiry as {@link #put}).
     */
    public CompletionStage<Void> moving(String workerId, String address) {
        StatefulRedisConnection<String, String> c = loop.connection();
        if (c == null) {
            return notConnected();
        }
        return write(c, workerId, address, 0, MOVING_TTL);
    }

    private CompletionStage<Void> write(
            StatefulRedisConnection<String, String> c, String workerId, String address, int links, Duration ttl) {
        String value = "{\"links\":" + links + ",\"until\":" + (clock.millis() + ttl.toMillis()) + "}";
        return c.async()
                .<Long>eval(
                        PUT,
                        ScriptOutputType.INTEGER,
                        new String[] {key(workerId)},
                        requireNonNull(address, "address"),
                        value,
                        Long.toString(KEY_TTL.toMillis()))
                .thenApply(done -> null);
    }

    /** Removes the replica at {@code address} from {@code workerId}'s holders. */
    public CompletionStage<Void> remove(String workerId, String address) {
        StatefulRedisConnection<String, String> c = loop.connection();
        if (c == null) {
            return notConnected();
        }
        return c.async().hdel(key(workerId), requireNonNull(address, "address")).thenApply(n -> null);
    }

    /**
     * Returns the replicas that hold links of {@code workerId} now, by this process's clock, and the
     * live {@link Holder#moving} fields; fields past their {@code until}, or unreadable, are left out
     * and deleted (if unchanged meanwhile).
     */
    public CompletionStage<List<Holder>> holders(String workerId) {
        StatefulRedisConnection<String, String> c = loop.connection();
        if (c == null) {
            return notConnected();
        }
        String key = key(workerId);
        return c.async().hgetall(key).thenApply(fields -> {
            long now = clock.millis();
            List<Holder> live = new ArrayList<>(fields.size());
            for (Map.Entry<String, String> f : fields.entrySet()) {
                Holder h = parse(f.getKey(), f.getValue());
                if (h != null && h.untilMillis() >= now) {
                    live.add(h);
                } else {
                    var unused = c.async()
                            .<Long>eval(
                                    DELETE_IF_UNCHANGED,
                                    ScriptOutputType.INTEGER,
                                    new String[] {key},
                                    f.getKey(),
                                    f.getValue()); // best effort: the next reader tries again
                }
            }
            return List.copyOf(live);
        });
    }

    /** Parses a field; null when it is not one this class writes. */
    static @Nullable Holder parse(String address, @Nullable String value) {
        if (value == null || value.length() > MAX_VALUE_CHARS || address.isEmpty()) {
            return null;
        }
        try {
            JsonNode n = MAPPER.readTree(value);
            JsonNode links = n == null ? null : n.get("links");
            JsonNode until = n == null ? null : n.get("until");
            if (links == null
                    || until == null
                    || !links.isIntegralNumber()
                    || !until.isIntegralNumber()
                    || !links.canConvertToInt()
                    || !until.canConvertToLong()) {
                return null;
            }
            int count = links.intValue();
            return count < 0 ? null : new Holder(address, count, until.longValue());
        } catch (java.io.IOException | RuntimeException e) {
            return null;
        }
    }

    @Override
    public void close() {
        loop.close();
    }

    private static <T> CompletionStage<T> notConnected() {
        return CompletableFuture.failedFuture(new RedisConnectionException("not connected to Redis yet"));
    }
}
