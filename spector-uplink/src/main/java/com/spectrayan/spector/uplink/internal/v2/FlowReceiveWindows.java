package com.spectrayan.spector.uplink.internal.v2;

import io.netty.util.collection.IntObjectHashMap;
import io.netty.util.collection.IntObjectMap;
import io.netty.util.concurrent.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * The credit this side grants the peer for DATA (docs/PROTOCOL.md section 9.5, RFC 9113 sections
 * 5.2 and 6.9): one window per stream the peer sends on, and one for the connection; which
 * WINDOW_UPDATEs to send, and when the windows grow.
 *
 * <p>Design notes.
 *
 * <ul>
 *   <li><b>Accounting.</b> Each window has a size (the credit granted), the bytes received whose
 *       credit is not yet returned ({@code unreturned}: the peer may send {@code size -
 *       unreturned} more), and of those the bytes the consumer took ({@code taken}). A DATA frame
 *       adds its length to both windows' {@code unreturned} ({@link #onData}); past either
 *       window it is a {@link FlowControlException}, of the connection first.
 *   <li><b>Credit only after the consumer took the bytes.</b> {@link #consumed} is called when
 *       the consumer took them (at the gateway the client's connection accepted them, at the worker
 *       the target read them), never when they arrived. A window returns its {@code taken} bytes
 *       in one WINDOW_UPDATE once they are at least half its size, so updates stay rare.
 *   <li><b>Closed streams.</b> DATA for a stream that closed still counts against the connection
 *       and is taken at once (section 9.4); at {@link #close} the bytes a stream received that its
 *       consumer never took are taken for the connection too. Either way the connection's update
 *       still waits for its half-window threshold, so a flood of small frames is not answered by
 *       a flood of updates. DATA on a stream that was never opened is a connection error.
 *   <li><b>Growth</b> (the bandwidth-delay product, as gRPC's BDP estimator): {@link
 *       FlowRttEstimator} probes the round trip with PING while DATA flows; when a probe's ack
 *       comes back, each stream whose consumer took more than half its window during that round
 *       trip doubles it, up to {@link V2Limits#MAX_STREAM_WINDOW} (the difference goes out as a
 *       WINDOW_UPDATE). The connection's window is kept at twice the sum of the open streams'
 *       windows, up to {@link V2Limits#MAX_CONNECTION_WINDOW}, at each growth and at each {@link
 *       #open}, so streams whose readers stopped can never hold more than half of it and the
 *       others keep sending. For the same reason a stream grows only while twice the sum stays
 *       within the connection's cap. No window ever shrinks.
 * </ul>
 *
 * <p>Every method returns the WINDOW_UPDATEs to send now (often none); the caller queues them as
 * control frames. Concurrency: none. One instance per link, used only on the link channel's event
 * loop; time is the injected {@link Ticker}.
 */
public final class FlowReceiveWindows {
    /** The open streams' windows; at most the link's open streams (the engines bound those). */
    private final IntObjectHashMap<Window> streams = new IntObjectHashMap<>();

    private final Window connection = new Window(V2Limits.INITIAL_CONNECTION_WINDOW);

    private final FlowRttEstimator rtt;

    /** The sum of the open streams' window sizes. */
    private long openWindows;

    /** The highest stream id opened on the link (0 before the first). */
    private int highestOpened;

    /** Creates the windows of a new link, reading time from {@code ticker} (the channel's event loop's). */
    public FlowReceiveWindows(Ticker ticker) {
        this.rtt = new FlowRttEstimator(ticker);
    }

    /**
     * Opens {@code streamId} (odd, above every id opened before) with the initial stream window,
     * and returns the connection's WINDOW_UPDATE when twice the open windows now pass its window.
     */
    public List<WindowCredit> open(int streamId) {
        StreamIds.checkOpening(streamId, highestOpened);
        highestOpened = streamId;
        streams.put(streamId, new Window(V2Limits.INITIAL_STREAM_WINDOW));
        openWindows += V2Limits.INITIAL_STREAM_WINDOW;
        List<WindowCredit> credits = new ArrayList<>(1);
        growConnection(credits);
        return credits;
    }

    /**
     * Counts a DATA frame of {@code length} payload bytes on {@code streamId} against the windows.
     *
     * @return the connection's WINDOW_UPDATE when the frame was for a closed stream and its bytes,
     *     taken at once, reach the connection's threshold; otherwise none
     * @throws FlowControlException {@code FLOW_CONTROL_ERROR} of the connection when the frame
     *     overruns the connection's window, of the stream when it overruns the stream's (the caller
     *     resets the stream and {@link #close}s it, which credits the connection back); {@code
     *     PROTOCOL_ERROR} of the connection for a stream never opened
     */
    public List<WindowCredit> onData(int streamId, int length) {
        if (streamId <= 0) {
            throw new IllegalArgumentException("streamId: " + streamId + " (expected: 1..2^31-1)");
        }
        if (length < 0 || length > V2Limits.MAX_FRAME_PAYLOAD) {
            throw new IllegalArgumentException(
                    "length: " + length + " (expected: 0.." + V2Limits.MAX_FRAME_PAYLOAD + ")");
        }
        rtt.dataReceived();
        if (length > connection.available()) {
            throw FlowControlException.connection(
                    FlowControlException.Kind.FLOW_CONTROL_ERROR, overrun(length, connection));
        }
        Window s = streams.get(streamId);
        if (s == null) {
            if (StreamIds.neverOpened(streamId, highestOpened)) {
                throw StreamIds.neverOpenedError("DATA", streamId, highestOpened);
            }
            connection.unreturned += length;
            connection.taken += length;
            return credits(null, connection.creditIfDue(0));
        }
        connection.unreturned += length;
        @Nullable String overrun = length > s.available() ? overrun(length, s) : null;
        // Counted either way: after the reset, close() takes the stream's bytes for the connection.
        s.unreturned += length;
        if (overrun != null) {
            throw FlowControlException.stream(FlowControlException.Kind.FLOW_CONTROL_ERROR, streamId, overrun);
        }
        return List.of();
    }

    /**
     * Notes that the consumer of {@code streamId} took {@code bytes} it received, and returns the
     * WINDOW_UPDATEs now due: the stream's and the connection's, each once its taken bytes reach
     * half its window. Bytes of a stream already closed were credited at its close: nothing is due.
     */
    public List<WindowCredit> consumed(int streamId, int bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        Window s = streams.get(streamId);
        if (s == null) {
            return List.of();
        }
        long held = s.unreturned - s.taken;
        if (bytes > held) {
            throw new IllegalArgumentException(
                    "bytes: " + bytes + " (expected: 0.." + held + ", what stream " + streamId + " received untaken)");
        }
        s.taken += bytes;
        s.takenThisProbe += bytes;
        connection.taken += bytes;
        return credits(s.creditIfDue(streamId), connection.creditIfDue(0));
    }

    /**
     * Closes {@code streamId} (it ended both ways or was reset): the bytes it received that its
     * consumer never took are taken for the connection, and the connection's WINDOW_UPDATE is
     * returned when that reaches its threshold. Closing a closed stream does nothing.
     */
    public List<WindowCredit> close(int streamId) {
        Window s = streams.remove(streamId);
        if (s == null) {
            return List.of();
        }
        openWindows -= s.size;
        connection.taken += s.unreturned - s.taken;
        return credits(null, connection.creditIfDue(0));
    }

    /**
     * Returns the payload of a PING to send now to measure the round trip, or empty (see {@link
     * FlowRttEstimator#pingDue}). The caller sends it as a PING without ACK at once.
     */
    public OptionalLong pingDue() {
        OptionalLong due = rtt.pingDue();
        if (due.isPresent()) {
            for (Window s : streams.values()) {
                s.takenThisProbe = 0;
            }
        }
        return due;
    }

    /**
     * Takes a PING with ACK and, when it answers the probe in flight, grows the windows of the
     * streams that took more than half their window during that round trip; returns the
     * WINDOW_UPDATEs of the growth (none for any other ack).
     */
    public List<WindowCredit> onPingAck(long payload) {
        if (!rtt.onPingAck(payload)) {
            return List.of();
        }
        List<WindowCredit> credits = new ArrayList<>(2);
        for (IntObjectMap.PrimitiveEntry<Window> e : streams.entries()) {
            Window s = e.value();
            if (2 * s.takenThisProbe > s.size) {
                // Twice the open windows stay within the connection's cap (design notes).
                long room = V2Limits.MAX_CONNECTION_WINDOW / 2 - (openWindows - s.size);
                long target = Math.min(Math.min(2L * s.size, V2Limits.MAX_STREAM_WINDOW), room);
                if (target > s.size) {
                    int increment = (int) (target - s.size);
                    credits.add(new WindowCredit(e.key(), increment));
                    s.size = (int) target;
                    openWindows += increment;
                }
            }
            s.takenThisProbe = 0;
        }
        growConnection(credits);
        return credits;
    }

    /** Returns {@code streamId}'s window size (the credit granted), 0 when it is not open. */
    public int streamWindow(int streamId) {
        Window s = streams.get(streamId);
        return s == null ? 0 : s.size;
    }

    /** Returns the bytes the peer may still send on {@code streamId} (its window less what is unreturned). */
    public long streamAvailable(int streamId) {
        Window s = streams.get(streamId);
        return s == null ? 0 : s.available();
    }

    /** Returns the connection's window size. */
    public int connectionWindow() {
        return connection.size;
    }

    /** Returns the bytes the peer may still send on the connection. */
    public long connectionAvailable() {
        return connection.available();
    }

    /** Returns the last round trip measured, in nanos, or -1 before the first. */
    public long rttNanos() {
        return rtt.rttNanos();
    }

    /** Grows the connection's window to twice the open windows (capped), never shrinking it. */
    private void growConnection(List<WindowCredit> credits) {
        long target = Math.min(2 * openWindows, V2Limits.MAX_CONNECTION_WINDOW);
        if (target > connection.size) {
            credits.add(new WindowCredit(0, (int) (target - connection.size)));
            connection.size = (int) target;
        }
    }

    private static List<WindowCredit> credits(@Nullable WindowCredit stream, @Nullable WindowCredit conn) {
        if (stream == null) {
            return conn == null ? List.of() : List.of(conn);
        }
        return conn == null ? List.of(stream) : List.of(stream, conn);
    }

    private static String overrun(int length, Window w) {
        return "DATA of " + length + " bytes past the window: " + w.available() + " of " + w.size
                + " left (expected: <= " + w.available() + ")";
    }

    /** One window, of a stream or of the connection. */
    private static final class Window {
        /** The credit granted: the most the peer may have unreturned, in bytes (never shrinks). */
        int size;

        /** Bytes received whose credit is not yet returned (0 .. size, past it only on an overrun). */
        long unreturned;

        /** Of the unreturned bytes, those the consumer took: credit owed to the peer. */
        long taken;

        /** Bytes the consumer took since the round-trip probe in flight was sent (streams only). */
        long takenThisProbe;

        Window(int size) {
            this.size = size;
        }

        long available() {
            return size - unreturned;
        }

        /** Returns the WINDOW_UPDATE due once the taken bytes reach half the window, and counts it returned. */
        @Nullable
        WindowCredit creditIfDue(int streamId) {
            if (taken == 0 || 2 * taken < size) {
                return null;
            }
            WindowCredit credit = new WindowCredit(streamId, (int) taken);
            unreturned -= taken;
            taken = 0;
            return credit;
        }
    }
}
