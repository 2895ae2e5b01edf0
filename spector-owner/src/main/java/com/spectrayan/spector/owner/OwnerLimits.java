package com.spectrayan.spector.owner;

import com.spectrayan.spector.contract.Bound;
import com.spectrayan.spector.contract.ErrorCode;
import java.time.Duration;

/**
 * Every bound of the reference owner in one place. Sizes and counts that a request can break are
 * {@link Bound}s, so a refusal names the bound, the value and the range.
 */
final class OwnerLimits {
    private static final long KIB = 1024;
    private static final long MIB = 1024 * KIB;
    private static final long GIB = 1024 * MIB;

    // ---- HTTP decoding ----

    /** Bytes of a request line (method, target, version); longer lines are 400, as nginx's 8 KiB. */
    static final int MAX_INITIAL_LINE_BYTES = 8192;

    /** Bytes of all request header lines together; more is 400, so one request cannot hog memory. */
    static final int MAX_HEADER_BYTES = 16384;

    /** Largest body piece the decoder hands to a handler, in bytes; bounds per-read buffering. */
    static final int MAX_CHUNK_BYTES = (int) (64 * KIB);

    /** A small JSON body (token, ownership, command): past it, 413 before it is parsed. */
    static final Bound JSON_BODY_BYTES = Bound.atMost("bodyBytes", 64 * KIB, "bytes", ErrorCode.PAYLOAD_TOO_LARGE);

    /**
     * Body bytes of a refused request read and dropped to keep the connection usable; past it the
     * connection is closed, so a refused upload cannot keep a connection busy for long.
     */
    static final long MAX_DRAIN_BYTES = 16 * MIB;

    // ---- Endpoints ----

    /** {@code stream?bytes=}: bytes one stream response carries (64 GiB: far past any test). */
    static final Bound STREAM_BYTES = Bound.atMost("bytes", 64 * GIB, "bytes", ErrorCode.BAD_REQUEST);

    /** {@code stream?chunk=}: bytes per written chunk; 1 MiB caps one write's buffer. */
    static final Bound STREAM_CHUNK_BYTES = new Bound("chunk", 1, MIB, "bytes", ErrorCode.BAD_REQUEST);

    /** {@code stream?chunk=} when absent, in bytes. */
    static final int DEFAULT_STREAM_CHUNK_BYTES = (int) (64 * KIB);

    /** {@code stream?delayMs=} and {@code commands?delayMs=}: a pause, in ms; one minute at most. */
    static final Bound DELAY_MS = Bound.atMost("delayMs", 60_000, "ms", ErrorCode.BAD_REQUEST);

    /** Stream chunks written in one event-loop turn before yielding to other channels. */
    static final int STREAM_CHUNKS_PER_TURN = 16;

    /** An object key, {@code [A-Za-z0-9._-]}: 1 to 128 chars (a file name on every file system). */
    static final Bound OBJECT_KEY_CHARS = new Bound("objectKeyChars", 1, 128, "chars", ErrorCode.BAD_REQUEST);

    /** Bytes read from an object file per response chunk. */
    static final int OBJECT_READ_CHUNK_BYTES = (int) (64 * KIB);

    /** An {@code Idempotency-Key} value, in chars (IETF draft keys are UUID-sized; 255 is ample). */
    static final Bound IDEMPOTENCY_KEY_CHARS = new Bound("idempotencyKeyChars", 1, 255, "chars", ErrorCode.BAD_REQUEST);

    /** Stored idempotent responses; the oldest are evicted past it, bounding memory. */
    static final long IDEMPOTENCY_MAX_ENTRIES = 10_000;

    /** How long a stored idempotent response is replayed, as the IETF draft suggests (24 h). */
    static final Duration IDEMPOTENCY_TTL = Duration.ofHours(24);

    /**
     * Payload bytes of one WebSocket frame the echo takes (RFC 6455 §5.2), as Netty's default; a
     * frame one byte longer is refused with close code 1009, so one frame bounds what a connection
     * buffers.
     */
    static final int MAX_WEBSOCKET_FRAME_BYTES = (int) (64 * KIB);

    /** SSE events kept for {@code Last-Event-ID} resumption. */
    static final int EVENT_HISTORY = 1000;

    /** Time between two {@code tick} events. */
    static final Duration TICK_INTERVAL = Duration.ofSeconds(1);

    /** Rows of {@code /admin/requests}: this node's last {@code /api/v1} requests. */
    static final int REQUEST_LOG_ROWS = 1000;

    /** Lifetime of an issued token. */
    static final Duration TOKEN_TTL = Duration.ofHours(1);

    /** Bytes of the HMAC secret: HS256 needs a key at least as long as its 256-bit output. */
    static final int MIN_HMAC_SECRET_BYTES = 32;

    /** Bytes of the admin token at least: 128 bits, too many to guess over the network. */
    static final int MIN_ADMIN_TOKEN_BYTES = 16;

    /** Bytes of the admin token at most: ample for any generator, and it bounds the compare. */
    static final int MAX_ADMIN_TOKEN_BYTES = 256;

    // ---- Process ----

    /** Worker event loops: a reference node serves tests and demos, not production load. */
    static final int WORKER_THREADS = 2;

    /** Longest wait for the listening socket to bind at start. */
    static final Duration BIND_TIMEOUT = Duration.ofSeconds(10);

    /** Longest wait of {@link ReferenceOwner#close()} for each of its steps (channels, loops). */
    static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

    private OwnerLimits() {}

    /** The largest import a move sends (objects in base64 and idempotency records): one request, in memory. */
    static final Bound IMPORT_BYTES = Bound.atMost("importBytes", 16 * MIB, "bytes", ErrorCode.PAYLOAD_TOO_LARGE);

    /**
     * Bytes of the ownership file ({@link OwnershipFile}) read at start: far above any real set (an
     * override is about 100 bytes), so a larger file is damage, refused before it is read.
     */
    static final long OWNERSHIP_FILE_BYTES = 64 * MIB;

    /**
     * How often a node stores in L2 again the route of each key it took by an override (a move's
     * new owner): a third of the L2 TTL ({@link com.spectrayan.spector.contract.Limits#L2_TTL}, 30
     * s), so the entry never lapses while the node holds the key, and gateways whose L1 expired
     * still find the new owner in L2 instead of the ring's old owner, which may be gone.
     */
    static final Duration ROUTE_REFRESH_INTERVAL = com.spectrayan.spector.contract.Limits.L2_TTL.dividedBy(3);

    /** The most objects one move copies: past it the move is refused and the namespace stays. */
    static final int MOVE_MAX_OBJECTS = 10_000;

    /** The longest a move waits for the key's running writes to end before it gives up and serves on. */
    static final Duration MOVE_DRAIN_TIMEOUT = Duration.ofSeconds(5);

    /** How often a move looks at the key's running writes while it waits for them. */
    static final Duration MOVE_DRAIN_CHECK = Duration.ofMillis(2);

    /** The longest the new owner may take to answer the import (the hand-off lasts that long at most). */
    static final Duration MOVE_IMPORT_TIMEOUT = Duration.ofSeconds(10);

    /**
     * The longest a move waits for the new owner's view of the key after an import that did not
     * answer 200 (did it take the key anyway?): {@code GET /admin/ownership} on it.
     */
    static final Duration MOVE_VERIFY_TIMEOUT = Duration.ofSeconds(5);
}
