package com.spectrayan.spector.uplink.internal.v2;

import static java.util.Objects.requireNonNull;

import org.jspecify.annotations.Nullable;

/**
 * A breach of uplink protocol v2 (docs/PROTOCOL.md section 9), found in a peer's frame or refused
 * when building one: the one failure the v2 codec and the frame records throw. It carries what
 * the side that found it acts on (section 9.2):
 *
 * <ul>
 *   <li>a <b>connection error</b> ({@link #isConnectionError()}): send GOAWAY with {@link #code()}
 *       and the last stream id processed, then close the WebSocket with 1002 (1009 for a message
 *       too long); every stream of the link fails;
 *   <li>a <b>stream error</b>: reset stream {@link #streamId()} with {@link #code()}; the link and
 *       its other streams carry on.
 * </ul>
 *
 * <p>Callers classify by {@link #code()} and {@link #isConnectionError()}, never by message text.
 * An expected failure of a peer's input, so it carries no stack trace.
 */
public final class V2ProtocolException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final V2ErrorCode code;
    private final boolean connectionError;
    private final int streamId;
    private final String reason;

    private V2ProtocolException(
            V2ErrorCode code, boolean connectionError, int streamId, String reason, @Nullable Throwable cause) {
        super(
                code + " (" + (connectionError ? "connection" : "stream " + streamId) + "): " + reason,
                cause,
                false,
                false);
        this.code = requireNonNull(code, "code");
        this.connectionError = connectionError;
        this.streamId = streamId;
        this.reason = requireNonNull(reason, "reason");
    }

    /**
     * A connection error: the link closes.
     *
     * @param code the code the GOAWAY carries
     * @param streamId the stream of the frame that broke the rule, or 0 (the connection itself)
     * @param reason what broke, e.g. {@code "PING: stream 3 (expected: 0)"}
     */
    public static V2ProtocolException connectionError(V2ErrorCode code, int streamId, String reason) {
        return new V2ProtocolException(code, true, streamId, reason, null);
    }

    /** A connection error, caused by {@code cause} (a JSON payload that could not be read). */
    public static V2ProtocolException connectionError(
            V2ErrorCode code, int streamId, String reason, @Nullable Throwable cause) {
        return new V2ProtocolException(code, true, streamId, reason, cause);
    }

    /**
     * A stream error: stream {@code streamId} is reset with {@code code}, the link carries on.
     *
     * @throws IllegalArgumentException when {@code streamId} is not a stream (1..2^31-1)
     */
    public static V2ProtocolException streamError(
            int streamId, V2ErrorCode code, String reason, @Nullable Throwable cause) {
        if (streamId <= 0) {
            throw new IllegalArgumentException(
                    "streamId: " + streamId + " (expected: 1.." + V2Limits.MAX_STREAM_ID + ")");
        }
        return new V2ProtocolException(code, false, streamId, reason, cause);
    }

    /** Returns the code the GOAWAY (connection error) or the RESET (stream error) carries. */
    public V2ErrorCode code() {
        return code;
    }

    /** Answers whether the whole link closes (true) or only stream {@link #streamId()} is reset. */
    public boolean isConnectionError() {
        return connectionError;
    }

    /**
     * Returns the stream reset by a stream error, or the stream of the frame that caused a
     * connection error (0 when it was the connection's, or the header could not be read).
     */
    public int streamId() {
        return streamId;
    }

    /** Returns what broke, without the code: {@code "DATA: stream 0 (expected: 1..2147483647)"}. */
    public String reason() {
        return reason;
    }
}
