package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.gateway.CodecRemoval;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ImmediateEventExecutor;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import io.netty.util.concurrent.Ticker;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Joins a client connection and an owner connection after a {@code 101 Switching Protocols}: the
 * bytes read from one are written to the other, unchanged, both ways, until either ends.
 *
 * <pre>
 *  client peer       client channel          owner channel         owner
 *      |--- bytes --->| "splice" (clientSide) --- write -------->|--- bytes --->|
 *      |&lt;-- bytes ----|&lt;-------- write --- "splice" (ownerSide) |&lt;-- bytes ----|
 *      |              |  flush per read batch; target unwritable  |              |
 *      |              |  => source autoRead off until it drains   |              |
 *      |--- FIN/RST ->|  client closed: flush owner, then close   |--- FIN ----->|
 * </pre>
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Handlers.</b> Each pipeline gets one handler at its end, named {@link #HANDLER_NAME};
 *       it forwards every {@link ByteBuf} to the other channel and releases (ignores) any other
 *       message, such as the empty {@code LastHttpContent} a codec emits after the 101 head.
 *       Everything before it in the pipeline must pass raw bytes through: the HTTP codecs and
 *       the exchange handlers are removed first (see {@link #removeCodec}).
 *   <li><b>Concurrency.</b> The two channels may be on different event loops. Each side's
 *       handler runs on its source's loop and is the only writer to its target, so the bytes of
 *       one direction keep their order. A side's {@code autoRead} is only ever switched on its
 *       source's loop, from a fresh look at the target's writability, so a writability change
 *       raced by a read is never lost. Shared state is the {@link State} (an atomic reference;
 *       decided by compare-and-set, acted on after), the byte counters and the time of the last
 *       read (written by both loops; the latest wins, which is all the idle timer needs).
 *   <li><b>Backpressure.</b> When a write leaves the target unwritable (its high water mark), the
 *       source stops auto-reading at once; the target's {@code channelWritabilityChanged} asks the
 *       source's loop to look again. So a direction buffers at most the target's high water mark
 *       plus one read; the other direction is not held up.
 *   <li><b>Flush.</b> Writes are flushed once per read batch ({@code channelReadComplete}).
 *   <li><b>Ending.</b> When one channel closes or fails (reset, write error, a read FIN), what
 *       was written to the other is flushed and then the other is closed; bytes still coming from
 *       the other are dropped. A half-close is not propagated: a FIN from one peer ends both
 *       connections once the bytes before it are delivered (as Envoy does for upgrades by
 *       default). The idle timer (no byte read either way for the idle timeout) and {@link
 *       #close()} close both at once, dropping unsent bytes; the idle timer also bounds a final
 *       flush to a peer that stopped reading.
 *   <li><b>Buffers.</b> A side owns what it reads until it writes it; the transport releases what
 *       it could not write, including writes to a channel already closed.
 *   <li><b>Time.</b> The idle timer runs on the client channel's loop and reads that loop's
 *       {@link Ticker}.
 * </ul>
 *
 * <h2>Handing over channels after a 101</h2>
 *
 * <p>Netty's {@code HttpObjectDecoder} treats a {@code 101} response (that is not to HTTP/1.x) as
 * a switch: the head is emitted with an empty {@code LastHttpContent}, the decoder enters its
 * {@code UPGRADED} state, and every later byte, including bytes that came in the same TCP read as
 * the head, is emitted as a plain {@code ByteBuf}. Removing a codec ({@code ByteToMessageDecoder})
 * fires the bytes it has read but not yet decoded to the next handler, followed by a {@code
 * channelReadComplete}. No byte is lost if the handover runs in this order:
 *
 * <ol>
 *   <li>Both channels have {@code autoRead} off and no read pending (the client side's owner of
 *       {@code autoRead} stops reading once it sees an upgrade request).
 *   <li>On the owner channel's loop, in the {@code channelRead} that receives the 101 head:
 *       {@code fromOwner = Splice.removeCodec(owner.pipeline(), <HttpClientCodec's name>)}, then
 *       remove the exchange's own handlers. The empty {@code LastHttpContent} that follows runs
 *       past them to the tail (or to the splice), which releases it.
 *   <li>On the client channel's loop, in one task: write and flush the 101 head through {@code
 *       HttpServerCodec}, then {@code fromClient = Splice.removeCodec(client.pipeline(),
 *       <HttpServerCodec's name>)}, remove the exchange's handlers, and call {@link #join(Channel,
 *       Channel, Duration, ByteBuf, ByteBuf) join(client, owner, idle, fromClient, fromOwner)}.
 *       Because the head is encoded and the codec removed in the same task, no client byte can be
 *       read in between and no raw byte can reach the HTTP encoder (which drops content after a
 *       101 head).
 * </ol>
 *
 * <p>{@code join} writes the buffered bytes to the other side before it starts reading either
 * channel, so they arrive before anything read later. A client that sends frames before it has
 * the 101 (RFC 6455 §4.1 asks it to wait) loses none: the client's decoder holds itself at the
 * upgrade request's end and keeps what arrives behind it as bytes ({@code ClientCodec}), which
 * the switch takes out with the decoder as {@code fromClient}.
 */
final class Splice {
    private static final Logger log = LoggerFactory.getLogger(Splice.class);

    /** The name of the handler each pipeline gets. */
    static final String HANDLER_NAME = "splice";

    /** How the splice stands; moves only forward. */
    enum State {
        /** Both channels open; bytes flow both ways. */
        OPEN,
        /** One channel ended (or the splice was closed); the other is being flushed and closed. */
        ENDING,
        /** Both channels are closed. */
        CLOSED
    }

    private final Channel client;
    private final Channel owner;
    private final Side clientSide; // reads the client, writes the owner
    private final Side ownerSide; // reads the owner, writes the client
    private final long idleNanos;
    private final Ticker ticker;
    private final AtomicReference<State> state = new AtomicReference<>(State.OPEN);
    private final AtomicInteger openChannels = new AtomicInteger(2);
    private final Promise<Void> closed = ImmediateEventExecutor.INSTANCE.newPromise();
    private volatile long lastReadNanos;
    private @Nullable ScheduledFuture<?> idleTimer; // Client loop only.

    private Splice(Channel client, Channel owner, Duration idleTimeout) {
        this.client = client;
        this.owner = owner;
        this.idleNanos = idleTimeout.toNanos();
        this.ticker = client.eventLoop().ticker();
        this.lastReadNanos = ticker.nanoTime();
        this.clientSide = new Side(client, owner, "client->owner");
        this.ownerSide = new Side(owner, client, "owner->client");
        clientSide.peer = ownerSide;
        ownerSide.peer = clientSide;
    }

    /**
     * Joins two connected channels whose HTTP codecs are already removed; bytes read from one are
     * written to the other. May be called from any thread; the handlers are installed on each
     * channel's own loop, and reading starts there.
     *
     * @param idleTimeout closes both when no byte is read either way for this long
     * @return the splice; {@link #close()} ends both channels
     */
    static Splice join(Channel client, Channel owner, Duration idleTimeout) {
        return join(client, owner, idleTimeout, Unpooled.EMPTY_BUFFER, Unpooled.EMPTY_BUFFER);
    }

    /**
     * Joins two channels as {@link #join(Channel, Channel, Duration)} does, first forwarding bytes
     * that were read before the splice (what {@link #removeCodec} returned, or {@code ByteBuf}s an
     * exchange handler got after the 101): {@code bufferedFromClient} is written to the owner and
     * {@code bufferedFromOwner} to the client, each before anything the splice reads from the same
     * source. The splice takes ownership of both buffers, whatever happens.
     *
     * @throws IllegalArgumentException when the idle timeout is not positive, or both channels are
     *     the same (the buffers are released)
     */
    static Splice join(
            Channel client,
            Channel owner,
            Duration idleTimeout,
            ByteBuf bufferedFromClient,
            ByteBuf bufferedFromOwner) {
        requireNonNull(bufferedFromClient, "bufferedFromClient");
        requireNonNull(bufferedFromOwner, "bufferedFromOwner");
        try {
            requireNonNull(client, "client");
            requireNonNull(owner, "owner");
            requireNonNull(idleTimeout, "idleTimeout");
            if (idleTimeout.isNegative() || idleTimeout.isZero()) {
                throw new IllegalArgumentException("idleTimeout: " + idleTimeout + " (expected: > 0)");
            }
            if (client == owner) {
                throw new IllegalArgumentException("owner: the client channel (expected: another channel)");
            }
        } catch (RuntimeException e) {
            ReferenceCountUtil.release(bufferedFromClient);
            ReferenceCountUtil.release(bufferedFromOwner);
            throw e;
        }
        Splice splice = new Splice(client, owner, idleTimeout);
        client.closeFuture().addListener(f -> splice.onClosed(splice.clientSide));
        owner.closeFuture().addListener(f -> splice.onClosed(splice.ownerSide));
        splice.clientSide.startOnLoop(bufferedFromClient);
        splice.ownerSide.startOnLoop(bufferedFromOwner);
        try {
            client.eventLoop().execute(splice::armIdleTimer);
        } catch (RejectedExecutionException e) {
            splice.closeNow("could not arm the idle timer: " + e);
        }
        return splice;
    }

    /**
     * Removes an HTTP codec and returns the bytes it had read but not decoded ({@link
     * CodecRemoval#remove}); the caller owns them (pass them to {@link #join(Channel, Channel,
     * Duration, ByteBuf, ByteBuf) join}). On the channel's loop, from a handler (the one that
     * received the 101 head is fine), never from inside the codec's own {@code decode}.
     */
    static ByteBuf removeCodec(ChannelPipeline pipeline, String name) {
        return CodecRemoval.remove(pipeline, name);
    }

    /**
     * Returns a future completed (successfully, never failed) once both channels are closed. Its
     * listeners run on the event loop of the channel that closed last, so they must not block.
     */
    Future<Void> closeFuture() {
        return closed;
    }

    /** Closes both channels now, dropping bytes not yet sent; idempotent, from any thread. */
    void close() {
        closeNow("closed");
    }

    /** Returns the bytes read from the client and handed to the owner channel so far. */
    long bytesClientToOwner() {
        return clientSide.bytes.get();
    }

    /** Returns the bytes read from the owner and handed to the client channel so far. */
    long bytesOwnerToClient() {
        return ownerSide.bytes.get();
    }

    /** Returns where the splice stands. */
    State state() {
        return requireNonNull(state.get(), "state");
    }

    private void closeNow(String why) {
        State before = state.getAndUpdate(s -> s == State.CLOSED ? State.CLOSED : State.ENDING);
        if (before == State.CLOSED) {
            return;
        }
        log.debug("splice {} <-> {} {}", client.remoteAddress(), owner.remoteAddress(), why);
        client.close();
        owner.close();
    }

    /** One channel closed: flush the other and close it after (unless already ending). */
    private void onClosed(Side side) {
        if (state.compareAndSet(State.OPEN, State.ENDING)) {
            Channel other = side.target;
            other.config().setAutoRead(false); // what it still sends has nowhere to go
            // On the closed side's loop, the only writer of `other` in this direction: the flush
            // queues behind every byte this side wrote.
            other.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
        if (openChannels.decrementAndGet() == 0) {
            state.set(State.CLOSED);
            cancelIdleTimer();
            closed.trySuccess(null);
        }
    }

    private void armIdleTimer() {
        if (state.get() == State.CLOSED) {
            return;
        }
        long idle = ticker.nanoTime() - lastReadNanos;
        if (idle >= idleNanos) {
            closeNow("idle for " + TimeUnit.NANOSECONDS.toMillis(idleNanos) + " ms");
            return;
        }
        idleTimer = client.eventLoop().schedule(this::armIdleTimer, idleNanos - idle, TimeUnit.NANOSECONDS);
    }

    private void cancelIdleTimer() {
        if (client.eventLoop().inEventLoop()) {
            ScheduledFuture<?> timer = idleTimer;
            if (timer != null) {
                timer.cancel(false);
            }
            return;
        }
        try {
            client.eventLoop().execute(this::cancelIdleTimer);
        } catch (RejectedExecutionException e) {
            // The loop is shutting down; its scheduled tasks go with it.
        }
    }

    /** The handler on one channel: reads its source, writes the target. */
    private final class Side extends ChannelInboundHandlerAdapter {
        final Channel source;
        final Channel target;
        final String direction;
        final AtomicLong bytes = new AtomicLong();

        @Nullable
        Side peer; // Set once, before the splice is published.

        Side(Channel source, Channel target, String direction) {
            this.source = source;
            this.target = target;
            this.direction = direction;
        }

        /** Forwards the bytes read before the splice, installs this handler and starts reading. */
        void startOnLoop(ByteBuf buffered) {
            try {
                source.eventLoop().execute(() -> start(buffered));
            } catch (RejectedExecutionException e) {
                buffered.release();
                closeNow("could not start " + direction + ": " + e);
            }
        }

        private void start(ByteBuf buffered) {
            if (buffered.isReadable()) {
                forward(buffered);
                target.flush();
            } else {
                buffered.release();
            }
            if (!source.isActive() || state.get() != State.OPEN) {
                return; // the close listener ends the splice
            }
            try {
                source.pipeline().addLast(HANDLER_NAME, this);
            } catch (IllegalArgumentException e) {
                closeNow("could not start " + direction + ": " + e.getMessage());
                return;
            }
            updateAutoRead();
        }

        private void forward(ByteBuf buf) {
            lastReadNanos = ticker.nanoTime();
            bytes.addAndGet(buf.readableBytes());
            target.write(buf, target.voidPromise());
            if (!target.isWritable()) {
                source.config().setAutoRead(false);
            }
        }

        /** Reads the source when the splice is open and the target can take more. Source loop only. */
        void updateAutoRead() {
            if (state.get() == State.OPEN && source.isActive()) {
                source.config().setAutoRead(target.isWritable());
            }
        }

        /** The target's writability changed: look again on the source's loop. */
        void targetWritabilityChanged() {
            if (source.eventLoop().inEventLoop()) {
                updateAutoRead();
                return;
            }
            try {
                source.eventLoop().execute(this::updateAutoRead);
            } catch (RejectedExecutionException e) {
                // The source's loop is shutting down, and its channel with it.
            }
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof ByteBuf buf)) {
                ReferenceCountUtil.release(msg);
                return;
            }
            if (state.get() != State.OPEN || !buf.isReadable()) {
                buf.release();
                return;
            }
            forward(buf);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            target.flush();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            // This channel is the peer's target.
            Side p = peer;
            if (p != null) {
                p.targetWritabilityChanged();
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                ctx.close(); // half-close is not propagated: a FIN ends the splice
                return;
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            log.debug("splice {} failed on {}: {}", direction, ctx.channel().remoteAddress(), cause.toString());
            ctx.close();
        }

        @Override
        public String toString() {
            return "Splice.Side{" + direction + "}";
        }
    }
}
