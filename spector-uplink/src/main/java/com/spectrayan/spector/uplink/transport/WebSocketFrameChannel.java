package com.spectrayan.spector.uplink.transport;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.internal.wire.LingeringClose;
import com.spectrayan.spector.uplink.internal.wire.Pongs;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.FrameTooLargeException;
import com.spectrayan.spector.uplink.wire.UplinkException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.ContinuationWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link FrameChannel} over a Netty channel that speaks WebSocket: one uplink frame per text
 * message, encoded and decoded by {@link FrameCodec}.
 *
 * <p>Rules: a binary message closes the connection with 1003; a message over {@link
 * #MAX_MESSAGE_BYTES} (continuations aggregated) or text over {@link FrameCodec#MAX_FRAME_CHARS}
 * closes it with 1009; a {@link CorruptFrameException} goes to the receiver's {@link
 * Receiver#onCorruptFrame}, and closes the connection with 1007 unless the receiver takes it (the
 * worker's {@code UplinkSession} on the gateway's uplink does). Pings are answered. {@link #close}
 * sends a close frame 1000 with the reason, then closes the channel.
 *
 * <p>The receiver is made once, when the connection opens (the handshake completed), by the
 * factory the channel was built with ({@link #install}, {@link UplinkAcceptor}'s handler, {@link
 * UplinkDialer}'s {@code onConnected}), on the event loop and before any frame is read: so no
 * frame is held for a receiver that is not there yet. Text read before the connection opens or
 * after a close was sent or received is dropped.
 *
 * <p>Threading: frames and the close are delivered on the channel's event loop, in order. {@link
 * #send} may be called from any thread; frames leave in the order of the {@code send} calls.
 * Only {@link #isOpen()} and the peer's close are read across threads; everything else is
 * event-loop state.
 */
public final class WebSocketFrameChannel implements FrameChannel {
    /** Bytes of one aggregated WebSocket message: at most 3 UTF-8 bytes per char of a frame. */
    public static final int MAX_MESSAGE_BYTES = 3 * FrameCodec.MAX_FRAME_CHARS;

    /**
     * The most bytes of frames waiting for the socket before the link closes 1008: a peer that
     * sends calls and never reads their answers (the third review's hostile gateway, 300 000
     * error answers to one worker, 365 MB resident) must not hold them all. Above what flow
     * control lets through in good faith: 16 relays' 4 unanswered bodies of a frame each, 64
     * frames of at most {@link FrameCodec#MAX_FRAME_CHARS} (24 MB). v2 bounds its control frames
     * the same way (section 9.6).
     */
    public static final long MAX_UNSENT_BYTES = 48L * 1024 * 1024;

    /** Bytes of a close frame's reason (the WebSocket limit). */
    static final int MAX_CLOSE_REASON_BYTES = 123;

    private static final Logger log = LoggerFactory.getLogger(WebSocketFrameChannel.class);

    /** Makes the receiver of a connection that just opened, or returns null after closing it. */
    @FunctionalInterface
    interface Opening {
        @Nullable
        Receiver opened(WebSocketFrameChannel channel);
    }

    /** The close frame the peer sent. */
    private record PeerClose(int code, @Nullable String reason) {}

    private final Channel channel;
    private final Handler handler = new Handler();
    private final Opening opening;

    // Read across threads.
    private volatile boolean open;
    private volatile @Nullable PeerClose peerClose;

    // Event-loop state: written and read on the channel's event loop only.
    private @Nullable Receiver receiver;
    private boolean opened;
    private @Nullable Throwable failure;
    private boolean closeSent;
    private boolean closeReceived;
    private boolean closeDelivered;
    private final boolean decoderCloses;

    WebSocketFrameChannel(Channel channel, Opening opening) {
        this(channel, true, opening);
    }

    /**
     * @param decoderCloses whether Netty's frame decoder sends the close for a frame it refuses
     *     itself (a worker's: the client handshaker's decoder), or leaves it to this channel (the
     *     gateway's: {@code closeOnProtocolViolation(false)}), which sends it and lingers
     */
    WebSocketFrameChannel(Channel channel, boolean decoderCloses, Opening opening) {
        this.channel = requireNonNull(channel, "channel");
        this.opening = requireNonNull(opening, "opening");
        this.decoderCloses = decoderCloses;
    }

    /**
     * Adds the uplink frame handling (a bounded continuation aggregator and this channel's handler)
     * at the end of the pipeline of a channel whose WebSocket handshake has completed, makes its
     * receiver with {@code receivers}, and returns the channel. Call it on the channel's event
     * loop, before frames are read.
     */
    public static WebSocketFrameChannel install(
            Channel channel, Function<? super WebSocketFrameChannel, ? extends Receiver> receivers) {
        requireNonNull(receivers, "receivers");
        WebSocketFrameChannel frames = new WebSocketFrameChannel(channel, receivers::apply);
        channel.pipeline().addLast("uplink-aggregator", new WebSocketFrameAggregator(MAX_MESSAGE_BYTES));
        channel.pipeline().addLast("uplink-frames", frames.handler());
        frames.open();
        return frames;
    }

    ChannelInboundHandlerAdapter handler() {
        return handler;
    }

    /**
     * Opens the connection once its handshake completed, and makes its receiver; on the event
     * loop, so no frame is read before the receiver is in place.
     */
    void open() {
        open = true;
        opened = true;
        receiver = opening.opened(this);
    }

    /** Returns the Netty channel underneath. */
    public Channel channel() {
        return channel;
    }

    @Override
    public CompletionStage<Void> send(Frame frame) {
        requireNonNull(frame, "frame");
        if (!isOpen()) {
            return CompletableFuture.failedFuture(new ClosedChannelException());
        }
        byte[] utf8;
        try {
            utf8 = FrameCodec.encodeUtf8(frame);
        } catch (UplinkException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<Void> written = new CompletableFuture<>();
        // Always through the event loop's task queue, even from the loop itself: a write made
        // directly on the loop would overtake the writes other threads queued before it, and
        // frames must leave in the order they were sent (relay.body in seq order, for one).
        try {
            channel.eventLoop().execute(() -> write(utf8, written));
        } catch (RejectedExecutionException e) { // the event loop is shutting down: the uplink is gone
            written.completeExceptionally(new ClosedChannelException());
        }
        return written;
    }

    private void write(byte[] utf8, CompletableFuture<Void> written) {
        io.netty.channel.ChannelOutboundBuffer pending = channel.unsafe().outboundBuffer();
        if (pending != null && pending.totalPendingWriteBytes() + utf8.length > MAX_UNSENT_BYTES) {
            if (!closeSent) {
                closeForProtocol(
                        WebSocketCloseStatus.POLICY_VIOLATION,
                        "more than " + MAX_UNSENT_BYTES + " bytes of frames unsent (the peer does not read)");
                channel.close(); // the close frame would wait behind what the peer does not read
            }
            written.completeExceptionally(new ClosedChannelException());
            return;
        }
        channel.writeAndFlush(new TextWebSocketFrame(Unpooled.wrappedBuffer(utf8)))
                .addListener(f -> {
                    if (f.isSuccess()) {
                        written.complete(null);
                    } else {
                        Throwable cause = f.cause();
                        written.completeExceptionally(cause == null ? new ClosedChannelException() : cause);
                    }
                });
    }

    @Override
    public void close(String reason) {
        closeWith(WebSocketCloseStatus.NORMAL_CLOSURE.code(), reason, null);
    }

    /** Closes with 1001 Going Away and the reason: the worker re-dials at once. */
    @Override
    public void goAway(String reason) {
        closeWith(WebSocketCloseStatus.ENDPOINT_UNAVAILABLE.code(), reason, null);
    }

    /** Closes with 1008 Policy Violation and the reason, and logs it. */
    @Override
    public void closeForPolicy(String reason) {
        closeForProtocol(WebSocketCloseStatus.POLICY_VIOLATION, reason);
    }

    @Override
    public boolean isOpen() {
        return open && channel.isActive();
    }

    /** Returns the status code of the close frame the peer sent, or -1 when none arrived. */
    public int peerCloseCode() {
        PeerClose c = peerClose;
        return c == null ? -1 : c.code();
    }

    /** Returns the reason of the close frame the peer sent, or null when none arrived. */
    public @Nullable String peerCloseReason() {
        PeerClose c = peerClose;
        return c == null ? null : c.reason();
    }

    /** Sends a WebSocket ping (on the event loop) while the connection is open and no close was sent. */
    void ping() {
        if (!channel.eventLoop().inEventLoop()) {
            channel.eventLoop().execute(this::ping);
            return;
        }
        if (open && !closeSent && channel.isActive()) {
            channel.writeAndFlush(new PingWebSocketFrame());
        }
    }

    /** Answers whether the handshake completed; on the event loop. */
    boolean wasOpened() {
        return opened;
    }

    /**
     * Keeps {@code cause} as the failure that ended the connection before its handshake completed,
     * when none was kept (a dialer that offers v2 installs this channel's handler only after the
     * handshake); on the event loop.
     */
    void failedBeforeOpen(Throwable cause) {
        if (failure == null) {
            failure = cause;
        }
    }

    /** Returns the failure that ended (or is ending) the connection, or null; on the event loop. */
    @Nullable
    Throwable failure() {
        return failure;
    }

    private void closeWith(int code, String reason, @Nullable Throwable cause) {
        if (!channel.eventLoop().inEventLoop()) {
            channel.eventLoop().execute(() -> closeWith(code, reason, cause));
            return;
        }
        open = false;
        if (cause != null && failure == null) {
            failure = cause;
        }
        if (closeSent || !channel.isActive()) {
            channel.close();
            return;
        }
        closeSent = true;
        LingeringClose.after(channel.writeAndFlush(new CloseWebSocketFrame(code, truncate(reason))));
    }

    void closeAfterFailure(WebSocketCloseStatus status, String reason, Throwable cause) {
        closeWith(status.code(), reason, cause);
    }

    private void closeForProtocol(WebSocketCloseStatus status, String reason) {
        log.warn("closing uplink {} with {}: {}", channel.remoteAddress(), status.code(), reason);
        closeWith(status.code(), reason, new IOException("uplink closed " + status.code() + ": " + reason));
    }

    /** Decodes a text message's UTF-8 bytes in place (the caller releases them). */
    private void text(ByteBuf utf8) {
        Receiver r = receiver;
        if (!open || r == null) {
            return;
        }
        Frame frame;
        try {
            frame = FrameCodec.decode(utf8.nioBuffer());
        } catch (FrameTooLargeException e) {
            closeForProtocol(WebSocketCloseStatus.MESSAGE_TOO_BIG, String.valueOf(e.getMessage()));
            return;
        } catch (CorruptFrameException e) {
            if (!r.onCorruptFrame(e)) {
                closeForProtocol(WebSocketCloseStatus.INVALID_PAYLOAD_DATA, "corrupt frame: " + e.getMessage());
            }
            return;
        } catch (UplinkException e) {
            closeForProtocol(WebSocketCloseStatus.INVALID_PAYLOAD_DATA, "unreadable frame: " + e.getMessage());
            return;
        }
        try {
            r.onFrame(frame);
        } catch (RuntimeException e) {
            log.error("uplink frame receiver failed; closing", e);
            closeWith(WebSocketCloseStatus.INTERNAL_SERVER_ERROR.code(), "receiver failed", e);
        }
    }

    /** Delivers the close once, to the receiver if there is one. */
    private void deliverClose(@Nullable Throwable cause) {
        Receiver r = receiver;
        if (closeDelivered || r == null) {
            return;
        }
        closeDelivered = true;
        try {
            r.onClose(cause);
        } catch (RuntimeException e) {
            log.error("uplink close listener failed", e);
        }
    }

    private static String truncate(String reason) {
        byte[] bytes = reason.getBytes(StandardCharsets.UTF_8);
        if (bytes.length <= MAX_CLOSE_REASON_BYTES) {
            return reason;
        }
        int end = Math.min(reason.length(), MAX_CLOSE_REASON_BYTES / 3);
        return reason.substring(0, end);
    }

    private final class Handler extends ChannelInboundHandlerAdapter {
        private final Pongs pongs = new Pongs();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof TextWebSocketFrame textFrame) {
                try {
                    text(textFrame.content()); // decoded into a Frame that holds no part of the buffer
                } finally {
                    textFrame.release();
                }
            } else if (msg instanceof BinaryWebSocketFrame) {
                ReferenceCountUtil.release(msg);
                closeForProtocol(
                        WebSocketCloseStatus.INVALID_MESSAGE_TYPE,
                        "binary messages are not part of " + FrameCodec.SUBPROTOCOL);
            } else if (msg instanceof PingWebSocketFrame ping) {
                if (!channel.isActive() || closeSent) {
                    ping.release();
                } else if (!pongs.answer(ctx, ping)) {
                    closeForProtocol(
                            WebSocketCloseStatus.POLICY_VIOLATION,
                            "pings with " + Pongs.MAX_UNSENT + " pongs unsent (the peer does not read)");
                    channel.close(); // the close frame waits behind what the peer does not read
                }
            } else if (msg instanceof CloseWebSocketFrame closeFrame) {
                int code = closeFrame.statusCode();
                peerClose = new PeerClose(code, closeFrame.reasonText());
                closeFrame.release();
                peerClosed(ctx, code);
            } else if (msg instanceof PongWebSocketFrame
                    || msg instanceof ContinuationWebSocketFrame
                    || msg instanceof HttpContent) {
                ReferenceCountUtil.release(msg);
            } else {
                ctx.fireChannelRead(msg);
            }
        }

        private void peerClosed(ChannelHandlerContext ctx, int code) {
            closeReceived = true;
            open = false;
            boolean clean = code == WebSocketCloseStatus.NORMAL_CLOSURE.code()
                    || code == WebSocketCloseStatus.ENDPOINT_UNAVAILABLE.code()
                    || code == -1;
            if (!clean && failure == null) {
                failure = new IOException("uplink closed by the peer " + code + ": " + peerCloseReason());
            }
            if (closeSent) {
                ctx.close();
                return;
            }
            closeSent = true;
            int echo = WebSocketCloseStatus.isValidStatusCode(code) ? code : WebSocketCloseStatus.NORMAL_CLOSURE.code();
            ctx.writeAndFlush(new CloseWebSocketFrame(echo, "")).addListener(ChannelFutureListener.CLOSE);
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt == WebSocketClientProtocolHandler.ClientHandshakeStateEvent.HANDSHAKE_COMPLETE) {
                open();
            } else if (evt instanceof IdleStateEvent idle) {
                // Only the reader-idle check exists (Keepalive.idleCheck); pings are Keepalive's
                // fixed-rate task, never "when this end stopped writing".
                if (idle.state() == IdleState.READER_IDLE) {
                    closeForProtocol(WebSocketCloseStatus.ENDPOINT_UNAVAILABLE, "nothing received for too long");
                }
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (failure == null) {
                failure = cause;
            }
            if (cause instanceof TooLongFrameException) {
                closeForProtocol(WebSocketCloseStatus.MESSAGE_TOO_BIG, "message over " + MAX_MESSAGE_BYTES + " bytes");
            } else if (cause instanceof CorruptedWebSocketFrameException refused) {
                if (decoderCloses) {
                    open = false; // the WebSocket decoder sent its close frame and closes the channel
                } else {
                    closeForProtocol(refused.closeStatus(), "refused frame: " + refused.getMessage());
                }
            } else {
                log.debug("uplink {} failed: {}", channel.remoteAddress(), cause.toString());
                open = false;
                ctx.close();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            open = false;
            Throwable f = failure;
            Throwable cause;
            if (f != null) {
                cause = f;
            } else if (closeSent || closeReceived) {
                cause = null;
            } else {
                cause = new IOException("uplink connection lost without a WebSocket close");
            }
            deliverClose(cause);
            ctx.fireChannelInactive();
        }
    }
}
