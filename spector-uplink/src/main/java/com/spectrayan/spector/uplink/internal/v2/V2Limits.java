package com.spectrayan.spector.uplink.internal.v2;

import com.spectrayan.spector.contract.Bound;
import com.spectrayan.spector.contract.ErrorCode;

/**
 * The bounds of uplink protocol v2 (docs/PROTOCOL.md section 9), one place for the codec, the
 * windows and the scheduler. Each is tested at its value and one past it.
 */
public final class V2Limits {
    private V2Limits() {}

    /** The subprotocol name a v2 link selects. */
    public static final String SUBPROTOCOL = "spector-uplink.v2";

    /** Bytes of a frame header: length (24), type (8), flags (8), reserved bit and stream id (32). */
    public static final int HEADER_BYTES = 9;

    /** The longest payload of any frame (1 MiB); more is {@code FRAME_SIZE_ERROR}. */
    public static final int MAX_FRAME_PAYLOAD = 1024 * 1024;

    /** The longest WebSocket message on a v2 link: one full frame; more closes the link with 1009. */
    public static final int MAX_MESSAGE_BYTES = MAX_FRAME_PAYLOAD + HEADER_BYTES;

    /** The longest HEADERS payload (a request or response head as JSON). */
    public static final int MAX_HEADERS_PAYLOAD = 256 * 1024;

    /** The longest RESET payload (the code and an optional error object). */
    public static final int MAX_RESET_PAYLOAD = 8 * 1024;

    /** The longest GOAWAY reason, in UTF-8 bytes. */
    public static final int MAX_GOAWAY_REASON = 1024;

    /** The longest CALL payload (a v1 call, result or error frame as JSON). */
    public static final int MAX_CALL_PAYLOAD = 64 * 1024;

    /** The most a DATA frame carries when this side sends it: the scheduler's slice. */
    public static final int DATA_SLICE = 16 * 1024;

    /** The window a stream starts with, each way. */
    public static final int INITIAL_STREAM_WINDOW = 256 * 1024;

    /** The window the connection starts with, each way. */
    public static final int INITIAL_CONNECTION_WINDOW = 1024 * 1024;

    /** The most a stream's window grows to (by the measured bandwidth-delay product). */
    public static final int MAX_STREAM_WINDOW = 16 * 1024 * 1024;

    /** The most the connection's window grows to. */
    public static final int MAX_CONNECTION_WINDOW = 64 * 1024 * 1024;

    /** The largest window and the largest increment: 2^31 - 1. */
    public static final int MAX_WINDOW = Integer.MAX_VALUE;

    /** The largest stream id: 2^31 - 1. */
    public static final int MAX_STREAM_ID = Integer.MAX_VALUE;

    /**
     * How often, at most, a receiver measures the round trip with PING while DATA flows: every 50
     * ms, so a window doubles from 256 KiB to its 16 MiB cap within a third of a second of a bulk
     * relay (six probes), not six seconds.
     */
    public static final long RTT_PROBE_INTERVAL_NANOS = 50_000_000L;

    /** Chars of a request head's {@code upgrade} token (section 9.3), e.g. {@code websocket}. */
    public static final Bound UPGRADE_TOKEN_CHARS =
            new Bound("upgradeTokenChars", 1, 64, "chars", ErrorCode.BAD_REQUEST);

    /**
     * Bytes of DATA a stream may have queued in the scheduler before its producer is told to pause
     * ({@code FrameScheduler.isWritable(streamId)} turns false): 256 KiB, the initial stream window,
     * so a producer stays one window ahead of the socket without holding a whole body.
     */
    public static final int STREAM_QUEUE_HIGH_WATER = 256 * 1024;

    /** Bytes queued at or below which a paused producer is told to resume: 64 KiB, four slices. */
    public static final int STREAM_QUEUE_LOW_WATER = 64 * 1024;

    /**
     * The most a stream may have queued: the high-water mark plus one more chunk of at most a
     * frame's payload. A producer that enqueues past it ignored the high-water mark: its stream's
     * queue is released and the stream fails (fail closed, never grow the buffer).
     */
    public static final int STREAM_QUEUE_MAX_BYTES = STREAM_QUEUE_HIGH_WATER + MAX_FRAME_PAYLOAD;

    /**
     * The most control frames that wait for the socket to turn writable: 1024. More means the
     * peer provokes answers (PING acks, resets) faster than it reads them: the link is closed.
     */
    public static final int MAX_QUEUED_CONTROL_FRAMES = 1024;

    /**
     * The most DATA frames in a row, on any streams of a link, that are empty and do not end their
     * stream: 16. One more is a connection error {@code PROTOCOL_ERROR}. Such a frame carries
     * nothing and costs no window, so a flood of them costs the reader work for free (HTTP/2's
     * CVE-2019-9518; Netty's {@code Http2EmptyDataFrameListener} allows 2); no sender of this
     * protocol makes one (an empty DATA frame only ever carries END_STREAM).
     */
    public static final int MAX_CONSECUTIVE_EMPTY_DATA_FRAMES = 16;

    /**
     * The most flushes a link consolidates before it writes at once, outside a read batch of its
     * own: Netty's default for {@code FlushConsolidationHandler}, 256. Not on the wire: how often
     * this side writes, never what.
     */
    public static final int FLUSH_AFTER_FLUSHES = 256;
}
