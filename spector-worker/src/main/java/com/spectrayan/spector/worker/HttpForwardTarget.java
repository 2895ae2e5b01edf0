package com.spectrayan.spector.worker;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport;
import com.spectrayan.spector.contract.DeclaredLength;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.HeaderPolicy;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.flush.FlushConsolidationHandler;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's {@code http-forward} relay target: each relayed exchange goes to one local HTTP
 * upstream over the same pooled Netty transport the gateway forwards with, both bodies streamed
 * part by part (the upstream is read only as fast as the uplink takes the response), the header
 * policy applied both ways. {@code /a/b?x=1} of the relayed URL becomes the upstream's path and
 * query, under the upstream URI's own path if it has one ({@code http://host:port/base} serves
 * {@code /a/b} as {@code /base/a/b}).
 *
 * <p>Framing: the upstream's {@code Content-Length} (when it sent one and no {@code
 * Transfer-Encoding}, RFC 9112 §6.3) becomes the response's {@link RelayedResponse#contentLength()}
 * as {@link ResponseFraming#contentLength} allows it for the status; the header itself never
 * crosses. A response without a body ({@link ResponseFraming#bodyless}: HEAD, 204, 205, 304) is
 * answered with a null body; anything the upstream sends after its head is read and dropped, so the
 * connection goes back to the pool in step. Interim 1xx responses (RFC 9110 §15.2) are skipped:
 * the relay answers with the final one. A response the upstream's framing broke (a decode failure,
 * e.g. a bad chunk size) fails the exchange INTERNAL; it never ends as if complete.
 *
 * <p>The request is framed the same way (RFC 9112 §6.2, §6.3): a relayed request that declares its
 * length ({@link RelayedRequest#contentLength()}, the client's {@code Content-Length}) goes upstream
 * with {@code Content-Length: <length>} and its bytes as they are, no {@code Transfer-Encoding}
 * (a request without a body that declared 0 says {@code Content-Length: 0}); one of unknown length
 * is chunked. Its body is held to that length: a part that would run past it is never written (it
 * would be read as the start of another request), and an end short of it fails the exchange; either
 * way, as any failure, the connection is closed, never pooled, so the upstream never takes a
 * request it did not get whole.
 *
 * <p>Threading: each exchange lives on one event loop of the group: the request's {@link
 * RelayedRequest#eventLoop()} when it is one of the group's (a v2 stream's loop: both bodies then
 * go from socket to socket on that one thread, each part handed over inline, as {@link
 * BodySource#nonBlocking()} allows), any other otherwise, the relay engine's calls hopping to it.
 *
 * <p>Read-ahead: the upstream's response body is read ahead of the relay by at most {@link
 * #READ_AHEAD_HIGH_BYTES} (plus the one socket read that crosses it): reading stops there ({@code
 * autoRead} off) and resumes once the relay took it down to {@link #READ_AHEAD_LOW_BYTES}, so the
 * upstream's socket and the uplink work at once and reading is switched on and off once per
 * window, not once per part. The request body is written while the upstream's connection is
 * writable, parts handed over inline written together and flushed once.
 */
public final class HttpForwardTarget implements RelayTarget {
    /** The response bytes read ahead of the relay at which reading from the upstream stops. */
    static final int READ_AHEAD_HIGH_BYTES = 256 * 1024;

    /** The response bytes read ahead at or below which reading from the upstream resumes. */
    static final int READ_AHEAD_LOW_BYTES = 64 * 1024;

    /**
     * Flushes an upstream connection consolidates at most before it writes at once (Netty's
     * default for {@link FlushConsolidationHandler}). The request body's parts come one per DATA
     * frame of a link read, each flushed as it is written; consolidated, they go out as one write
     * after the read, so the upstream reads larger pieces. The worker's own connections only: on
     * the gateway's forward path it cost a 1 MiB response 14 % more CPU (bench/README).
     */
    static final int FLUSH_AFTER_FLUSHES = FlushConsolidationHandler.DEFAULT_EXPLICIT_FLUSH_AFTER_FLUSHES;

    private static final Logger log = LoggerFactory.getLogger(HttpForwardTarget.class);

    private final URI upstream;
    private final String basePath;
    private final UpstreamHttpTransport transport;
    private final EventLoopGroup group;
    /** The group's event loops, to take a request's {@link RelayedRequest#eventLoop()} hint. */
    private final Set<EventExecutor> loops = Collections.newSetFromMap(new IdentityHashMap<>());

    /** Creates a target forwarding to {@code upstream} ({@code http://host:port}). */
    public HttpForwardTarget(URI upstream, UpstreamHttpTransport transport, EventLoopGroup group) {
        this.upstream = requireNonNull(upstream, "upstream");
        this.transport = requireNonNull(transport, "transport");
        this.group = requireNonNull(group, "group");
        if (!"http".equals(upstream.getScheme()) || upstream.getHost() == null || upstream.getPort() < 1) {
            throw new IllegalArgumentException("upstream: " + upstream + " (expected: http://host:port[/base])");
        }
        String path = upstream.getRawPath() == null ? "" : upstream.getRawPath();
        this.basePath = path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
        group.forEach(loops::add);
    }

    @Override
    public CompletionStage<RelayedResponse> handle(RelayedRequest request) {
        EventLoop hint = request.eventLoop();
        EventLoop loop = hint != null && loops.contains(hint) ? hint : group.next();
        Forward forward = new Forward(request, loop);
        loop.execute(forward::start);
        return forward.head;
    }

    /**
     * Fails an exchange for what its upstream did: the client gets {@code what} (its problem's
     * detail, through the gateway), without the upstream's address or the Java exception that
     * said it (a worker's network is its own: nginx and Envoy answer such a failure with a bare
     * 502 or a reason, never the address); the worker's log gets both.
     */
    private SpectorException upstreamFailed(String what, @Nullable Throwable cause) {
        log.warn("relay upstream {} {}{}", upstream, what, cause == null ? "" : ": " + cause);
        return SpectorException.of(ErrorCode.INTERNAL, "the relay target's upstream " + what);
    }

    /** Says why a connection could not be made, in words with no address in them. */
    private static String connectReason(@Nullable Throwable cause) {
        if (cause instanceof ConnectTimeoutException) {
            return "connect timed out";
        }
        String m = cause == null ? null : cause.getMessage();
        if (cause instanceof ConnectException
                && m != null
                && m.toLowerCase(Locale.ROOT).contains("refused")) {
            return "connection refused";
        }
        if (cause instanceof UnknownHostException) {
            return "its host name does not resolve";
        }
        return "connect failed";
    }

    /**
     * Answers whether a 101's {@code Upgrade} values ({@code answered}) name at least one protocol
     * and only protocols the request's {@code Upgrade} ({@code asked}) listed (RFC 9110 §7.8,
     * §15.2.2). Protocols ({@code websocket}, {@code h2c}, {@code foo/2}) compare case-insensitively.
     */
    static boolean switchesAsAsked(String asked, List<String> answered) {
        Set<String> chosen = protocols(answered);
        return !chosen.isEmpty() && protocols(List.of(asked)).containsAll(chosen);
    }

    /** The lower-case protocols a list of {@code Upgrade} values names. */
    private static Set<String> protocols(List<String> upgradeValues) {
        Set<String> out = new java.util.HashSet<>();
        for (String value : upgradeValues) {
            for (String protocol : value.split(",", -1)) {
                String p = protocol.strip();
                if (!p.isEmpty()) {
                    out.add(p.toLowerCase(Locale.ROOT));
                }
            }
        }
        return out;
    }

    /**
     * Returns the response bytes {@code body}, one of this target's response bodies, has read ahead
     * and not yet handed over, or -1 for another body. Call it on the exchange's event loop (tests).
     */
    static int readAhead(BodySource body) {
        return body instanceof Forward f ? f.buffered : -1;
    }

    /** One forwarded exchange, confined to its event loop. */
    private final class Forward implements UpstreamHttpTransport.Listener, BodySource {
        final CompletableFuture<RelayedResponse> head = new CompletableFuture<>();
        private final RelayedRequest request;
        private final EventLoop loop;
        /** The response's parts read ahead: {@link #buffered} bytes, bounded by the read-ahead. */
        private final ArrayDeque<ByteBuf> parts = new ArrayDeque<>();

        private int buffered;
        private @Nullable Channel channel;
        /** The relay's read of the response body waiting for a part. */
        private @Nullable BiConsumer<@Nullable ByteBuf, @Nullable Throwable> waiter;
        /** The request body while it is written to the upstream. */
        private @Nullable BodySource requestBody;
        /** A read of the request body is outstanding. */
        private boolean requestReading;
        /** The request body's bytes written, held to the length its head declared upstream. */
        private final DeclaredLength requestLength;
        /** {@link #pumpRequest} runs (a part handed over inline re-enters it: it loops instead). */
        private boolean pumping;

        private boolean pumpAgain;
        /** Parts were written to the upstream and not yet flushed. */
        private boolean unflushed;

        private final io.netty.channel.ChannelFutureListener writeFailed = w -> {
            if (!w.isSuccess()) {
                requestWriteFailed(w.cause());
            }
        };
        /**
         * A write of the request failed (the upstream closed or reset its side): the rest of the
         * body is not sent, and the exchange waits for the answer the upstream may have sent
         * before it closed (RFC 9112 §9.6), or for the connection's end.
         */
        private boolean requestAbandoned;

        private boolean requestComplete;
        private boolean responseComplete;
        private boolean interim; // between an interim 1xx head and its (empty) end
        private boolean discarding; // a bodyless answer's head is out: drop what follows it
        /** The upstream keeps the connection after its answer (RFC 9112 §9.3: not a close, not 1.0 without keep-alive). */
        private boolean upstreamKeepsAlive = true;

        private boolean done;
        private @Nullable Throwable failure;
        /** The connection switched protocols: every later event is the splice's. */
        private @Nullable Switched switched;

        Forward(RelayedRequest request, EventLoop loop) {
            this.request = request;
            this.loop = loop;
            this.requestLength = new DeclaredLength(request.contentLength());
        }

        void start() {
            Throwable aborted = request.signal().reason();
            if (aborted != null) {
                fail(aborted); // cancelled while this task waited for the loop: nothing goes upstream
                return;
            }
            request.signal().onAbort(why -> {
                if (loop.inEventLoop()) {
                    fail(why);
                    return;
                }
                try {
                    loop.execute(() -> fail(why));
                } catch (RejectedExecutionException e) {
                    // The loop stops (the worker stops) and runs no more tasks: the exchange fails
                    // once it has stopped, when no thread but this listener's touches it any more,
                    // so its stage and a waiting body reader are answered and its parts released.
                    loop.terminationFuture().addListener(f -> fail(why));
                }
            });
            transport.acquire(loop, upstream, this).addListener(this::onAcquired);
        }

        private void onAcquired(Future<?> f) {
            if (!f.isSuccess()) {
                fail(upstreamFailed("is unreachable (" + connectReason(f.cause()) + ")", f.cause()));
                return;
            }
            Channel ch = (Channel) f.getNow();
            if (done) {
                transport.release(loop, upstream, ch, true);
                return;
            }
            channel = ch; // its messages come to this exchange from now on (acquired with it)
            if (request.upgrade() == null && ch.pipeline().get(FlushConsolidationHandler.class) == null) {
                ch.pipeline().addFirst("flush", new FlushConsolidationHandler(FLUSH_AFTER_FLUSHES, true));
            }
            // An upgrade's connection is read one read at a time (the splice asks); an ordinary
            // response is read ahead up to the read-ahead (see the class's notes).
            ch.config().setAutoRead(request.upgrade() == null);
            URI url = request.url();
            String target = basePath
                    + (url.getRawPath() == null || url.getRawPath().isEmpty() ? "/" : url.getRawPath())
                    + (url.getRawQuery() == null ? "" : "?" + url.getRawQuery());
            HttpHeaders headers = new DefaultHttpHeaders();
            Set<String> none = Set.of();
            for (Header h : request.headers()) {
                if (HeaderPolicy.forwardsToOwner(h.name(), none)
                        && !HeaderPolicy.PATH_OVERRIDES.contains(h.name().toLowerCase(Locale.ROOT))) {
                    headers.add(h.name(), h.value()); // no path in place of the base's (PATH_OVERRIDES)
                }
            }
            headers.set(HttpHeaderNames.HOST, upstream.getHost() + ":" + upstream.getPort());
            String upgrade = request.upgrade();
            if (upgrade != null) {
                // Hop-by-hop, so dropped by the relay: this hop asks anew (RFC 9110 §7.8). The
                // request has no body of its own; its BodySource is the client's side of the
                // connection, read only after a 101.
                headers.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
                headers.set(HttpHeaderNames.UPGRADE, upgrade);
                ch.write(new DefaultHttpRequest(
                        HttpVersion.HTTP_1_1, HttpMethod.valueOf(request.method()), target, headers));
                ch.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
                requestComplete = true;
                ch.read();
                return;
            }
            BodySource body = request.body();
            if (body != null) {
                // A failed body write shuts the output only (requestWriteFailed); a bodiless
                // request's failed write still closes at once, as before.
                ch.config().setAutoClose(false);
            }
            if (requestLength.isKnown()) {
                headers.set(HttpHeaderNames.CONTENT_LENGTH, requestLength.declared()); // RFC 9112 §6.2
            } else if (body != null) {
                headers.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            }
            ch.write(new DefaultHttpRequest(
                    HttpVersion.HTTP_1_1, HttpMethod.valueOf(request.method()), target, headers));
            if (body == null) {
                ch.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
                requestComplete = true;
            } else {
                requestBody = body;
                unflushed = true; // the head
                pumpRequest();
            }
        }

        /**
         * Writes the request body's parts while the upstream's connection is writable, reading
         * the next as each is written; parts handed over inline go out in one flush. Resumed by the
         * connection's writability and by each part that arrives later.
         */
        private void pumpRequest() {
            if (pumping) {
                pumpAgain = true;
                return;
            }
            pumping = true;
            try {
                do {
                    pumpAgain = false;
                    Channel ch = channel;
                    BodySource body = requestBody;
                    if (ch != null && body != null && !done && !requestComplete && !requestReading && ch.isWritable()) {
                        requestReading = true;
                        // the uplink's buffers as they came: no copy on the way to the upstream
                        body.nextBufOn(loop, this::requestPart); // may hand its part over inline
                    }
                    if (!pumpAgain && unflushed && ch != null && channel == ch) {
                        unflushed = false;
                        ch.flush(); // may turn it writable at once: pumpAgain
                    }
                } while (pumpAgain);
            } finally {
                pumping = false;
            }
        }

        private void requestPart(@Nullable ByteBuf part, @Nullable Throwable error) {
            requestReading = false;
            Channel ch = channel;
            if (done || ch == null || requestAbandoned) {
                if (part != null) {
                    part.release();
                }
                return;
            }
            if (error != null) {
                fail(error);
                return;
            }
            if (part == null ? requestLength.endsShort() : !requestLength.admit(part.readableBytes())) {
                if (part != null) {
                    part.release(); // never written: past the length it would frame another request
                }
                fail(SpectorException.of(
                        ErrorCode.INTERNAL,
                        "the relayed request's body " + (part == null ? "ended after " : "ran to ")
                                + requestLength.counted() + " of its declared " + requestLength.declared()
                                + " bytes; the upstream request was aborted"));
                return;
            }
            if (part == null) {
                ch.write(LastHttpContent.EMPTY_LAST_CONTENT).addListener(writeFailed);
                requestComplete = true;
                requestBody = null;
            } else {
                ch.write(new DefaultHttpContent(part)).addListener(writeFailed);
            }
            unflushed = true;
            pumpRequest();
        }

        /**
         * A request write failed: the upstream stopped reading, most often because it answered
         * early (a 413 or a 401 to a large upload) and closed, which resets the connection while
         * the body still arrives. The answer it sent before is still in the socket: the connection
         * does not close on the failed write (its {@code AUTO_CLOSE} is off for the exchange), only
         * its output, and the exchange goes on reading. What ends it is that answer, whole (the
         * client gets it, as nginx passes an early answer on), or the connection's end before it,
         * which fails the exchange as any close does. A failed write after the exchange ended
         * changes nothing.
         */
        private void requestWriteFailed(Throwable cause) {
            if (done || requestAbandoned) {
                return;
            }
            requestAbandoned = true;
            requestBody = null; // the rest is not read from the relay: its end ends the relay's body
            log.debug("relay upstream {} stopped reading the request body: {}", upstream, String.valueOf(cause));
            Channel ch = channel;
            if (ch != null && !ch.config().isAutoRead()) {
                ch.config().setAutoRead(true); // the answer, if any, is read at once
            }
        }

        @Override
        public void onMessage(Object message) {
            Switched sw = switched;
            if (sw != null) {
                sw.onMessage(message);
                return;
            }
            if (message instanceof HttpObject o && o.decoderResult().isFailure()) {
                ReferenceCountUtil.release(message);
                fail(upstreamFailed(
                        "sent a response that could not be decoded",
                        o.decoderResult().cause()));
                return;
            }
            if (message instanceof HttpResponse r && !head.isDone()) {
                int status = r.status().code();
                if (status >= 100 && status <= 199 && status != 101) {
                    interim = true; // RFC 9110 §15.2: the final response follows
                } else if (status == RelayedResponse.SWITCHING_PROTOCOLS) {
                    switchProtocols(r);
                    return;
                } else {
                    answer(r, status);
                }
            }
            if (message instanceof HttpContent c) {
                boolean last = c instanceof LastHttpContent;
                if (interim) {
                    c.release();
                    interim = !last;
                    return;
                }
                if (done || discarding || !c.content().isReadable()) {
                    c.release();
                } else {
                    BiConsumer<@Nullable ByteBuf, @Nullable Throwable> w = waiter;
                    if (w != null) {
                        waiter = null;
                        w.accept(c.content(), null);
                    } else {
                        parts.add(c.content());
                        buffered += c.content().readableBytes();
                        Channel ch = channel;
                        if (buffered >= READ_AHEAD_HIGH_BYTES && ch != null && !last) {
                            ch.config().setAutoRead(false); // the relay is behind: wait for it
                        }
                    }
                }
                if (last) {
                    responseComplete = true;
                    BiConsumer<@Nullable ByteBuf, @Nullable Throwable> w = waiter;
                    if (w != null && parts.isEmpty()) {
                        waiter = null;
                        w.accept(null, null);
                    }
                    releaseChannel();
                }
            } else if (!(message instanceof HttpResponse)) {
                ReferenceCountUtil.release(message);
            }
        }

        /**
         * The upstream switched protocols (RFC 9110 §15.2.2): the HTTP codec is set to pass bytes
         * both ways, and the exchange becomes a {@link Switched} splice of the connection and the
         * relayed stream. A 101 to a request that asked for no upgrade is INTERNAL, and so is one
         * whose {@code Upgrade} does not name the protocol asked for (§15.2.2: it must name it;
         * §7.8: a server never switches to one the client did not offer): an endpoint that
         * reflects a status, or a server that says 101 and stays HTTP, would otherwise leave the
         * client a raw pipe to the upstream's HTTP server, past the target's base path ("WebSocket
         * smuggling", found by a review). Either way the connection closes, never tunnelled.
         */
        private void switchProtocols(HttpResponse r) {
            BodySource clientSide = request.body();
            Channel ch = channel;
            String asked = request.upgrade();
            if (asked == null || clientSide == null || ch == null) {
                fail(upstreamFailed("answered 101 to a request that asked for no upgrade", null));
                return;
            }
            if (!switchesAsAsked(asked, r.headers().getAll(HttpHeaderNames.UPGRADE))) {
                fail(upstreamFailed("answered 101 without an Upgrade naming the protocol asked for", null));
                return;
            }
            if (!UpstreamHttpTransport.passBytesAfterUpgrade(ch)) { // the encoder passes bytes as they are
                fail(upstreamFailed("connection has no HTTP codec", null));
                return;
            }
            Switched sw = new Switched(ch, clientSide);
            switched = sw;
            head.complete(RelayedResponse.switching(responseHeaders(r), sw));
            sw.start();
        }

        /** Returns the upstream's end-to-end headers (hop-by-hop and those Connection names dropped). */
        private List<Header> responseHeaders(HttpResponse r) {
            List<Header> out = new ArrayList<>();
            Set<String> tokens;
            try {
                tokens = HeaderPolicy.connectionTokens(r.headers().getAll(HttpHeaderNames.CONNECTION));
            } catch (SpectorException e) { // the upstream's fault, never the client's 400 (PROTOCOL.md section 3)
                throw upstreamFailed("sent an unusable Connection field (" + e.getMessage() + ")", null);
            }
            for (Map.Entry<String, String> h : r.headers()) {
                if (HeaderPolicy.forwardsToClient(h.getKey(), tokens)) {
                    out.add(new Header(h.getKey(), h.getValue()));
                }
            }
            return out;
        }

        /** Completes the head from the upstream's final response. */
        private void answer(HttpResponse r, int status) {
            String coding = HeaderPolicy.unknownTransferCoding(r.headers().getAll(HttpHeaderNames.TRANSFER_ENCODING));
            if (coding != null) {
                // RFC 9112 §6.1: a coding other than chunked leaves the body coded after the
                // codec's de-chunking, and Transfer-Encoding is hop-by-hop: relayed, it would reach
                // the client as bytes nothing describes. The gateway refuses the same from an owner.
                fail(upstreamFailed("used Transfer-Encoding " + coding + " (expected: chunked alone)", null));
                return;
            }
            upstreamKeepsAlive = HttpUtil.isKeepAlive(r);
            List<Header> out = responseHeaders(r);
            BodySource clientSide = request.body();
            if (request.upgrade() != null && clientSide != null) {
                // RFC 9110 §7.8: the upstream ignored the upgrade; an ordinary answer, and the
                // client's side of a connection that never switched has nothing to carry.
                clientSide.cancel(new java.util.concurrent.CancellationException(
                        "the upstream answered " + status + " to the upgrade"));
            }
            long declared = r.headers().contains(HttpHeaderNames.TRANSFER_ENCODING)
                    ? ResponseFraming.UNKNOWN_LENGTH
                    : HttpUtil.getContentLength(r, ResponseFraming.UNKNOWN_LENGTH);
            if (declared > Limits.RELAY_LENGTH_BYTES.max()) {
                fail(upstreamFailed(
                        "declared a content length of " + declared + " (expected: <= " + Limits.RELAY_LENGTH_BYTES.max()
                                + ")",
                        null));
                return;
            }
            boolean bodyless = ResponseFraming.bodyless("HEAD".equals(request.method()), status);
            discarding = bodyless;
            head.complete(new RelayedResponse(
                    status, out, ResponseFraming.contentLength(status, declared), bodyless ? null : this));
            if (bodyless && status == 205 && !"HEAD".equals(request.method()) && declared != 0) {
                // RFC 9110 §15.3.6: a 205 has no content, yet the codec reads what its framing says
                // (a length, chunks, or to the close for none), which is no part of the answer: its
                // relay is settled and nothing bounds the wait for those bytes, so the connection
                // closes here instead of draining it (found by two reviews).
                responseComplete = true;
                upstreamKeepsAlive = false;
                releaseChannel();
            }
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            return nextBuf().thenApply(b -> b == null ? null : copy(b));
        }

        /** The upstream's next part as its socket read it: no copy (the reader writes it on or releases it). */
        @Override
        public CompletionStage<@Nullable ByteBuf> nextBuf() {
            return BodySource.nextBufFromLoop(loop, this::readInto);
        }

        /** Lives on the exchange's event loop: reading never blocks. */
        @Override
        public boolean nonBlocking() {
            return true;
        }

        /** A reader on this exchange's loop gets its part there, inline when one is read ahead. */
        @Override
        public void nextBufOn(
                java.util.concurrent.Executor on, BiConsumer<@Nullable ByteBuf, @Nullable Throwable> then) {
            BodySource.nextBufOnLoop(this, loop, on, then, this::readInto);
        }

        /** Hands {@code then} the next part, the end or the failure, or keeps it until one comes (loop). */
        private void readInto(BiConsumer<@Nullable ByteBuf, @Nullable Throwable> then) {
            ByteBuf b = parts.poll();
            Throwable failed = failure;
            if (b != null) {
                buffered -= b.readableBytes();
                Channel ch = channel;
                if (buffered <= READ_AHEAD_LOW_BYTES
                        && ch != null
                        && !responseComplete
                        && !ch.config().isAutoRead()) {
                    ch.config().setAutoRead(true); // the relay caught up: read ahead again
                }
                then.accept(b, null);
            } else if (failed != null) {
                then.accept(null, failed);
            } else if (responseComplete) {
                then.accept(null, null);
            } else {
                waiter = then;
                Channel ch = channel;
                if (ch != null && !ch.config().isAutoRead()) {
                    ch.config().setAutoRead(true);
                }
            }
        }

        @Override
        public void cancel(Throwable reason) {
            loop.execute(() -> fail(reason));
        }

        @Override
        public void onReadComplete() {
            Channel ch = channel;
            if (ch != null && switched == null && !ch.config().isAutoRead() && (!head.isDone() || discarding)) {
                ch.read(); // an upgrade's connection: until the head arrives, or the end a bodyless answer drops
            }
        }

        @Override
        public void onWritabilityChanged(boolean writable) {
            Switched sw = switched;
            if (sw != null && writable) {
                sw.upstreamWritable();
            } else if (writable && requestBody != null) {
                // Not from inside the flush that turned it writable: a write made there can meet
                // buffers the flush is still releasing.
                loop.execute(this::pumpRequest);
            }
        }

        @Override
        public void onClosed() {
            Switched sw = switched;
            if (sw != null) {
                sw.upstreamClosed();
                return;
            }
            if (!responseComplete) {
                fail(upstreamFailed("closed the connection", null));
            }
        }

        @Override
        public void onFailure(Throwable cause) {
            // A socket's error (a reset while the answer was read) in words with no errno text
            // in them; anything else as it is.
            fail(cause instanceof java.io.IOException ? upstreamFailed("connection failed", cause) : cause);
        }

        private void fail(Throwable why) {
            if (done && failure != null) {
                return;
            }
            Switched sw = switched;
            if (sw != null) {
                sw.fail(why);
            }
            failure = why;
            head.completeExceptionally(why);
            ByteBuf b;
            while ((b = parts.poll()) != null) {
                b.release();
            }
            buffered = 0;
            requestBody = null;
            BiConsumer<@Nullable ByteBuf, @Nullable Throwable> w = waiter;
            waiter = null;
            if (w != null) {
                w.accept(null, why);
            }
            Channel ch = channel;
            channel = null;
            done = true;
            if (ch != null) {
                ch.config().setAutoClose(true);
                transport.release(loop, upstream, ch, false);
            }
        }

        private void releaseChannel() {
            Channel ch = channel;
            channel = null;
            done = true;
            if (ch != null) {
                ch.config().setAutoClose(true);
                // Pooled only when both messages ended and the upstream keeps it (not a Connection:
                // close or an HTTP/1.0 answer: the next request would meet its FIN, found by a
                // review) and it never carried an upgrade (PROTOCOL.md section 9.7).
                transport.release(
                        loop,
                        upstream,
                        ch,
                        requestComplete
                                && responseComplete
                                && !requestAbandoned
                                && upstreamKeepsAlive
                                && request.upgrade() == null);
            }
        }

        /**
         * The switched connection (section 9.7 of docs/PROTOCOL.md), spliced to the relayed
         * stream: the upstream's bytes are the response body ({@link #nextBuf()}, read from the
         * socket only when the relay asks, so at most one read waits), and the client's side (the
         * request body) is written to the upstream while it is writable, parts handed over inline
         * written together and flushed once. Each direction ends on its own: the client's end is
         * a FIN to the upstream ({@code shutdownOutput}, once the bytes before it are written), the
         * upstream's FIN ends the response body; the connection closes once both ended. The
         * upstream closing ends its side and stops reading the client's; a failure, a cancel or
         * the request's abort closes it at once. Confined to the exchange's event loop.
         */
        private final class Switched implements BodySource {
            private final Channel ch;
            private final BodySource clientSide;
            private final ArrayDeque<ByteBuf> fromUpstream = new ArrayDeque<>();
            private @Nullable CompletableFuture<@Nullable ByteBuf> reader;
            private boolean upstreamEnded;
            private boolean clientEnded;
            /** The client's end went out after its bytes (the connection wrote all before it). */
            private boolean clientFinned;

            private boolean clientReading;
            /** {@link #pumpClient} runs (a part handed over inline re-enters it: it loops instead). */
            private boolean pumping;

            private boolean pumpAgain;
            /** The client's parts were written to the upstream and not yet flushed. */
            private boolean unflushed;

            private boolean waitingWritable;
            private boolean closed;
            private @Nullable Throwable failed;

            Switched(Channel ch, BodySource clientSide) {
                this.ch = ch;
                this.clientSide = clientSide;
            }

            void start() {
                if (ch.pipeline().get(FlushConsolidationHandler.class) != null) {
                    // Each write is flushed before a FIN (shutdownOutput bypasses the pipeline and
                    // would fail bytes still held): removing it flushes what it held.
                    ch.pipeline().remove(FlushConsolidationHandler.class);
                }
                // A FIN from the upstream is its half close, not the connection's end.
                ch.config().setOption(io.netty.channel.ChannelOption.ALLOW_HALF_CLOSURE, true);
                ch.pipeline().addLast("upgrade-fin", new io.netty.channel.ChannelInboundHandlerAdapter() {
                    @Override
                    public void userEventTriggered(io.netty.channel.ChannelHandlerContext ctx, Object evt) {
                        if (evt instanceof io.netty.channel.socket.ChannelInputShutdownEvent) {
                            upstreamFin();
                        } else {
                            ReferenceCountUtil.release(evt);
                        }
                    }
                });
                pumpClient();
            }

            void onMessage(Object message) {
                if (!(message instanceof ByteBuf b) || closed || upstreamEnded || !b.isReadable()) {
                    ReferenceCountUtil.release(message); // the empty end of the 101's head, or late bytes
                    return;
                }
                CompletableFuture<@Nullable ByteBuf> r = reader;
                if (r != null) {
                    reader = null;
                    if (!r.complete(b)) {
                        b.release();
                    }
                } else {
                    fromUpstream.add(b);
                }
            }

            @Override
            public CompletionStage<@Nullable ByteBuf> nextBuf() {
                CompletableFuture<@Nullable ByteBuf> f = new CompletableFuture<>();
                loop.execute(() -> {
                    ByteBuf b = fromUpstream.poll();
                    Throwable why = failed;
                    if (b != null) {
                        f.complete(b);
                    } else if (why != null) {
                        f.completeExceptionally(why);
                    } else if (upstreamEnded) {
                        f.complete(null);
                    } else if (reader != null) {
                        f.completeExceptionally(new IllegalStateException("one read at a time"));
                    } else {
                        reader = f;
                        ch.read(); // one socket read per read of the body: the stream's window holds it back
                    }
                });
                return f;
            }

            @Override
            public CompletionStage<@Nullable ByteBuffer> next() {
                return nextBuf().thenApply(b -> b == null ? null : copy(b));
            }

            @Override
            public void cancel(Throwable reason) {
                loop.execute(() -> fail(reason));
            }

            /**
             * Writes the client's bytes while the upstream takes them; its end is a FIN. The client's
             * side (a v2 stream's body, on this loop) hands a queued part over inline, inside {@code
             * nextBufOn}: its {@link #clientRead} asks again through here, which loops instead of
             * recursing ({@link BodySource#nonBlocking()}), as {@link #pumpRequest} does; recursing
             * once per part overflowed the stack on a window of small parts and left this direction
             * with no read pending (found by a review).
             */
            private void pumpClient() {
                if (pumping) {
                    pumpAgain = true;
                    return;
                }
                pumping = true;
                try {
                    do {
                        pumpAgain = false;
                        if (closed || clientEnded || clientReading) {
                            break;
                        }
                        if (!ch.isWritable()) {
                            waitingWritable = true;
                            break;
                        }
                        clientReading = true;
                        clientSide.nextBufOn(loop, this::clientRead); // may hand its part over inline: pumpAgain
                    } while (pumpAgain);
                } finally {
                    pumping = false;
                }
                if (unflushed && !closed) {
                    unflushed = false;
                    ch.flush(); // the parts handed over inline go out together
                }
            }

            private void clientRead(@Nullable ByteBuf part, @Nullable Throwable error) {
                clientReading = false;
                if (closed || clientEnded) {
                    if (part != null) {
                        part.release();
                    }
                    return;
                }
                if (error != null) {
                    Forward.this.fail(error);
                    return;
                }
                if (part == null) {
                    clientEnded = true;
                    unflushed = false;
                    // After the bytes written before it: a FIN or a close discards what the
                    // connection still holds, and a backed-up upstream may hold some.
                    ch.writeAndFlush(io.netty.buffer.Unpooled.EMPTY_BUFFER).addListener(w -> {
                        if (!w.isSuccess()) {
                            Forward.this.fail(w.cause());
                            return;
                        }
                        clientFinned = true;
                        if (upstreamEnded) {
                            close(); // both halves ended
                        } else if (!closed && ch instanceof io.netty.channel.socket.DuplexChannel duplex) {
                            duplex.shutdownOutput(); // the client's FIN, passed on
                        }
                    });
                    return;
                }
                ch.write(part).addListener(w -> {
                    if (!w.isSuccess()) {
                        Forward.this.fail(w.cause());
                    }
                });
                unflushed = true;
                pumpClient();
            }

            void upstreamWritable() {
                if (waitingWritable) {
                    waitingWritable = false;
                    pumpClient();
                }
            }

            /** The upstream's FIN: its side ends after what is queued; the client's side goes on. */
            private void upstreamFin() {
                endUpstream();
                if (clientFinned) {
                    close();
                }
            }

            /** The upstream connection closed: its side ends after what is queued, the client's stops. */
            void upstreamClosed() {
                endUpstream();
                if (!clientEnded) {
                    clientEnded = true; // nowhere to write it: stop reading the client's side
                    clientSide.cancel(new java.util.concurrent.CancellationException(
                            "the upstream closed the switched connection"));
                }
                close();
            }

            private void endUpstream() {
                if (upstreamEnded) {
                    return;
                }
                upstreamEnded = true;
                CompletableFuture<@Nullable ByteBuf> r = reader;
                if (r != null && fromUpstream.isEmpty()) {
                    reader = null;
                    r.complete(null);
                }
            }

            /** Fails both sides at once, dropping what is queued. */
            void fail(Throwable why) {
                if (failed == null && !(upstreamEnded && fromUpstream.isEmpty() && reader == null)) {
                    failed = why;
                }
                ByteBuf b;
                while ((b = fromUpstream.poll()) != null) {
                    b.release();
                }
                CompletableFuture<@Nullable ByteBuf> r = reader;
                reader = null;
                if (r != null) {
                    r.completeExceptionally(why);
                }
                if (!clientEnded) {
                    clientEnded = true;
                    clientSide.cancel(why);
                }
                close();
            }

            private void close() {
                if (!closed) {
                    closed = true;
                    channel = null;
                    done = true;
                    transport.release(loop, upstream, ch, false); // a switched connection is never reused
                }
            }
        }

        private static ByteBuffer copy(ByteBuf b) {
            try {
                ByteBuffer out = ByteBuffer.allocate(b.readableBytes());
                b.readBytes(out);
                return out.flip();
            } finally {
                b.release();
            }
        }
    }
}
