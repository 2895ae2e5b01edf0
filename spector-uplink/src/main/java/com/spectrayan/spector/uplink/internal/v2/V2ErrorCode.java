package com.spectrayan.spector.uplink.internal.v2;

/**
 * The error codes of RESET and GOAWAY (docs/PROTOCOL.md section 9.2), numbered as HTTP/2's (RFC
 * 9113 section 7), plus {@link #RELAY_ERROR}. On the wire each is a 4-byte unsigned integer; a
 * code this side does not know reads as {@link #INTERNAL_ERROR} ({@link #fromWire}), so a newer
 * peer's codes never break an older one.
 */
public enum V2ErrorCode {
    /** Not an error: a graceful GOAWAY (the drain), or a stream that ends early on purpose. */
    NO_ERROR(0x0),
    /** The peer broke the protocol: a frame on the wrong kind of stream, a head outside its schema. */
    PROTOCOL_ERROR(0x1),
    /** This side failed, or a code the reader does not know. */
    INTERNAL_ERROR(0x2),
    /** The peer sent past a window, or took one past 2^31-1. */
    FLOW_CONTROL_ERROR(0x3),
    /** A frame for a stream that was already closed in that direction. */
    STREAM_CLOSED(0x5),
    /** A frame's length broke a bound: the frame's, its type's, or the message's. */
    FRAME_SIZE_ERROR(0x6),
    /** The worker took no new stream (its limit of open streams); nothing of it was processed. */
    REFUSED_STREAM(0x7),
    /** The stream is no longer wanted: the caller went away, or the deadline passed. */
    CANCEL(0x8),
    /** The relay failed with the v1 error object that follows the code (RESET only). */
    RELAY_ERROR(0x100);

    private static final V2ErrorCode[] VALUES = values();

    private final int code;

    V2ErrorCode(int code) {
        this.code = code;
    }

    /** Returns the code's number on the wire. */
    public int code() {
        return code;
    }

    /** Returns the code numbered {@code code} (read as unsigned), or {@link #INTERNAL_ERROR} when none is. */
    public static V2ErrorCode fromWire(int code) {
        for (V2ErrorCode c : VALUES) {
            if (c.code == code) {
                return c;
            }
        }
        return INTERNAL_ERROR;
    }
}
