package com.spectrayan.spector.contract;

import java.time.Duration;

/**
 * Every bound of DESIGN.md in one place: sizes and counts as {@link Bound}s (each refuses one past
 * its limit with a message naming it), times as {@link Duration}s. Settings that override a
 * default name the key in their doc.
 */
public final class Limits {
    private static final long KIB = 1024;
    private static final long MIB = 1024 * KIB;

    // ---- Routing (DESIGN.md section 4) ----

    /** A cell id, tenant or namespace: {@code [a-z0-9][a-z0-9._-]{0,62}}, so 1 to 63 chars. */
    public static final Bound ROUTING_NAME_CHARS = new Bound("routingNameChars", 1, 63, "chars", ErrorCode.BAD_REQUEST);

    /** Points each ring member contributes: 40 MD5 digests of 4 points each, as libketama. */
    public static final int RING_POINTS_PER_MEMBER = 160;

    /** Members one ring may hold; a larger cell is a configuration error. */
    public static final Bound RING_MEMBERS = new Bound("ringMembers", 1, 4096, "members", ErrorCode.BAD_REQUEST);

    /** Chars of one ring member label, e.g. {@code owner-0} or {@code 10.0.1.1:11211}. */
    public static final Bound RING_MEMBER_CHARS = new Bound("ringMemberChars", 1, 255, "chars", ErrorCode.BAD_REQUEST);

    /** L1 (Caffeine) entries; key {@code spector.routing.caffeine.max-size}. */
    public static final long L1_MAX_ENTRIES = 1000;

    /** L1 (Caffeine) time to live; key {@code spector.routing.caffeine.ttl-seconds}. */
    public static final Duration L1_TTL = Duration.ofSeconds(60);

    /** L2 (Redis) time to live of a route entry; key {@code spector.routing.redis.ttl-seconds}. */
    public static final Duration L2_TTL = Duration.ofSeconds(30);

    /** Longest wait for an L2 answer before falling to L3; {@code spector.routing.redis.timeout-ms}. */
    public static final Duration L2_TIMEOUT = Duration.ofMillis(200);

    // ---- Forwarding (DESIGN.md section 4) ----

    /** Retargets after an owner's 421, so at most 3 attempts; {@code ...gateway.retry-max}. */
    public static final Bound RETARGETS = Bound.atMost("retargets", 2, "retries", ErrorCode.GATEWAY_ROUTING_FAILURE);

    /** A request body; {@code spector.routing.gateway.max-buffered-body-bytes}. */
    public static final Bound BODY_BYTES = Bound.atMost("bodyBytes", 10 * MIB, "bytes", ErrorCode.PAYLOAD_TOO_LARGE);

    /** A request body kept for a replay after 421; {@code ...gateway.replay-buffer-bytes}. */
    public static final Bound REPLAY_BYTES =
            Bound.atMost("replayBytes", MIB, "bytes", ErrorCode.GATEWAY_ROUTING_FAILURE);

    /** Wait for an owner's response head (not a stream's life); {@code ...gateway.owner-timeout}. */
    public static final Duration OWNER_TIMEOUT = Duration.ofSeconds(10);

    /** Quiet time after which an SSE stream is closed; {@code ...gateway.stream-idle-timeout}. */
    public static final Duration STREAM_IDLE_TIMEOUT = Duration.ofMinutes(5);

    // ---- Uplink relay (DESIGN.md section 5, seed 000) ----

    /** A relay id. */
    public static final Bound RELAY_ID_CHARS = new Bound("relayIdChars", 1, 64, "chars", ErrorCode.BAD_REQUEST);

    /** A relay target's capability name, {@code [a-z0-9][a-z0-9-]*}. */
    public static final Bound TARGET_CHARS = new Bound("targetChars", 1, 64, "chars", ErrorCode.BAD_REQUEST);

    /** A relayed request's absolute http(s) URL. */
    public static final Bound URL_CHARS = new Bound("urlChars", 1, 4096, "chars", ErrorCode.BAD_REQUEST);

    /** Headers of one relayed request or response, after filtering. */
    public static final Bound HEADER_COUNT = Bound.atMost("headerCount", 100, "headers", ErrorCode.BAD_REQUEST);

    /** One header name (an RFC 9110 token). */
    public static final Bound HEADER_NAME_CHARS = new Bound("headerNameChars", 1, 256, "chars", ErrorCode.BAD_REQUEST);

    /** One header value (no CR, LF or NUL). */
    public static final Bound HEADER_VALUE_CHARS =
            Bound.atMost("headerValueChars", 8192, "chars", ErrorCode.BAD_REQUEST);

    /** A relay's tenant name. */
    public static final Bound TENANT_CHARS = new Bound("tenantChars", 1, 300, "chars", ErrorCode.BAD_REQUEST);

    /** A relay's lease id, {@code [A-Za-z0-9._:-]+}. */
    public static final Bound LEASE_ID_CHARS = new Bound("leaseIdChars", 1, 128, "chars", ErrorCode.BAD_REQUEST);

    /** One decoded body chunk, each way: 256 KiB. */
    public static final Bound CHUNK_BYTES = Bound.atMost("chunkBytes", 256 * KIB, "bytes", ErrorCode.BAD_REQUEST);

    /**
     * A relayed body's declared content length (the {@code length} of {@code relay-head} and of
     * {@code relay.request}): up to 2^53 - 1 bytes, the largest integer a JavaScript peer reads
     * exactly.
     */
    public static final Bound RELAY_LENGTH_BYTES =
            Bound.atMost("relayLengthBytes", (1L << 53) - 1, "bytes", ErrorCode.BAD_REQUEST);

    /** Relays active at once on one uplink connection, on the worker; the 17th is refused. */
    public static final Bound ACTIVE_RELAYS_PER_CONNECTION =
            Bound.atMost("activeRelaysPerConnection", 16, "relays", ErrorCode.BAD_REQUEST);

    /** {@code relay.body} calls the gateway has sent and not yet seen answered, per relay. */
    public static final int UNANSWERED_BODIES = 4;

    /** Relays running at once per worker on the gateway; the 9th waits within its deadline. */
    public static final int RELAYS_PER_WORKER = 8;

    /**
     * Relayed upgrades switched at once per worker on the gateway (docs/PROTOCOL.md section 9.7),
     * a share of their own apart from {@link #RELAYS_PER_WORKER}: a switched relay gives its slot
     * back at its {@code 101} and keeps only this permit, and an upgrade past the share is refused
     * at once (503) rather than queued. Half the slots, so that slots and share together (12) stay
     * within the streams a worker takes on one link ({@link #ACTIVE_RELAYS_PER_CONNECTION}, 16).
     */
    public static final int RELAY_UPGRADES_PER_WORKER = RELAYS_PER_WORKER / 2;

    /** Response bytes a relay buffers for a caller that has not read them; past it, cancel. */
    public static final long UNREAD_RELAY_BYTES = 64 * MIB;

    /**
     * Response bytes every v1 relay of a gateway buffers unread, together (v1 has no window: a
     * worker pushes as fast as it reads its target); past it, a relay whose reader fell behind
     * fails as one past {@link #UNREAD_RELAY_BYTES} does. Without it, eight relays per worker of
     * {@code UNREAD_RELAY_BYTES} each ran a 256 MiB gateway out of heap (the uplink review). v2's
     * windows bound its relays instead.
     */
    public static final long UNREAD_RELAY_BYTES_ALL = 64 * MIB;

    /** The whole relayed exchange, both bodies included; {@code spector.uplink.relay.deadline}. */
    public static final Duration RELAY_DEADLINE = Duration.ofSeconds(330);

    /** Wait for one {@code status.get} link refresh. */
    public static final Duration STATUS_TIMEOUT = Duration.ofSeconds(10);

    /** {@code status.get} misses in a row that close a worker link. */
    public static final int STATUS_MISSES_TO_CLOSE = 2;

    /** First delay before a worker dials again after losing its uplink (then doubled, jittered). */
    public static final Duration RECONNECT_MIN = Duration.ofMillis(500);

    /** Longest delay between a worker's dial attempts. */
    public static final Duration RECONNECT_MAX = Duration.ofSeconds(30);

    private Limits() {}
}
