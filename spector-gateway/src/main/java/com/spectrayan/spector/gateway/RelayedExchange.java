package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.BodyChunks;
import com.spectrayan.spector.cluster.gateway.ReplayBudget;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.util.concurrent.EventExecutor;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/**
 * One exchange relayed to a worker over its uplink, between the {@link ClientConnection} and the
 * relay: the client's body as the relay pulls it ({@link BodySource}, one read at a time), and the
 * worker's answer written back part by part, the next part pulled only while the client
 * connection is writable.
 *
 * <p>Threading: every state change runs on the connection's event loop; relay callbacks hop to it.
 * A body that ends badly (malformed, too slow) or a client that goes away aborts the relay's
 * {@link #signal()}, so the worker cancels its target's request and the worker's relay slot is
 * released at once.
 *
 * <p>An upgrade request (RFC 9110 §7.8, uplink v2 only) is relayed with a {@link RelaySplice} as
 * its body; a {@code 101} switches the connection to it ({@link ClientConnection#relayUpgrade}),
 * anything else is answered as any response. On a v1 link the relay fails NOT_IMPLEMENTED (501).
 */
final class RelayedExchange implements ClientConnection.Exchange, BodySource {
    /**
     * The request body bytes read from the client ahead of the relay at which reading stops
     * ({@code autoRead} off) until the relay took them down to {@link #READ_AHEAD_LOW_BYTES}: the
     * client's socket and the uplink work at once, reading switched on and off once per window.
     */
    static final int READ_AHEAD_HIGH_BYTES = 256 * 1024;

    /** The request body bytes read ahead at or below which reading from the client resumes. */
    static final int READ_AHEAD_LOW_BYTES = 64 * 1024;

    /**
     * Returns the request body bytes {@code exchange}, a relayed one, has read from the client
     * ahead of the relay and not yet handed over, or -1 for another exchange. Call it on the
     * connection's event loop (tests).
     */
    static int readAhead(ClientConnection.@Nullable Exchange exchange) {
        return exchange instanceof RelayedExchange e ? (int) e.queued.bytes() : -1;
    }

    private final ClientConnection connection;
    private final EventExecutor loop;
    private final String path;
    private final boolean expectContinue;
    private final GatewayMetrics metrics;
    private final AbortSignal signal = new AbortSignal();
    /**
     * The request body read ahead, at most the read-ahead plus one read; small reads copied
     * together ({@link BodyChunks}), so a client sending a byte at a time holds no read buffer a byte.
     */
    private final BodyChunks queued = new BodyChunks();

    /** Reading from the client stopped at {@link #READ_AHEAD_HIGH_BYTES}. */
    private boolean paused;
    /** The relay's outstanding read of the request body. */
    private @Nullable BiConsumer<@Nullable ByteBuf, @Nullable Throwable> pending;

    private @Nullable BodySource responseBody;
    private @Nullable SpectorException bodyFailure;
    private boolean bodyEnded;
    /** The body is wanted: asked for by the relay, or read whole first ({@link #startAfterBody}). */
    private boolean pulled;
    /** The relay asked for a part of the body: from here the body is the relay's alone. */
    private boolean relayAsked;

    private boolean discarded;
    private boolean headSent;
    private boolean waitingWritable;
    private boolean finished;

    /**
     * What to do instead of failing when the relay found no live link of its worker before it sent
     * anything ({@link GatewayRelay#isNoLink}): the link this replica saw a moment ago went in between.
     * Null: fail 503 as any relay that cannot start.
     */
    private @Nullable Runnable onNoLink;

    /**
     * The relay's start while a small body is read whole ({@link #startAfterBody}); null before,
     * once it ran, and once the exchange ended without it.
     */
    private @Nullable Runnable deferredStart;

    /** The budget a body read whole before the relay reserved its length from; null once given back. */
    private @Nullable ReplayBudget reservedFrom;

    private long reservedBytes;

    /** Guards {@link #copies} and {@link #copiesWhole}: the relay asks for a replay on its link's loop. */
    private final Object copiesLock = new Object();

    /**
     * The parts of a body read whole first ({@link #startAfterBody}), kept as the relay takes them
     * (a retained duplicate each: no byte copied), so that a relay whose stream a worker's link
     * refused after they went out on it sends them again on another ({@link #replay}). Null for a
     * body that streams (a large one, a chunked one that outgrew the buffer, one a drain started
     * early: none was read whole before the relay started), and once let go: at the response's head
     * (no refusal follows one) and at the exchange's end. A body read whole first never holds more
     * than its reserve, which counts these bytes and is held while they are. Guarded by {@link
     * #copiesLock}; changed on the loop.
     */
    private @Nullable List<ByteBuf> copies;

    /** The body's end was handed to the relay too: {@link #copies} holds all of it. Guarded by {@link #copiesLock}. */
    private boolean copiesWhole;

    /** The bytes in {@link #copies}. On the loop. */
    private long copiedBytes;

    /** A {@link #replay} was made: the copies stay until the exchange ends. Guarded by {@link #copiesLock}. */
    private boolean replayed;

    /** The protocol an upgrade request asks for, or null. */
    private final @Nullable String upgrade;

    /** The client's side of a switched connection, for an upgrade request; null otherwise. */
    private final @Nullable RelaySplice splice;

    RelayedExchange(
            ClientConnection connection,
            EventExecutor loop,
            String path,
            boolean expectContinue,
            GatewayMetrics metrics) {
        this(connection, loop, path, expectContinue, metrics, null, Duration.ofSeconds(1));
    }

    /**
     * An exchange for a request that asks to upgrade to {@code upgrade} (null: an ordinary one),
     * whose switched connection closes after {@code idleTimeout} without a byte either way.
     */
    RelayedExchange(
            ClientConnection connection,
            EventExecutor loop,
            String path,
            boolean expectContinue,
            GatewayMetrics metrics,
            @Nullable String upgrade,
            Duration idleTimeout) {
        this.connection = connection;
        this.loop = loop;
        this.path = path;
        this.expectContinue = expectContinue;
        this.metrics = metrics;
        this.bodyEnded = !connection.bodyPending();
        this.upgrade = upgrade;
        this.splice = upgrade == null ? null : new RelaySplice(loop, signal, idleTimeout, metrics);
    }

    AbortSignal signal() {
        return signal;
    }

    /** Returns the client connection's event loop, the relay's hint for a link on the same loop. */
    @Nullable
    EventLoop eventLoop() {
        return loop instanceof EventLoop l ? l : null;
    }

    /** Returns the protocol the request asks to upgrade to, or null. */
    @Nullable
    String upgrade() {
        return upgrade;
    }

    /**
     * Returns the relayed request's body: for an upgrade, the client's side of the connection once
     * it switched (docs/PROTOCOL.md section 9.7); else this exchange when the request has a body.
     */
    @Nullable
    BodySource requestBody(boolean hasBody) {
        RelaySplice s = splice;
        return s != null ? s : hasBody ? this : null;
    }

    /**
     * Takes the relay elsewhere when it finds no live link before sending anything (the peer hop,
     * or the peer port's 421 no-link) instead of answering 503. Call before {@link #onRelayed}. The
     * exchange that takes the request over takes the body read so far too ({@link #handOver}).
     */
    void onNoLink(Runnable elsewhere) {
        this.onNoLink = elsewhere;
    }

    /**
     * Runs {@code start}, the relay's, at once, or, for a body declared at most {@code bufferBytes}
     * long and not yet whole, once the body has arrived: read ahead into this exchange, it takes
     * none of the worker's relay slots ({@code spector.uplink.relay.max-per-worker}, 8) while a
     * slow client sends it, so a few slow uploaders cannot lock a worker out (nginx's request
     * buffering, as the forwarder reads a small body before taking an owner connection). A chunked
     * body ({@code declaredLength} -1) is read the same way up to {@code bufferBytes}; one that
     * outgrows it starts the relay then and streams. Its declared length (a chunked body's: the
     * buffer) is reserved from {@code budget}, the gateway's replay budget, within its
     * share for bodies read ahead ({@link ReplayBudget#tryReserveAhead}), and given back once the
     * relay took the body or the exchange ended; when the share is short the body streams as a
     * large one does. The client's {@code Expect: 100-continue} is answered now, as the body is
     * wanted now; the body timeout bounds each gap as ever. Should the worker's link have gone
     * while the body was read (it dialled another replica: a drain, a deploy), the body read so far
     * goes to the peer hop with the request ({@link #onNoLink}, {@link #handOver}): nothing of it
     * reached the worker.
     */
    void startAfterBody(long declaredLength, long bufferBytes, ReplayBudget budget, Runnable start) {
        long reserve = declaredLength < 0 ? bufferBytes : declaredLength; // chunked: up to the buffer
        if (bodyEnded
                || splice != null
                || declaredLength == 0
                || declaredLength > bufferBytes
                || !budget.tryReserveAhead(reserve)) {
            start.run();
            return;
        }
        reservedFrom = budget;
        reservedBytes = reserve;
        deferredStart = start;
        synchronized (copiesLock) {
            copies = new ArrayList<>(4);
        }
        pulled = true;
        if (expectContinue) {
            connection.sendContinue(); // RFC 9110 §10.1.1: the body is wanted now
        }
        connection.resumeBody(); // at most bufferBytes and one read: the start runs past them
    }

    /**
     * Starts a relay still waiting for its body read first ({@link #startAfterBody}) now, and
     * streams the rest of the body: the gateway drains, and its worker's links take new relays only
     * until they are sent away, an instant from now. Does nothing for any other relay. Call on the
     * loop.
     */
    void startNow() {
        Runnable start = deferredStart;
        if (start != null && !finished) {
            deferredStart = null;
            dropCopies(); // the body streams: not read whole first, it is never sent again
            start.run(); // the relay takes what was read, then reads on as it takes the rest
        }
    }

    /** Gives back what {@link #startAfterBody} reserved, once (the body handed over or dropped). */
    private void releaseReserve() {
        ReplayBudget b = reservedFrom;
        if (b != null) {
            reservedFrom = null;
            b.releaseAhead(reservedBytes);
        }
    }

    /** Answers the relay's outcome (called on any thread). */
    void onRelayed(CompletionStage<RelayedResponse> relayed) {
        relayed.whenComplete((response, error) -> loop.execute(() -> {
            Runnable elsewhere = onNoLink;
            if (error != null && elsewhere != null && !finished && !relayAsked && GatewayRelay.isNoLink(error)) {
                // Nothing of the request reached a worker: the next exchange takes it over, with the
                // body read so far (handOver); what it does not take is released here.
                finished = true;
                deferredStart = null;
                elsewhere.run();
                releaseQueued();
            } else if (error != null) {
                fail(unwrap(error));
            } else {
                respond(response);
            }
        }));
    }

    // ---- the request body, pulled by the relay ----

    @Override
    public CompletionStage<@Nullable ByteBuffer> next() {
        return nextBuf().thenApply(b -> b == null ? null : copy(b));
    }

    /** The client's next part as the socket read it: no copy (the relay writes it on, or releases it). */
    @Override
    public CompletionStage<@Nullable ByteBuf> nextBuf() {
        return BodySource.nextBufFromLoop(loop, this::readInto);
    }

    /** The body lives on the connection's loop: reading it never blocks. */
    @Override
    public boolean nonBlocking() {
        return true;
    }

    /** A reader on the connection's loop (a v2 link there) gets each part there, inline when one is queued. */
    @Override
    public void nextBufOn(Executor on, BiConsumer<@Nullable ByteBuf, @Nullable Throwable> then) {
        BodySource.nextBufOnLoop(this, loop, on, then, this::readInto);
    }

    /**
     * Gives the body read so far, and its end if it came, to {@code next}, the exchange that took
     * the request over after the relay found no link ({@link #onNoLink}); the rest of the body, if
     * any, the connection hands to {@code next} as it comes. Call on the loop, after {@code next}
     * was started on the connection. Answers whether {@code next} has a body to send: parts handed,
     * or parts still to come.
     */
    boolean handOver(ClientConnection.Exchange next) {
        ByteBuf b;
        boolean handed = false;
        while ((b = queued.poll()) != null) {
            handed = true;
            next.onBodyChunk(b);
        }
        releaseReserve(); // the next exchange reserves what it holds itself
        if (bodyEnded && handed) {
            next.onBodyEnd();
        }
        return handed || connection.bodyPending();
    }

    /** Hands {@code then} the next part, the end or the failure, or keeps it until one comes (loop). */
    private void readInto(BiConsumer<@Nullable ByteBuf, @Nullable Throwable> then) {
        relayAsked = true;
        SpectorException failure = bodyFailure;
        ByteBuf b = queued.poll();
        if (failure != null) {
            if (b != null) {
                b.release();
            }
            then.accept(null, failure);
        } else if (b != null) {
            if (paused && queued.bytes() <= READ_AHEAD_LOW_BYTES) {
                paused = false;
                connection.resumeBody(); // the relay caught up: read ahead again
            }
            if (queued.isEmpty() && !keepsCopies()) {
                releaseReserve(); // the relay took what was read first: a body streams from here
            }
            keepCopy(b);
            metrics.relayedToWorker(b.readableBytes());
            then.accept(b, null);
        } else if (bodyEnded || discarded) {
            if (bodyEnded) {
                copiesEnd();
            }
            then.accept(null, null);
        } else {
            if (!pulled) {
                pulled = true;
                if (expectContinue) {
                    connection.sendContinue(); // RFC 9110 §10.1.1: the body is wanted now
                }
            }
            pending = then;
            paused = false;
            connection.resumeBody(); // read ahead of the relay, up to READ_AHEAD_HIGH_BYTES
        }
    }

    @Override
    public void cancel(Throwable reason) {
        loop.execute(() -> {
            discarded = true;
            releaseQueued();
        });
    }

    @Override
    public void onBodyChunk(ByteBuf b) {
        if (discarded || finished) {
            b.release();
            return;
        }
        BiConsumer<@Nullable ByteBuf, @Nullable Throwable> p = pending;
        if (p != null) {
            pending = null;
            keepCopy(b);
            metrics.relayedToWorker(b.readableBytes());
            p.accept(b, null);
        } else {
            queued.add(b);
            Runnable start = deferredStart;
            if (start != null && queued.bytes() > reservedBytes) {
                // A chunked body outgrew the buffer: the relay starts now and takes the rest as it
                // comes; reading goes on as it takes the bytes read so far.
                // It streams: never sent again (a replay reading on past the reserve would find
                // the copies dropped there and fail mid-body, found by a review), so no copies.
                deferredStart = null;
                dropCopies();
                paused = true;
                connection.pauseBody();
                start.run();
                return;
            }
            // A body read first is bounded by its reserve (the start runs past it), not by the
            // read-ahead: pausing it there would wait for a relay that starts at the body's end.
            if (!paused && start == null && queued.bytes() >= READ_AHEAD_HIGH_BYTES) {
                paused = true;
                connection.pauseBody(); // the relay is behind: wait for it
            }
        }
    }

    @Override
    public void onBodyEnd() {
        bodyEnded = true;
        Runnable start = deferredStart;
        if (start != null) {
            deferredStart = null;
            start.run(); // the body is whole in the queue: the relay takes it from there
            return;
        }
        BiConsumer<@Nullable ByteBuf, @Nullable Throwable> p = pending;
        if (p != null) {
            pending = null;
            copiesEnd();
            p.accept(null, null);
        }
    }

    @Override
    public void onBodyFailed(SpectorException error) {
        bodyFailure = error;
        deferredStart = null;
        releaseQueued();
        BiConsumer<@Nullable ByteBuf, @Nullable Throwable> p = pending;
        pending = null;
        if (p != null) {
            p.accept(null, error);
        }
        signal.abort(error); // the worker cancels the target's request: never a completed upload
        if (!finished) {
            finished = true;
            cancelResponseBody(error);
            connection.problem(error, path);
        }
    }

    // ---- the response, written as the client takes it ----

    /**
     * The field that lets a service worker control pages outside its script's path: a worker's page
     * could register one for the whole gateway origin, every other relay's pages and the owners'
     * answers included. Dropped from every relayed answer.
     */
    static final String SERVICE_WORKER_ALLOWED = "service-worker-allowed";

    /**
     * The policy a relayed answer runs under in a browser: its own opaque origin (a sandbox without
     * {@code allow-same-origin}), so a worker's page, served on the gateway's origin by path, can
     * neither read the token cookie ({@code document.cookie} throws) nor set one, nor register a
     * service worker, nor read another relay's answers or the owners' with the user's cookie (its
     * requests carry {@code Origin: null}, which the cookie's origin rule refuses). A worker is a
     * peer the gateway does not vouch for: GitHub and GitLab serve user content under the same
     * kind of sandbox. Added beside any policy of the worker's (a browser enforces both).
     */
    static final String RELAY_SANDBOX = "sandbox allow-scripts allow-forms allow-popups allow-downloads allow-modals";

    /** Adds what keeps a worker's answer from acting as the gateway's origin ({@link #RELAY_SANDBOX}). */
    static void isolate(HttpHeaders headers) {
        headers.add(HttpHeaderNames.CONTENT_SECURITY_POLICY, RELAY_SANDBOX);
        headers.set("X-Content-Type-Options", "nosniff"); // no script made of a worker's "image"
    }

    private void respond(RelayedResponse response) {
        if (!replaying()) {
            dropCopies(); // a head: the relay is never sent again
            if (queued.isEmpty()) {
                releaseReserve();
            }
        }
        if (finished) {
            cancel(response.body(), SpectorException.of(ErrorCode.DAEMON_CONNECTION_LOST, "the caller went away"));
            return;
        }
        String workerId = RelayRoute.workerIdOf(path);
        connection.upstream("worker " + workerId, 1, "");
        BodySource body = response.body();
        HttpHeaders headers = new DefaultHttpHeaders();
        try {
            BearerTokens tokens = connection.tokens();
            for (Header h : response.headers()) {
                if (isPeerName(h.name())) {
                    continue; // a worker never speaks for the peer hop
                }
                if (h.name().equalsIgnoreCase("set-cookie") && tokens.setsTokenCookie(h.value())) {
                    continue; // nor plants the gateway's credential
                }
                if (h.name().equalsIgnoreCase(SERVICE_WORKER_ALLOWED)) {
                    continue; // nor widens a service worker's scope past its own path
                }
                headers.add(h.name(), h.value());
            }
            if (!response.isSwitching()) {
                isolate(headers);
            }
        } catch (IllegalArgumentException e) {
            // The wire's check lets through only what HTTP/1.1 carries; should a head get past it,
            // the client still gets an answer (500), never a wait with no end.
            cancel(body, e);
            fail(SpectorException.of(
                    ErrorCode.INTERNAL, "worker " + workerId + " sent a response head that is not valid HTTP/1.1"));
            return;
        }
        headSent = true;
        RelaySplice s = splice;
        String protocol = upgrade;
        if (response.isSwitching() && body != null) {
            finished = true; // the connection is the splice's from here
            if (s == null || protocol == null) {
                cancel(body, new IllegalStateException("a 101 to a request that asked for no upgrade"));
                connection.reset();
                return;
            }
            connection.relayUpgrade(HttpResponseStatus.SWITCHING_PROTOCOLS, headers, protocol, s, body);
            return;
        }
        boolean hasBody = connection.head(
                HttpResponseStatus.valueOf(response.status()), headers, response.contentLength(), body != null);
        if (body == null || !hasBody) {
            cancel(body, new IllegalStateException("a response without a body"));
            finished = true;
            connection.end();
            return;
        }
        responseBody = body;
        pump();
    }

    private static boolean isPeerName(String name) {
        return name.regionMatches(true, 0, SpectorHeaders.PEER_PREFIX, 0, SpectorHeaders.PEER_PREFIX.length());
    }

    /** The relay runs under {@code tenant}: its access log line names it. */
    void tenant(String tenant) {
        connection.tenant(tenant);
    }

    private void pump() {
        BodySource body = responseBody;
        if (finished || body == null) {
            return;
        }
        body.nextBuf()
                .whenComplete((part, error) -> loop.execute(() -> {
                    if (finished) {
                        if (part != null) {
                            part.release();
                        }
                        return;
                    }
                    if (error != null) {
                        fail(unwrap(error));
                    } else if (part == null) {
                        finished = true;
                        releaseReserve();
                        connection.end();
                    } else {
                        metrics.relayedFromWorker(part.readableBytes());
                        connection.chunk(part); // as the uplink read it: no copy
                        connection.flush();
                        if (connection.isWritable()) {
                            pump();
                        } else {
                            waitingWritable = true;
                        }
                    }
                }));
    }

    @Override
    public void onWritable() {
        if (waitingWritable) {
            waitingWritable = false;
            pump();
        }
    }

    private void fail(Throwable error) {
        if (finished) {
            return;
        }
        finished = true;
        releaseQueued();
        if (headSent) {
            connection.reset();
            return;
        }
        SpectorException e = error instanceof SpectorException se
                ? se
                : SpectorException.of(ErrorCode.INTERNAL, "relay failed: " + error);
        connection.problem(e, path);
    }

    /**
     * The connection is done with this exchange (answered, refused or reset): what it still holds
     * goes back, whichever way it ended (a response with no body, an answer before the relay took
     * the whole body, a relay that failed as it started).
     */
    @Override
    public void onEnded() {
        deferredStart = null;
        if (bodyFailure == null && !(bodyEnded && queued.isEmpty())) {
            // What is released here was not relayed: a read after this fails, never ends short.
            bodyFailure = SpectorException.of(
                    ErrorCode.DAEMON_CONNECTION_LOST, "the exchange ended before the relay took the whole body");
        }
        releaseQueued();
        if (!finished) {
            // Ended by the connection mid-answer (closeCutting: the client's connection failed, or the
            // gateway stops), not by this exchange: nothing more reaches the client, and its close
            // no longer comes here. As onClosed: the response body goes back (and with it a v2
            // relay's worker slot, held until its body is taken) and the relay is aborted.
            callerGone();
        }
    }

    @Override
    public void onClosed() {
        callerGone();
    }

    /** The client takes nothing more: the relay's read and the response body end, the relay is aborted. */
    private void callerGone() {
        deferredStart = null;
        releaseQueued();
        SpectorException gone = SpectorException.of(ErrorCode.DAEMON_CONNECTION_LOST, "the caller went away");
        BiConsumer<@Nullable ByteBuf, @Nullable Throwable> p = pending;
        pending = null;
        if (p != null) {
            p.accept(null, gone);
        }
        if (!finished) {
            cancelResponseBody(gone);
        }
        finished = true;
        signal.abort(gone);
    }

    private void cancelResponseBody(Throwable reason) {
        BodySource b = responseBody;
        responseBody = null;
        cancel(b, reason);
    }

    private static void cancel(@Nullable BodySource body, Throwable reason) {
        if (body != null) {
            body.cancel(reason);
        }
    }

    private void releaseQueued() {
        queued.release();
        dropCopies();
        releaseReserve();
    }

    // ---- the copies of a body read whole first, for a replay ----

    private boolean keepsCopies() {
        synchronized (copiesLock) {
            return copies != null;
        }
    }

    /** A replay may still be reading the copies: they go at the exchange's end, not at the head. */
    private boolean replaying() {
        synchronized (copiesLock) {
            return replayed;
        }
    }

    /** Keeps a reference to {@code part}, handed to the relay now, while the copies stay within the reserve (loop). */
    private void keepCopy(ByteBuf part) {
        boolean past;
        synchronized (copiesLock) {
            List<ByteBuf> kept = copies;
            if (kept == null) {
                return;
            }
            copiedBytes += part.readableBytes();
            past = copiedBytes > reservedBytes;
            if (!past) {
                kept.add(part.retainedDuplicate());
            }
        }
        if (past) {
            dropCopies(); // a chunked body past the buffer streams: it is never sent again
        }
    }

    private void copiesEnd() {
        synchronized (copiesLock) {
            if (copies != null) {
                copiesWhole = true;
            }
        }
    }

    /** Lets the copies go, once (loop); a replay's later read fails. */
    private void dropCopies() {
        List<ByteBuf> kept;
        synchronized (copiesLock) {
            kept = copies;
            copies = null;
            copiesWhole = false;
        }
        if (kept != null) {
            kept.forEach(ByteBuf::release);
        }
    }

    /**
     * The body again from its first byte, for a relay whose stream a link refused after parts of it
     * went out ({@link BodySource#replay}): when it was read whole before the relay started (its
     * parts kept); else null. Any thread.
     */
    @Override
    public @Nullable BodySource replay() {
        synchronized (copiesLock) {
            if (copies == null) {
                return null;
            }
            replayed = true;
            return new Replay();
        }
    }

    @Override
    public boolean canReplay() {
        synchronized (copiesLock) {
            return copies != null;
        }
    }

    /**
     * The kept copies as a body, each read a new reference to the next; past them, the parts the
     * first try did not take, read on from this exchange (and kept in turn). Any thread, one read at
     * a time.
     */
    private final class Replay implements BodySource {
        private int next; // guarded by copiesLock

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            return nextBuf().thenApply(b -> b == null ? null : copy(b));
        }

        @Override
        public CompletionStage<@Nullable ByteBuf> nextBuf() {
            synchronized (copiesLock) {
                List<ByteBuf> kept = copies;
                if (kept == null) {
                    return CompletableFuture.failedFuture(SpectorException.of(
                            ErrorCode.DAEMON_CONNECTION_LOST,
                            "the request's body is no longer held: the exchange ended"));
                }
                if (next < kept.size()) {
                    return CompletableFuture.completedFuture(kept.get(next++).retainedDuplicate());
                }
                if (copiesWhole) {
                    return CompletableFuture.completedFuture(null);
                }
            }
            // Past what the first try took: read on. The part is kept as it is handed (keepCopy),
            // so the next read starts past it.
            return RelayedExchange.this.nextBuf().thenApply(b -> {
                if (b != null) {
                    synchronized (copiesLock) {
                        next++;
                    }
                }
                return b;
            });
        }

        @Override
        public void cancel(Throwable reason) {
            RelayedExchange.this.cancel(reason); // the client's body is read no more
        }

        @Override
        public @Nullable BodySource replay() {
            return RelayedExchange.this.replay();
        }

        @Override
        public boolean canReplay() {
            return RelayedExchange.this.canReplay();
        }
    }

    private static ByteBuffer copy(ByteBuf b) {
        try {
            ByteBuffer out = ByteBuffer.allocate(b.readableBytes());
            b.readBytes(out);
            out.flip();
            return out;
        } finally {
            b.release();
        }
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }
}
