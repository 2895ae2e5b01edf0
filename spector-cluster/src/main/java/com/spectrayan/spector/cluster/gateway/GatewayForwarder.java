package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.Resolution;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import com.spectrayan.spector.contract.Bound;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.HeaderPolicy;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.URI;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Forwards one client exchange to the owner of its routing key and follows the owner's {@code
 * 421} to the owner it reports, streaming both bodies (DESIGN.md section 4).
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>One loop per exchange.</b> Every step of an {@link Exchange} runs on the client
 *       channel's event loop; owner connections are pooled per loop, so no lock is needed and no
 *       byte crosses threads. A routing answer completed elsewhere (Lettuce's thread) hops back.
 *   <li><b>Backpressure both ways.</b> The client body is read only while the owner connection is
 *       writable ({@link RequestBody#pause()}); the owner's body is read only while the client
 *       connection is writable ({@code autoRead}).
 *   <li><b>Bounded replay.</b> Request chunks are kept (as retained slices, no copy) up to {@link
 *       ForwarderSpec#replayBufferBytes()} and within the gateway-wide {@link
 *       ForwarderSpec#replayBudgetBytes()}; once the owner's head is not a 421 they are released.
 *       A 421 for a body that outgrew the replay buffer answers 503 with {@code Retry-After: 0}
 *       (the new owner is learned, so the client's retry lands); so does a body that outgrows it
 *       while the retry is still connecting (that retry could only send a truncated body).
 *   <li><b>Retargets.</b> At most {@link ForwarderSpec#retryMax()}; an owner's hint is reported to
 *       the resolver (L1, L2, invalidation). The exchange stops early when the hint names a node
 *       already tried at the same or an older epoch, or an epoch older than one already seen. The
 *       gateway never relays a 421.
 *   <li><b>Timers.</b> Per attempt: connect (transport) and time to the response head ({@link
 *       ForwarderSpec#ownerTimeout()}); per exchange: the head deadline across retries; after the
 *       head only an idle timer (five minutes for an event stream).
 *   <li><b>The body cap</b> is enforced by Content-Length before any owner is contacted and by
 *       counting a streamed body; crossing it aborts the owner exchange.
 * </ul>
 */
public final class GatewayForwarder {
    private static final Logger log = LoggerFactory.getLogger(GatewayForwarder.class);

    private static final String EVENT_STREAM = "text/event-stream";

    private final WaterfallRoutingResolver resolver;
    private final Map<String, URI> members;
    private final GatewayHttpTransport transport;
    private final ForwarderSpec spec;
    private final ForwarderMetrics metrics;
    private final AtomicLong replayBudget;
    private final Bound bodyBound;

    /**
     * Creates a forwarder.
     *
     * @param members each ring member's id and base URI ({@code http://host:port})
     */
    public GatewayForwarder(
            WaterfallRoutingResolver resolver,
            Map<String, URI> members,
            GatewayHttpTransport transport,
            ForwarderSpec spec,
            ForwarderMetrics metrics) {
        this.resolver = requireNonNull(resolver, "resolver");
        this.members = Map.copyOf(requireNonNull(members, "members"));
        this.transport = requireNonNull(transport, "transport");
        this.spec = requireNonNull(spec, "spec");
        this.metrics = requireNonNull(metrics, "metrics");
        this.replayBudget = new AtomicLong(spec.replayBudgetBytes());
        this.bodyBound = Bound.atMost("bodyBytes", spec.maxBodyBytes(), "bytes", ErrorCode.PAYLOAD_TOO_LARGE);
    }

    /**
     * Starts forwarding a request; must be called on {@code loop}, the client channel's event loop.
     * The returned handle takes the client side's events (writability, going away).
     */
    public Exchange forward(ForwardRequest request, ResponseSink sink, EventLoop loop) {
        Exchange exchange = new Exchange(request, sink, loop);
        exchange.start();
        return exchange;
    }

    /** Returns the counters. */
    public ForwarderMetrics metrics() {
        return metrics;
    }

    /** Returns the replay bytes the gateway can still hold. */
    public long replayBudgetAvailable() {
        return replayBudget.get();
    }

    /**
     * One forwarded exchange. Not thread-safe: confined to its event loop. Guarded by that loop.
     */
    public final class Exchange implements RequestBody.Consumer {
        private final ForwardRequest request;
        private final ResponseSink sink;
        private final EventLoop loop;
        private boolean headersPrepared;
        private final Map<String, Long> triedEpochs = new HashMap<>();
        private final ArrayDeque<ByteBuf> replay = new ArrayDeque<>();
        private long replayBytes;
        private boolean replayable = true;
        private long maxEpochSeen = -1;
        private boolean learnedOwner;
        private int attempts;
        private boolean staleRetryUsed;
        private boolean bodyStarted;
        private boolean bodyEnded;
        private boolean bodyPaused;
        private long bodyBytes;
        private @Nullable Attempt current;
        private boolean headSent;
        private boolean finished;
        private @Nullable ScheduledFuture<?> headDeadline;
        private @Nullable ScheduledFuture<?> sendStall;

        Exchange(ForwardRequest request, ResponseSink sink, EventLoop loop) {
            this.request = request;
            this.sink = sink;
            this.loop = loop;
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
            if (request.declaredLength() > spec.maxBodyBytes()) {
                metrics.countTooLarge();
                fail(bodyBound.refusal(request.declaredLength()), false);
                return;
            }
            if (request.body() == RequestBody.EMPTY) {
                armHeadDeadline();
            }
            Resolution cached = resolver.peek(request.key());
            if (cached != null) {
                attempt(cached.entry());
                return;
            }
            resolver.resolve(request.key())
                    .whenComplete((resolution, error) -> onLoop(() -> {
                        if (finished) {
                            return;
                        }
                        if (error != null) {
                            fail(asSpector(error, ErrorCode.GATEWAY_ROUTING_FAILURE), false);
                        } else {
                            attempt(resolution.entry());
                        }
                    }));
        }

        /** The client connection can take more bytes: read from the owner again. */
        public void onClientWritable() {
            Attempt a = current;
            if (!finished && headSent && a != null && a.channel != null) {
                a.channel.config().setAutoRead(true);
            }
        }

        /** The client went away: abort the owner's exchange (its connection is closed). */
        public void cancel() {
            if (finished) {
                return;
            }
            finished = true;
            cleanUp(true);
            metrics.ended(ForwarderMetrics.Outcome.CANCELLED);
        }

        /** Answers whether the exchange is over. */
        public boolean isFinished() {
            return finished;
        }

        // ---- request body (RequestBody.Consumer) ----

        @Override
        public void onChunk(ByteBuf chunk) {
            if (finished) {
                chunk.release();
                return;
            }
            int n = chunk.readableBytes();
            bodyBytes += n;
            if (bodyBytes > spec.maxBodyBytes()) {
                chunk.release();
                metrics.countTooLarge();
                fail(bodyBound.refusal(bodyBytes), true);
                return;
            }
            keepForReplay(chunk, n);
            Attempt a = current;
            if (a != null && a.sending && a.channel != null) {
                a.channel.write(new DefaultHttpContent(chunk));
                metrics.countToOwner(n);
                if (!a.channel.isWritable()) {
                    pauseBody();
                }
            } else {
                chunk.release(); // kept in the replay buffer, or lost (then no retry is possible)
                if (!replayable) {
                    // No attempt is sending: a retry (after a 421, or on a fresh connection) is still
                    // connecting, decided while the body so far fitted the replay copy. This chunk
                    // outgrew it and is gone, so that attempt could only send a truncated body (a
                    // Content-Length the owner waits for until the owner timeout, or a chunked body
                    // that ends early and looks whole): answer now, as a 421 after the body would.
                    exhausted("body-too-large-to-replay");
                    return;
                }
                pauseBody();
            }
        }

        @Override
        public void flush() {
            Attempt a = current;
            if (a != null && a.sending && a.channel != null) {
                a.channel.flush();
            }
        }

        @Override
        public void onEnd() {
            bodyEnded = true;
            if (finished) {
                return;
            }
            armHeadDeadline(); // the owner's time to answer runs from the end of the request
            Attempt a = current;
            if (a != null && a.sending && a.channel != null) {
                a.channel.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
                a.requestComplete();
            }
        }

        /**
         * The client's body ended badly (malformed, timed out): the owner's request is aborted (its
         * connection closed, never completed), and the client gets {@code error}.
         */
        @Override
        public void onError(Throwable error) {
            fail(
                    error instanceof SpectorException se
                            ? se
                            : SpectorException.badRequest("body", "the request body failed: " + error),
                    true);
        }

        private void armHeadDeadline() {
            if (headDeadline == null && !headSent) {
                headDeadline =
                        loop.schedule(this::onHeadDeadline, spec.headDeadline().toNanos(), TimeUnit.NANOSECONDS);
            }
        }

        private void keepForReplay(ByteBuf chunk, int n) {
            if (!replayable) {
                return;
            }
            if (replayBytes + n <= spec.replayBufferBytes() && reserveBudget(n)) {
                replay.add(chunk.retainedSlice());
                replayBytes += n;
            } else {
                metrics.countReplayRefused();
                dropReplay();
                replayable = false;
            }
        }

        private boolean reserveBudget(long n) {
            long left;
            do {
                left = replayBudget.get();
                if (left < n) {
                    return false;
                }
            } while (!replayBudget.compareAndSet(left, left - n));
            return true;
        }

        private void dropReplay() {
            ByteBuf b;
            while ((b = replay.poll()) != null) {
                b.release();
            }
            replayBudget.addAndGet(replayBytes);
            replayBytes = 0;
        }

        private void pauseBody() {
            if (!bodyPaused && bodyStarted && !bodyEnded) {
                bodyPaused = true;
                request.body().pause();
                // The owner takes no more of the body for now; it gets owner-timeout to take more
                // (nginx's proxy_send_timeout), so a stalled owner never holds the client forever.
                sendStall = loop.schedule(this::onSendStall, spec.ownerTimeout().toNanos(), TimeUnit.NANOSECONDS);
            }
        }

        private void resumeBody() {
            if (bodyPaused && !finished) {
                bodyPaused = false;
                cancelSendStall();
                request.body().resume();
            }
        }

        private void onSendStall() {
            sendStall = null;
            if (finished || !bodyPaused || headSent) {
                return;
            }
            Attempt a = current;
            String owner = a == null ? "(unresolved)" : a.entry.owner();
            metrics.countOwnerTimeout();
            fail(
                    SpectorException.of(
                            ErrorCode.OWNER_TIMEOUT,
                            "owner " + owner + " took no request body byte for "
                                    + spec.ownerTimeout().toMillis() + " ms",
                            Map.of(
                                    "owner",
                                    owner,
                                    "timeoutMs",
                                    spec.ownerTimeout().toMillis())),
                    true);
        }

        private void cancelSendStall() {
            ScheduledFuture<?> t = sendStall;
            if (t != null) {
                t.cancel(false);
                sendStall = null;
            }
        }

        // ---- attempts ----

        private void attempt(RouteEntry entry) {
            URI uri = members.get(entry.owner());
            if (uri == null) {
                fail(routingFailure("unknown-owner", 1, "owner '" + entry.owner() + "' is not a ring member"), false);
                return;
            }
            attempts++;
            triedEpochs.merge(entry.owner(), entry.epoch(), Math::max);
            maxEpochSeen = Math.max(maxEpochSeen, entry.epoch());
            Attempt a = new Attempt(entry, uri, attempts);
            current = a;
            // An upgrade keeps its connection for the life of the new protocol: never a pooled one.
            Future<Channel> connection =
                    request.upgrade() != null ? transport.connect(loop, uri) : transport.acquire(loop, uri);
            connection.addListener(f -> a.onAcquired(cast(f)));
        }

        private void onMisdirected(Attempt a, HttpResponse response) {
            metrics.countRetargetMisdirected();
            HttpHeaders h = response.headers();
            String hintOwner = h.get(SpectorHeaders.OWNER);
            long hintEpoch = parseLong(h.get(SpectorHeaders.EPOCH));
            long hintFence = Math.max(0, parseLong(h.get(SpectorHeaders.FENCE)));
            RoutingKey key = request.key();
            if (hintOwner != null && !members.containsKey(hintOwner)) {
                log.warn("owner {} named an unknown owner '{}' for {}", a.entry.owner(), hintOwner, key);
                hintOwner = null;
            }
            if (hintOwner != null && hintEpoch >= 0) {
                var unused = resolver.reportMisdirected(key, hintOwner, hintEpoch, hintFence);
                learnedOwner = true;
            }
            if (attempts > spec.retryMax()) {
                exhausted("retries-exhausted");
                return;
            }
            if (hintOwner == null) {
                exhausted("no-owner-hint");
                return;
            }
            long epoch = hintEpoch >= 0 ? hintEpoch : a.entry.epoch();
            if (epoch < maxEpochSeen) {
                exhausted("epoch-regressed");
                return;
            }
            Long tried = triedEpochs.get(hintOwner);
            if (tried != null && epoch <= tried) {
                exhausted("hint-already-tried");
                return;
            }
            if (!replayable) {
                exhausted("body-too-large-to-replay");
                return;
            }
            attempt(new RouteEntry(hintOwner, epoch, hintFence));
        }

        private void exhausted(String reason) {
            metrics.countRetargetsExhausted();
            fail(
                    routingFailure(
                            reason,
                            learnedOwner ? 0 : 1,
                            "the owner could not be reached after " + attempts + " attempt(s): " + reason),
                    false);
        }

        private SpectorException routingFailure(String reason, long retryAfter, String message) {
            return SpectorException.of(
                    ErrorCode.GATEWAY_ROUTING_FAILURE,
                    message,
                    Map.of("reason", reason, "attempts", attempts, "retryAfterSeconds", retryAfter));
        }

        private void onHead(Attempt a, HttpResponse response) {
            dropReplay();
            replayable = false;
            cancelHeadDeadline();
            HttpHeaders in = response.headers();
            long length = HttpUtil.getContentLength(response, -1L);
            HeaderFilter.toClient(in);
            String contentType = in.get(HttpHeaderNames.CONTENT_TYPE);
            boolean streaming =
                    contentType != null && contentType.toLowerCase(Locale.ROOT).startsWith(EVENT_STREAM);
            headSent = true;
            a.armIdle(streaming ? spec.streamIdleTimeout() : spec.responseIdleTimeout());
            sink.onHead(new ForwardResponse(
                    response.status(), in, a.entry.owner(), attempts, streaming, streaming ? -1 : length));
        }

        /**
         * The owner switched protocols: the exchange is over for the forwarder, and the owner's
         * connection, out of the transport's hands, goes to the sink with the {@code 101} head.
         */
        private void onUpgraded(Attempt a, HttpResponse response) {
            Channel ch = a.handOver();
            if (ch == null) {
                return;
            }
            finished = true;
            headSent = true;
            cancelHeadDeadline();
            dropReplay();
            replayable = false;
            HttpHeaders in = response.headers();
            String upgrade = in.get(HttpHeaderNames.UPGRADE);
            HeaderFilter.toClient(in);
            if (upgrade != null) {
                in.set(HttpHeaderNames.UPGRADE, upgrade);
            }
            in.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
            metrics.ended(ForwarderMetrics.Outcome.COMPLETED);
            GatewayHttpTransport.detach(ch);
            sink.onUpgrade(new ForwardResponse(response.status(), in, a.entry.owner(), attempts, false, -1), ch);
        }

        private void onContent(Attempt a, HttpContent content) {
            ByteBuf body = content.content();
            int n = body.readableBytes();
            if (n > 0) {
                metrics.countToClient(n);
                sink.onChunk(body); // ownership passes to the sink
            } else {
                content.release();
            }
            if (content instanceof LastHttpContent) {
                a.responseComplete = true;
                complete(a);
            } else if (!sink.isWritable() && a.channel != null) {
                a.channel.config().setAutoRead(false);
            }
        }

        private void complete(Attempt a) {
            if (finished) {
                return;
            }
            finished = true;
            sink.onEnd();
            a.finish(true);
            cleanUp(false);
            metrics.ended(ForwarderMetrics.Outcome.COMPLETED);
        }

        private void onAttemptFailed(Attempt a, @Nullable Throwable cause, boolean timedOut) {
            if (finished || a != current) {
                return;
            }
            if (!headSent && !timedOut && a.reused && !a.responseStarted && !staleRetryUsed && replayable) {
                // A pooled connection closed under us before any answer: retry once on a new one.
                staleRetryUsed = true;
                metrics.countRetryStaleConnection();
                a.finish(false);
                attempts--;
                triedEpochs.remove(a.entry.owner());
                attempt(a.entry);
                return;
            }
            SpectorException error;
            if (timedOut) {
                metrics.countOwnerTimeout();
                error = SpectorException.of(
                        ErrorCode.OWNER_TIMEOUT,
                        "owner " + a.entry.owner() + " sent no response head within "
                                + spec.ownerTimeout().toMillis() + " ms",
                        Map.of(
                                "owner",
                                a.entry.owner(),
                                "timeoutMs",
                                spec.ownerTimeout().toMillis()));
            } else if (!a.acquired && GatewayHttpTransport.isPoolExhausted(cause)) {
                error = routingFailure(
                        "owner-pool-exhausted",
                        1,
                        "no connection to owner " + a.entry.owner() + " became free within the acquire timeout");
            } else {
                metrics.countOwnerUnreachable();
                error = SpectorException.of(
                        ErrorCode.OWNER_UNREACHABLE,
                        "owner " + a.entry.owner() + (headSent ? " broke off the response" : " is unreachable")
                                + (cause == null ? "" : ": " + cause.getMessage()),
                        Map.of("owner", a.entry.owner()));
            }
            fail(error, false);
        }

        private void onHeadDeadline() {
            if (!finished && !headSent) {
                metrics.countOwnerTimeout();
                Attempt a = current;
                String owner = a == null ? "(unresolved)" : a.entry.owner();
                fail(
                        SpectorException.of(
                                ErrorCode.OWNER_TIMEOUT,
                                "no owner answered within "
                                        + spec.headDeadline().toMillis() + " ms over " + attempts + " attempt(s)",
                                Map.of(
                                        "owner",
                                        owner,
                                        "timeoutMs",
                                        spec.headDeadline().toMillis())),
                        false);
            }
        }

        /**
         * Ends the exchange with an error. {@code bodyUnread} says the client's body was cut off
         * (the sink then closes the client connection after answering).
         */
        private void fail(SpectorException error, boolean bodyUnread) {
            if (finished) {
                return;
            }
            finished = true;
            cleanUp(true);
            metrics.ended(ForwarderMetrics.Outcome.FAILED);
            if (bodyUnread) {
                log.debug("exchange {} {} failed mid-body: {}", request.method(), request.uri(), error.getMessage());
            }
            sink.onError(error, headSent);
        }

        private void cleanUp(boolean abortCurrent) {
            cancelHeadDeadline();
            cancelSendStall();
            dropReplay();
            replayable = false;
            Attempt a = current;
            if (a != null && abortCurrent) {
                a.finish(false);
            }
            if (!bodyEnded) {
                request.body().discard();
            }
        }

        private void cancelHeadDeadline() {
            ScheduledFuture<?> t = headDeadline;
            if (t != null) {
                t.cancel(false);
                headDeadline = null;
            }
        }

        private HttpHeaders upstreamHeaders(Attempt a) {
            HttpHeaders out = request.headers();
            if (!headersPrepared) { // once per exchange: the same map serves every attempt
                headersPrepared = true;
                String priorFor = request.trustedProxy() ? out.get(X_FORWARDED_FOR) : null;
                HeaderFilter.toOwner(out, request.trustedProxy());
                String upgrade = request.upgrade();
                if (upgrade != null) { // hop-by-hop, so dropped above; this hop asks again (RFC 9110 §7.8)
                    out.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
                    out.set(HttpHeaderNames.UPGRADE, upgrade);
                }
                out.set(
                        X_FORWARDED_FOR,
                        priorFor == null ? request.clientAddress() : priorFor + ", " + request.clientAddress());
                if (!out.contains(X_FORWARDED_PROTO)) {
                    out.set(X_FORWARDED_PROTO, request.scheme());
                }
                String host = request.host();
                if (!out.contains(X_FORWARDED_HOST) && host != null) {
                    out.set(X_FORWARDED_HOST, host);
                }
            }
            URI owner = a.uri;
            out.set(
                    HttpHeaderNames.HOST,
                    owner.getPort() > 0 ? owner.getHost() + ":" + owner.getPort() : owner.getHost());
            RoutingKey key = request.key();
            out.set(SpectorHeaders.NAMESPACE, key.namespace());
            String tenant = key.tenant();
            if (tenant != null) {
                out.set(SpectorHeaders.TENANT, tenant);
            }
            out.set(SpectorHeaders.EPOCH, a.entry.epoch());
            if (a.entry.fence() != RouteEntry.NO_FENCE) {
                out.set(SpectorHeaders.FENCE, a.entry.fence());
            } else {
                out.remove(SpectorHeaders.FENCE);
            }
            out.set(SpectorHeaders.ATTEMPT, a.number);
            if (request.body() != RequestBody.EMPTY) {
                if (request.declaredLength() >= 0) {
                    out.set(HttpHeaderNames.CONTENT_LENGTH, request.declaredLength());
                } else {
                    out.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
                }
            }
            return out;
        }

        private void onLoop(Runnable task) {
            if (loop.inEventLoop()) {
                task.run();
            } else {
                loop.execute(task);
            }
        }

        /** One try against one owner over one pooled connection. */
        private final class Attempt implements GatewayHttpTransport.Listener {
            final RouteEntry entry;
            final URI uri;
            final int number;

            @Nullable
            Channel channel;

            boolean acquired;
            boolean reused;
            boolean sending;
            boolean requestComplete;
            boolean responseStarted;
            boolean responseComplete;
            boolean discarding;
            boolean done;

            @Nullable
            ScheduledFuture<?> headTimer;

            @Nullable
            ScheduledFuture<?> idleTimer;

            long idleNanos;
            long lastReadNanos;

            Attempt(RouteEntry entry, URI uri, int number) {
                this.entry = entry;
                this.uri = uri;
                this.number = number;
            }

            void onAcquired(Future<Channel> f) {
                if (!f.isSuccess()) {
                    onAttemptFailed(this, f.cause(), false);
                    return;
                }
                Channel ch = f.getNow();
                if (finished || done || this != current) {
                    transport.release(loop, uri, ch, true);
                    return;
                }
                if (bodyStarted && !replayable) {
                    // A retry whose body is no longer whole (see onChunk): send nothing.
                    transport.release(loop, uri, ch, true);
                    exhausted("body-too-large-to-replay");
                    return;
                }
                channel = ch;
                acquired = true;
                reused = GatewayHttpTransport.isReused(ch);
                GatewayHttpTransport.listen(ch, this);
                ch.write(new DefaultHttpRequest(
                                HttpVersion.HTTP_1_1, request.method(), request.uri(), upstreamHeaders(this)))
                        .addListener(w -> {
                            if (!w.isSuccess() && !done) {
                                onAttemptFailed(this, w.cause(), false);
                            }
                        });
                for (ByteBuf b : replay) {
                    ch.write(new DefaultHttpContent(b.retainedDuplicate()));
                    metrics.countToOwner(b.readableBytes());
                }
                sending = true;
                if (bodyEnded) {
                    ch.write(LastHttpContent.EMPTY_LAST_CONTENT);
                    requestComplete();
                }
                ch.flush();
                if (!bodyStarted) {
                    bodyStarted = true;
                    request.body().start(Exchange.this);
                } else if (ch.isWritable()) {
                    resumeBody();
                }
            }

            @Override
            public void onMessage(Object message) {
                try {
                    if (message instanceof HttpResponse response) {
                        onResponse(response);
                    }
                    if (message instanceof HttpContent content) {
                        lastReadNanos = System.nanoTime();
                        if (discarding || done || finished || this != current) {
                            content.release(); // a late part of an abandoned attempt
                        } else {
                            onContent(this, content);
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
                    // Interim answers are the owner's business with us: the gateway answered Expect
                    // itself, and nginx drops an owner's 1xx (103 included) too.
                    return;
                }
                responseStarted = true;
                cancelHeadTimer();
                if (done || finished || this != current) {
                    discarding = true;
                    return;
                }
                if (code == 101) {
                    if (request.upgrade() == null) {
                        discarding = true;
                        onAttemptFailed(this, new IllegalStateException("101 to a request that asked for none"), false);
                    } else {
                        onUpgraded(this, response);
                    }
                    return;
                }
                if (response.status().code() == 421) {
                    // An owner refuses before reading the body; whatever it does with the rest, this
                    // connection's state is not worth trusting for the next exchange: close it. A
                    // misdirect is rare, so the reconnect costs little.
                    sending = false;
                    discarding = true;
                    current = null;
                    finish(false);
                    onMisdirected(this, response);
                    return;
                }
                onHead(this, response);
            }

            @Override
            public void onReadComplete() {
                if (!discarding && !done && headSent && this == current) {
                    sink.flush();
                }
            }

            @Override
            public void onWritabilityChanged(boolean writable) {
                if (writable && sending && this == current) {
                    resumeBody();
                }
            }

            @Override
            public void onClosed() {
                if (done) {
                    return;
                }
                if (this == current && !responseComplete) {
                    onAttemptFailed(this, new ClosedChannelException(), false);
                }
                finish(false);
            }

            @Override
            public void onFailure(Throwable cause) {
                log.debug("owner connection to {} failed: {}", entry.owner(), cause.toString());
                if (this == current && !done) {
                    onAttemptFailed(this, cause, false);
                }
                finish(false);
            }

            /**
             * The whole request is written to this attempt: the owner's time to send its head
             * ({@link ForwarderSpec#ownerTimeout()}) starts now, as Envoy's route timeout and
             * nginx's {@code proxy_read_timeout} do, so a slow upload is never an owner timeout.
             */
            void requestComplete() {
                requestComplete = true;
                if (headTimer == null && !responseStarted && !done) {
                    headTimer = loop.schedule(
                            () -> {
                                if (!responseStarted && !done) {
                                    onAttemptFailed(this, null, true);
                                }
                            },
                            spec.ownerTimeout().toNanos(),
                            TimeUnit.NANOSECONDS);
                }
            }

            void armIdle(Duration timeout) {
                idleNanos = timeout.toNanos();
                lastReadNanos = System.nanoTime();
                scheduleIdle(idleNanos);
            }

            private void scheduleIdle(long delayNanos) {
                idleTimer = loop.schedule(this::checkIdle, delayNanos, TimeUnit.NANOSECONDS);
            }

            private void checkIdle() {
                if (done || finished) {
                    return;
                }
                Channel ch = channel;
                long quiet = System.nanoTime() - lastReadNanos;
                boolean pausedByClient = ch != null && !ch.config().isAutoRead();
                if (quiet >= idleNanos && !pausedByClient) {
                    log.debug("owner {} idle for {} ms inside a response", entry.owner(), quiet / 1_000_000);
                    fail(
                            SpectorException.of(
                                    ErrorCode.OWNER_TIMEOUT,
                                    "owner " + entry.owner() + " sent nothing for " + idleNanos / 1_000_000
                                            + " ms inside a response",
                                    Map.of("owner", entry.owner(), "timeoutMs", idleNanos / 1_000_000)),
                            false);
                } else {
                    scheduleIdle(pausedByClient ? idleNanos : idleNanos - quiet);
                }
            }

            private void cancelHeadTimer() {
                ScheduledFuture<?> t = headTimer;
                if (t != null) {
                    t.cancel(false);
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

            /** Hands the connection over (after a 101): this attempt lets go of it without closing it. */
            @Nullable
            Channel handOver() {
                if (done) {
                    return null;
                }
                done = true;
                sending = false;
                cancelTimers();
                Channel ch = channel;
                channel = null;
                return ch;
            }

            /** Lets go of the connection: back to the pool when both messages completed, else closed. */
            void finish(boolean mayReuse) {
                if (done) {
                    return;
                }
                done = true;
                sending = false;
                cancelTimers();
                Channel ch = channel;
                channel = null;
                if (ch != null) {
                    boolean reusable = mayReuse && requestComplete && responseComplete && ch.isActive();
                    if (!requestComplete && ch.isActive()) {
                        // Aborted mid-request: a reset, so the owner can never take a cut-off body
                        // for a whole one (a chunked body that merely stops looks complete to none,
                        // but a close-delimited reading or a lax parser might).
                        ch.config().setOption(ChannelOption.SO_LINGER, 0);
                    }
                    transport.release(loop, uri, ch, reusable);
                }
            }
        }
    }

    private static final String X_FORWARDED_FOR = "X-Forwarded-For";
    private static final String X_FORWARDED_PROTO = "X-Forwarded-Proto";
    private static final String X_FORWARDED_HOST = "X-Forwarded-Host";

    private static long parseLong(@Nullable String value) {
        if (value == null) {
            return -1;
        }
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    @SuppressWarnings("unchecked")
    private static Future<Channel> cast(Future<?> f) {
        return (Future<Channel>) f;
    }

    private static SpectorException asSpector(Throwable error, ErrorCode fallback) {
        Throwable t = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (t instanceof SpectorException se) {
            return se;
        }
        return SpectorException.of(fallback, String.valueOf(t), Map.of());
    }
}
