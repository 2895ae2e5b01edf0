package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.cluster.routing.Resolution;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.HeaderPolicy;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One forwarded exchange: the {@link ExchangeState} machine drawn in {@link GatewayForwarder}'s
 * design notes, driven by the client side (the body, writability, going away) and by its current
 * {@link Attempt} (the owner's connection). Each handler checks where the exchange is, moves it,
 * and acts; the pieces it composes each hold one concern: {@link ReplayBuffer}, {@link
 * RequestBodyPump}, {@link OwnerRequestHeaders}, {@link RetargetPolicy}, {@link ForwardProblems}.
 *
 * <p>A pinned request ({@link PinnedTarget}) runs the same machine from {@code CONNECTING}: no
 * resolver, a 421 is an answer like any other, and one deadline for the whole exchange (armed at
 * {@link #start}) stands in for the owner timeout, the head deadline and the idle timer; a
 * connection not made within the target's connect timeout fails the attempt. With a {@link
 * PinnedTarget#fallback()}, a 421 or a connection not made goes to {@link #fallBack} instead:
 * the fallback names the next target (or the error to answer) while the body waits in the replay
 * copy, and the next attempt starts from {@code CONNECTING} as a retarget after a 421 does.
 *
 * <p>Threading: not thread-safe; confined to the client channel's event loop, which is also the
 * loop of every owner connection it uses. A routing answer completed elsewhere hops back.
 */
final class RealExchange implements GatewayForwarder.Exchange, RequestBody.Consumer, Attempt.Events {
    private static final Logger log = LoggerFactory.getLogger(RealExchange.class);

    private static final String EVENT_STREAM = "text/event-stream";

    private final GatewayForwarder forwarder;
    private final ForwarderSpec spec;
    private final ForwarderMetrics metrics;
    private final ForwardRequest request;
    /** The request's X-Request-Id, for log lines after its head was let go ({@link #onHead}). */
    private final @Nullable String requestId;

    private final ResponseSink sink;
    private final EventLoop loop;
    private final ExchangeState state;
    private final ReplayBuffer replay;
    private final RequestBodyPump body;
    private final OwnerRequestHeaders headers;
    private final @Nullable PinnedTarget pinned;
    /** The owner timeout, or a pinned exchange's deadline (its own timer fires first). */
    private final Duration ownerTimeout;

    private final long maxBodyBytes;
    /**
     * The newest epoch tried per owner, for {@link RetargetPolicy}: made at the second attempt (a
     * retarget); until then the one owner tried and its epoch are these two fields.
     */
    private @Nullable Map<String, Long> epochsSeen;

    private @Nullable String firstOwner;
    private long firstEpoch;

    private int attempts;
    private int fallbacks;
    /** Why the exchange took more attempts than one, comma-separated, for the access log. */
    private String retargets = "";
    /** The owner this exchange probes for passive health, or null ({@link OwnerHealth}). */
    private @Nullable String probe;

    /**
     * The body bytes the owner has still to send when the response may be spliced (its length
     * known and at least {@link ResponseSplice#MIN_LENGTH}, no event stream), else -1.
     */
    private long bodyLeft = -1;
    /** Whether the sink was asked for its socket ({@link ResponseSink#spliceTarget()}): once. */
    private boolean spliceAsked;

    /**
     * Where the first attempt goes once a small body is whole, or a chunked one outgrew the request
     * buffer ({@code BUFFERING}); else null.
     */
    private @Nullable Buffered buffered;

    /**
     * The chunk with which a chunked body outgrew the request buffer, and any read in the same
     * batch after it, held (the body paused) until the first attempt's connection sends them after
     * the replay copy; null otherwise.
     */
    private @Nullable BodyChunks overflow;

    private boolean learnedOwner;
    private boolean staleRetryUsed;
    private long bodyBytes;
    private @Nullable Attempt current;
    /** The head deadline across attempts, a deadline of the loop's queue of them ({@link FixedDelays}). */
    private FixedDelays.@Nullable Deadline headDeadline;
    /** The loop's queues of deadlines, looked up once per exchange. */
    private GatewayForwarder.@Nullable LoopDeadlines deadlines;
    /** A pinned exchange's deadline ({@link PinnedTarget#deadline()}). */
    private @Nullable ScheduledFuture<?> pinnedDeadline;
    /** A pinned exchange's bound on its current attempt's connection ({@link PinnedTarget#connectTimeout()}). */
    private @Nullable ScheduledFuture<?> connectBound;

    // ---- a hand-off hold (HandoffHolds; the design notes of GatewayForwarder) ----

    /** The retarget cause of a hold. */
    static final String HANDOFF = "handoff";

    /**
     * The retarget cause of a hold for an owner behind the ring: its {@code 503} names an {@code
     * X-Spector-Epoch} older than the one the request carried ({@code owner-lagging}). The owner
     * catches up within milliseconds of a ring's publication (it watches the same key), so the
     * request is held and re-sent to it as a hand-off's is, instead of the 503 reaching the client.
     * Its polls back off from {@link HandoffHolds#LAGGING_FIRST_POLL} (see {@link
     * HandoffHolds#nextLaggingPoll}) rather than waiting a whole {@link HandoffHolds#POLL_INTERVAL}.
     */
    static final String LAGGING = "lagging";

    /** This request's slot in the gateway's holds while it waits for a hand-off, else null. */
    private HandoffHolds.@Nullable Hold hold;
    /** The ticker's time of the first hand-off 503, or -1: the hold window runs from it, once per exchange. */
    private long holdStartNanos = -1;
    /** Ends the hold when the window runs out. */
    private @Nullable ScheduledFuture<?> holdTimer;
    /** The next poll tick of the old owner. */
    private @Nullable ScheduledFuture<?> pollTimer;
    /** Whether the current attempt is a held request's poll of the old owner (not a new attempt). */
    private boolean polling;
    /** The wait before the next poll: {@link HandoffHolds#POLL_INTERVAL}, or a lagging owner's back-off. */
    private long pollDelayNanos = HandoffHolds.POLL_INTERVAL.toNanos();
    /** The owner handing off and where it said the namespace goes, for the poll and the problem. */
    private @Nullable RouteEntry heldEntry;

    private @Nullable URI heldUri;
    private String handoffTo = "";
    /** The owner of the latest attempt, for the access log of an exchange that gave up. */
    private String lastOwner = "";
    /** The ticker's time the latest attempt (or poll) started: a wake-up after it ends a hold at once. */
    private long attemptNanos;

    RealExchange(GatewayForwarder forwarder, ForwardRequest request, ResponseSink sink, EventLoop loop) {
        this.forwarder = forwarder;
        this.spec = forwarder.spec;
        this.metrics = forwarder.metrics;
        this.request = request;
        this.requestId = request.headers().get(SpectorHeaders.REQUEST_ID);
        this.sink = sink;
        this.loop = loop;
        this.state = new ExchangeState(ExchangeState.STRICT);
        this.pinned = request.pinned();
        PinnedTarget p = pinned;
        this.ownerTimeout = p == null ? spec.ownerTimeout() : p.deadline();
        this.maxBodyBytes = p == null ? spec.maxBodyBytes() : Long.MAX_VALUE;
        this.replay = new ReplayBuffer(spec.replayBufferBytes(), forwarder.replayBudget);
        this.body = new RequestBodyPump(request.body(), loop, forwarder.ticker, ownerTimeout, this::onStall);
        this.headers = new OwnerRequestHeaders(request);
    }

    void start() {
        metrics.started();
        List<String> connection = request.headers().getAll(HttpHeaderNames.CONNECTION);
        if (!connection.isEmpty()) {
            try {
                HeaderPolicy.connectionTokens(connection); // bounded before any owner is contacted
            } catch (SpectorException e) {
                fail(e, false);
                return;
            }
        }
        if (request.declaredLength() > maxBodyBytes) {
            metrics.countTooLarge();
            fail(forwarder.problems.tooLarge(request.declaredLength()), false);
            return;
        }
        PinnedTarget p = pinned;
        if (p != null) {
            pinnedDeadline = loop.schedule(this::onPinnedDeadline, p.deadline().toNanos(), TimeUnit.NANOSECONDS);
            attempt(new RouteEntry(p.name(), 0, RouteEntry.NO_FENCE), p.uri());
            return;
        }
        if (request.body() == RequestBody.EMPTY) {
            armHeadDeadline();
        }
        route();
    }

    /** Attempts the key's owner as the resolver knows it (L1 at once, else L2 or the ring). */
    private void route() {
        Resolution cached = forwarder.resolver.peek(request.routingKey());
        if (cached != null) {
            attempt(cached.entry());
            return;
        }
        forwarder
                .resolver
                .resolve(request.routingKey())
                .whenComplete((resolution, error) -> onLoop(() -> {
                    if (state.isOver()) {
                        return;
                    }
                    if (error != null) {
                        fail(ForwardProblems.routingFailed(error), false);
                    } else {
                        attempt(resolution.entry());
                    }
                }));
    }

    // ---- the client side (GatewayForwarder.Exchange) ----

    @Override
    public void onClientWritable() {
        Attempt a = current;
        if (state.isStreaming() && a != null) {
            a.setReading(true);
        }
    }

    @Override
    public void cancel() {
        if (state.isOver()) {
            return;
        }
        state.cancelled();
        cleanUp(true);
        metrics.ended(ForwarderMetrics.Outcome.CANCELLED);
    }

    // ---- the request body (RequestBody.Consumer) ----

    @Override
    public void onChunk(ByteBuf chunk) {
        if (state.isOver()) {
            chunk.release();
            return;
        }
        int n = chunk.readableBytes();
        bodyBytes += n;
        if (bodyBytes > maxBodyBytes) {
            chunk.release();
            metrics.countTooLarge();
            fail(forwarder.problems.tooLarge(bodyBytes), true);
            return;
        }
        BodyChunks o = overflow;
        if (o != null) {
            // After the chunk that outgrew the buffer, in order. The client connection's pause
            // holds what its last read brought, so none comes today; a body that delivers after
            // a pause would be kept in order here.
            o.add(chunk);
            return;
        }
        Buffered b = buffered;
        if (b != null && bodyBytes > spec.requestBufferBytes() && state.isBuffering()) {
            // A chunked body outgrew the request buffer: it streams from here, as a longer
            // Content-Length body does from its start. The attempt sends the bytes so far from the
            // replay copy (all within its reserve), then this chunk; the body waits until then.
            buffered = null;
            o = new BodyChunks();
            o.add(chunk);
            overflow = o;
            body.pauseUntimed(); // the attempt has yet to connect: its connect timeout bounds this
            attempt(b.entry(), b.uri());
            return;
        }
        if (replay.isReplayable() && !replay.keep(chunk)) {
            metrics.countReplayRefused();
        }
        HandoffHolds.Hold h = hold;
        if (h != null && replay.isReplayable() && !h.grow(n)) {
            chunk.release();
            metrics.countHandoffRefused();
            fail(handoffProblem(RetargetPolicy.HANDOFF_HOLDS_FULL, "no hold bytes are free"), true);
            return;
        }
        Attempt a = current;
        if (a != null && a.isSending()) {
            a.send(chunk);
            metrics.countToOwner(n);
            if (!a.isWritable()) {
                body.pause();
            }
            return;
        }
        chunk.release(); // kept in the replay buffer, or lost (then no retry is possible)
        if (!replay.isReplayable()) {
            // No attempt is sending: a retry (after a 421, or on a fresh connection) is still
            // connecting, decided while the body so far fitted the replay copy. This chunk outgrew
            // it and is gone, so that attempt could only send a truncated body (a Content-Length
            // the owner waits for until the owner timeout, or a chunked body that ends early and
            // looks whole): answer now, as a 421 after the body would.
            exhausted(RetargetPolicy.BODY_NOT_REPLAYABLE);
            return;
        }
        if (!state.isBuffering()) {
            body.pauseUntimed(); // no owner to time: a connect, a retarget or a hold, each bounded
        }
    }

    @Override
    public void flush() {
        Attempt a = current;
        if (a != null && a.isSending()) {
            a.flush();
        }
    }

    @Override
    public void onEnd() {
        body.ended();
        if (state.isOver()) {
            return;
        }
        armHeadDeadline(); // the owner's time to answer runs from the end of the request
        Buffered b = buffered;
        if (state.isBuffering() && b != null) {
            buffered = null;
            attempt(b.entry(), b.uri()); // the body is whole in the replay copy: now an owner connection
            return;
        }
        Attempt a = current;
        if (a != null && a.isSending()) {
            a.sendEnd();
            a.flush();
            if (!state.requestSent()) {
                illegal("requestSent");
            }
        }
    }

    /**
     * The client's body ended badly (malformed, timed out): the owner's request is aborted (its
     * connection closed, never completed), and the client gets the error.
     */
    @Override
    public void onError(Throwable error) {
        fail(ForwardProblems.bodyFailed(error), true);
    }

    // ---- attempts ----

    private void attempt(RouteEntry entry) {
        URI uri = forwarder.urlOf(entry.owner());
        if (uri == null) {
            fail(ForwardProblems.unknownOwner(entry.owner(), attempts), false);
            return;
        }
        attempt(entry, uri);
    }

    private void attempt(RouteEntry entry, URI uri) {
        if (readsBodyFirst(entry)) {
            buffered = new Buffered(entry, uri);
            if (!state.buffering()) {
                illegal("buffering");
                return;
            }
            body.start(this); // may deliver the whole body, and so the attempt, before it returns
            return;
        }
        if (pinned == null) {
            OwnerHealth.Admission admission = forwarder.health.admit(entry.owner());
            if (admission == OwnerHealth.Admission.REFUSE) {
                metrics.countOwnerDown();
                fail(ForwardProblems.ownerDown(entry.owner(), forwarder.health.downFor(entry.owner())), false);
                return;
            }
            probe = admission == OwnerHealth.Admission.PROBE ? entry.owner() : null;
        }
        attempts++;
        if (firstOwner == null) {
            firstOwner = entry.owner();
            firstEpoch = entry.epoch();
        } else {
            epochsSeen().merge(entry.owner(), entry.epoch(), Math::max);
        }
        connect(entry, uri);
    }

    /**
     * Answers whether this exchange reads its body first, before its first attempt: a forwarded
     * request (a peer hop's too; not an upgrade) whose declared body fits the request buffer, or whose
     * body is chunked (its length unknown: read up to the buffer, then streamed, {@link #onChunk}),
     * and whose replay copy could reserve that many bytes (else it streams, as a larger body
     * does). An owner marked down is admitted first instead: refused at once (no body read for
     * nothing), or probed.
     */
    private boolean readsBodyFirst(RouteEntry entry) {
        long length = request.declaredLength();
        long buffer = spec.requestBufferBytes();
        return attempts == 0
                && request.upgrade() == null
                && !body.isStarted()
                && (length > 0 || (length < 0 && request.body() != RequestBody.EMPTY))
                && length <= buffer
                && !forwarder.health.isDown(entry.owner())
                && replay.reserve(length > 0 ? length : buffer);
    }

    /** Starts attempt number {@link #attempts} (a retry on a fresh connection keeps the number). */
    private void connect(RouteEntry entry, URI uri) {
        if (!state.attempting()) {
            illegal("attempting");
            return;
        }
        lastOwner = entry.owner();
        attemptNanos = forwarder.ticker.read();
        body.stopClock(); // an earlier attempt's wait is not this owner's
        Attempt a = pinned == null
                ? new Attempt(
                        entry,
                        uri,
                        attempts,
                        this,
                        forwarder.transport,
                        forwarder.ticker,
                        deadlines().ownerTimeouts())
                : new Attempt(entry, uri, attempts, this, loop, forwarder.transport, forwarder.ticker, ownerTimeout);
        current = a;
        PinnedTarget p = pinned;
        if (p != null) {
            cancelConnectBound();
            connectBound = loop.schedule(
                    () -> onConnectBound(a, p.connectTimeout()),
                    p.connectTimeout().toNanos(),
                    TimeUnit.NANOSECONDS);
        }
        // An upgrade keeps its connection for the life of the new protocol: never a pooled one.
        a.connect(request.upgrade() != null);
    }

    @Override
    public boolean isCurrent(Attempt a) {
        return !state.isOver() && a == current;
    }

    @Override
    public void onConnected(Attempt a) {
        cancelConnectBound();
        if (body.isStarted() && !replay.isReplayable()) {
            // A retry whose body is no longer whole (see onChunk): send nothing.
            a.decline();
            exhausted(RetargetPolicy.BODY_NOT_REPLAYABLE);
            return;
        }
        a.hold();
        if (!state.connected()) {
            illegal("connected");
            return;
        }
        HttpHeaders ownerHeaders = headers.forAttempt(a.uri(), a.entry(), a.number());
        if ((body.isEnded() || request.body() == RequestBody.EMPTY) && replay.bytes() == 0 && overflow == null) {
            // No body to send (the usual GET): head and end in one write. The empty body is not
            // started: it ends here, as its start would end it at once (onEnd).
            body.ended();
            a.sendWhole(new DefaultFullHttpRequest(
                    HttpVersion.HTTP_1_1,
                    request.method(),
                    request.uri(),
                    Unpooled.EMPTY_BUFFER,
                    ownerHeaders,
                    EmptyHttpHeaders.INSTANCE));
            if (!a.isSending()) {
                return; // the write failed at once: the attempt is over and the exchange moved on
            }
            if (!state.requestSent()) {
                illegal("requestSent");
                return;
            }
        } else {
            a.sendHead(new DefaultHttpRequest(HttpVersion.HTTP_1_1, request.method(), request.uri(), ownerHeaders));
            metrics.countToOwner(a.sendReplay(replay));
            if (!a.isSending()) {
                return; // the head's write failed at once: the attempt is over and the exchange moved on
            }
            BodyChunks o = overflow;
            if (o != null) { // after the replay copy, as onChunk would have sent them
                overflow = null;
                for (ByteBuf c = o.poll(); c != null; c = o.poll()) {
                    if (replay.isReplayable() && !replay.keep(c)) {
                        metrics.countReplayRefused();
                    }
                    metrics.countToOwner(c.readableBytes());
                    a.send(c);
                }
            }
            if (body.isEnded()) {
                a.sendEnd();
                if (!state.requestSent()) {
                    illegal("requestSent");
                    return;
                }
            }
        }
        a.flush();
        if (!body.isStarted() && !body.isEnded()) {
            body.start(this);
        } else if (a.isWritable()) {
            resumeBody();
        } else {
            body.pause(); // the replay copy filled this connection: its stall clock starts now
        }
    }

    @Override
    public void onWritable(Attempt a) {
        resumeBody();
    }

    @Override
    public void onFailed(Attempt a, Throwable cause) {
        if (state.isOver() || a != current) {
            return;
        }
        if (pinned == null && !a.responseStarted() && isOwnerFailure(a, cause)) {
            String owner = a.entry().owner();
            forwarder.health.failed(owner, owner.equals(probe));
            probe = null;
        }
        if (polling
                && !a.responseStarted()
                && !(cause instanceof HeadTimeoutException)
                && (a.state() == Attempt.State.CONNECTING || maySendAgain())) {
            // A poll that got no answer: the hold goes on (its window still bounds it). Only when
            // the request may be sent again: a poll is the whole request, and an old owner that
            // took it and then closed (the move called off, then a crash) may have acted on it, so
            // a POST without an Idempotency-Key is not sent once more (nginx's proxy_next_upstream
            // never passes a non-idempotent request on once sent); it fails as any attempt would.
            polling = false;
            current = null;
            a.finish(false);
            if (hold == null) {
                resendAfterHold();
            } else if (state.holding()) {
                schedulePoll();
            } else {
                illegal("holding");
            }
            return;
        }
        if (!state.isStreaming()
                && !(cause instanceof HeadTimeoutException)
                && a.isReused()
                && !a.responseStarted()
                && !staleRetryUsed
                && replay.isReplayable()
                && maySendAgain()) {
            // A pooled connection closed under us before any answer (the owner's keep-alive
            // timeout crossing our request): retry once on a new one.
            staleRetryUsed = true;
            metrics.countRetryStaleConnection();
            retarget("stale-connection");
            a.finish(false);
            connect(a.entry(), a.uri());
            return;
        }
        if (a.state() == Attempt.State.CONNECTING && mayFallBack()) {
            current = null;
            a.finish(false);
            fallBack(a, "no connection to " + a.entry().owner() + ": " + cause);
            return;
        }
        if (mayFallBack() && !a.responseStarted() && cause instanceof IOException && isIdempotent(request.method())) {
            // The target closed or reset the connection before its head (a replica stopping as the
            // hop reached it): an idempotent request goes on, as nginx's proxy_next_upstream error
            // does; a POST may have been acted on, so it gets the 503.
            current = null;
            a.finish(false);
            fallBack(a, "closed before its head by " + a.entry().owner() + ": " + cause);
            return;
        }
        if (cause instanceof MalformedResponseException) {
            log.warn(
                    "{}: its connection is closed{}, request id {}",
                    cause.getMessage(),
                    state.isStreaming() ? " and the client's reset" : "",
                    requestId);
        }
        SpectorException error =
                forwarder.problems.attemptFailed(a.entry().owner(), cause, state.isStreaming(), attempts);
        if (error.code() == ErrorCode.OWNER_UNREACHABLE && !(cause instanceof MalformedResponseException)) {
            long failures = forwarder.unreachableLog.event(System.nanoTime());
            if (failures > 0) {
                log.warn(
                        "{}: {} ({} such failure(s) since the last line), request id {}",
                        error.getMessage(),
                        String.valueOf(cause),
                        failures,
                        requestId);
            }
        }
        if (pinned == null) { // a pinned upstream is no ring member: the owner counters stay the owners'
            if (error.code() == ErrorCode.OWNER_TIMEOUT) {
                metrics.countOwnerTimeout();
            } else if (error.code() == ErrorCode.OWNER_UNREACHABLE) {
                metrics.countOwnerUnreachable();
            }
        }
        fail(error, false);
    }

    // ---- the owner's answer ----

    @Override
    public void onResponseHead(Attempt a, HttpResponse response) {
        int code = response.status().code();
        if (pinned == null) {
            forwarder.health.succeeded(a.entry().owner()); // any head: the owner is alive
            probe = null;
        }
        boolean lagging = code == 503 && pinned == null && isLagging(a, response);
        boolean handoff =
                code == 503 && pinned == null && (lagging || response.headers().contains(SpectorHeaders.HANDOFF));
        boolean pollEnded = polling && !handoff;
        if (pollEnded) {
            // The old owner answers otherwise now: the hand-off is over (or was called off).
            polling = false;
            metrics.countHandoffReleased();
            endHold();
        }
        if (handoff) {
            current = null;
            a.finish(false); // answered before the body: not worth keeping, as after a 421
            onHandoff(a, response, lagging ? LAGGING : HANDOFF);
        } else if (code == 101) {
            String asked = request.upgrade();
            if (asked == null) {
                onFailed(a, new IllegalStateException("101 to a request that asked for none"));
            } else if (!switchesTo(response, asked)) {
                onFailed(
                        a,
                        new MalformedResponseException(
                                a.entry().owner(),
                                "a 101 whose Upgrade names no protocol but the " + asked + " asked for: "
                                        + sanitize(String.join(
                                                ", ", response.headers().getAll(HttpHeaderNames.UPGRADE)))));
            } else {
                onUpgraded(a, response);
            }
        } else if (code == 421 && pinned != null && mayFallBack() && isRefusal(response)) {
            current = null;
            a.finish(false); // it refused before reading the body: its connection is not worth keeping
            fallBack(a, "421 from " + a.entry().owner());
        } else if (code == 421 && pinned == null) {
            // An owner refuses before reading the body; whatever it does with the rest, this
            // connection's state is not worth trusting for the next exchange: close it. A
            // misdirect is rare, so the reconnect costs little.
            current = null;
            a.finish(false);
            onMisdirected(a, response);
        } else {
            onHead(a, response);
        }
        if (pollEnded) {
            forwarder.holds.wake(request.routingKey()); // after a 421 was reported: they find the new owner
        }
    }

    /**
     * Answers whether {@code response} is an owner's {@code owner-lagging} refusal: a 503 whose
     * {@code X-Spector-Epoch} is older than the epoch this attempt sent (DESIGN.md section 4, rule
     * 3 of the owner side). Any other 503 is the owner's own answer and goes to the client.
     */
    private static boolean isLagging(Attempt a, HttpResponse response) {
        String named = response.headers().get(SpectorHeaders.EPOCH);
        if (named == null || response.headers().contains(SpectorHeaders.HANDOFF)) {
            return false;
        }
        try {
            return Long.parseLong(named.trim()) < a.entry().epoch();
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /**
     * The owner is handing the key's namespace to another ({@code 503} with {@code
     * X-Spector-Handoff}), or is behind the request's epoch ({@link #LAGGING}): hold the request
     * until the move ends or the owner caught up (it is polled as a hand-off's old owner is), or
     * answer 503 at once when it cannot be held (a body too large to replay, no retarget left, the
     * window spent, no hold free).
     */
    private void onHandoff(Attempt a, HttpResponse response, String cause) {
        boolean poll = polling;
        polling = false;
        handoffTo = Objects.requireNonNullElse(response.headers().get(SpectorHeaders.HANDOFF), "");
        pollDelayNanos = LAGGING.equals(cause)
                ? HandoffHolds.nextLaggingPoll(poll ? pollDelayNanos : 0)
                : HandoffHolds.POLL_INTERVAL.toNanos();
        if (!poll) {
            metrics.countHandoffHold();
            retarget(cause);
        }
        if (!replay.isReplayable() || request.declaredLength() > spec.replayBufferBytes()) {
            metrics.countHandoffRefused();
            exhausted(RetargetPolicy.BODY_NOT_REPLAYABLE);
            return;
        }
        if (!poll && attempts > spec.retryMax()) {
            exhausted(RetargetPolicy.RETRIES_EXHAUSTED);
            return;
        }
        long now = forwarder.ticker.read();
        if (holdStartNanos < 0) {
            holdStartNanos = now;
        }
        long left = spec.handoffHold().toNanos() - (now - holdStartNanos);
        if (left <= 0) {
            holdExpired();
            return;
        }
        if (!state.holding()) {
            illegal("holding");
            return;
        }
        heldEntry = a.entry();
        heldUri = a.uri();
        if (hold == null) {
            if (poll || forwarder.holds.wokenSince(request.routingKey(), attemptNanos)) {
                // woken while this poll was out, or the move ended while the 503 was on its way
                metrics.countHandoffReleased();
                resendAfterHold();
                return;
            }
            HandoffHolds.Hold h = forwarder.holds.tryHold(
                    request.routingKey(), replay.bytes(), LAGGING.equals(cause), () -> onLoop(this::onHandoffOver));
            if (h == null) {
                metrics.countHandoffRefused();
                fail(handoffProblem(RetargetPolicy.HANDOFF_HOLDS_FULL, "no hold is free"), false);
                return;
            }
            hold = h;
        }
        if (holdTimer == null) {
            holdTimer = loop.schedule(this::onHoldExpired, left, TimeUnit.NANOSECONDS);
        }
        schedulePoll();
    }

    /** The key's hand-off ended ({@link HandoffHolds#wake}): the hold's slot is already given back. */
    private void onHandoffOver() {
        hold = null;
        if (state.isOver() || !state.isHolding()) {
            return; // a poll is out: its answer decides, and sees that the hold was woken
        }
        metrics.countHandoffReleased();
        resendAfterHold();
    }

    /** Sends the held request on: to the key's owner as the resolver now knows it. */
    private void resendAfterHold() {
        endHold();
        route();
    }

    private void schedulePoll() {
        if (pollTimer == null) {
            pollTimer = loop.schedule(this::onPollTick, pollDelayNanos, TimeUnit.NANOSECONDS);
        }
    }

    /** Every poll delay while held: one held request per key asks the old owner again. */
    private void onPollTick() {
        pollTimer = null;
        RouteEntry entry = heldEntry;
        URI uri = heldUri;
        if (!state.isHolding() || hold == null || entry == null || uri == null) {
            return;
        }
        if (forwarder.holds.claimPoll(request.routingKey(), forwarder.ticker.read(), pollDelayNanos)) {
            polling = true;
            connect(entry, uri); // the same attempt number: a poll is not a retarget
        } else {
            schedulePoll();
        }
    }

    private void onHoldExpired() {
        holdTimer = null;
        if (!state.isOver() && (state.isHolding() || polling)) {
            holdExpired();
        }
    }

    private void holdExpired() {
        metrics.countHandoffExpired();
        fail(
                handoffProblem(
                        RetargetPolicy.HANDOFF_HOLD_EXPIRED,
                        "not over within " + spec.handoffHold().toMillis() + " ms"),
                false);
    }

    private SpectorException handoffProblem(String reason, String why) {
        RouteEntry e = heldEntry;
        return ForwardProblems.handoff(reason, e == null ? lastOwner : e.owner(), handoffTo, attempts, why);
    }

    /** The hold is over: its slot goes back (if still held) and its timers stop. */
    private void endHold() {
        HandoffHolds.Hold h = hold;
        if (h != null) {
            hold = null;
            h.release();
        }
        ScheduledFuture<?> t = holdTimer;
        if (t != null) {
            t.cancel(false);
            holdTimer = null;
        }
        t = pollTimer;
        if (t != null) {
            t.cancel(false);
            pollTimer = null;
        }
    }

    private void onMisdirected(Attempt a, HttpResponse response) {
        metrics.countRetargetMisdirected();
        HttpHeaders h = response.headers();
        RetargetPolicy.Hint hint = RetargetPolicy.Hint.of(
                h.get(SpectorHeaders.OWNER),
                h.get(SpectorHeaders.EPOCH),
                h.get(SpectorHeaders.FENCE),
                forwarder::isMember);
        String owner = hint.owner();
        // ASK: this one request goes to the named owner; nothing is cached (a move in progress)
        boolean ask = SpectorHeaders.REDIRECT_ASK.equalsIgnoreCase(h.get(SpectorHeaders.REDIRECT));
        if (owner != null && !hint.member()) {
            log.warn(
                    "owner {} named an unknown owner '{}' for {}, request id {}",
                    a.entry().owner(),
                    owner,
                    request.key(),
                    requestId);
        } else if (owner != null && hint.reportable() && !ask) {
            var unused = forwarder.resolver.reportMisdirected(request.routingKey(), owner, hint.epoch(), hint.fence());
            learnedOwner = forwarder.resolver.names(request.routingKey(), owner); // Retry-After 0 only then
            forwarder.holds.wake(request.routingKey()); // this gateway's held requests of the key go on
        }
        retarget(ask ? "ask" : "moved");
        RetargetPolicy.Decision decision = RetargetPolicy.decide(
                attempts, spec.retryMax(), hint, a.entry().epoch(), epochsSeen(), replay.isReplayable());
        if (decision instanceof RetargetPolicy.Retarget retarget) {
            attempt(retarget.entry());
        } else if (decision instanceof RetargetPolicy.Stop stop && stop.reason().equals(RetargetPolicy.NO_OWNER_HINT)) {
            reresolve(a);
        } else if (decision instanceof RetargetPolicy.Stop stop) {
            exhausted(stop.reason());
        } else if (decision instanceof RetargetPolicy.Exhausted spent) {
            exhausted(spent.reason());
        }
    }

    /**
     * After a 421 that named no usable owner (DESIGN.md section 4, "else re-resolve"): the
     * failed owner's L1 entry goes and the key is resolved again (L2, then the ring), and {@link
     * RetargetPolicy#reresolved} decides on what that names. A stale L1 entry is then corrected by
     * the owner that only knows it is not the owner; one L2 or the ring still names is not retried.
     * Before, such a 421 ended the exchange (503 no-owner-hint) whatever the ring said.
     */
    private void reresolve(Attempt failed) {
        RoutingKey key = request.routingKey();
        forwarder.resolver.forget(key, failed.entry().owner());
        forwarder
                .resolver
                .resolve(key)
                .whenComplete((resolution, error) -> onLoop(() -> {
                    if (state.isOver()) {
                        return;
                    }
                    if (error != null) {
                        fail(ForwardProblems.routingFailed(error), false);
                        return;
                    }
                    RetargetPolicy.Decision decision = RetargetPolicy.reresolved(
                            attempts, spec.retryMax(), resolution.entry(), epochsSeen(), replay.isReplayable());
                    if (decision instanceof RetargetPolicy.Retarget retarget) {
                        attempt(retarget.entry());
                    } else if (decision instanceof RetargetPolicy.Stop stop) {
                        exhausted(stop.reason());
                    } else if (decision instanceof RetargetPolicy.Exhausted spent) {
                        exhausted(spent.reason());
                    }
                }));
    }

    private void onHead(Attempt a, HttpResponse response) {
        replay.discard();
        cancelHeadDeadline();
        HttpHeaders in = response.headers();
        DecodedHeaders.seal(in); // decoded: the names set from here on are the gateway's constants
        long length = HttpUtil.getContentLength(response, -1L);
        boolean ownerKeepsAlive = a.ownerKeepsAlive(); // read before the hop-by-hop fields go
        HeaderFilter.toClient(in);
        String contentType = in.get(HttpHeaderNames.CONTENT_TYPE);
        boolean streaming =
                contentType != null && contentType.toLowerCase(Locale.ROOT).startsWith(EVENT_STREAM);
        if (!state.headReceived()) {
            illegal("headReceived");
            return;
        }
        a.armIdle(pinned != null ? ownerTimeout : streaming ? spec.streamIdleTimeout() : spec.responseIdleTimeout());
        if (streaming) {
            a.streaming(); // out of the pool's count while it lasts: subscribers lock no one out
        }
        // An owner that says it closes after this body (Connection: close, HTTP/1.0) is copied: its
        // FIN follows the body at once, so behind any client slower than the owner a splice would
        // end by draining the socket through a buffer anyway (ResponseSplice, "The owner's FIN
        // mid-body", which keeps an unannounced close whole).
        bodyLeft = !streaming && length >= ResponseSplice.MIN_LENGTH && ownerKeepsAlive ? length : -1;
        if (bodyLeft > 0) {
            // The body behind this head stays in the socket for the splice. A client that cannot
            // take one (TLS, no pipe left) costs one more turn of the loop for the next read.
            a.endReadBatch();
        }
        sink.onHead(new ForwardResponse(
                response.status(), in, a.entry().owner(), attempts, streaming, streaming ? -1 : length, retargets));
        // The request's head is spent: no attempt follows a response head, and the client's head
        // went out above. Its fields (an Authorization of hundreds of bytes among them) are let go
        // now, not when the response ends: an event stream or a slow download holds its exchange
        // for minutes, and these were 0.8 KB of the 7 KB of heap a held stream cost (bench/README.md,
        // "Idle SSE streams"). Every holder of the map sees it empty from here.
        HttpHeaders spent = request.headers();
        if (!spent.isEmpty()) {
            spent.clear();
        }
    }

    /**
     * Answers whether a {@code 101} switches to the protocol the request asked for and nothing else:
     * its {@code Upgrade} names at least one protocol, and every one is {@code asked} (by name, any
     * case; RFC 9110 §7.8: "a server MUST NOT switch to a protocol that was not indicated by the
     * client", and §15.2.2: a 101 MUST name what it switches to). Regression: any 101 was tunnelled,
     * one without an {@code Upgrade} too, so an owner endpoint that echoed a status made the client's
     * connection a raw pipe to the owner's HTTP server, through which the client sent requests with
     * forged routing headers (a review found it: "WebSocket smuggling" through a backend's 101).
     */
    static boolean switchesTo(HttpResponse response, String asked) {
        boolean named = false;
        for (String field : response.headers().getAll(HttpHeaderNames.UPGRADE)) {
            for (String protocol : field.split(",", -1)) {
                String p = protocol.strip();
                if (p.isEmpty()) {
                    continue; // RFC 9110 §5.6.1: empty list elements are ignored
                }
                int slash = p.indexOf('/');
                if (!(slash < 0 ? p : p.substring(0, slash)).equalsIgnoreCase(asked)) {
                    return false;
                }
                named = true;
            }
        }
        return named;
    }

    /** Returns {@code text} cut to 64 chars, its control chars as {@code ?}: an owner's bytes in a log line. */
    private static String sanitize(String text) {
        String cut = text.length() > 64 ? text.substring(0, 64) + "..." : text;
        return cut.replaceAll("\\p{Cntrl}", "?");
    }

    /**
     * The owner switched protocols: the exchange is over for the forwarder, and the owner's
     * connection, out of the transport's hands, goes to the sink with the {@code 101} head.
     */
    private void onUpgraded(Attempt a, HttpResponse response) {
        if (!state.upgraded()) {
            illegal("upgraded");
            return;
        }
        Channel ch = a.handOver();
        cancelHeadDeadline();
        replay.discard();
        HttpHeaders in = response.headers();
        String upgrade = in.get(HttpHeaderNames.UPGRADE);
        HeaderFilter.toClient(in);
        if (upgrade != null) {
            in.set(HttpHeaderNames.UPGRADE, upgrade);
        }
        in.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
        metrics.ended(ForwarderMetrics.Outcome.COMPLETED);
        UpstreamHttpTransport.detach(ch);
        sink.onUpgrade(new ForwardResponse(response.status(), in, a.entry().owner(), attempts, false, -1), ch);
    }

    @Override
    public void onContent(Attempt a, HttpContent content) {
        ByteBuf b = content.content();
        int n = b.readableBytes();
        if (n > 0) {
            metrics.countToClient(n);
            bodyLeft -= bodyLeft > 0 ? n : 0;
        } else {
            content.release();
        }
        if (content instanceof LastHttpContent) {
            complete(a, n > 0 ? b : null); // the last part goes with the end, in one write
            return;
        }
        if (n > 0) {
            sink.onChunk(b); // ownership passes to the sink
        }
        if (!sink.isWritable()) {
            a.setReading(false);
        }
    }

    @Override
    public void onReadComplete(Attempt a) {
        if (state.isStreaming()) {
            sink.flush();
            if (bodyLeft > 0 && !spliceAsked) {
                trySplice(a);
            }
        }
    }

    /**
     * Moves the rest of the body by splice when the client side offers its socket and the attempt
     * can ({@link ResponseSplice}'s notes say when); the sink is asked once, when the client takes
     * bytes.
     */
    private void trySplice(Attempt a) {
        if (!sink.isWritable()) {
            return; // asked at a later batch, once the client drained
        }
        spliceAsked = true;
        Channel client = sink.spliceTarget();
        if (client != null && a.maySplice(client)) {
            metrics.countSpliced();
            a.splice(client, bodyLeft);
        }
    }

    @Override
    public void onClientGone(Attempt a) {
        cancel(); // as when the client side reports it (ForwardedExchange.onClosed), only sooner
    }

    @Override
    public void onSpliced(Attempt a, int bytes) {
        metrics.countToClient(bytes);
        metrics.countSplicedBytes(bytes);
        sink.onSpliced(bytes);
    }

    @Override
    public void onSpliceDraining(Attempt a) {
        metrics.countSpliceDrain();
    }

    @Override
    public void onIdle(Attempt a, Duration idle) {
        fail(ForwardProblems.idle(a.entry().owner(), idle), false);
    }

    /** The response ended, with {@code last} (ours to hand on or release) or no last part. */
    private void complete(Attempt a, @Nullable ByteBuf last) {
        if (state.isOver()) {
            if (last != null) {
                last.release();
            }
            return;
        }
        if (!state.responseEnded()) {
            if (last != null) {
                last.release();
            }
            illegal("responseEnded");
            return;
        }
        if (last != null) {
            sink.onEnd(last);
        } else {
            sink.onEnd();
        }
        a.finish(true);
        cleanUp(false);
        metrics.ended(ForwarderMetrics.Outcome.COMPLETED);
    }

    // ---- timers, flow, the end ----

    private void armHeadDeadline() {
        if (headDeadline == null && !state.isStreaming() && pinned == null) {
            FixedDelays.Deadline d = new FixedDelays.Deadline(this::onHeadDeadline);
            headDeadline = d;
            deadlines().headDeadlines().arm(d);
        }
    }

    private GatewayForwarder.LoopDeadlines deadlines() {
        GatewayForwarder.LoopDeadlines d = deadlines;
        if (d == null) {
            d = forwarder.deadlinesOf(loop);
            deadlines = d;
        }
        return d;
    }

    private void onHeadDeadline() {
        if (!state.isOver() && !state.isStreaming()) {
            metrics.countOwnerTimeout();
            fail(forwarder.problems.headDeadline(currentOwner(), attempts), false);
        }
    }

    /** A pinned exchange's deadline passed: whatever it is doing, it ends. */
    private void onPinnedDeadline() {
        pinnedDeadline = null;
        PinnedTarget p = pinned;
        if (p != null && !state.isOver()) {
            fail(ForwardProblems.pinnedDeadline(p.name(), p.deadline()), false);
        }
    }

    /** A pinned attempt's connection was not made within the target's connect timeout. */
    private void onConnectBound(Attempt a, Duration timeout) {
        connectBound = null;
        if (!state.isOver() && a == current && a.state() == Attempt.State.CONNECTING) {
            if (mayFallBack()) {
                current = null;
                a.finish(false);
                fallBack(a, "no connection to " + a.entry().owner() + " within " + timeout.toMillis() + " ms");
                return;
            }
            fail(ForwardProblems.notConnected(a.entry().owner(), timeout), false);
        }
    }

    /**
     * Answers whether a failed attempt counts against its owner's health: no connection, or the
     * connection closed or reset before the head. A timeout (the owner is slow, not gone), a full
     * pool (this gateway's limit) and a reused connection that turned out closed (retried on a new
     * one) do not.
     */
    private static boolean isOwnerFailure(Attempt a, Throwable cause) {
        if (cause instanceof HeadTimeoutException || UpstreamHttpTransport.isPoolExhausted(cause)) {
            return false;
        }
        return a.state() == Attempt.State.CONNECTING || !a.isReused();
    }

    /**
     * Answers whether this request may be sent again after the owner may have received it whole
     * (RFC 9112 §9.3.1: never a non-idempotent one unless something says a repeat is harmless):
     * its method is idempotent, or it carries a non-blank {@code Idempotency-Key} (either
     * spelling), with which the owner answers a repeat with its first answer. Go's transport
     * retries on the same rule; nginx sends a POST once ({@code proxy_next_upstream} without
     * {@code non_idempotent}).
     */
    private boolean maySendAgain() {
        HttpHeaders h = request.headers();
        return isIdempotent(request.method())
                || hasValue(h.get(SpectorHeaders.IDEMPOTENCY_KEY))
                || hasValue(h.get(SpectorHeaders.X_IDEMPOTENCY_KEY));
    }

    private static boolean hasValue(@Nullable String value) {
        return value != null && !value.isBlank();
    }

    /**
     * Answers whether {@code method} is idempotent (RFC 9110 section 9.2.2): sending it again has
     * the effect of sending it once, so a request whose connection failed before any answer may go
     * to another target.
     */
    static boolean isIdempotent(HttpMethod method) {
        return method.equals(HttpMethod.GET)
                || method.equals(HttpMethod.HEAD)
                || method.equals(HttpMethod.PUT)
                || method.equals(HttpMethod.DELETE)
                || method.equals(HttpMethod.OPTIONS)
                || method.equals(HttpMethod.TRACE);
    }

    /** Answers whether a pinned exchange may go to its fallback: one is set, not spent, the body replayable. */
    private boolean mayFallBack() {
        PinnedTarget p = pinned;
        return p != null && p.fallback() != null && fallbacks < PinnedTarget.MAX_FALLBACKS && replay.isReplayable();
    }

    private void retarget(String cause) {
        retargets = retargets.isEmpty() ? cause : retargets + "," + cause;
    }

    private boolean isRefusal(HttpResponse response) {
        PinnedTarget.Fallback f =
                Objects.requireNonNull(Objects.requireNonNull(pinned).fallback());
        return f.isRefusal(response.headers());
    }

    /** Asks the pinned target's fallback where to go after {@code refused}; the body waits meanwhile. */
    private void fallBack(Attempt refused, String why) {
        fallbacks++;
        retarget("fallback");
        PinnedTarget.Fallback f =
                Objects.requireNonNull(Objects.requireNonNull(pinned).fallback());
        f.next(new PinnedTarget.Next(refused.entry().owner(), refused.uri()), why)
                .whenComplete((next, error) -> onLoop(() -> {
                    if (state.isOver()) {
                        return;
                    }
                    if (error != null) {
                        Throwable e = error instanceof CompletionException && error.getCause() != null
                                ? error.getCause()
                                : error;
                        fail(
                                e instanceof SpectorException se
                                        ? se
                                        : ForwardProblems.internal("pinned fallback failed: " + e),
                                false);
                        return;
                    }
                    if (!replay.isReplayable()) {
                        exhausted(RetargetPolicy.BODY_NOT_REPLAYABLE);
                        return;
                    }
                    attempt(new RouteEntry(next.name(), 0, RouteEntry.NO_FENCE), next.uri());
                }));
    }

    /** The owner took no body byte for owner-timeout while the client's body waited. */
    private void onStall() {
        Attempt a = current;
        if (state.isOver() || state.isStreaming() || a == null || !a.isSending()) {
            return; // no owner was waited on (a clock left from an attempt that is gone)
        }
        if (pinned == null) {
            metrics.countOwnerTimeout();
        }
        fail(forwarder.problems.sendStalled(currentOwner()), true);
    }

    private void resumeBody() {
        if (!state.isOver()) {
            body.resume();
        }
    }

    private Map<String, Long> epochsSeen() {
        Map<String, Long> m = epochsSeen;
        if (m == null) {
            m = new HashMap<>();
            String first = firstOwner;
            if (first != null) {
                m.put(first, firstEpoch);
            }
            epochsSeen = m;
        }
        return m;
    }

    private String currentOwner() {
        Attempt a = current;
        return a == null ? "(unresolved)" : a.entry().owner();
    }

    private void exhausted(String reason) {
        metrics.countRetargetsExhausted();
        fail(ForwardProblems.exhausted(reason, attempts, learnedOwner), false);
    }

    /** The state machine refused an event ({@link ExchangeState} logged it): end the exchange. */
    private void illegal(String event) {
        fail(ForwardProblems.internal("illegal transition: " + event + " in state " + state), false);
    }

    /**
     * Ends the exchange with an error. {@code bodyUnread} says the client's body was cut off (the
     * sink then closes the client connection after answering).
     */
    private void fail(SpectorException error, boolean bodyUnread) {
        if (state.isOver()) {
            return;
        }
        boolean headSent = state.isStreaming();
        state.failed();
        cleanUp(true);
        metrics.ended(ForwarderMetrics.Outcome.FAILED);
        if (!headSent && attempts > 0) {
            sink.onGaveUp(lastOwner, attempts, retargets);
        }
        if (bodyUnread) {
            log.debug(
                    "exchange {} {} failed mid-body: {}, request id {}",
                    request.method(),
                    request.uri(),
                    error.getMessage(),
                    requestId);
        }
        sink.onError(error, headSent);
    }

    private void cleanUp(boolean abortCurrent) {
        endHold();
        cancelHeadDeadline();
        cancelConnectBound();
        ScheduledFuture<?> d = pinnedDeadline;
        if (d != null) {
            d.cancel(false);
            pinnedDeadline = null;
        }
        replay.discard();
        BodyChunks o = overflow;
        if (o != null) {
            overflow = null;
            o.release();
        }
        Attempt a = current;
        if (a != null && abortCurrent) {
            a.finish(false);
        }
        body.discard();
        String p = probe;
        if (p != null) { // the probe ended with neither a head nor a failure: the next request probes
            probe = null;
            forwarder.health.probeEnded(p);
        }
    }

    private void cancelHeadDeadline() {
        FixedDelays.Deadline t = headDeadline;
        if (t != null) {
            t.disarm();
            headDeadline = null;
        }
    }

    private void cancelConnectBound() {
        ScheduledFuture<?> t = connectBound;
        if (t != null) {
            t.cancel(false);
            connectBound = null;
        }
    }

    private void onLoop(Runnable task) {
        if (loop.inEventLoop()) {
            task.run();
        } else {
            loop.execute(task);
        }
    }

    /** The route a buffering exchange takes when its body is whole. */
    private record Buffered(RouteEntry entry, URI uri) {}
}
