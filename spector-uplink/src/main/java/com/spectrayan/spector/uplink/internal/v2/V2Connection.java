package com.spectrayan.spector.uplink.internal.v2;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.internal.wire.LingeringClose;
import com.spectrayan.spector.uplink.internal.wire.Pongs;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.collection.IntObjectHashMap;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.RejectedExecutionException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One link of uplink protocol v2 (docs/PROTOCOL.md section 9) over a Netty channel whose WebSocket
 * handshake completed: it reads binary messages into frames ({@link V2FrameCodec}), runs the
 * streams ({@link V2Stream}) and the connection's frames (CALL, PING, WINDOW_UPDATE, GOAWAY), and
 * writes through one {@link FrameScheduler}. The relay engines sit on top of it; the negotiation
 * sits below.
 *
 * <p>Design notes.
 *
 * <ul>
 *   <li><b>Concurrency: confinement.</b> Every field is event-loop state: read and written only on
 *       the channel's event loop, as the scheduler and the windows are. Public methods called from
 *       another thread are queued onto the loop ({@code execute}) and run there in the order of
 *       the calls; on the loop they run at once. Callbacks (the {@link Listener}, each {@link
 *       V2StreamHandler}) run on the loop, never under a lock; the frame reader never blocks.
 *   <li><b>Roles.</b> The {@link Role#GATEWAY} opens streams (odd ids, rising: 1, 3, 5, ...), the
 *       {@link Role#WORKER} accepts them, at most {@link Limits#ACTIVE_RELAYS_PER_CONNECTION} open at
 *       once (the next is reset {@code REFUSED_STREAM}). HEADERS on an even id, or on a stream the
 *       gateway never opened, is a connection {@code PROTOCOL_ERROR}.
 *   <li><b>Credit.</b> Inbound DATA is counted by {@link FlowReceiveWindows} as it arrives and
 *       credited back (WINDOW_UPDATE) only when the handler calls {@link V2Stream#consumed}; a
 *       stream's bytes never consumed are credited to the connection when it ends. A DATA frame
 *       starts a round-trip probe (PING) when one is due; its ack grows the windows. The peer's
 *       WINDOW_UPDATEs go to the scheduler's {@link FlowSendWindows}.
 *   <li><b>Errors.</b> A connection error (a {@link V2ProtocolException} or {@link
 *       FlowControlException} of the connection, found here or in the codec) sends GOAWAY with its
 *       code and the last stream processed, then a WebSocket close 1002 (1009 for a message too
 *       long); a stream error resets that stream (RESET with its code) and tells its handler. A
 *       text message closes the link with 1003 (section 9.1). More than {@link
 *       V2Limits#MAX_CONSECUTIVE_EMPTY_DATA_FRAMES} empty DATA frames without END_STREAM in a row
 *       is a connection error {@code PROTOCOL_ERROR}: they cost no window, so nothing else bounds
 *       the work a flood of them makes.
 *   <li><b>The end.</b> At the close, whatever closes it, each open stream's handler gets {@link
 *       V2StreamHandler#onLinkClosed} once, the scheduler releases every queued buffer and frame,
 *       and the listener gets {@link Listener#onClosed} once; frames read after it are released.
 *   <li><b>Writing.</b> The scheduler's sink encodes each frame and packs the frames of one batch
 *       into binary messages of at most {@link #MAX_PACKED_MESSAGE_BYTES} (a frame never spans
 *       two; a larger frame goes alone), written as they fill and flushed at the batch's end.
 * </ul>
 */
public final class V2Connection {
    /** Which end of the link this is. */
    public enum Role {
        /** Opens streams (odd ids) and sends request heads. */
        GATEWAY,
        /** Accepts streams and answers them with response heads. */
        WORKER
    }

    /**
     * What the link tells its owner: new streams (worker), calls, the peer's GOAWAY and the close.
     * Called on the event loop; a method that throws is logged (and, for {@link #onStream}, the
     * stream is reset {@code INTERNAL_ERROR}).
     */
    public interface Listener {
        /**
         * A stream the gateway opened (worker only). The listener sets its handler ({@link
         * V2Stream#handler}) before returning, or resets it; a stream left without a handler is
         * reset {@code INTERNAL_ERROR}. By default every stream is refused.
         *
         * @param endStream whether the request has no body (END_STREAM on its head)
         */
        default void onStream(V2Stream stream, RequestHead head, boolean endStream) {
            stream.reset(V2ErrorCode.REFUSED_STREAM, null);
        }

        /**
         * A CALL frame (section 9.8): a v1 call, result or error. The listener reads it with {@link
         * V2Frame.Call#frame()}, which refuses a corrupt one (answered BAD_REQUEST, as in v1).
         */
        void onCall(V2Frame.Call call);

        /** The peer's GOAWAY: no stream above its last stream id will be processed. */
        default void onGoAway(V2Frame.GoAway goAway) {}

        /** The link closed; {@code cause} is null for a clean close (1000 or 1001 either way). */
        default void onClosed(@Nullable Throwable cause) {}
    }

    /**
     * Bytes of frames packed into one WebSocket message when a batch writes several: four full
     * DATA slices with their headers (65 572), so a message stays small beside the 1 MiB + 9 a
     * peer accepts and a batch of small frames costs one message, not one each.
     */
    static final int MAX_PACKED_MESSAGE_BYTES = 4 * (V2Limits.DATA_SLICE + V2Limits.HEADER_BYTES);

    /** Frames packed into one message at most (the components of its buffer, never consolidated). */
    static final int MAX_PACKED_FRAMES = 64;

    /** Bytes of a WebSocket close frame's reason (RFC 6455 section 5.5: 125 with the code). */
    static final int MAX_CLOSE_REASON_BYTES = 123;

    private static final Logger log = LoggerFactory.getLogger(V2Connection.class);

    private final Channel channel;
    private final Role role;
    private final Listener listener;
    private final Sink sink = new Sink();
    private final FrameScheduler scheduler;
    private final FlowReceiveWindows receiveWindows;

    /** The streams not yet closed, by id. */
    private final IntObjectHashMap<V2Stream> streams = new IntObjectHashMap<>();

    /**
     * Worker: the ids of streams closed here whose END_STREAM still waits in the scheduler (for the
     * gateway's credit). They count against {@link Limits#ACTIVE_RELAYS_PER_CONNECTION} as open
     * streams do until it is written, so a gateway that grants no credit holds at most that many
     * responses queued here, not one more for each stream it opens (found by a review). Pruned at
     * each accept, so never longer than the limit.
     */
    private final ArrayDeque<Integer> endsQueued = new ArrayDeque<>();

    private @Nullable ChannelHandlerContext ctx;

    /** Gateway: the highest stream id opened (0 before the first); worker: the highest the peer opened. */
    private int highestStreamId;

    /** The lowest stream id no longer accepted or opened (after a GOAWAY either way). */
    private long goAwayAbove = Long.MAX_VALUE;
    /**
     * A GOAWAY went either way: no new stream opens here. Written on the loop, read by a relay
     * choosing a link on any thread ({@link #opensStreams}); a stream raced in after it is
     * refused on the loop all the same.
     */
    private volatile boolean goneAway;

    /**
     * Empty DATA frames without END_STREAM read in a row, on any stream; past {@link
     * V2Limits#MAX_CONSECUTIVE_EMPTY_DATA_FRAMES} the link closes. A DATA frame with bytes or
     * END_STREAM sets it back to 0.
     */
    private int emptyDataRun;

    private boolean closeSent;
    private boolean closed;

    /** The peer's WebSocket close, once it arrived (written on the loop, read from any thread). */
    private volatile int peerCloseCode = -1;

    private volatile @Nullable String peerCloseReason;

    private V2Connection(Channel channel, Role role, Listener listener) {
        this.channel = channel;
        this.role = role;
        this.listener = listener;
        this.scheduler = new FrameScheduler(sink, this::onStreamWritable);
        this.receiveWindows = new FlowReceiveWindows(channel.eventLoop().ticker());
    }

    /**
     * Adds the v2 frame handling (a continuation aggregator bounded at {@link
     * V2Limits#MAX_MESSAGE_BYTES}, then this link's handler) at the end of the pipeline of a
     * channel whose WebSocket handshake completed, and returns the link. Call it on the channel's
     * event loop, before frames are read.
     */
    public static V2Connection install(Channel channel, Role role, Listener listener) {
        requireNonNull(channel, "channel");
        requireNonNull(role, "role");
        requireNonNull(listener, "listener");
        if (!channel.eventLoop().inEventLoop()) {
            throw new IllegalStateException("install: on the channel's event loop");
        }
        return install(channel, role, listener, null);
    }

    /**
     * As {@link #install(Channel, Role, Listener)}, with the v2 handlers placed right after the
     * handler named {@code after} (null: at the end), ahead of any handler behind it.
     */
    public static V2Connection install(Channel channel, Role role, Listener listener, @Nullable String after) {
        requireNonNull(channel, "channel");
        requireNonNull(role, "role");
        requireNonNull(listener, "listener");
        if (!channel.eventLoop().inEventLoop()) {
            throw new IllegalStateException("install: on the channel's event loop");
        }
        V2Connection connection = new V2Connection(channel, role, listener);
        WebSocketFrameAggregator aggregator = new WebSocketFrameAggregator(V2Limits.MAX_MESSAGE_BYTES);
        if (after == null) {
            channel.pipeline().addLast("v2-aggregator", aggregator);
            channel.pipeline().addLast("v2-frames", connection.new Handler());
        } else {
            channel.pipeline().addAfter(after, "v2-aggregator", aggregator);
            channel.pipeline().addAfter("v2-aggregator", "v2-frames", connection.new Handler());
        }
        // The scheduler flushes once per batch, and a batch is often one part: a part another
        // channel's read gave (a client's upload, an upstream's download) on this same loop. Those
        // flushes go out as one write once the loop's current work is done (Netty's
        // FlushConsolidationHandler, ahead of the frames handler whose context flushes).
        if (channel.pipeline().get(FlushConsolidationHandler.class) == null) { // one per channel
            channel.pipeline()
                    .addBefore(
                            "v2-aggregator",
                            "v2-flush",
                            new FlushConsolidationHandler(V2Limits.FLUSH_AFTER_FLUSHES, true));
        }
        return connection;
    }

    /** Returns the status code of the WebSocket close the peer sent, or -1 when none arrived. */
    public int peerCloseCode() {
        return peerCloseCode;
    }

    /** Returns the reason of the WebSocket close the peer sent, or null when none arrived. */
    public @Nullable String peerCloseReason() {
        return peerCloseReason;
    }

    /**
     * Describes the link's flow state for a log line or a stuck test, on the event loop: per open
     * stream its state, bytes queued to send, send credit and the window granted; and the
     * connection's send credit and granted window.
     */
    public String describeFlow() {
        StringBuilder out = new StringBuilder(role + " conn send=" + scheduler.connectionWindow() + " recv="
                + receiveWindows.connectionWindow() + " recvAvail=" + receiveWindows.connectionAvailable());
        for (V2Stream st : streams.values()) {
            int id = st.id();
            out.append("; stream ")
                    .append(id)
                    .append(' ')
                    .append(st.state)
                    .append(" queued=")
                    .append(scheduler.queuedBytes(id))
                    .append(" send=")
                    .append(scheduler.streamWindow(id))
                    .append(" writable=")
                    .append(scheduler.isWritable(id))
                    .append(" recv=")
                    .append(receiveWindows.streamWindow(id))
                    .append(" recvAvail=")
                    .append(receiveWindows.streamAvailable(id));
        }
        return out.toString();
    }

    /** Returns the highest stream id opened on this link (0 before the first); on the event loop. */
    public int highestStreamId() {
        return highestStreamId;
    }

    /** Returns this end's role. */
    public Role role() {
        return role;
    }

    /** Returns the channel underneath. */
    public Channel channel() {
        return channel;
    }

    /** Returns the streams open now (not closed); on the event loop. */
    public int openStreams() {
        return streams.size();
    }

    /**
     * Answers whether a new stream may still open on this link: false once a GOAWAY went either
     * way (section 9.8). From any thread; a relay choosing a link asks it, and the loop refuses a
     * stream that raced past it ({@code REFUSED_STREAM}).
     */
    public boolean opensStreams() {
        return !goneAway;
    }

    /** Moves this side's stream ids on to {@code highest}, as if streams up to it had run (tests: the id space's end). */
    void skipStreamIdsTo(int highest) {
        highestStreamId = highest;
    }

    /** Returns whether the link closed (or is closing); on the event loop. */
    public boolean isClosed() {
        return closed;
    }

    /** Returns the DATA bytes queued on {@code streamId}, waiting for credit or the socket; on the event loop. */
    int queuedBytes(int streamId) {
        return scheduler.queuedBytes(streamId);
    }

    /** Returns the window this side grants the peer on {@code streamId} (0 when not open); on the event loop. */
    int receiveWindow(int streamId) {
        return receiveWindows.streamWindow(streamId);
    }

    // ---- the API ----

    /**
     * Opens a stream with its request head (gateway only), END_STREAM on it when the request has
     * no body. From another thread it opens on the loop: the stream's id is 0 until then. When the
     * link cannot take a new stream (closed, or after a GOAWAY either way) the handler is told
     * {@code onReset(REFUSED_STREAM)} on the loop and nothing is sent.
     *
     * @throws com.spectrayan.spector.contract.SpectorException BAD_REQUEST when END_STREAM breaks
     *     the head's rule (section 9.3)
     */
    public V2Stream openStream(RequestHead head, boolean endStream, V2StreamHandler handler) {
        requireNonNull(head, "head");
        requireNonNull(handler, "handler");
        if (role != Role.GATEWAY) {
            throw new IllegalStateException("openStream: the worker accepts streams, the gateway opens them");
        }
        byte[] json = head.toFrame(1, endStream).json(); // checks END_STREAM before anything is queued
        V2Stream stream = new V2Stream(this, 0, head.upgrade() != null, handler);
        if (!run(null, () -> open(stream, json, endStream))) {
            stream.ended = true; // the loop is gone; nothing was opened
        }
        return stream;
    }

    /** Sends a v1 call, result or error as a CALL frame (section 9.8), before any DATA waiting. */
    public void sendCall(Frame frame) {
        V2Frame.Call call = V2Frame.Call.of(requireNonNull(frame, "frame"));
        run(null, () -> control(call));
    }

    /**
     * Sends GOAWAY (section 9.8): no stream above {@code lastStreamId} is opened or accepted on
     * this link from now on (at the gateway, the drain's highest id; at the worker, streams above
     * it are refused). The link stays open; the owner closes it when its streams ended.
     */
    public void goAway(int lastStreamId, V2ErrorCode code, String reason) {
        V2Frame.GoAway frame = new V2Frame.GoAway(lastStreamId, code, cut(reason, V2Limits.MAX_GOAWAY_REASON));
        run(null, () -> {
            goAwayAbove = Math.min(goAwayAbove, (long) lastStreamId + 1);
            goneAway = true;
            control(frame);
        });
    }

    /**
     * Sends GOAWAY as {@link #goAway} does, its last stream id the highest this side opened when
     * it goes out (read on the loop): the gateway's announcement that its drain began.
     */
    public void goAwayAtHighest(V2ErrorCode code, String reason) {
        requireNonNull(code, "code");
        String text = cut(requireNonNull(reason, "reason"), V2Limits.MAX_GOAWAY_REASON);
        run(null, () -> {
            int last = highestStreamId;
            goAwayAbove = Math.min(goAwayAbove, (long) last + 1);
            goneAway = true;
            control(new V2Frame.GoAway(last, code, text));
        });
    }

    /**
     * Sends GOAWAY with {@code code}, the highest stream id this side opened and {@code reason}, then
     * closes the link as {@link #close} does: the drain's last word to a worker. The GOAWAY is
     * written with the close frame, past the scheduler, so a socket that takes no more for now
     * (a worker's zero window, a megabyte of DATA ahead) still carries it before the close;
     * queued behind that DATA it was dropped with the queues at the close (found by a review),
     * and the worker read a bare 1001.
     */
    public void goAwayAndClose(V2ErrorCode code, WebSocketCloseStatus status, String reason) {
        requireNonNull(code, "code");
        requireNonNull(status, "status");
        String text = cut(requireNonNull(reason, "reason"), V2Limits.MAX_GOAWAY_REASON);
        run(null, () -> {
            int last = highestStreamId;
            goAwayAbove = Math.min(goAwayAbove, (long) last + 1);
            goneAway = true;
            closeLink(new V2Frame.GoAway(last, code, text), status, reason, null);
        });
    }

    /**
     * Closes the link with a WebSocket close of {@code status} (1000, or 1001 for a drain) and
     * {@code reason}: open streams get {@link V2StreamHandler#onLinkClosed}, queued frames are
     * dropped and released.
     */
    public void close(WebSocketCloseStatus status, String reason) {
        requireNonNull(status, "status");
        requireNonNull(reason, "reason");
        run(null, () -> closeLink(null, status, reason, null));
    }

    // ---- threading ----

    boolean inEventLoop() {
        return channel.eventLoop().inEventLoop();
    }

    /**
     * Runs {@code task} now when on the loop (and {@code stream}, if any, has its id), else queues
     * it onto the loop; returns false when the loop no longer takes tasks.
     */
    boolean run(@Nullable V2Stream stream, Runnable task) {
        if (inEventLoop() && (stream == null || stream.id() != 0)) {
            task.run();
            return true;
        }
        try {
            channel.eventLoop().execute(task);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    // ---- streams, from their API (on the loop) ----

    private void open(V2Stream stream, byte[] json, boolean endStream) {
        if (closed || highestStreamId + 2L >= goAwayAbove || highestStreamId + 2L > V2Limits.MAX_STREAM_ID) {
            notifyReset(stream, V2ErrorCode.REFUSED_STREAM, null);
            return;
        }
        int id = highestStreamId == 0 ? 1 : highestStreamId + 2;
        highestStreamId = id;
        stream.assignId(id);
        stream.headSent = true;
        streams.put(id, stream);
        scheduler.open(id);
        List<WindowCredit> credits = receiveWindows.open(id); // all bookkeeping before the first write
        control(new V2Frame.Headers(id, json, endStream));
        sendCredits(credits, null);
        if (id + 2L > V2Limits.MAX_STREAM_ID && !goneAway) {
            // The link's last stream id: it is retired as a drain retires it (its worker dials the
            // slot again at the GOAWAY), not left to refuse every relay (found by a review).
            goAwayAbove = Math.min(goAwayAbove, (long) id + 1);
            goneAway = true;
            control(new V2Frame.GoAway(id, V2ErrorCode.NO_ERROR, "stream ids exhausted: dial again"));
        }
        if (endStream) {
            scheduler.reset(id); // nothing to send: the sending side is done at the head
            localEnded(stream);
        }
    }

    boolean isWritable(V2Stream stream) {
        return stream.state != V2Stream.State.CLOSED
                && stream.state != V2Stream.State.HALF_CLOSED_LOCAL
                && stream.headSent
                && scheduler.isWritable(stream.id());
    }

    void sendHeaders(V2Stream stream, V2Frame.Headers frame) {
        if (stream.headSent) {
            throw new IllegalStateException("stream " + stream.id() + ": a second response head");
        }
        if (closed || stream.state == V2Stream.State.CLOSED) {
            return;
        }
        stream.headSent = true;
        control(frame);
        if (frame.endStream()) {
            scheduler.reset(stream.id());
            localEnded(stream);
        }
    }

    void write(V2Stream stream, ByteBuf data, boolean endStream) {
        if (closed || stream.state == V2Stream.State.CLOSED) {
            data.release();
            return;
        }
        if (!stream.headSent) {
            data.release();
            throw new IllegalStateException("stream " + stream.id() + ": DATA before the response head");
        }
        if (stream.state == V2Stream.State.HALF_CLOSED_LOCAL) {
            data.release();
            throw new IllegalStateException("stream " + stream.id() + ": DATA after END_STREAM");
        }
        try {
            scheduler.enqueue(stream.id(), data, endStream);
        } catch (IllegalStateException e) { // past STREAM_QUEUE_MAX_BYTES: the scheduler released its queue
            log.warn("stream {}: {}; reset INTERNAL_ERROR", stream.id(), e.getMessage());
            resetStream(stream, new V2Frame.Reset(stream.id(), V2ErrorCode.INTERNAL_ERROR), true);
            return;
        }
        if (endStream) {
            localEnded(stream);
        }
    }

    void consumed(V2Stream stream, int bytes) {
        if (closed || stream.state == V2Stream.State.CLOSED) {
            return;
        }
        sendCredits(receiveWindows.consumed(stream.id(), bytes), stream);
    }

    void resetByHandler(V2Stream stream, V2Frame.Reset probe) {
        if (closed || stream.state == V2Stream.State.CLOSED) {
            return;
        }
        resetStream(stream, new V2Frame.Reset(stream.id(), probe.code(), probe.errorObject()), false);
    }

    // ---- stream states ----

    /** This side sent (queued) END_STREAM. */
    private void localEnded(V2Stream s) {
        switch (s.state) {
            case OPEN -> s.state = V2Stream.State.HALF_CLOSED_LOCAL;
            case HALF_CLOSED_REMOTE -> closeStream(s);
            default -> throw new IllegalStateException("stream " + s.id() + ": END_STREAM sent in " + s.state);
        }
    }

    /**
     * The peer sent END_STREAM. At the gateway, a response that ends while the request's own end
     * still waits in the scheduler (for the worker's credit) resets the stream {@code NO_ERROR}
     * and drops that queue: the worker answered and wants no more (RFC 9113 section 8.1), and a
     * queue kept for credit that may never come outlived the relay and its per-worker slot (found
     * by a review). A switched stream's directions are independent (section 9.7): never there.
     */
    private void remoteEnded(V2Stream s) {
        switch (s.state) {
            case OPEN -> s.state = V2Stream.State.HALF_CLOSED_REMOTE;
            case HALF_CLOSED_LOCAL -> {
                if (role == Role.GATEWAY && !s.upgrade() && scheduler.isSending(s.id())) {
                    resetStream(s, new V2Frame.Reset(s.id(), V2ErrorCode.NO_ERROR), false);
                } else {
                    closeStream(s);
                }
            }
            default -> throw new IllegalStateException("stream " + s.id() + ": END_STREAM received in " + s.state);
        }
    }

    /** Closes a stream here: gone from the map and the receive windows (its untaken bytes credited). */
    private void closeStream(V2Stream s) {
        if (s.state == V2Stream.State.CLOSED) {
            return;
        }
        s.state = V2Stream.State.CLOSED;
        streams.remove(s.id());
        if (role == Role.WORKER && scheduler.isSending(s.id())) {
            endsQueued.add(s.id());
        }
        sendCredits(receiveWindows.close(s.id()), null);
    }

    /** Resets {@code s} both ways with {@code frame}; its handler is told when {@code notify}. */
    private void resetStream(V2Stream s, V2Frame.Reset frame, boolean notify) {
        if (s.state == V2Stream.State.CLOSED) {
            return;
        }
        closeStream(s);
        scheduler.reset(s.id()); // its queued DATA goes first (section 9.6)
        control(frame);
        if (notify) {
            notifyReset(s, frame.code(), null);
        }
    }

    /** Tells the handler, once, that the stream was reset (or refused) with {@code code}. */
    private void notifyReset(V2Stream s, V2ErrorCode code, Frame.@Nullable ErrorFrame error) {
        if (s.ended) {
            return;
        }
        s.ended = true;
        s.state = V2Stream.State.CLOSED;
        V2StreamHandler h = s.handler();
        if (h == null) {
            return;
        }
        try {
            h.onReset(code, error);
        } catch (RuntimeException e) {
            log.warn("stream {}: its handler failed on its reset", s.id(), e);
        }
    }

    /** Tells every open stream that the link closed. */
    private void linkClosed(@Nullable Throwable cause) {
        List<V2Stream> open = new ArrayList<>(streams.values());
        streams.clear();
        for (V2Stream s : open) {
            if (s.ended) {
                continue;
            }
            s.ended = true;
            s.state = V2Stream.State.CLOSED;
            V2StreamHandler h = s.handler();
            if (h != null) {
                try {
                    h.onLinkClosed(cause);
                } catch (RuntimeException e) {
                    log.warn("stream {}: its handler failed on the link's close", s.id(), e);
                }
            }
        }
    }

    /** Runs a handler callback; one that throws resets its stream INTERNAL_ERROR. */
    private void callback(V2Stream s, Runnable call) {
        try {
            call.run();
        } catch (RuntimeException e) {
            log.warn("stream {}: its handler failed; reset INTERNAL_ERROR", s.id(), e);
            resetStream(s, new V2Frame.Reset(s.id(), V2ErrorCode.INTERNAL_ERROR), false);
        }
    }

    private void onStreamWritable(int streamId) {
        V2Stream s = streams.get(streamId);
        V2StreamHandler h = s == null ? null : s.handler();
        if (h != null) {
            callback(s, h::onWritabilityChanged);
        }
    }

    // ---- writing ----

    /** Queues a control frame; a full queue (the peer provokes answers it does not read) closes the link. */
    private void control(V2Frame frame) {
        if (closed) {
            return;
        }
        if (!scheduler.control(frame)) {
            connectionError(
                    V2ErrorCode.INTERNAL_ERROR,
                    V2Limits.MAX_QUEUED_CONTROL_FRAMES + " control frames wait for the socket (expected: fewer,"
                            + " V2Limits.MAX_QUEUED_CONTROL_FRAMES; the peer does not read)",
                    null,
                    WebSocketCloseStatus.PROTOCOL_ERROR);
        }
    }

    /** Queues the WINDOW_UPDATEs due, but none for a stream whose peer already ended its DATA. */
    private void sendCredits(List<WindowCredit> credits, @Nullable V2Stream of) {
        for (WindowCredit c : credits) {
            if (of != null && c.streamId() == of.id() && of.state == V2Stream.State.HALF_CLOSED_REMOTE) {
                continue; // the peer sends no more on it
            }
            control(new V2Frame.WindowUpdate(c.streamId(), c.increment()));
        }
    }

    // ---- reading ----

    private void onMessage(ByteBuf message) {
        if (closed) {
            return;
        }
        int n = message.readableBytes();
        if (n > V2Limits.MAX_MESSAGE_BYTES) {
            connectionError(
                    V2ErrorCode.FRAME_SIZE_ERROR,
                    "message: " + n + " bytes (expected: <= " + V2Limits.MAX_MESSAGE_BYTES + ")",
                    null,
                    WebSocketCloseStatus.MESSAGE_TOO_BIG);
            return;
        }
        try {
            V2FrameCodec.decodeAll(message, this::onFrame);
        } catch (V2ProtocolException e) { // onFrame lets only connection errors out
            connectionError(e.code(), e.reason(), e, WebSocketCloseStatus.PROTOCOL_ERROR);
        }
    }

    /** Takes one frame; throws only a connection-error {@link V2ProtocolException}. */
    private void onFrame(V2Frame frame) {
        if (closed) {
            ReferenceCountUtil.release(frame);
            return;
        }
        try {
            if (frame instanceof V2Frame.Data data) {
                onData(data);
            } else if (frame instanceof V2Frame.Headers headers) {
                onHeaders(headers);
            } else if (frame instanceof V2Frame.Reset reset) {
                onReset(reset);
            } else if (frame instanceof V2Frame.WindowUpdate update) {
                scheduler.onWindowUpdate(update.streamId(), update.increment());
            } else if (frame instanceof V2Frame.Ping ping) {
                onPing(ping);
            } else if (frame instanceof V2Frame.GoAway goAway) {
                onGoAway(goAway);
            } else if (frame instanceof V2Frame.Call call) {
                try {
                    listener.onCall(call);
                } catch (RuntimeException e) {
                    log.warn("v2 link {}: the listener failed on a CALL", channel.remoteAddress(), e);
                }
            }
        } catch (V2ProtocolException e) {
            if (e.isConnectionError()) {
                throw e;
            }
            streamError(e.streamId(), e.code(), e.reason());
        } catch (FlowControlException e) {
            V2ErrorCode code = e.kind() == FlowControlException.Kind.FLOW_CONTROL_ERROR
                    ? V2ErrorCode.FLOW_CONTROL_ERROR
                    : V2ErrorCode.PROTOCOL_ERROR;
            if (e.connectionLevel()) {
                throw V2ProtocolException.connectionError(code, e.streamId(), String.valueOf(e.getMessage()), e);
            }
            streamError(e.streamId(), code, String.valueOf(e.getMessage()));
        }
    }

    private void onData(V2Frame.Data data) {
        int id = data.streamId();
        if (data.length() > 0 || data.endStream()) {
            emptyDataRun = 0;
        } else if (++emptyDataRun > V2Limits.MAX_CONSECUTIVE_EMPTY_DATA_FRAMES) {
            data.release();
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.PROTOCOL_ERROR,
                    id,
                    emptyDataRun + " empty DATA frames in a row (expected: <= "
                            + V2Limits.MAX_CONSECUTIVE_EMPTY_DATA_FRAMES
                            + ", V2Limits.MAX_CONSECUTIVE_EMPTY_DATA_FRAMES)");
        }
        List<WindowCredit> credits;
        try {
            credits = receiveWindows.onData(id, data.length());
        } catch (RuntimeException e) {
            data.release();
            throw e;
        }
        sendCredits(credits, null);
        OptionalLong probe = receiveWindows.pingDue();
        if (probe.isPresent()) {
            control(new V2Frame.Ping(probe.getAsLong(), false));
        }
        V2Stream s = streams.get(id);
        if (s == null) { // closed: dropped, its bytes taken for the connection above
            data.release();
            return;
        }
        if (!s.headReceived) {
            data.release();
            streamError(id, V2ErrorCode.PROTOCOL_ERROR, "DATA before the response head");
            return;
        }
        if (s.state == V2Stream.State.HALF_CLOSED_REMOTE) {
            data.release();
            streamError(id, V2ErrorCode.STREAM_CLOSED, "DATA after the peer's END_STREAM");
            return;
        }
        boolean end = data.endStream();
        if (end) {
            remoteEnded(s);
        }
        V2StreamHandler h = requireNonNull(s.handler(), "handler");
        callback(s, () -> h.onData(data.payload(), end));
    }

    private void onHeaders(V2Frame.Headers frame) {
        if (role == Role.WORKER) {
            onRequestHead(frame);
            return;
        }
        int id = frame.streamId();
        V2Stream s = streams.get(id);
        if (s == null) {
            checkOpened("HEADERS", id);
            return; // closed: dropped
        }
        if (s.headReceived) {
            streamError(id, V2ErrorCode.PROTOCOL_ERROR, "a second HEADERS");
            return;
        }
        ResponseHead head = ResponseHead.parse(frame, s.upgrade());
        s.headReceived = true;
        if (frame.endStream()) {
            remoteEnded(s);
        }
        V2StreamHandler h = requireNonNull(s.handler(), "handler");
        callback(s, () -> h.onResponseHead(head, frame.endStream()));
    }

    private void onRequestHead(V2Frame.Headers frame) {
        int id = frame.streamId();
        if ((id & 1) == 0) {
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.PROTOCOL_ERROR,
                    id,
                    "HEADERS on stream " + id + " (expected: an odd id, the gateway's)");
        }
        V2Stream existing = streams.get(id);
        if (existing != null) {
            streamError(id, V2ErrorCode.PROTOCOL_ERROR, "a second HEADERS");
            return;
        }
        if (id <= highestStreamId) {
            return; // closed: dropped
        }
        highestStreamId = id;
        List<WindowCredit> credits = receiveWindows.open(id);
        scheduler.open(id);
        sendCredits(credits, null);
        endsQueued.removeIf(queued -> !scheduler.isSending(queued));
        if (id >= goAwayAbove || !Limits.ACTIVE_RELAYS_PER_CONNECTION.allows(streams.size() + endsQueued.size() + 1L)) {
            refuse(id, V2ErrorCode.REFUSED_STREAM);
            return;
        }
        RequestHead head;
        try {
            head = RequestHead.parse(frame);
        } catch (V2ProtocolException e) {
            log.debug("stream {}: {}", id, e.getMessage());
            refuse(id, e.code());
            return;
        }
        V2Stream s = new V2Stream(this, id, head.upgrade() != null, null);
        s.headReceived = true;
        streams.put(id, s);
        if (frame.endStream()) {
            s.state = V2Stream.State.HALF_CLOSED_REMOTE;
        }
        try {
            listener.onStream(s, head, frame.endStream());
        } catch (RuntimeException e) {
            log.warn("stream {}: the listener failed on it; reset INTERNAL_ERROR", id, e);
            resetStream(s, new V2Frame.Reset(id, V2ErrorCode.INTERNAL_ERROR), false);
            return;
        }
        if (s.handler() == null && s.state != V2Stream.State.CLOSED) {
            log.warn("stream {}: the listener set no handler; reset INTERNAL_ERROR", id);
            resetStream(s, new V2Frame.Reset(id, V2ErrorCode.INTERNAL_ERROR), false);
        }
    }

    /**
     * Resets a stream that has no {@link V2Stream} (the worker did not accept it, or it closed here):
     * opened in the windows first, so its late frames count as a closed stream's.
     */
    private void refuse(int id, V2ErrorCode code) {
        scheduler.reset(id);
        sendCredits(receiveWindows.close(id), null);
        control(new V2Frame.Reset(id, code));
    }

    private void onReset(V2Frame.Reset reset) {
        int id = reset.streamId();
        V2Stream s = streams.get(id);
        if (s == null) {
            checkOpened("RESET", id);
            scheduler.reset(id); // its END_STREAM may still be queued: nothing more goes out
            return;
        }
        closeStream(s);
        scheduler.reset(id);
        notifyReset(s, reset.code(), reset.error());
    }

    private void onPing(V2Frame.Ping ping) {
        if (!ping.ack()) {
            control(new V2Frame.Ping(ping.opaque(), true));
            return;
        }
        sendCredits(receiveWindows.onPingAck(ping.opaque()), null);
    }

    private void onGoAway(V2Frame.GoAway goAway) {
        goAwayAbove = Math.min(goAwayAbove, (long) goAway.lastStreamId() + 1);
        goneAway = true;
        if (role == Role.GATEWAY) {
            // Streams above the last id were not processed: refused, so the engine may retry them.
            for (V2Stream s : new ArrayList<>(streams.values())) {
                if (s.id() > goAway.lastStreamId()) {
                    resetStream(s, new V2Frame.Reset(s.id(), V2ErrorCode.REFUSED_STREAM), true);
                }
            }
        }
        try {
            listener.onGoAway(goAway);
        } catch (RuntimeException e) {
            log.warn("v2 link {}: the listener failed on a GOAWAY", channel.remoteAddress(), e);
        }
    }

    /** Refuses a frame on a stream never opened (RFC 9113 section 5.1): a connection error. */
    private void checkOpened(String type, int id) {
        if (StreamIds.neverOpened(id, highestStreamId)) {
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.PROTOCOL_ERROR,
                    id,
                    type + " on stream " + id + ", never opened (expected: odd, at most " + highestStreamId + ")");
        }
    }

    /** Resets stream {@code id} for the peer's breach of a stream rule, telling its handler. */
    private void streamError(int id, V2ErrorCode code, String reason) {
        log.debug("stream {}: reset {}: {}", id, code, reason);
        V2Stream s = streams.get(id);
        if (s != null) {
            resetStream(s, new V2Frame.Reset(id, code), true);
            return;
        }
        refuse(id, code); // closed here, still open in the windows (e.g. its END_STREAM queued)
    }

    // ---- the close ----

    private void connectionError(
            V2ErrorCode code, String reason, @Nullable Throwable cause, WebSocketCloseStatus status) {
        if (closed) {
            return;
        }
        log.warn("v2 link {}: connection error {}: {}", channel.remoteAddress(), code, reason);
        int last = role == Role.WORKER ? highestStreamId : 0;
        V2Frame.GoAway goAway = new V2Frame.GoAway(last, code, cut(reason, V2Limits.MAX_GOAWAY_REASON));
        Throwable failure = cause != null ? cause : V2ProtocolException.connectionError(code, 0, reason);
        closeLink(goAway, status, code + ": " + reason, failure);
    }

    /** Ends the link: streams told, queues released, GOAWAY (if any) and the close frame sent. */
    private void closeLink(
            V2Frame.@Nullable GoAway goAway, WebSocketCloseStatus status, String reason, @Nullable Throwable cause) {
        if (closed) {
            return;
        }
        terminate(cause);
        ChannelHandlerContext c = ctx;
        if (c == null || closeSent || !channel.isActive()) {
            channel.close();
            return;
        }
        closeSent = true;
        if (goAway != null) {
            c.write(new BinaryWebSocketFrame(V2FrameCodec.encode(goAway, c.alloc())));
        }
        LingeringClose.after(
                c.writeAndFlush(new CloseWebSocketFrame(status.code(), cut(reason, MAX_CLOSE_REASON_BYTES))));
    }

    /** Marks the link closed, once: the scheduler and the sink release, streams and listener are told. */
    private void terminate(@Nullable Throwable cause) {
        if (closed) {
            return;
        }
        closed = true;
        scheduler.close();
        sink.discard();
        linkClosed(cause);
        try {
            listener.onClosed(cause);
        } catch (RuntimeException e) {
            log.warn("v2 link {}: the listener failed on the close", channel.remoteAddress(), e);
        }
    }

    /** Returns {@code text} cut to at most {@code maxBytes} of UTF-8, never inside a surrogate pair. */
    static String cut(String text, int maxBytes) {
        if (text.getBytes(StandardCharsets.UTF_8).length <= maxBytes) {
            return text;
        }
        int end = Math.min(text.length(), maxBytes / 3);
        if (end > 0 && Character.isHighSurrogate(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(0, end);
    }

    // ---- the channel ----

    /** Encodes the scheduler's frames and packs each batch into binary messages. */
    private final class Sink implements FrameSink {
        private @Nullable CompositeByteBuf pending;
        private int pendingBytes;

        @Override
        public void control(Object frame) {
            add(V2FrameCodec.encode((V2Frame) frame, alloc()));
        }

        @Override
        public void data(int streamId, ByteBuf slice, boolean endStream) {
            add(V2FrameCodec.encode(new V2Frame.Data(streamId, slice, endStream), alloc()));
        }

        @Override
        public void flush() {
            ChannelHandlerContext c = ctx;
            writePending();
            if (c != null) {
                c.flush();
            }
        }

        @Override
        public boolean isWritable() {
            return channel.isWritable();
        }

        private ByteBufAllocator alloc() {
            return channel.alloc();
        }

        private void add(ByteBuf encoded) {
            if (closed || ctx == null) {
                encoded.release();
                return;
            }
            int n = encoded.readableBytes();
            CompositeByteBuf p = pending;
            if (p != null && (pendingBytes + n > MAX_PACKED_MESSAGE_BYTES || p.numComponents() >= MAX_PACKED_FRAMES)) {
                writePending();
                p = null;
            }
            if (p == null) {
                p = alloc().compositeBuffer(MAX_PACKED_FRAMES);
                pending = p;
            }
            p.addComponent(true, encoded);
            pendingBytes += n;
        }

        private void writePending() {
            CompositeByteBuf p = pending;
            ChannelHandlerContext c = ctx;
            if (p == null) {
                return;
            }
            pending = null;
            pendingBytes = 0;
            if (c == null || closed) {
                p.release();
                return;
            }
            c.write(new BinaryWebSocketFrame(p));
        }

        void discard() {
            CompositeByteBuf p = pending;
            if (p != null) {
                pending = null;
                pendingBytes = 0;
                p.release();
            }
        }
    }

    private final class Handler extends ChannelInboundHandlerAdapter {
        private final Pongs pongs = new Pongs();

        @Override
        public void handlerAdded(ChannelHandlerContext context) {
            ctx = context;
        }

        @Override
        public void channelRead(ChannelHandlerContext context, Object msg) {
            if (msg instanceof BinaryWebSocketFrame binary) {
                try {
                    onMessage(binary.content());
                } finally {
                    binary.release();
                }
            } else if (msg instanceof TextWebSocketFrame) {
                ReferenceCountUtil.release(msg);
                if (!closed) {
                    log.warn("v2 link {}: a text message; closing 1003", channel.remoteAddress());
                    closeLink(
                            null,
                            WebSocketCloseStatus.INVALID_MESSAGE_TYPE,
                            "text messages are not part of " + V2Limits.SUBPROTOCOL,
                            new IOException("a text message on a v2 link"));
                }
            } else if (msg instanceof PingWebSocketFrame ping) {
                if (closeSent || !channel.isActive()) {
                    ping.release();
                } else if (!pongs.answer(context, ping)) {
                    log.warn(
                            "v2 link {}: WebSocket pings with {} pongs unsent (the peer does not read); closing",
                            channel.remoteAddress(),
                            Pongs.MAX_UNSENT);
                    closeLink(
                            null,
                            WebSocketCloseStatus.POLICY_VIOLATION,
                            "pings with " + Pongs.MAX_UNSENT + " pongs unsent (the peer does not read)",
                            new IOException("a WebSocket ping flood on a v2 link"));
                    channel.close(); // the close frame waits behind what the peer does not read
                }
            } else if (msg instanceof CloseWebSocketFrame close) {
                int code = close.statusCode();
                String reason = close.reasonText();
                close.release();
                peerClosed(context, code, reason);
            } else if (msg instanceof WebSocketFrame) {
                ReferenceCountUtil.release(msg); // a pong, or a stray continuation
            } else {
                context.fireChannelRead(msg);
            }
        }

        private void peerClosed(ChannelHandlerContext context, int code, String reason) {
            peerCloseCode = code;
            peerCloseReason = reason;
            boolean clean = code == WebSocketCloseStatus.NORMAL_CLOSURE.code()
                    || code == WebSocketCloseStatus.ENDPOINT_UNAVAILABLE.code()
                    || code == -1;
            terminate(clean ? null : new IOException("v2 link closed by the peer " + code + ": " + reason));
            if (closeSent) {
                context.close();
                return;
            }
            closeSent = true;
            int echo = WebSocketCloseStatus.isValidStatusCode(code) ? code : WebSocketCloseStatus.NORMAL_CLOSURE.code();
            context.writeAndFlush(new CloseWebSocketFrame(echo, "")).addListener(ChannelFutureListener.CLOSE);
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext context) {
            if (!closed && channel.isWritable()) {
                scheduler.writabilityChanged();
            }
            context.fireChannelWritabilityChanged();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
            if (cause instanceof TooLongFrameException) {
                connectionError(
                        V2ErrorCode.FRAME_SIZE_ERROR,
                        "message over " + V2Limits.MAX_MESSAGE_BYTES + " bytes",
                        cause,
                        WebSocketCloseStatus.MESSAGE_TOO_BIG);
            } else if (cause instanceof CorruptedWebSocketFrameException refused) {
                if (role == Role.GATEWAY) { // its decoder leaves the close to this link (UplinkAcceptor)
                    WebSocketCloseStatus status = refused.closeStatus();
                    connectionError(
                            status.code() == WebSocketCloseStatus.MESSAGE_TOO_BIG.code()
                                    ? V2ErrorCode.FRAME_SIZE_ERROR
                                    : V2ErrorCode.PROTOCOL_ERROR,
                            "refused frame: " + refused.getMessage(),
                            cause,
                            status);
                } else {
                    terminate(cause); // the worker's WebSocket decoder sends its close and closes the channel
                }
            } else {
                log.debug("v2 link {} failed: {}", channel.remoteAddress(), cause.toString());
                terminate(cause);
                context.close();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext context) {
            terminate(closeSent ? null : new IOException("v2 link lost without a WebSocket close"));
            context.fireChannelInactive();
        }
    }
}
