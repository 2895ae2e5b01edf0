package com.spectrayan.spector.uplink.internal.v2;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import org.jspecify.annotations.Nullable;

/**
 * One stream of a {@link V2Connection} (docs/PROTOCOL.md section 9.4): a relay, its request head
 * from the gateway, its response head from the worker, DATA both ways under the windows.
 *
 * <p>Threading: the stream's state is confined to the link channel's event loop. Every method but
 * {@link #isWritable()} and the accessors may be called from any thread: off the loop (or before a
 * stream opened from another thread has its id) it is queued onto the loop and runs there in the
 * order of the calls. {@link #isWritable()} answers on the loop only. A stream's producer calls it
 * from one thread, so its writes stay in order.
 *
 * <p>Its states, one per stream, moved only by {@link V2Connection} (each direction ends with
 * END_STREAM; a RESET either way or the link's close ends both):
 *
 * <pre>
 *                       sent END_STREAM                    received END_STREAM
 *             +--------------------------&gt; HALF_CLOSED_LOCAL ------------------+
 *   OPEN -----+                                                                  +--&gt; CLOSED
 *             +--------------------------&gt; HALF_CLOSED_REMOTE -----------------+
 *             |         received END_STREAM                  sent END_STREAM    |
 *             +------------- RESET sent or received, the link closed -----------+
 * </pre>
 *
 * Beside the state, the heads: at the gateway {@code headSent} from the open and {@code
 * headReceived} at the worker's response head (DATA before it resets the stream {@code
 * PROTOCOL_ERROR}); at the worker {@code headReceived} from the open and {@code headSent} at
 * {@link #sendHeaders} (DATA before it is this side's bug).
 */
public final class V2Stream {
    /** The stream's state (see the class's drawing). */
    enum State {
        /** Both directions open. */
        OPEN,
        /** This side sent (queued) END_STREAM; the peer still sends. */
        HALF_CLOSED_LOCAL,
        /** The peer sent END_STREAM; this side still sends. */
        HALF_CLOSED_REMOTE,
        /** Both directions ended, or the stream was reset, or the link closed: nothing more. */
        CLOSED
    }

    private final V2Connection connection;
    private final boolean upgrade;

    // Event-loop state (see the class's threading note).
    private int id;
    private @Nullable V2StreamHandler handler;
    State state = State.OPEN;
    boolean headSent;
    boolean headReceived;

    /** Whether onReset or onLinkClosed was called (at most once). */
    boolean ended;

    V2Stream(V2Connection connection, int id, boolean upgrade, @Nullable V2StreamHandler handler) {
        this.connection = connection;
        this.id = id;
        this.upgrade = upgrade;
        this.handler = handler;
    }

    /** Returns the stream id; 0 until a stream the gateway opened from another thread is opened on the loop. */
    public int id() {
        return id;
    }

    void assignId(int streamId) {
        this.id = streamId;
    }

    /**
     * Returns the event loop the stream's state lives on (its link channel's): where an owner runs
     * what must be on the loop, such as {@link #isWritable()} and its own stream-side state.
     */
    public EventLoop eventLoop() {
        return connection.channel().eventLoop();
    }

    /** Returns whether the request head named an upgrade (section 9.7): a 101 may answer it. */
    public boolean upgrade() {
        return upgrade;
    }

    /**
     * Sets the handler of a stream the worker accepted; call it from {@link
     * V2Connection.Listener#onStream}, before it returns (a stream left without one is reset).
     */
    public void handler(V2StreamHandler handler) {
        requireNonNull(handler, "handler");
        if (!connection.inEventLoop()) {
            throw new IllegalStateException("stream " + id + ": the handler is set on the event loop, in onStream");
        }
        this.handler = handler;
    }

    @Nullable
    V2StreamHandler handler() {
        return handler;
    }

    /**
     * Answers whether the producer may write more now: the stream still sends and its queue is
     * under {@link V2Limits#STREAM_QUEUE_HIGH_WATER}; when it turns false, {@link
     * V2StreamHandler#onWritabilityChanged} says when to resume. On the event loop only.
     */
    public boolean isWritable() {
        if (!connection.inEventLoop()) {
            throw new IllegalStateException("stream " + id + ": isWritable is answered on the event loop");
        }
        return id != 0 && connection.isWritable(this);
    }

    /**
     * Sends the response head (worker only, once, before any DATA), with END_STREAM when the
     * response has no body. Nothing is sent when the stream has ended.
     *
     * @throws SpectorException BAD_REQUEST for a 101 on a stream whose request named no upgrade
     * @throws IllegalStateException at the gateway
     */
    public void sendHeaders(ResponseHead head, boolean endStream) {
        requireNonNull(head, "head");
        if (connection.role() != V2Connection.Role.WORKER) {
            throw new IllegalStateException("stream " + id + ": the gateway sends its head when it opens a stream");
        }
        V2Frame.Headers frame = head.toFrame(id, endStream, upgrade);
        connection.run(this, () -> connection.sendHeaders(this, frame));
    }

    /**
     * Queues {@code data}'s readable bytes to go out (through the scheduler, within the windows),
     * then END_STREAM when {@code endStream}. The stream owns {@code data} from this call: when the
     * stream no longer sends (ended, reset, or the link closed) it is released and nothing is sent.
     * A producer that writes past {@link V2Limits#STREAM_QUEUE_MAX_BYTES} (it ignored {@link
     * #isWritable()}) has its stream reset {@code INTERNAL_ERROR} (its handler's {@code onReset}).
     *
     * @throws IllegalStateException (on the loop) at the worker before {@link #sendHeaders}, or
     *     after this side's END_STREAM; {@code data} is released
     */
    public void write(ByteBuf data, boolean endStream) {
        requireNonNull(data, "data");
        if (!connection.run(this, () -> connection.write(this, data, endStream))) {
            data.release(); // the event loop is gone, and the link with it
        }
    }

    /**
     * Notes that the consumer took {@code bytes} of the DATA this stream received: their credit
     * goes back to the peer (WINDOW_UPDATE, once half a window is taken). Nothing for a stream that
     * ended (its credit was returned when it ended).
     */
    public void consumed(int bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        connection.run(this, () -> connection.consumed(this, bytes));
    }

    /**
     * Resets the stream both ways with {@code code} and, optionally, v1's error object; its queued
     * DATA is dropped. Nothing when it has ended. The handler is not called back.
     *
     * @throws V2ProtocolException for {@code RELAY_ERROR} without {@code error}, or an object over 8 KiB
     */
    public void reset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {
        requireNonNull(code, "code");
        V2Frame.Reset probe = error == null ? new V2Frame.Reset(1, code) : V2Frame.Reset.of(1, code, error);
        connection.run(this, () -> connection.resetByHandler(this, probe));
    }

    /** Resets the stream {@code RELAY_ERROR} with the relay's failure (its message cut to fit). */
    public void resetRelayError(SpectorException failure) {
        requireNonNull(failure, "failure");
        V2Frame.Reset probe = V2Frame.Reset.relayError(1, failure);
        connection.run(this, () -> connection.resetByHandler(this, probe));
    }

    @Override
    public String toString() {
        return "V2Stream[" + id + ", " + state + "]";
    }
}
