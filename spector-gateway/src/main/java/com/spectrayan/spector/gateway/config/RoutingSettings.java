package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.gateway.ForwarderSpec;
import com.spectrayan.spector.cluster.gateway.TransportSpec;
import com.spectrayan.spector.contract.Limits;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The {@code spector.routing.*} section: the L1 cache ({@code caffeine}), the L2 cache and its
 * invalidation channel ({@code redis}), and the forwarder's limits ({@code gateway}).
 *
 * <p>{@link GatewaySettings#load} builds it and has validated every value; the constructors only
 * refuse nulls. {@link Specs#forwarder} maps {@link #gateway()} onto the forwarder.
 *
 * @param caffeine {@code spector.routing.caffeine.*}
 * @param redis {@code spector.routing.redis.*}
 * @param gateway {@code spector.routing.gateway.*}
 */
public record RoutingSettings(Caffeine caffeine, Redis redis, Gateway gateway) {

    /** The largest request body cap, {@code spector.routing.gateway.max-buffered-body-bytes}: 1 GiB. */
    static final long MAX_BODY_BYTES_LIMIT = 1024L * 1024 * 1024;

    private static final Set<String> REDIS_SCHEMES =
            Set.of("redis", "rediss", "redis-sentinel", "rediss-sentinel", "redis-socket");

    /** Refuses nulls. */
    public RoutingSettings {
        requireNonNull(caffeine, "caffeine");
        requireNonNull(redis, "redis");
        requireNonNull(gateway, "gateway");
    }

    /**
     * The {@code spector.routing.caffeine.*} keys: the in-process L1 cache.
     *
     * @param ttl {@code ttl-seconds}, L1's time to live
     * @param maxSize {@code max-size}, L1's entries
     */
    public record Caffeine(Duration ttl, long maxSize) {
        /** Refuses nulls. */
        public Caffeine {
            requireNonNull(ttl, "ttl");
        }
    }

    /**
     * The {@code spector.routing.redis.*} keys: the shared L2 cache and the invalidation channel.
     * {@link #toString()} redacts a password in the URI.
     *
     * @param enabled {@code enabled}: whether L2 and the invalidation channel are used
     * @param uri {@code uri}; it may hold a password, so never log it as is
     * @param ttl {@code ttl-seconds}, L2's time to live
     * @param timeout {@code timeout-ms}, the longest wait for one Redis command
     */
    public record Redis(boolean enabled, URI uri, Duration ttl, Duration timeout) {
        /** Refuses nulls. */
        public Redis {
            requireNonNull(uri, "uri");
            requireNonNull(ttl, "ttl");
            requireNonNull(timeout, "timeout");
        }

        /** Returns {@link #uri()} with its user info, which may hold a password, redacted: the form to log. */
        public String redactedUri() {
            return SettingsReader.redactUserInfo(uri.toString());
        }

        @Override
        public String toString() {
            return "Redis[enabled=" + enabled + ", uri=" + redactedUri() + ", ttl=" + Durations.format(ttl)
                    + ", timeout=" + Durations.format(timeout) + "]";
        }
    }

    /** The most {@code owner-connections}: past it a gateway runs out of file descriptors first. */
    static final int MAX_OWNER_CONNECTIONS = 65_536;

    /**
     * The {@code spector.routing.gateway.*} keys: the forwarder's limits.
     *
     * @param retryMax {@code retry-max}, the retargets after an owner's 421
     * @param maxBufferedBodyBytes {@code max-buffered-body-bytes}, the request body cap
     * @param replayBufferBytes {@code replay-buffer-bytes}, the body kept for a replay, at most the cap
     * @param requestBufferBytes {@code request-buffer-bytes}: a body declared at most this long is
     *     read whole before its owner connection is taken (capped by {@code replayBufferBytes}, the
     *     copy it is read into; 0: every body streams)
     * @param ownerTimeout {@code owner-timeout}, the wait for an owner's response head
     * @param streamIdleTimeout {@code stream-idle-timeout}, the quiet time that closes an SSE stream
     * @param ownerConnections {@code owner-connections}: connections to one owner per event loop
     *     (an SSE stream holds one for its life when {@code owner-streams} are taken)
     * @param ownerStreams {@code owner-streams}: event streams to one owner per event loop that do
     *     not count among its {@code owner-connections} (0: every stream counts)
     * @param ownerDownAfter {@code owner-down-after}: failed attempts in a row that mark an owner
     *     down (0: passive health off)
     * @param ownerDownBackoff {@code owner-down-backoff}: how long an owner first stays down
     * @param ownerDownBackoffMax {@code owner-down-backoff-max}: the longest, doubling per failed probe
     * @param handoffHold {@code handoff-hold}: the longest a request waits while its namespace is
     *     handed to another owner (0: none waits)
     * @param handoffMaxHeld {@code handoff-max-held}: the requests held at once by this gateway
     * @param handoffMaxHeldBytes {@code handoff-max-held-bytes}: their body bytes at once
     */
    public record Gateway(
            int retryMax,
            long maxBufferedBodyBytes,
            long replayBufferBytes,
            long requestBufferBytes,
            Duration ownerTimeout,
            Duration streamIdleTimeout,
            int ownerConnections,
            int ownerStreams,
            int ownerDownAfter,
            Duration ownerDownBackoff,
            Duration ownerDownBackoffMax,
            Duration handoffHold,
            int handoffMaxHeld,
            long handoffMaxHeldBytes) {
        /** Refuses nulls. */
        public Gateway {
            requireNonNull(handoffHold, "handoffHold");
            requireNonNull(ownerTimeout, "ownerTimeout");
            requireNonNull(streamIdleTimeout, "streamIdleTimeout");
            requireNonNull(ownerDownBackoff, "ownerDownBackoff");
            requireNonNull(ownerDownBackoffMax, "ownerDownBackoffMax");
        }
    }

    /** Reads the section, recording every problem in {@code r}. */
    static RoutingSettings read(SettingsReader r) {
        Caffeine caffeine = new Caffeine(
                r.positive(Keys.CAFFEINE_TTL, ChronoUnit.SECONDS, "60 (seconds) or 1m"),
                r.integer(Keys.CAFFEINE_MAX_SIZE, 1, Long.MAX_VALUE, "an integer >= 1"));
        Redis redis = new Redis(
                r.bool(Keys.REDIS_ENABLED),
                redisUri(r),
                r.positive(Keys.REDIS_TTL, ChronoUnit.SECONDS, "30 (seconds) or 30s"),
                r.positive(Keys.REDIS_TIMEOUT, ChronoUnit.MILLIS, "200ms or 200 (ms)"));
        int retryMax = (int) r.integer(
                Keys.RETRY_MAX,
                Limits.RETARGETS.min(),
                Limits.RETARGETS.max(),
                "an integer in " + Limits.RETARGETS.min() + ".." + Limits.RETARGETS.max()
                        + ", the retargets after an owner's 421");
        long maxBody = r.integer(
                Keys.MAX_BODY, 1, MAX_BODY_BYTES_LIMIT, "an integer in 1.." + MAX_BODY_BYTES_LIMIT + " bytes");
        long replay = r.integer(
                Keys.REPLAY_BUFFER, 0, maxBody, "an integer in 0.." + maxBody + " bytes, at most " + Keys.MAX_BODY);
        Gateway gateway = new Gateway(
                retryMax,
                maxBody,
                replay,
                r.integer(
                        Keys.REQUEST_BUFFER,
                        0,
                        MAX_BODY_BYTES_LIMIT,
                        "an integer in 0.." + MAX_BODY_BYTES_LIMIT + " bytes (0: every body streams)"),
                r.positive(Keys.OWNER_TIMEOUT, null, "10s"),
                r.positive(Keys.STREAM_IDLE_TIMEOUT, null, "5m"),
                (int) r.integer(
                        Keys.OWNER_CONNECTIONS,
                        1,
                        MAX_OWNER_CONNECTIONS,
                        "an integer in 1.." + MAX_OWNER_CONNECTIONS + ", connections per owner per event loop"),
                (int) r.integer(
                        Keys.OWNER_STREAMS,
                        0,
                        MAX_OWNER_CONNECTIONS,
                        "an integer in 0.." + MAX_OWNER_CONNECTIONS + ", event streams per owner per event loop out of "
                                + Keys.OWNER_CONNECTIONS),
                (int) r.integer(
                        Keys.OWNER_DOWN_AFTER,
                        0,
                        ForwarderSpec.MAX_OWNER_DOWN_AFTER,
                        "an integer in 0.." + ForwarderSpec.MAX_OWNER_DOWN_AFTER + " (0: passive health off)"),
                r.duration(
                        Keys.OWNER_DOWN_BACKOFF,
                        null,
                        Duration.ofMillis(10),
                        Duration.ofMinutes(10),
                        "a duration in 10ms..10m, e.g. 1s"),
                r.duration(
                        Keys.OWNER_DOWN_BACKOFF_MAX,
                        null,
                        Duration.ofMillis(10),
                        Duration.ofHours(1),
                        "a duration in 10ms..1h, e.g. 30s"),
                r.duration(
                        Keys.HANDOFF_HOLD,
                        null,
                        Duration.ZERO,
                        ForwarderSpec.MAX_HANDOFF_HOLD,
                        "a duration in 0s.." + Durations.format(ForwarderSpec.MAX_HANDOFF_HOLD) + " (0: no hold)"),
                (int) r.integer(
                        Keys.HANDOFF_MAX_HELD,
                        0,
                        ForwarderSpec.MAX_HANDOFF_MAX_HELD,
                        "an integer in 0.." + ForwarderSpec.MAX_HANDOFF_MAX_HELD + ", requests held at once"),
                r.integer(Keys.HANDOFF_MAX_HELD_BYTES, 0, Long.MAX_VALUE, "an integer >= 0, body bytes held at once"));
        if (gateway.ownerDownBackoffMax().compareTo(gateway.ownerDownBackoff()) < 0) {
            r.problem(
                    Keys.OWNER_DOWN_BACKOFF_MAX,
                    Durations.format(gateway.ownerDownBackoffMax()),
                    "at least " + Keys.OWNER_DOWN_BACKOFF + " (" + Durations.format(gateway.ownerDownBackoff()) + ")");
        }
        return new RoutingSettings(caffeine, redis, gateway);
    }

    /** Puts the defaults of the keys that have one: the design's numbers, as {@link Limits} holds them. */
    static void defaults(Map<String, String> d) {
        d.put(Keys.CAFFEINE_TTL, String.valueOf(Limits.L1_TTL.toSeconds()));
        d.put(Keys.CAFFEINE_MAX_SIZE, String.valueOf(Limits.L1_MAX_ENTRIES));
        d.put(Keys.REDIS_ENABLED, "true");
        d.put(Keys.REDIS_URI, "redis://localhost:6379");
        d.put(Keys.REDIS_TTL, String.valueOf(Limits.L2_TTL.toSeconds()));
        d.put(Keys.REDIS_TIMEOUT, String.valueOf(Limits.L2_TIMEOUT.toMillis()));
        d.put(Keys.RETRY_MAX, String.valueOf(Limits.RETARGETS.max()));
        d.put(Keys.MAX_BODY, String.valueOf(Limits.BODY_BYTES.max()));
        d.put(Keys.REPLAY_BUFFER, String.valueOf(Limits.REPLAY_BYTES.max()));
        d.put(Keys.REQUEST_BUFFER, String.valueOf(ForwarderSpec.DEFAULT_REQUEST_BUFFER_BYTES));
        d.put(Keys.OWNER_TIMEOUT, Durations.format(Limits.OWNER_TIMEOUT));
        d.put(Keys.STREAM_IDLE_TIMEOUT, Durations.format(Limits.STREAM_IDLE_TIMEOUT));
        d.put(Keys.OWNER_CONNECTIONS, String.valueOf(TransportSpec.defaults().maxConnectionsPerOwner()));
        d.put(Keys.OWNER_STREAMS, String.valueOf(TransportSpec.defaults().maxStreamsPerOwner()));
        d.put(Keys.OWNER_DOWN_AFTER, String.valueOf(ForwarderSpec.DEFAULT_OWNER_DOWN_AFTER));
        d.put(Keys.OWNER_DOWN_BACKOFF, Durations.format(ForwarderSpec.DEFAULT_OWNER_DOWN_BACKOFF));
        d.put(Keys.OWNER_DOWN_BACKOFF_MAX, Durations.format(ForwarderSpec.DEFAULT_OWNER_DOWN_BACKOFF_MAX));
        d.put(Keys.HANDOFF_HOLD, Durations.format(ForwarderSpec.DEFAULT_HANDOFF_HOLD));
        d.put(Keys.HANDOFF_MAX_HELD, String.valueOf(ForwarderSpec.DEFAULT_HANDOFF_MAX_HELD));
        d.put(Keys.HANDOFF_MAX_HELD_BYTES, String.valueOf(ForwarderSpec.DEFAULT_HANDOFF_MAX_HELD_BYTES));
    }

    /** Returns this section's keys with their effective values, in the documented order; a password is redacted. */
    Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(Keys.CAFFEINE_TTL, Durations.format(caffeine.ttl()));
        d.put(Keys.CAFFEINE_MAX_SIZE, String.valueOf(caffeine.maxSize()));
        d.put(Keys.REDIS_ENABLED, String.valueOf(redis.enabled()));
        d.put(Keys.REDIS_URI, redis.redactedUri());
        d.put(Keys.REDIS_TTL, Durations.format(redis.ttl()));
        d.put(Keys.REDIS_TIMEOUT, Durations.format(redis.timeout()));
        d.put(Keys.RETRY_MAX, String.valueOf(gateway.retryMax()));
        d.put(Keys.MAX_BODY, String.valueOf(gateway.maxBufferedBodyBytes()));
        d.put(Keys.REPLAY_BUFFER, String.valueOf(gateway.replayBufferBytes()));
        d.put(Keys.REQUEST_BUFFER, String.valueOf(gateway.requestBufferBytes()));
        d.put(Keys.OWNER_TIMEOUT, Durations.format(gateway.ownerTimeout()));
        d.put(Keys.STREAM_IDLE_TIMEOUT, Durations.format(gateway.streamIdleTimeout()));
        d.put(Keys.OWNER_CONNECTIONS, String.valueOf(gateway.ownerConnections()));
        d.put(Keys.OWNER_STREAMS, String.valueOf(gateway.ownerStreams()));
        d.put(Keys.OWNER_DOWN_AFTER, String.valueOf(gateway.ownerDownAfter()));
        d.put(Keys.OWNER_DOWN_BACKOFF, Durations.format(gateway.ownerDownBackoff()));
        d.put(Keys.OWNER_DOWN_BACKOFF_MAX, Durations.format(gateway.ownerDownBackoffMax()));
        d.put(Keys.HANDOFF_HOLD, Durations.format(gateway.handoffHold()));
        d.put(Keys.HANDOFF_MAX_HELD, String.valueOf(gateway.handoffMaxHeld()));
        d.put(Keys.HANDOFF_MAX_HELD_BYTES, String.valueOf(gateway.handoffMaxHeldBytes()));
        return d;
    }

    @Override
    public String toString() {
        return "RoutingSettings" + describe();
    }

    private static URI redisUri(SettingsReader r) {
        String value = r.text(Keys.REDIS_URI);
        String expected = "redis://host:port or rediss://host:port (Lettuce URI forms)";
        try {
            URI u = new URI(value);
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            if (REDIS_SCHEMES.contains(scheme) && (u.getHost() != null || scheme.equals("redis-socket"))) {
                return u;
            }
        } catch (URISyntaxException e) {
            // recorded below
        }
        r.problem(Keys.REDIS_URI, show(SettingsReader.redactUserInfo(value)), expected);
        return URI.create(Keys.DEFAULTS.getOrDefault(Keys.REDIS_URI, "redis://localhost:6379"));
    }
}
