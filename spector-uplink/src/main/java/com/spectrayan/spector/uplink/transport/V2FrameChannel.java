package com.spectrayan.spector.uplink.transport;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.V2Carrier;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Frame;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.v2.V2Stream;
import com.spectrayan.spector.uplink.internal.v2.V2StreamAcceptor;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link FrameChannel} over a link that negotiated protocol v2 (docs/PROTOCOL.md section 9.1):
 * the v1 calls, results and errors travel as CALL frames on stream 0 (section 9.8), so the code
 * that makes and answers calls ({@code status.get}) is the same on both versions; relays are the
 * link's streams ({@link #connection()}), which the relay engines use directly.
 *
 * <p>What it adds to {@link V2Connection}: the receiver (made once, at {@link #open}, on the event
 * loop, before any frame is handed to it; a CALL read before it is dropped, a stream refused), the
 * hand-over of each stream a gateway opens to a receiver that is a {@link V2StreamAcceptor} (the
 * worker's session; any other receiver has its streams refused {@code REFUSED_STREAM}), the idle
 * check's close (1001, as {@link WebSocketFrameChannel}), pings, and {@link #goAway}: GOAWAY with
 * the highest stream opened, then the close 1001.
 *
 * <p>Threading: the receiver is called on the link's event loop, one call at a time, in order;
 * {@link #send} may be called from any thread (its frame is queued onto the loop in call order).
 */
final class V2FrameChannel implements FrameChannel, V2Carrier {
    private static final Logger log = LoggerFactory.getLogger(V2FrameChannel.class);

    private final Channel channel;
    private final Function<? super V2FrameChannel, ? extends @Nullable Receiver> receivers;
    private final V2Connection connection;

    /** Who takes the streams the gateway opens, when the receiver registered one; on the event loop. */
    private @Nullable V2StreamAcceptor streamAcceptor;

    /** The receiver, once {@link #open} made it; written and read on the event loop. */
    private @Nullable Receiver receiver;

    /** What runs when the peer's GOAWAY arrives ({@link #onGoAway}); read on the event loop. */
    private volatile @Nullable Runnable goAwayAction;

    /** Whether the link closed; the failure that closed it, if any (read from any thread). */
    private volatile boolean closed;

    private volatile @Nullable Throwable failure;

    private V2FrameChannel(
            Channel channel,
            V2Connection.Role role,
            @Nullable String after,
            Function<? super V2FrameChannel, ? extends @Nullable Receiver> receivers) {
        this.channel = channel;
        this.receivers = receivers;
        this.connection = V2Connection.install(channel, role, new Listener(), after);
        channel.pipeline().addAfter("v2-frames", "v2-idle", new IdleClose());
    }

    /**
     * Installs v2 on a channel whose handshake selected {@code spector-uplink.v2} (right after the
     * handler named {@code after}, or at the end when null) and returns its frame channel; the
     * receiver is made by {@code receivers} at {@link #open}. On the channel's event loop.
     */
    static V2FrameChannel install(
            Channel channel,
            V2Connection.Role role,
            @Nullable String after,
            Function<? super V2FrameChannel, ? extends @Nullable Receiver> receivers) {
        requireNonNull(channel, "channel");
        requireNonNull(role, "role");
        requireNonNull(receivers, "receivers");
        return new V2FrameChannel(channel, role, after, receivers);
    }

    /** Makes the receiver (on the event loop): from now on calls and streams reach it. */
    void open() {
        if (!channel.eventLoop().inEventLoop()) {
            throw new IllegalStateException("open: on the channel's event loop");
        }
        if (closed || receiver != null) {
            return;
        }
        receiver = receivers.apply(this);
    }

    /** Returns the Netty channel underneath. */
    public Channel channel() {
        return channel;
    }

    /** Returns the v2 link: the relay engines open and accept its streams. */
    @Override
    public V2Connection connection() {
        return connection;
    }

    @Override
    public void acceptStreams(V2StreamAcceptor acceptor) {
        this.streamAcceptor = requireNonNull(acceptor, "acceptor");
    }

    @Override
    public CompletionStage<Void> send(Frame frame) {
        requireNonNull(frame, "frame");
        if (!isOpen()) {
            return CompletableFuture.failedFuture(new ClosedChannelException());
        }
        try {
            connection.sendCall(frame);
        } catch (RuntimeException e) { // a push, or a call over the CALL bound
            return CompletableFuture.failedFuture(e);
        }
        return CompletableFuture.completedFuture(null);
    }

    @Override
    public void close(String reason) {
        connection.close(WebSocketCloseStatus.NORMAL_CLOSURE, requireNonNull(reason, "reason"));
    }

    /**
     * Runs {@code action} on the event loop when the peer's GOAWAY with {@code NO_ERROR} arrives
     * (each time one does): a graceful one, a drain's. A GOAWAY with an error code comes right
     * before the close, which the dialer answers as any close. Set once the link is made.
     */
    public void onGoAway(Runnable action) {
        goAwayAction = requireNonNull(action, "action");
    }

    /**
     * GOAWAY with {@code NO_ERROR}, the highest stream opened and {@code reason} (section 9.8), then
     * the close 1001 Going Away: the worker knows no stream above it comes, and re-dials at once.
     * The caller ({@code WorkerLink}) calls it once the link's relays ended, or at the drain's end.
     */
    @Override
    public void goAway(String reason) {
        requireNonNull(reason, "reason");
        connection.goAwayAndClose(V2ErrorCode.NO_ERROR, WebSocketCloseStatus.ENDPOINT_UNAVAILABLE, reason);
    }

    /** Closes with 1008 Policy Violation and the reason. */
    @Override
    public void closeForPolicy(String reason) {
        connection.close(WebSocketCloseStatus.POLICY_VIOLATION, requireNonNull(reason, "reason"));
    }

    @Override
    public boolean isOpen() {
        return !closed && channel.isActive();
    }

    /** Returns the status code of the close frame the peer sent, or -1 when none arrived. */
    public int peerCloseCode() {
        return connection.peerCloseCode();
    }

    /** Returns the reason of the close frame the peer sent, or null when none arrived. */
    public @Nullable String peerCloseReason() {
        return connection.peerCloseReason();
    }

    /** Returns the failure that closed the link, or null (a clean close, or still open). */
    public @Nullable Throwable failure() {
        return failure;
    }

    /** Sends a WebSocket ping (on the event loop) while the link is open. */
    void ping() {
        if (!channel.eventLoop().inEventLoop()) {
            channel.eventLoop().execute(this::ping);
            return;
        }
        if (isOpen()) {
            channel.writeAndFlush(new PingWebSocketFrame());
        }
    }

    private final class Listener implements V2Connection.Listener {
        @Override
        public void onStream(V2Stream stream, RequestHead head, boolean endStream) {
            V2StreamAcceptor registered = streamAcceptor;
            if (registered != null) {
                registered.onStream(stream, head, endStream);
            } else if (receiver instanceof V2StreamAcceptor acceptor) {
                acceptor.onStream(stream, head, endStream);
            } else {
                stream.reset(V2ErrorCode.REFUSED_STREAM, null);
            }
        }

        @Override
        public void onCall(V2Frame.Call call) {
            Receiver r = receiver;
            if (r == null) {
                return;
            }
            Frame frame;
            try {
                frame = call.frame();
            } catch (CorruptFrameException e) {
                if (!r.onCorruptFrame(e)) {
                    log.warn("closing v2 link {}: corrupt call: {}", channel.remoteAddress(), e.getMessage());
                    connection.close(WebSocketCloseStatus.INVALID_PAYLOAD_DATA, "corrupt call: " + e.getMessage());
                }
                return;
            }
            if (frame instanceof Frame.Call c && isRelayOp(c.op())) {
                // Section 9.8: on a v2 link a relay is a stream; v1's relay operations are refused.
                connection.sendCall(Frame.ErrorFrame.of(
                        c.id(),
                        SpectorException.badRequest(
                                "op", c.op() + " on a " + V2Limits.SUBPROTOCOL + " link (relays are streams)")));
                return;
            }
            r.onFrame(frame);
        }

        @Override
        public void onGoAway(V2Frame.GoAway goAway) {
            Runnable action = goAwayAction;
            if (action != null && goAway.code() == V2ErrorCode.NO_ERROR) {
                action.run();
            }
        }

        private static boolean isRelayOp(String op) {
            return op.equals(RelayRequest.OP) || op.equals(RelayBody.OP) || op.equals(RelayCancel.OP);
        }

        @Override
        public void onClosed(@Nullable Throwable cause) {
            closed = true;
            failure = cause;
            Receiver r = receiver;
            if (r != null) {
                try {
                    r.onClose(cause);
                } catch (RuntimeException e) {
                    log.error("uplink close listener failed", e);
                }
            }
        }
    }

    /** The idle check's close: a link that received nothing for the idle timeout closes with 1001. */
    private final class IdleClose extends ChannelInboundHandlerAdapter {
        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof IdleStateEvent idle && idle.state() == IdleState.READER_IDLE) {
                log.warn("closing v2 link {}: nothing received for too long", channel.remoteAddress());
                connection.close(WebSocketCloseStatus.ENDPOINT_UNAVAILABLE, "nothing received for too long");
            }
            ctx.fireUserEventTriggered(evt);
        }
    }
}
