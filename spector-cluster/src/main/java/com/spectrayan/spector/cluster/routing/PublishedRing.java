package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.resource.ClientResources;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * The cell's ring as published in Redis: the names every process of a cell agrees on, and the
 * one-shot publish and read of {@code spector ring publish} and {@code spector ring show}.
 *
 * <pre>
 * spector:{cell}:ring                  hash: epoch, members (see RingCodec), published-at (epoch ms)
 * spector:{cell}:ring-announcements    channel: the epoch just published, as text
 * spector:{cell}:epoch-floor           string: the highest epoch an owner gave a key (a move, an
 *                                      override), written with the key's L2 entry (RedisRoutingCache)
 * </pre>
 *
 * <p>A publish is one Lua script, so it is atomic against every other publisher and every L2
 * write: it refuses an epoch not higher than the stored one or than the epoch floor, writes the
 * three fields, and announces the epoch on the channel. The floor exists because an owner's
 * override outranks a ring at its own epoch ({@code OwnershipGuard}, and gateways use an L2 entry
 * not older than their ring): a ring published at a moved key's epoch, mapping it elsewhere, would
 * leave the key two owners that both serve it. A ring above the floor outranks every override. Subscribers treat an announcement as a hint and read the hash again ({@code
 * RingWatcher}); the hash is the truth, so a lost or forged announcement costs at most a read.
 *
 * <p>Thread-safe: the methods share nothing; each opens and closes its own client.
 */
public final class PublishedRing {
    /** Longest wait of {@link #publish} and {@link #read}: the connect and the command together. */
    public static final Duration TIMEOUT = Duration.ofSeconds(5);

    /**
     * Writes the ring (KEYS[1]) unless the stored epoch or the epoch floor (KEYS[2]) is not lower;
     * announces it. Returns {@code {1, receivers}}, {@code {0, heldEpoch}}, {@code {2, floor}}, or
     * {@code {-1, value}} for a stored epoch or floor that is not a canonical decimal. Epochs are
     * compared as text (length, then chars), never as Lua numbers, which are doubles and lose
     * epochs above 2^53.
     */
    static final String PUBLISH_SCRIPT = """
            local n = ARGV[1]
            local held = redis.call('HGET', KEYS[1], 'epoch')
            if held then
              if not string.match(held, '^[1-9]%d*$') and held ~= '0' then return {-1, held} end
              if #n < #held or (#n == #held and n <= held) then return {0, held} end
            end
            local floor = redis.call('GET', KEYS[2])
            if floor then
              if not string.match(floor, '^[1-9]%d*$') and floor ~= '0' then return {-1, floor} end
              if #n < #floor or (#n == #floor and n <= floor) then return {2, floor} end
            end
            redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'members', ARGV[2], 'published-at', ARGV[3])
            return {1, redis.call('PUBLISH', ARGV[4], ARGV[1])}
            """;

    private PublishedRing() {}

    /** Returns the key of the cell's ring hash: {@code spector:{cell}:ring}. */
    public static String key(String cellId) {
        return "spector:" + RoutingKey.checkName("cellId", cellId) + ":ring";
    }

    /**
     * Returns the key of the cell's epoch floor: {@code spector:{cell}:epoch-floor}, the highest
     * epoch an owner gave one of the cell's keys; a ring is published only above it.
     */
    public static String floorKey(String cellId) {
        return "spector:" + RoutingKey.checkName("cellId", cellId) + ":epoch-floor";
    }

    /** Returns the cell's announcement channel: {@code spector:{cell}:ring-announcements}. */
    public static String channel(String cellId) {
        return "spector:" + RoutingKey.checkName("cellId", cellId) + ":ring-announcements";
    }

    /**
     * What a read found: the ring and when it was published (null when the field is missing or
     * malformed: it is informational).
     */
    public record Stored(CellRing ring, @Nullable Instant publishedAt) {
        public Stored {
            requireNonNull(ring, "ring");
        }
    }

    /**
     * Publishes a ring for a cell and returns how many subscribers received the announcement.
     *
     * @param uri {@code redis://host:port}
     * @throws SpectorException BAD_REQUEST when the stored epoch, or the epoch floor a namespace
     *     move or override raised ({@link #floorKey}), is not lower than the ring's (the message
     *     names both), or either is not a decimal; GATEWAY_ROUTING_FAILURE when Redis does not
     *     answer within {@link #TIMEOUT}
     */
    public static long publish(String uri, String cellId, CellRing ring, Clock clock) {
        requireNonNull(ring, "ring");
        String key = key(cellId);
        String channel = channel(cellId);
        List<Object> reply = withConnection(
                uri,
                c -> c.sync()
                        .eval(
                                PUBLISH_SCRIPT,
                                ScriptOutputType.MULTI,
                                new String[] {key, floorKey(cellId)},
                                RingCodec.epoch(ring),
                                RingCodec.members(ring),
                                Long.toString(clock.millis()),
                                channel));
        long outcome = reply.isEmpty() || !(reply.get(0) instanceof Long l) ? -2 : l;
        Object detail = reply.size() > 1 ? reply.get(1) : "";
        if (outcome == 1 && detail instanceof Long receivers) {
            return receivers;
        }
        if (outcome == 0) {
            throw SpectorException.badRequest(
                    "epoch",
                    ring.epoch() + " (expected: > " + detail + ", the epoch of the ring published for cell " + cellId
                            + "; epochs only move forward)");
        }
        if (outcome == 2) {
            throw SpectorException.badRequest(
                    "epoch",
                    ring.epoch() + " (expected: > " + detail + ", the epoch a namespace move or ownership override"
                            + " took in cell " + cellId + " (" + floorKey(cellId) + "): a ring at an epoch no higher"
                            + " would leave a moved namespace two owners; publish at " + above(detail) + " or higher)");
        }
        if (outcome == -1) {
            throw SpectorException.badRequest(
                    "epoch",
                    "the stored epoch of " + key + " or " + floorKey(cellId) + " is '" + detail
                            + "', not a decimal (expected: a ring written by spector ring publish; delete the key to"
                            + " start over)");
        }
        throw SpectorException.of(ErrorCode.INTERNAL, "unexpected reply to the publish script: " + reply);
    }

    /** Returns the epoch one above a stored decimal, as text ("a higher epoch" past the long range). */
    private static String above(Object decimal) {
        try {
            return Long.toString(Math.addExact(Long.parseLong(String.valueOf(decimal)), 1));
        } catch (RuntimeException e) {
            return "a higher epoch";
        }
    }

    /**
     * Reads a cell's published ring, or empty when none is published.
     *
     * @throws SpectorException BAD_REQUEST when the stored ring is malformed (the message says
     *     why); GATEWAY_ROUTING_FAILURE when Redis does not answer within {@link #TIMEOUT}
     */
    public static Optional<Stored> read(String uri, String cellId) {
        String key = key(cellId);
        List<KeyValue<String, String>> fields =
                withConnection(uri, c -> c.sync().hmget(key, "epoch", "members", "published-at"));
        return decode(fields);
    }

    /** Decodes an HMGET of {@code epoch, members, published-at}; empty when nothing is stored. */
    static Optional<Stored> decode(List<KeyValue<String, String>> fields) {
        String epoch = value(fields, 0);
        String members = value(fields, 1);
        if (epoch == null && members == null) {
            return Optional.empty();
        }
        CellRing ring = RingCodec.decode(epoch, members);
        Instant at = null;
        String published = value(fields, 2);
        if (published != null && published.length() <= RingCodec.MAX_EPOCH_CHARS) {
            try {
                at = Instant.ofEpochMilli(Long.parseLong(published));
            } catch (RuntimeException e) {
                at = null; // informational only
            }
        }
        return Optional.of(new Stored(ring, at));
    }

    private static @Nullable String value(List<KeyValue<String, String>> fields, int i) {
        return i < fields.size() && fields.get(i).hasValue() ? fields.get(i).getValue() : null;
    }

    private static <T> T withConnection(String uri, Function<StatefulRedisConnection<String, String>, T> command) {
        RedisURI redisUri = RedisURI.create(requireNonNull(uri, "uri"));
        redisUri.setTimeout(TIMEOUT);
        ClientResources resources = ClientResources.builder()
                .ioThreadPoolSize(1)
                .computationThreadPoolSize(1)
                .build();
        RedisClient client = RedisClient.create(resources);
        client.setOptions(ClientOptions.builder()
                .autoReconnect(false)
                .timeoutOptions(TimeoutOptions.enabled(TIMEOUT))
                .socketOptions(SocketOptions.builder()
                        .connectTimeout(RedisRouting.CONNECT_TIMEOUT)
                        .build())
                .build());
        try (StatefulRedisConnection<String, String> c = client.connect(StringCodec.UTF8, redisUri)) {
            return command.apply(c);
        } catch (SpectorException e) {
            throw e;
        } catch (RuntimeException e) {
            throw SpectorException.of(
                    ErrorCode.GATEWAY_ROUTING_FAILURE,
                    "Redis at " + redacted(redisUri) + " did not answer: " + e.getMessage(),
                    Map.of("reason", "redis-unavailable"),
                    e);
        } finally {
            client.shutdown(Duration.ZERO, RedisRouting.SHUTDOWN_TIMEOUT);
            var unused = resources.shutdown(
                    RedisRouting.SHUTDOWN_QUIET.toMillis(),
                    RedisRouting.SHUTDOWN_TIMEOUT.toMillis(),
                    TimeUnit.MILLISECONDS);
        }
    }

    private static String redacted(RedisURI uri) {
        return (uri.isSsl() ? "rediss://" : "redis://") + uri.getHost() + ":" + uri.getPort();
    }
}
