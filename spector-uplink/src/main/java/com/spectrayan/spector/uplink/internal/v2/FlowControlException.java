package com.spectrayan.spector.uplink.internal.v2;

/**
 * A peer broke v2's flow control (docs/PROTOCOL.md section 9.5, RFC 9113 sections 5.2 and 6.9):
 * a DATA frame past a window, a WINDOW_UPDATE that takes a window past 2^31-1, an increment of 0,
 * or a flow-controlled frame on a stream that was never opened.
 *
 * <p>What the caller acts on is in the fields, never the message: {@link #connectionLevel()} says
 * whether to close the link (GOAWAY with the code, then the WebSocket close) or to reset only
 * {@link #streamId()}, and {@link #kind()} names the error code to send. After a stream-level
 * error the caller resets the stream and closes it in the windows ({@link FlowReceiveWindows#close}
 * or {@link FrameScheduler#reset}), which returns the connection credit of its bytes.
 *
 * <p>Thrown for the peer's behaviour, not ours, so it carries no stack trace.
 */
public final class FlowControlException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** The error code the violation is answered with (PROTOCOL.md section 9.2, HTTP/2's numbering). */
    public enum Kind {
        /** {@code FLOW_CONTROL_ERROR 0x3}: a window overrun, or a window past 2^31-1. */
        FLOW_CONTROL_ERROR,
        /** {@code PROTOCOL_ERROR 0x1}: an increment of 0, or a frame on a stream never opened. */
        PROTOCOL_ERROR
    }

    private final Kind kind;
    private final boolean connectionLevel;
    private final int streamId;

    FlowControlException(Kind kind, boolean connectionLevel, int streamId, String message) {
        super(message, null, false, false);
        this.kind = kind;
        this.connectionLevel = connectionLevel;
        this.streamId = streamId;
    }

    /** A flow-control error of the connection (stream 0): the link is closed. */
    static FlowControlException connection(Kind kind, String message) {
        return new FlowControlException(kind, true, 0, "connection: " + message);
    }

    /**
     * An error found on {@code streamId} that ends the whole link (a frame on a stream that was
     * never opened): {@link #streamId()} names the stream, {@link #connectionLevel()} is true.
     */
    static FlowControlException connectionOn(Kind kind, int streamId, String message) {
        return new FlowControlException(kind, true, streamId, "stream " + streamId + ": " + message);
    }

    /** A flow-control error of one stream: that stream is reset, the link lives on. */
    static FlowControlException stream(Kind kind, int streamId, String message) {
        return new FlowControlException(kind, false, streamId, "stream " + streamId + ": " + message);
    }

    /** Returns the error code to send. */
    public Kind kind() {
        return kind;
    }

    /** Returns true when the link is closed for it, false when only {@link #streamId()} is reset. */
    public boolean connectionLevel() {
        return connectionLevel;
    }

    /** Returns the stream the violating frame named, 0 for the connection. */
    public int streamId() {
        return streamId;
    }
}
