package com.spectrayan.spector.cluster.gateway;

import com.github.benmanes.caffeine.cache.Ticker;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.contract.HeaderPolicy;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.DecoderResultProvider;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.URI;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One try of an exchange against one owner over one connection: it holds the connection, writes
 * what the exchange gives it, runs the per-attempt timers, and hands what the owner sends to its
 * {@link Events}.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Lifecycle.</b> {@code CONNECTING -> OPEN -> RELEASED}, or {@code OPEN -> HANDED_OVER}
 *       after a {@code 101}; {@code CONNECTING -> RELEASED} when the exchange gives the attempt up
 *       before its connection arrives (the connection, unused, then goes back to the pool). Only
 *       an {@code OPEN} attempt writes, and only the exchange's current one hears the owner; a
 *       late message to any other is released.
 *   <li><b>Reuse.</b> Three facts decide whether the connection goes back to the pool: the whole
 *       request was written, the whole response was read, and the exchange allows it. A request
 *       cut off mid-body is reset ({@code SO_LINGER 0}), so no owner takes a truncated body for a
 *       whole one.
 *   <li><b>Timers.</b> The head timer ({@link ForwarderSpec#ownerTimeout()}) starts when the
 *       whole request is written, as Envoy's route timeout and nginx's {@code proxy_read_timeout}
 *       do, so a slow upload is never an owner timeout; it is a deadline of the loop's {@link
 *       FixedDelays} queue of owner timeouts (a link and an unlink per request, not a scheduled
 *       task). After the head only the idle timer runs; it
 *       reads time from the {@link Ticker} and never fires while the client paused the reading.
 * </ul>
 *
 * <p>Threading: confined to the exchange's event loop (the connection's too).
 */
final class Attempt implements UpstreamHttpTransport.Listener {
    private static final Logger log = LoggerFactory.getLogger(Attempt.class);

    /** Where the connection is in its use by this attempt. */
    enum State {
        /** The connection is being acquired or connected. */
        CONNECTING,
        /** The connection is held: the request goes out, the response comes in. */
        OPEN,
        /** The connection was given back (to the pool, or closed). */
        RELEASED,
        /** The connection left the transport after a {@code 101}. */
        HANDED_OVER
    }

    /** What an attempt tells its exchange; every call runs on the exchange's loop. */
    interface Events {
        /** Answers whether {@code a} is still the exchange's current attempt, the exchange not over. */
        boolean isCurrent(Attempt a);

        /** The connection is {@link #hold held}: write the request. */
        void onConnected(Attempt a);

        /** The attempt failed: no connection, a failed write, a close, a reset, a head timeout. */
        void onFailed(Attempt a, Throwable cause);

        /** The owner's response head (never an interim {@code 1xx} other than {@code 101}). */
        void onResponseHead(Attempt a, HttpResponse head);

        /** A part of the owner's body; the callee releases it. */
        void onContent(Attempt a, HttpContent content);

        /** A read batch from the owner ended. */
        void onReadComplete(Attempt a);

        /** The connection takes more request bytes again. */
        void onWritable(Attempt a);

        /** The owner sent nothing for {@code idle} inside its response. */
        void onIdle(Attempt a, Duration idle);

        /** {@code bytes} more body bytes went from the owner's socket to the client's by splice. */
        void onSpliced(Attempt a, int bytes);

        /** The client's connection closed during a splice; the owner's connection is closed. */
        void onClientGone(Attempt a);

        /**
         * The owner's input ended during a splice with body bytes still in its socket: the rest
         * is read out of it ({@link ResponseSplice}'s notes).
         */
        void onSpliceDraining(Attempt a);
    }

    private final RouteEntry entry;
    private final URI uri;
    private final int number;
    private final Events events;
    private final EventLoop loop;
    private final UpstreamHttpTransport transport;
    private final Ticker ticker;
    /** The owner timeouts of the loop, or of this attempt alone (a pinned target's own delay). */
    private final FixedDelays headTimeouts;

    private State state = State.CONNECTING;
    private @Nullable Channel channel;
    private boolean reused;
    private boolean requestComplete;
    /**
     * A body write failed: the owner closed or reset its side, often because it answered early
     * (RFC 9112 §9.6) and stopped reading. The rest of the body is dropped, and the attempt waits
     * for that answer or the connection's end ({@link #bodyWriteFailed}).
     */
    private boolean requestAbandoned;
    /** A body part was written: from then on the connection's {@code AUTO_CLOSE} is off until {@link #finish}. */
    private boolean bodyStarted;

    private @Nullable ChannelFutureListener bodyWrites;
    private boolean responseStarted;
    private boolean responseComplete;
    /** The owner's final answer keeps the connection open (RFC 9112 §9.3); until one came, yes. */
    private boolean ownerKeepsAlive = true;
    /** An interim 1xx head was read: the decoder's empty end of it comes next, and is not ours. */
    private boolean interimEnd;

    /** The owner timeout, armed when the whole request is written; made then. */
    private FixedDelays.@Nullable Deadline headTimer;

    private @Nullable ScheduledFuture<?> idleTimer;
    /** The idle timer runs from the head on; it is scheduled when a read batch ends mid-response. */
    private boolean idleArmed;

    private Duration idle = Duration.ZERO;
    private long lastReadNanos;

    /** The kernel splice of the rest of the body while it runs ({@link #splice}), else null. */
    private @Nullable KernelSplice splice;

    Attempt(
            RouteEntry entry,
            URI uri,
            int number,
            Events events,
            EventLoop loop,
            UpstreamHttpTransport transport,
            Ticker ticker,
            Duration ownerTimeout) {
        this(entry, uri, number, events, transport, ticker, new FixedDelays(loop, ticker, ownerTimeout));
    }

    /** An attempt whose owner timeout is a deadline of {@code headTimeouts} (on the attempt's loop). */
    Attempt(
            RouteEntry entry,
            URI uri,
            int number,
            Events events,
            UpstreamHttpTransport transport,
            Ticker ticker,
            FixedDelays headTimeouts) {
        this.entry = entry;
        this.uri = uri;
        this.number = number;
        this.events = events;
        this.loop = headTimeouts.loop();
        this.transport = transport;
        this.ticker = ticker;
        this.headTimeouts = headTimeouts;
    }

    /**
     * Asks the transport for a connection: a pooled one, or for an upgrade a new one of its own
     * (it keeps it for the life of the new protocol).
     */
    void connect(boolean unpooled) {
        Future<Channel> connection = unpooled ? transport.connect(loop, uri) : transport.acquire(loop, uri);
        connection.addListener(f -> onAcquired(cast(f)));
    }

    void onAcquired(Future<Channel> f) {
        if (!f.isSuccess()) {
            events.onFailed(this, f.cause());
            return;
        }
        Channel ch = f.getNow();
        if (state != State.CONNECTING || !events.isCurrent(this)) {
            giveBack(ch); // given up while it connected
            return;
        }
        channel = ch;
        events.onConnected(this);
    }

    /**
     * Takes the connection the exchange accepted in {@link Events#onConnected}: from now on its
     * messages come to this attempt.
     */
    void hold() {
        Channel ch = requireChannel();
        if (state != State.CONNECTING) {
            throw new IllegalStateException("attempt " + number + ": hold in state " + state);
        }
        state = State.OPEN;
        reused = UpstreamHttpTransport.isReused(ch);
        UpstreamHttpTransport.listen(ch, this);
    }

    /** Gives back the connection {@link Events#onConnected} declined, unused: the pool may reuse it. */
    void decline() {
        Channel ch = requireChannel();
        channel = null;
        state = State.RELEASED;
        giveBack(ch);
    }

    private void giveBack(Channel ch) {
        transport.release(loop, uri, ch, true);
    }

    /**
     * Writes the request head; a failed write fails the attempt. The request's writes take the
     * channel's void promise: a failure reaches the connection's handler as an exception ({@link
     * #onFailure}), at once as a listener would, without a promise, a listener and the encoder's
     * promise combiner per write (issue 14).
     */
    void sendHead(HttpRequest head) {
        Channel ch = requireChannel();
        ch.write(head, ch.voidPromise());
    }

    /**
     * Writes a whole request that has no body to send, its head and its end, in one write (not
     * flushed): one pass through the pipeline and the encoder instead of two (issue 14). The head
     * timer starts, as after {@link #sendEnd}.
     */
    void sendWhole(FullHttpRequest request) {
        Channel ch = requireChannel();
        ch.write(request, ch.voidPromise());
        requestComplete();
    }

    /** Writes what the replay copy holds (not flushed); returns the bytes written. */
    long sendReplay(ReplayBuffer replay) {
        if (requestAbandoned) {
            return 0;
        }
        return replay.writeTo(requireChannel(), bodyWrites());
    }

    /** Writes a body chunk (not flushed); ownership passes to the connection (or it is dropped, the body abandoned). */
    void send(ByteBuf chunk) {
        if (requestAbandoned) {
            chunk.release(); // the owner stopped reading: nothing more goes to it
            return;
        }
        Channel ch = requireChannel();
        ch.write(new DefaultHttpContent(chunk)).addListener(bodyWrites());
    }

    /** Ends the request (not flushed): the head timer starts. */
    void sendEnd() {
        if (requestAbandoned) {
            armHeadTimer(); // the answer is awaited as after a whole request; the connection is not reused
            return;
        }
        Channel ch = requireChannel();
        if (bodyStarted) {
            ch.write(LastHttpContent.EMPTY_LAST_CONTENT).addListener(bodyWrites());
        } else {
            ch.write(LastHttpContent.EMPTY_LAST_CONTENT, ch.voidPromise());
        }
        requestComplete();
    }

    /**
     * The listener of the body's writes, made at the first: from then on a failed write shuts the
     * connection's output only ({@code AUTO_CLOSE} off), so that an answer the owner sent before it
     * closed is still read. The head and a bodiless request keep the void promise (issue 14).
     */
    private ChannelFutureListener bodyWrites() {
        ChannelFutureListener l = bodyWrites;
        if (l == null) {
            bodyStarted = true;
            requireChannel().config().setAutoClose(false);
            l = f -> {
                if (!f.isSuccess()) {
                    bodyWriteFailed(f.cause());
                }
            };
            bodyWrites = l;
        }
        return l;
    }

    /**
     * A body write failed: the owner stopped reading. Most often it answered before the body's
     * end (a 413 or a 401 to a large upload) and closed, which resets the connection while the
     * body still arrives; that answer is in the socket, ahead of the reset. The attempt drops the
     * rest of the body and reads on: the answer, whole, ends the exchange as any answer does (the
     * client gets it, as nginx passes an early answer on; the owner is not counted as failed), and
     * a connection that ends before an answer fails the attempt as any close does. A failed write
     * of an attempt already over changes nothing.
     */
    private void bodyWriteFailed(Throwable cause) {
        if (isDone() || requestAbandoned || requestComplete) {
            return;
        }
        requestAbandoned = true;
        log.debug("owner {} stopped reading the request body: {}", entry.owner(), cause.toString());
    }

    /** Writes out what was queued. */
    void flush() {
        Channel ch = channel;
        if (ch != null) {
            ch.flush();
        }
    }

    /** Answers whether the connection takes more request bytes now. */
    boolean isWritable() {
        Channel ch = channel;
        return ch != null && ch.isWritable();
    }

    /**
     * Reads from the owner (true) or stops (false): the client's backpressure. While a splice
     * runs, Netty's splice paces the owner itself, and this does nothing.
     */
    void setReading(boolean read) {
        Channel ch = channel;
        if (ch != null && splice == null) {
            ch.config().setAutoRead(read);
        }
    }

    /**
     * Starts the idle timer: the owner may then be quiet for at most {@code timeout}. Its task is
     * scheduled only when a read batch ends with the response incomplete ({@link
     * #onReadComplete}): most small responses arrive whole with their head, and cost no timer.
     */
    void armIdle(Duration timeout) {
        idle = timeout;
        lastReadNanos = ticker.read();
        idleArmed = true;
    }

    /** Hands the connection over (after a 101): this attempt lets go of it without closing it. */
    Channel handOver() {
        Channel ch = requireChannel();
        if (state != State.OPEN) {
            throw new IllegalStateException("attempt " + number + ": hand-over in state " + state);
        }
        state = State.HANDED_OVER;
        cancelTimers();
        channel = null;
        return ch;
    }

    /**
     * Lets go of the connection, once: back to the pool when both messages completed and {@code
     * mayReuse}, else closed (reset when the request was cut off).
     */
    void finish(boolean mayReuse) {
        if (isDone()) {
            return;
        }
        state = State.RELEASED;
        cancelTimers();
        KernelSplice sp = splice;
        if (sp != null) {
            splice = null;
            sp.cancel(); // responseComplete is false: the connection is closed below, its queue with it
        }
        Channel ch = channel;
        channel = null;
        if (ch != null) {
            if (bodyStarted) {
                ch.config().setAutoClose(true); // as the pool's connections have it
            }
            boolean reusable = mayReuse && requestComplete && responseComplete && ownerKeepsAlive && ch.isActive();
            if (!requestComplete && ch.isActive()) {
                // Aborted mid-request: a reset, so the owner can never take a cut-off body for a
                // whole one (a chunked body that merely stops looks complete to none, but a
                // close-delimited reading or a lax parser might).
                ch.config().setOption(ChannelOption.SO_LINGER, 0);
            }
            transport.release(loop, uri, ch, reusable);
        }
    }

    /**
     * Its response is an event stream: the connection leaves its pool's connection count while it
     * lasts ({@link UpstreamHttpTransport#stream}), so the owner's other requests are not locked
     * out. Nothing when the attempt holds no connection.
     */
    void streaming() {
        Channel ch = channel;
        if (ch != null) {
            transport.stream(ch);
        }
    }

    /**
     * Ends the owner connection's read batch after the read in progress, so a splice that may
     * start when the batch completes finds the rest of the body still in the socket ({@link
     * ResponseSplice.ReadCount#endBatch}). Nothing when the attempt holds no connection.
     */
    void endReadBatch() {
        Channel ch = channel;
        ResponseSplice.ReadCount count = ch != null ? ResponseSplice.ReadCount.of(ch) : null;
        if (count != null) {
            count.endBatch();
        }
    }

    /**
     * Answers whether the rest of the response body may be spliced now: the attempt holds its
     * connection, the whole request went out, the response began and did not end, no splice runs,
     * and the kernel can splice from the connection to {@code client} ({@link
     * KernelSplice#possible}).
     */
    boolean maySplice(Channel client) {
        Channel ch = channel;
        return state == State.OPEN
                && requestComplete
                && responseStarted
                && !responseComplete
                && splice == null
                && ch != null
                && ch.isActive()
                && KernelSplice.possible(ch, client);
    }

    /**
     * Moves the rest of the response body, {@code length} bytes, from the owner's socket to {@code
     * client}'s in the kernel ({@link KernelSplice}); {@link #maySplice} must have said yes. The
     * connection's codec comes out first; bytes its decoder still held go to the exchange as body
     * first ({@link Events#onContent}). Each slice that reaches the client is reported ({@link
     * Events#onSpliced}); the end arrives as an empty {@link LastHttpContent}, with the codec back
     * in place, as if the decoder had read it; a failure as {@link Events#onFailed}.
     */
    void splice(Channel client, long length) {
        Channel ch = requireChannel();
        ByteBuf held = CodecRemoval.remove(ch.pipeline(), UpstreamHttpTransport.CODEC);
        int n = held.readableBytes();
        if (n > length) {
            held.release(); // past its Content-Length: the decoder would have ended the body first
            transport.restoreCodec(ch);
            onFailure(new IllegalStateException("owner sent " + n + " bytes with " + length + " left of its body"));
            return;
        }
        if (n > 0) {
            events.onContent(this, new DefaultHttpContent(held));
        } else {
            held.release();
        }
        if (state != State.OPEN || !events.isCurrent(this)) {
            return; // the exchange ended on those bytes
        }
        if (n == length) {
            spliceEnded();
            return;
        }
        KernelSplice started = KernelSplice.start(ch, client, length - n, new ResponseSplice.Events() {
            @Override
            public void onSliced(int bytes) {
                lastReadNanos = ticker.read();
                if (state == State.OPEN && events.isCurrent(Attempt.this)) {
                    events.onSpliced(Attempt.this, bytes);
                }
            }

            @Override
            public void onEnded(int after) {
                splice = null;
                if (after != ResponseSplice.NOTHING) {
                    ownerKeepsAlive = false; // closed, not pooled: see ResponseSplice's notes
                }
                if (after == ResponseSplice.BYTES) {
                    log.warn(
                            "owner {} sent bytes past the end of its response: its connection is closed, not reused",
                            entry.owner());
                }
                spliceEnded();
            }

            @Override
            public void onFailed(Throwable cause) {
                splice = null;
                onFailure(cause);
            }

            @Override
            public void onDraining() {
                if (state == State.OPEN && events.isCurrent(Attempt.this)) {
                    events.onSpliceDraining(Attempt.this);
                }
            }

            @Override
            public void onClientGone() {
                splice = null;
                if (state == State.OPEN && events.isCurrent(Attempt.this)) {
                    events.onClientGone(Attempt.this);
                }
            }
        });
        if (started.isActive()) { // else it failed at once (the owner had closed), and said so
            splice = started;
        }
    }

    /** The body ended by splice: the codec goes back, and the exchange hears the end as the decoder's. */
    private void spliceEnded() {
        Channel ch = requireChannel();
        transport.restoreCodec(ch);
        responseComplete = true;
        events.onContent(this, LastHttpContent.EMPTY_LAST_CONTENT);
    }

    RouteEntry entry() {
        return entry;
    }

    URI uri() {
        return uri;
    }

    int number() {
        return number;
    }

    State state() {
        return state;
    }

    /** Answers whether the connection is held and the request may be written. */
    boolean isSending() {
        return state == State.OPEN;
    }

    /** Answers whether the connection was given back or handed over. */
    boolean isDone() {
        return state == State.RELEASED || state == State.HANDED_OVER;
    }

    /** Answers whether the connection served an exchange before (a stale one may be closed). */
    boolean isReused() {
        return reused;
    }

    /** Answers whether the owner's final answer keeps the connection open (RFC 9112 §9.3). */
    boolean ownerKeepsAlive() {
        return ownerKeepsAlive;
    }

    /** Answers whether the owner's response (or its 421, or its 101) began. */
    boolean responseStarted() {
        return responseStarted;
    }

    // ---- from the connection (UpstreamHttpTransport.Listener) ----

    @Override
    public void onMessage(Object message) {
        try {
            if (message instanceof DecoderResultProvider m && m.decoderResult().isFailure()) {
                // Netty's decoder hands on what it refused with the failure set, then drops every
                // later byte of the connection: never a response to forward or a framing to reuse.
                Throwable why = m.decoderResult().cause();
                ReferenceCountUtil.release(message);
                onMalformed(why == null ? "refused by the decoder" : why.toString());
                return;
            }
            if (message instanceof HttpResponse response) {
                onResponse(response);
            }
            if (message instanceof ByteBuf bytes) {
                // Bytes with no codec in front: only around a splice, and never in order.
                bytes.release();
                onFailure(new IllegalStateException("owner bytes outside the response's framing"));
                return;
            }
            if (message instanceof HttpContent content) {
                lastReadNanos = ticker.read();
                if (interimEnd && content instanceof LastHttpContent) {
                    interimEnd = false;
                    content.release(); // the end of a 1xx (bodyless), not of the response
                } else if (state != State.OPEN || !events.isCurrent(this)) {
                    content.release(); // a late part of an abandoned attempt
                } else {
                    if (content instanceof LastHttpContent) {
                        responseComplete = true;
                    }
                    events.onContent(this, content);
                }
            }
        } catch (RuntimeException e) {
            ReferenceCountUtil.safeRelease(message);
            throw e;
        }
    }

    private void onResponse(HttpResponse response) {
        int code = response.status().code();
        if (code >= 100 && code < 200 && code != 101) {
            // Interim answers are the owner's business with us: the gateway answered Expect itself,
            // and nginx drops an owner's 1xx (103 included) too. Netty's decoder ends each with an
            // empty LastHttpContent, which must not end the exchange.
            interimEnd = true;
            return;
        }
        if (code < 100 || code > 599 || !validReason(response.status().reasonPhrase())) {
            // RFC 9110 §15: a status is three digits, 1xx-5xx; RFC 9112 §4: a reason phrase is
            // HTAB, SP, VCHAR and obs-text. Netty parses any number and lets control bytes through
            // (found by a review): neither is sent on to a client.
            onMalformed("status line " + code + " "
                    + response.status().reasonPhrase().replaceAll("\\p{Cntrl}", "?"));
            return;
        }
        String coding = unknownTransferCoding(response);
        if (coding != null) {
            onMalformed("Transfer-Encoding '" + coding + "' (only chunked is undone)");
            return;
        }
        // RFC 9112 §9.3, §9.6: after "Connection: close", or an HTTP/1.0 answer without keep-alive,
        // the owner sends no more on this connection: it is closed after this response, not pooled.
        ownerKeepsAlive = HttpUtil.isKeepAlive(response);
        responseStarted = true;
        cancelHeadTimer();
        if (state != State.OPEN || !events.isCurrent(this)) {
            return; // the answer of an abandoned attempt: its body is released as it comes
        }
        events.onResponseHead(this, response);
    }

    /**
     * The owner's bytes are no valid response (its head, a field, a chunk, or a transfer coding the
     * gateway cannot undo): the attempt fails, and its connection is closed. It counts as an answer
     * begun, so the request is not sent again: the owner may have acted on it.
     */
    private void onMalformed(String why) {
        responseStarted = true;
        cancelHeadTimer();
        onFailure(new MalformedResponseException(entry.owner(), why));
    }

    /** Answers whether {@code reason} holds only what RFC 9112 §4 allows: HTAB, SP, VCHAR, obs-text. */
    static boolean validReason(String reason) {
        for (int i = 0; i < reason.length(); i++) {
            char c = reason.charAt(i);
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                return false;
            }
        }
        return true;
    }

    /** Returns the first transfer coding of {@code response} other than chunked, or null. */
    static @Nullable String unknownTransferCoding(HttpResponse response) {
        HttpHeaders h = response.headers();
        return h.contains(HttpHeaderNames.TRANSFER_ENCODING) // the usual answer has a length
                ? HeaderPolicy.unknownTransferCoding(h.getAll(HttpHeaderNames.TRANSFER_ENCODING))
                : null;
    }

    @Override
    public void onReadComplete() {
        if (splice != null) {
            lastReadNanos = ticker.read(); // the owner's socket was read: into the pipe
            return;
        }
        if (idleArmed && idleTimer == null && state == State.OPEN && !responseComplete) {
            scheduleIdle(Math.max(0, idle.toNanos() - (ticker.read() - lastReadNanos)));
        }
        if (state == State.OPEN && events.isCurrent(this)) {
            events.onReadComplete(this);
        }
    }

    @Override
    public void onWritabilityChanged(boolean writable) {
        if (writable && state == State.OPEN && events.isCurrent(this)) {
            events.onWritable(this);
        }
    }

    @Override
    public void onClosed() {
        if (isDone()) {
            return;
        }
        if (!responseComplete && events.isCurrent(this)) {
            events.onFailed(this, new ClosedChannelException());
        }
        finish(false);
    }

    @Override
    public void onFailure(Throwable cause) {
        log.debug("owner connection to {} failed: {}", entry.owner(), cause.toString());
        if (!isDone() && events.isCurrent(this)) {
            events.onFailed(this, cause);
        }
        finish(false);
    }

    // ---- timers ----

    private void requestComplete() {
        requestComplete = true;
        armHeadTimer();
    }

    private void armHeadTimer() {
        if (headTimer == null && !responseStarted && !isDone()) {
            FixedDelays.Deadline d = new FixedDelays.Deadline(() -> {
                if (!responseStarted && !isDone()) {
                    events.onFailed(this, new HeadTimeoutException(entry.owner()));
                }
            });
            headTimer = d;
            headTimeouts.arm(d);
        }
    }

    private void scheduleIdle(long delayNanos) {
        idleTimer = loop.schedule(this::checkIdle, delayNanos, TimeUnit.NANOSECONDS);
    }

    private void checkIdle() {
        if (state != State.OPEN || !events.isCurrent(this)) {
            return;
        }
        Channel ch = channel;
        long idleNanos = idle.toNanos();
        long quiet = ticker.read() - lastReadNanos;
        KernelSplice sp = splice;
        // A splice says whose wait it is (a draining one has all the owner sent); the client's wait is
        // the send clock's.
        boolean pausedByClient =
                ch != null && (sp != null ? sp.waitsForClient() : !ch.config().isAutoRead());
        if (quiet >= idleNanos && !pausedByClient) {
            log.debug("owner {} idle for {} ms inside a response", entry.owner(), quiet / 1_000_000);
            events.onIdle(this, idle);
        } else {
            scheduleIdle(pausedByClient ? idleNanos : idleNanos - quiet);
        }
    }

    private void cancelHeadTimer() {
        FixedDelays.Deadline t = headTimer;
        if (t != null) {
            t.disarm();
            headTimer = null;
        }
    }

    private void cancelTimers() {
        cancelHeadTimer();
        ScheduledFuture<?> t = idleTimer;
        if (t != null) {
            t.cancel(false);
            idleTimer = null;
        }
    }

    private Channel requireChannel() {
        Channel ch = channel;
        if (ch == null) {
            throw new IllegalStateException("attempt " + number + ": no connection in state " + state);
        }
        return ch;
    }

    @Override
    public String toString() {
        return "attempt " + number + " to " + entry.owner() + " (" + state + ")";
    }

    @SuppressWarnings("unchecked")
    private static Future<Channel> cast(Future<?> f) {
        return (Future<Channel>) f;
    }
}
