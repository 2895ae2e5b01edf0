package com.spectrayan.spector.uplink.internal.v2;

import io.netty.util.collection.IntObjectHashMap;

/**
 * The credit this side may still spend on DATA, as the peer granted it (docs/PROTOCOL.md section
 * 9.5, RFC 9113 section 6.9): one window per stream this side sends on, and one for the connection.
 * A stream may send {@code min(its window, the connection's)} bytes now; each DATA frame sent
 * spends its length from both; each WINDOW_UPDATE from the peer adds to one.
 *
 * <p>Windows start at {@link V2Limits#INITIAL_STREAM_WINDOW} and {@link
 * V2Limits#INITIAL_CONNECTION_WINDOW} (v2 has no SETTINGS frame to change them) and never exceed
 * {@link V2Limits#MAX_WINDOW}; they never go below 0 (v2 has no setting that shrinks one).
 *
 * <p>A stream is open here from {@link #open} until {@link #close} (its last DATA was sent, or it
 * was reset). A WINDOW_UPDATE for a stream that closed is dropped (section 9.4); one for a stream
 * that was never opened is a connection {@code PROTOCOL_ERROR} (RFC 9113 section 5.1).
 *
 * <p>Concurrency: none. One instance per link, used only on the link channel's event loop (the
 * {@link FrameScheduler} that owns it runs there).
 */
public final class FlowSendWindows {
    /** Credit per open stream, in bytes (0 .. 2^31-1). */
    private final IntObjectHashMap<Credit> streams = new IntObjectHashMap<>();

    /** Credit of the connection, in bytes (0 .. 2^31-1). */
    private long connection = V2Limits.INITIAL_CONNECTION_WINDOW;

    /** The highest stream id opened on the link (0 before the first). */
    private int highestOpened;

    /** Creates the windows of a new link: the connection at its initial window, no stream. */
    public FlowSendWindows() {}

    /** Opens {@code streamId} with the initial stream window; ids are odd and rise (section 9.2). */
    public void open(int streamId) {
        StreamIds.checkOpening(streamId, highestOpened);
        highestOpened = streamId;
        streams.put(streamId, new Credit());
    }

    /** Forgets {@code streamId}'s window: it sends no more DATA. Closing a closed stream does nothing. */
    public void close(int streamId) {
        streams.remove(streamId);
    }

    /** Returns true while {@code streamId} is open here. */
    public boolean isOpen(int streamId) {
        return streams.containsKey(streamId);
    }

    /** Returns the bytes {@code streamId} may send now: the smaller of its window and the connection's. */
    public int sendable(int streamId) {
        Credit w = streams.get(streamId);
        return w == null ? 0 : (int) Math.min(w.bytes, connection);
    }

    /** Returns {@code streamId}'s window, 0 when it is not open. */
    public int streamWindow(int streamId) {
        Credit w = streams.get(streamId);
        return w == null ? 0 : (int) w.bytes;
    }

    /** Returns the connection's window. */
    public int connectionWindow() {
        return (int) connection;
    }

    /**
     * Spends {@code bytes} of {@code streamId}'s and the connection's credit for a DATA frame about
     * to be sent. More than {@link #sendable} is this side's bug and is refused.
     */
    public void consume(int streamId, int bytes) {
        Credit w = streams.get(streamId);
        if (w == null) {
            throw new IllegalStateException("stream " + streamId + ": not open for DATA");
        }
        if (bytes < 0 || bytes > Math.min(w.bytes, connection)) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: 0.." + Math.min(w.bytes, connection)
                    + ", the credit of stream " + streamId + ")");
        }
        w.bytes -= bytes;
        connection -= bytes;
    }

    /**
     * Adds a WINDOW_UPDATE's {@code increment} to {@code streamId}'s window (0: the connection's).
     *
     * @param increment the frame's 31-bit increment, as the codec read it (reserved bit cleared)
     * @throws FlowControlException {@code PROTOCOL_ERROR} for an increment of 0 (of the stream,
     *     or of the connection for stream 0) or for a stream never opened (of the connection);
     *     {@code FLOW_CONTROL_ERROR} when the window would pass 2^31-1, at the same level. The
     *     window is unchanged.
     */
    public void onWindowUpdate(int streamId, int increment) {
        if (streamId < 0) {
            throw new IllegalArgumentException("streamId: " + streamId + " (expected: 0..2^31-1)");
        }
        if (increment < 0) {
            throw new IllegalArgumentException("increment: " + increment + " (expected: 0..2^31-1, 31 bits)");
        }
        if (streamId == 0) {
            if (increment == 0) {
                throw FlowControlException.connection(
                        FlowControlException.Kind.PROTOCOL_ERROR, "WINDOW_UPDATE increment 0 (expected: 1..2^31-1)");
            }
            if (connection + increment > V2Limits.MAX_WINDOW) {
                throw FlowControlException.connection(
                        FlowControlException.Kind.FLOW_CONTROL_ERROR, overflow(connection, increment));
            }
            connection += increment;
            return;
        }
        Credit w = streams.get(streamId);
        if (w == null) {
            if (StreamIds.neverOpened(streamId, highestOpened)) {
                throw StreamIds.neverOpenedError("WINDOW_UPDATE", streamId, highestOpened);
            }
            return; // closed: dropped (section 9.4)
        }
        if (increment == 0) {
            throw FlowControlException.stream(
                    FlowControlException.Kind.PROTOCOL_ERROR,
                    streamId,
                    "WINDOW_UPDATE increment 0 (expected: 1..2^31-1)");
        }
        if (w.bytes + increment > V2Limits.MAX_WINDOW) {
            throw FlowControlException.stream(
                    FlowControlException.Kind.FLOW_CONTROL_ERROR, streamId, overflow(w.bytes, increment));
        }
        w.bytes += increment;
    }

    private static String overflow(long window, int increment) {
        return "WINDOW_UPDATE of " + increment + " takes the window from " + window + " to " + (window + increment)
                + " (expected: <= 2^31-1)";
    }

    /** One stream's credit. */
    private static final class Credit {
        /** Bytes the stream may still send (0 .. 2^31-1). */
        long bytes = V2Limits.INITIAL_STREAM_WINDOW;
    }
}
