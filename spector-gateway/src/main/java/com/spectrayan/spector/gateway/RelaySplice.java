package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Joins a client connection that switched protocols to a relay's two-way stream (uplink v2,
 * docs/PROTOCOL.md section 9.7): the client's bytes are the relayed request's body, pulled by the
 * relay one read at a time, and the worker's are the {@code 101}'s body, written to the client as
 * it takes them. {@link Splice} does the same between two sockets; this one has a stream on one
 * side.
 *
 * <pre>
 *  client          client channel ("relay-splice")           relay (v2 stream)          worker
 *    |--- bytes --->| read only when the relay asks: nextBuf() |--- DATA (its window) --->|
 *    |&lt;-- bytes ----| written while writable; else wait         |&lt;-- DATA ------------------|
 *    |--- FIN ----->| the body ends (null)                      |--- END_STREAM ---------->|
 *    |&lt;-- FIN ------| shutdownOutput at the 101 body's end       |&lt;-- END_STREAM -----------|
 *    |&lt;-- RST ------| the 101 body failed (a RESET, the link)    |&lt;-- RESET ----------------|
 * </pre>
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>States</b> (forward only): {@code WAITING} (made with the exchange, before the 101:
 *       a read of the client's side waits, nothing is read) -&gt; {@code OPEN} ({@link #start},
 *       the handler is at the end of the client's pipeline, the HTTP handlers are gone) -&gt;
 *       {@code CLOSED} (the client channel closed). Beside it, each direction's end: {@code
 *       clientEnded} (a FIN from the client), {@code clientEndTaken} (the relay read that end)
 *       and {@code workerEnded} (the 101 body's end).
 *   <li><b>Concurrency.</b> Confined to the client channel's event loop; the relay's calls
 *       ({@link #nextBuf}, {@link #cancel}) and the completions of the worker's body hop onto it.
 *   <li><b>Backpressure.</b> Client to worker: the channel's {@code autoRead} stays off and each
 *       read of the body asks for one socket read, so at most one read's bytes wait here and the
 *       stream's window does the rest. Worker to client: the next part is pulled only while the
 *       client channel is writable (its high-water mark), then at its writability change.
 *   <li><b>Half close.</b> The client channel allows half closure once switched: a FIN from the
 *       client ends the request body (the relay sends END_STREAM) while the worker's bytes keep
 *       coming; the 101 body's end is a FIN to the client ({@code shutdownOutput}; over TLS behind a
 *       close_notify). When both
 *       ended the connection closes after its last byte. Unlike {@link Splice} (which follows
 *       Envoy's default and ends both on one FIN), a relay's half closes cross the stream as
 *       HTTP/2 extended CONNECT's (RFC 8441 §4, END_STREAM) do.
 *   <li><b>Endings.</b> The 101 body failing (a RESET from the worker, the link lost) resets the
 *       client connection (RST). The client closing before both directions ended, or the idle
 *       timer, aborts the relay's signal (RESET {@code CANCEL}: the worker closes its upstream
 *       connection) and cancels the 101 body.
 *   <li><b>Idle bound.</b> As the forwarded splice (and on its loop's {@code Ticker}): no byte either way for {@code idleTimeout}
 *       ({@code spector.routing.gateway.stream-idle-timeout}) closes the connection.
 *   <li><b>Buffers.</b> A byte read from the client is the relay's once its read completes
 *       (handed on as read, no copy); one from the worker is written as it came. What is queued
 *       when the splice ends is released.
 * </ul>
 */
final class RelaySplice extends ChannelInboundHandlerAdapter implements BodySource {
    private static final Logger log = LoggerFactory.getLogger(RelaySplice.class);

    /** The name of the handler in the client channel's pipeline. */
    static final String HANDLER_NAME = "relay-splice";

    /** The splice's states (see the design notes). */
    enum State {
        WAITING,
        OPEN,
        CLOSED
    }

    private final EventExecutor loop;
    private final AbortSignal signal;
    private final long idleNanos;
    private final GatewayMetrics metrics;
    private final CompletableFuture<Void> closed = new CompletableFuture<>();

    // Event-loop state.
    private State state = State.WAITING;
    private @Nullable Channel client;
    private @Nullable BodySource fromWorker;
    private final ArrayDeque<ByteBuf> fromClient = new ArrayDeque<>(); // at most one read's bytes
    private @Nullable CompletableFuture<@Nullable ByteBuf> reader;
    private boolean clientEnded;
    /** The relay read the client's end (null): both halves ended once {@code workerEnded} too. */
    private boolean clientEndTaken;

    private boolean cancelled;
    private boolean workerEnded;
    private boolean workerReading;
    private boolean waitingWritable;
    private long bytesUp;
    private long bytesDown;
    private long lastByteNanos;
    private @Nullable ScheduledFuture<?> idleTimer;

    /**
     * A splice for one upgrade request, made before it is relayed.
     *
     * @param loop the client channel's event loop
     * @param signal the relay's signal, aborted when the client's side ends before both directions
     * @param idleTimeout closes the connection when no byte crossed either way for this long
     */
    RelaySplice(EventExecutor loop, AbortSignal signal, Duration idleTimeout, GatewayMetrics metrics) {
        this.loop = requireNonNull(loop, "loop");
        this.signal = requireNonNull(signal, "signal");
        if (idleTimeout.isNegative() || idleTimeout.isZero()) {
            throw new IllegalArgumentException("idleTimeout: " + idleTimeout + " (expected: > 0)");
        }
        this.idleNanos = idleTimeout.toNanos();
        this.metrics = requireNonNull(metrics, "metrics");
    }

    /** Completes once the client connection closed after the switch (never when it never switched). */
    CompletionStage<Void> closeFuture() {
        return closed;
    }

    /** Returns the bytes read from the client and handed to the relay. */
    long bytesUp() {
        return bytesUp;
    }

    /** Returns the bytes of the worker written to the client. */
    long bytesDown() {
        return bytesDown;
    }

    /**
     * Starts the splice on the client's loop, right after the 101 went out and the HTTP handlers
     * were removed: {@code buffered} (what the removed codec still held) is the first of the
     * client's bytes, and {@code worker} (the 101's body) is written to the client from now on.
     */
    void start(Channel channel, ByteBuf buffered, BodySource worker) {
        if (state != State.WAITING) {
            buffered.release();
            worker.cancel(new IllegalStateException("the splice " + state));
            return;
        }
        state = State.OPEN;
        client = channel;
        fromWorker = worker;
        lastByteNanos = loop.ticker().nanoTime();
        if (buffered.isReadable()) {
            clientBytes(buffered);
        } else {
            buffered.release();
        }
        channel.config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true); // a FIN is the client's half close
        channel.config().setAutoRead(false);
        channel.pipeline().addLast(HANDLER_NAME, this);
        if (!channel.isActive()) {
            end(); // it closed during the switch: no channelInactive will reach this handler
            return;
        }
        if (reader != null) {
            channel.read();
        }
        pumpWorker();
        idleTimer = loop.schedule(this::checkIdle, idleNanos, TimeUnit.NANOSECONDS);
    }

    // ---- client to worker: the request body, pulled by the relay ----

    @Override
    public CompletionStage<@Nullable ByteBuf> nextBuf() {
        CompletableFuture<@Nullable ByteBuf> f = new CompletableFuture<>();
        try {
            loop.execute(() -> read(f));
        } catch (RejectedExecutionException e) {
            f.completeExceptionally(e);
        }
        return f;
    }

    @Override
    public CompletionStage<@Nullable ByteBuffer> next() {
        return nextBuf().thenApply(b -> {
            if (b == null) {
                return null;
            }
            try {
                ByteBuffer out = ByteBuffer.allocate(b.readableBytes());
                b.readBytes(out);
                return out.flip();
            } finally {
                b.release();
            }
        });
    }

    private void read(CompletableFuture<@Nullable ByteBuf> f) {
        ByteBuf b = fromClient.poll();
        if (b != null) {
            hand(f, b);
        } else if (clientEnded) {
            clientEndTaken();
            f.complete(null);
        } else if (cancelled || state == State.CLOSED) {
            f.completeExceptionally(
                    SpectorException.of(ErrorCode.DAEMON_CONNECTION_LOST, "the switched client connection ended"));
        } else if (reader != null) {
            f.completeExceptionally(new IllegalStateException("one read at a time"));
        } else {
            reader = f;
            Channel ch = client;
            if (state == State.OPEN && ch != null) {
                ch.read();
            }
        }
    }

    /** The relay stops reading the client's side (it ended, or answered without switching). */
    @Override
    public void cancel(Throwable reason) {
        try {
            loop.execute(() -> {
                cancelled = true;
                releaseQueued();
                CompletableFuture<@Nullable ByteBuf> r = reader;
                reader = null;
                if (r != null) {
                    r.completeExceptionally(reason);
                }
                if (workerEnded || clientEnded) {
                    clientEndTaken(); // the relay is over: the client's side has nowhere to go
                }
            });
        } catch (RejectedExecutionException e) {
            // the loop is gone, and the connection with it
        }
    }

    private void clientBytes(ByteBuf b) {
        if (cancelled || clientEnded) {
            b.release();
            return;
        }
        lastByteNanos = loop.ticker().nanoTime();
        CompletableFuture<@Nullable ByteBuf> r = reader;
        if (r != null) {
            reader = null;
            hand(r, b);
        } else {
            fromClient.add(b);
        }
    }

    private void hand(CompletableFuture<@Nullable ByteBuf> read, ByteBuf b) {
        int n = b.readableBytes();
        if (read.complete(b)) {
            bytesUp += n;
            metrics.relayedToWorker(n);
        } else {
            b.release();
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf b && b.isReadable()) {
            clientBytes(b);
        } else {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (reader != null && !clientEnded && state == State.OPEN) {
            ctx.read(); // the read brought no byte (a TLS record still incomplete): the pull stands
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof ChannelInputShutdownEvent) {
            clientEnded = true; // the client's half close: END_STREAM once its bytes are taken
            CompletableFuture<@Nullable ByteBuf> r = reader;
            if (r != null && fromClient.isEmpty()) {
                reader = null;
                clientEndTaken();
                r.complete(null);
            } else if (cancelled) {
                clientEndTaken(); // the relay reads no more: nobody waits for this end
            }
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    // ---- worker to client: the 101's body ----

    private void pumpWorker() {
        BodySource source = fromWorker;
        if (state != State.OPEN || source == null || workerEnded || workerReading) {
            return;
        }
        Channel ch = client;
        if (ch == null || !ch.isWritable()) {
            waitingWritable = true;
            return;
        }
        workerReading = true;
        source.nextBufOn(loop, this::workerRead);
    }

    private void workerRead(@Nullable ByteBuf part, @Nullable Throwable error) {
        workerReading = false;
        Channel ch = client;
        if (state != State.OPEN || ch == null) {
            if (part != null) {
                part.release();
            }
            return;
        }
        if (error != null) {
            log.debug("relayed upgrade on {} failed: {}", ch.remoteAddress(), error.toString());
            fromWorker = null; // it failed: nothing to cancel
            ClientConnection.abort(ch); // a RESET is not an end: the client sees RST, and no close_notify
            return;
        }
        if (part == null) {
            workerEnded = true;
            fromWorker = null;
            if (clientEndTaken) {
                closeAfterFlush();
            } else if (ch instanceof DuplexChannel duplex) {
                // The FIN after the last byte, and over TLS after a close_notify (RFC 8446 §6.1), as
                // ClientConnection's lingering close: the socket's half close alone skipped the TLS
                // layer, and a strict client read a truncation. TLS 1.3 keeps the client's
                // direction open behind it; in TLS 1.2 a client answers with its own close_notify.
                SslHandler tls = ch.pipeline().get(SslHandler.class);
                ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(f -> {
                    ChannelFuture notified =
                            tls == null || !f.isSuccess() ? ch.newSucceededFuture() : tls.closeOutbound();
                    notified.addListener(n -> duplex.shutdownOutput());
                });
            } else {
                closeAfterFlush();
            }
            return;
        }
        int n = part.readableBytes();
        bytesDown += n;
        lastByteNanos = loop.ticker().nanoTime();
        metrics.relayedFromWorker(n);
        ch.writeAndFlush(part, ch.voidPromise());
        pumpWorker();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable() && waitingWritable) {
            waitingWritable = false;
            pumpWorker();
        }
        ctx.fireChannelWritabilityChanged();
    }

    // ---- endings ----

    /** The relay took the client's end (it sends END_STREAM); closes when the worker's side ended too. */
    private void clientEndTaken() {
        clientEndTaken = true;
        if (workerEnded) {
            closeAfterFlush();
        }
    }

    private void closeAfterFlush() {
        Channel ch = client;
        if (ch != null && state == State.OPEN) {
            ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        }
    }

    private void checkIdle() {
        idleTimer = null;
        Channel ch = client;
        if (state != State.OPEN || ch == null) {
            return;
        }
        long quiet = loop.ticker().nanoTime() - lastByteNanos;
        if (quiet < idleNanos) {
            idleTimer = loop.schedule(this::checkIdle, idleNanos - quiet, TimeUnit.NANOSECONDS);
            return;
        }
        log.debug(
                "relayed upgrade on {} idle for {} ms: closed",
                ch.remoteAddress(),
                TimeUnit.NANOSECONDS.toMillis(idleNanos));
        ch.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        end();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("relayed upgrade on {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        ctx.close();
    }

    /** The client connection closed: whatever has not ended is aborted, and what is queued released. */
    private void end() {
        if (state == State.CLOSED) {
            return;
        }
        state = State.CLOSED;
        ScheduledFuture<?> t = idleTimer;
        idleTimer = null;
        if (t != null) {
            t.cancel(false);
        }
        releaseQueued();
        SpectorException gone = SpectorException.of(
                ErrorCode.DAEMON_CONNECTION_LOST,
                "the switched client connection closed after " + bytesUp + " bytes up, " + bytesDown + " down");
        CompletableFuture<@Nullable ByteBuf> r = reader;
        reader = null;
        if (r != null) {
            r.completeExceptionally(gone);
        }
        if (!(clientEndTaken && workerEnded)) {
            signal.abort(gone); // the relay resets its stream CANCEL: the worker closes its upstream
        }
        BodySource w = fromWorker;
        fromWorker = null;
        if (w != null) {
            w.cancel(gone);
        }
        closed.complete(null);
    }

    private void releaseQueued() {
        ByteBuf b;
        while ((b = fromClient.poll()) != null) {
            b.release();
        }
    }

    @Override
    public String toString() {
        return "RelaySplice{" + state + ", up " + bytesUp + ", down " + bytesDown + "}";
    }
}
