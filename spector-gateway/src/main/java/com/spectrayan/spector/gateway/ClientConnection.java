package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.ResponseSplice;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.BodySource;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client side of one connection, for every kind of exchange (forwarded to an owner, relayed to
 * a worker, answered locally): reading the request body, the response's framing, keep-alive, and
 * the one way an exchange ends. Exchanges ({@link Exchange}) only translate between this class and
 * the forwarder or the relay.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>States.</b> {@code AWAITING_HEAD} (reading; the head clock runs from the first byte of
 *       a head, {@code spector.server.header-timeout}, and its timer is armed only when a read
 *       ends with the head still incomplete) -> {@code EXCHANGE} (one request at a time:
 *       its body flows to the exchange, its response flows out) -> back to {@code AWAITING_HEAD}
 *       when the response ended on a reusable connection, or {@code CLOSING} (the last response is
 *       flushed, then the connection closes). Pipelined requests wait, decoded, in the {@code
 *       FlowControlHandler} in front of this side, and here: reading goes on while a request
 *       without a body (or whose body arrived) is answered, and stops only when the next request's
 *       head actually arrives during the exchange (it waits here, what follows it waits in the
 *       {@code FlowControlHandler} and the socket); it resumes when the response ended, so
 *       requests are answered in order. Stopping lazily spares the two {@code epoll_ctl} calls a
 *       stop and a resume cost on every request of a client that does not pipeline (issue 14).
 *       An upgrade request stops reading at once, as its next bytes may be another protocol's;
 *       at the end of one the gateway passes on, the decoder holds itself (what the client sent
 *       behind it stays bytes for the splice, ClientCodec), so the connection closes after any
 *       answer but a {@code 101}.
 *       {@code AWAITING_HEAD} with no head begun for {@code spector.server.idle-timeout} closes
 *       the connection ({@link #startIdleClock}).
 *   <li><b>Framing (RFC 9112 §6, §9.3).</b> A known length is sent as {@code Content-Length};
 *       an unknown one is chunked for an HTTP/1.1 client and close-delimited for an HTTP/1.0
 *       client (which cannot read chunked, §6.1). Responses without a body (HEAD, 1xx, 204, 304:
 *       RFC 9110 §6.4.1) carry none; 1xx and 204 carry no {@code Content-Length} (RFC 9110 §8.6).
 *       An HTTP/1.0 client that asked for keep-alive gets {@code Connection: keep-alive} when the
 *       connection stays open; every response after which the connection closes says {@code
 *       Connection: close}, and the close follows the flush.
 *   <li><b>Edge headers.</b> Headers the edge adds (CORS, {@code Vary}) are added to the
 *       upstream's, never replacing them: {@code Vary} is merged, and an upstream's own CORS
 *       answer is kept.
 *   <li><b>Ending.</b> Complete (the last chunk, then reuse or close), reset (the response began
 *       and cannot be finished honestly: RST, over TLS with no close_notify before it, {@link
 *       #abort}), or a problem answer and, unless the request was read whole, the close.
 *   <li><b>Request body.</b> A body that ends badly (a decode failure: bad chunk size, bare LF,
 *       missing CRLF, an oversized chunk line; or the body timeout) reaches the exchange as {@link
 *       Exchange#onBodyFailed}, never as an end: the upstream request is aborted, not completed.
 *       The body timer ({@code spector.server.body-timeout}, nginx's {@code client_body_timeout})
 *       counts only while the exchange wants bytes, so an owner's backpressure is not blamed on
 *       the client.
 *   <li><b>A client that stops reading.</b> The exchange stops reading its owner while the client
 *       connection is not writable (its outbound buffer above the high-water mark), and the owner's
 *       idle timer does not blame the owner for that pause; so the send clock bounds the pause
 *       instead ({@code spector.server.send-timeout}, nginx's {@code send_timeout}, measured like
 *       it between two writes the socket accepted): a connection that holds response bytes and
 *       sees none of them taken for that long is reset, in any state but upgraded, and its
 *       exchange ends as when the client closes (the owner connection is closed, not pooled).
 *       Without it, a client that never reads would hold an owner connection for ever.
 * </ul>
 *
 * <p>Threading: confined to the connection's event loop.
 */
final class ClientConnection {
    private static final Logger log = LoggerFactory.getLogger(ClientConnection.class);

    /** How long a closing connection reads and discards a request body nobody wanted (nginx: 30 s, 5 s idle). */
    static final Duration LINGER_TIME = Duration.ofSeconds(2);

    /** The access log's {@code error} of an exchange whose client stopped taking its response. */
    static final String SEND_TIMEOUT = "SEND_TIMEOUT";

    /** The name of the client connection's HTTP codec in its pipeline (GatewayServer). */
    static final String CLIENT_CODEC = "codec";

    /** The name of an owner connection's HTTP codec in its pipeline (UpstreamHttpTransport). */
    static final String OWNER_CODEC = "codec";

    /** What a connection's events reach while an exchange runs on it. */
    interface Exchange {
        /** A part of the request body; the exchange owns (and releases) it. */
        void onBodyChunk(ByteBuf chunk);

        /** The request body ended well. */
        void onBodyEnd();

        /**
         * The request body ended badly (malformed, or too slow): abort the upstream request and
         * answer {@code error} (the connection closes after it).
         */
        void onBodyFailed(SpectorException error);

        /** A read batch from the client ended. */
        default void onReadComplete() {}

        /** The client connection became writable again. */
        default void onWritable() {}

        /** The client connection closed: abort the upstream request. */
        void onClosed();

        /**
         * The connection is done with this exchange: it was answered (or reset), and the next
         * request may follow. Release what it still holds. Called once, on the loop, after any
         * {@link #onClosed}.
         */
        default void onEnded() {}
    }

    private enum State {
        AWAITING_HEAD,
        EXCHANGE,
        /** Switched protocols: the connection is spliced to an owner's or a relay's stream and no longer HTTP. */
        UPGRADED,
        CLOSING,
        CLOSED
    }

    /** The HTTP handlers of a client connection, removed once it switched protocols. */
    private static final String[] HTTP_HANDLERS = {"gateway", "flow", "uplink", ClientCodec.ENCODER_NAME, "head-watch"};

    private enum Body {
        /** No body, or all of it arrived. */
        COMPLETE,
        /** Parts still to come. */
        READING,
        /** Malformed, timed out, or cut off: the connection cannot be reused. */
        FAILED
    }

    private final ChannelHandlerContext ctx;
    private final GatewayContext context;
    private final long headTimeoutNanos;
    private final long bodyTimeoutNanos;
    /** {@code spector.server.send-timeout}: how long held response bytes may wait for the client. */
    private final long sendTimeoutNanos;
    /** {@code spector.server.idle-timeout}: how long the connection may sit between requests. */
    private final long idleNanos;
    /** Hands a message that waited ({@link #holdBack}) to the gateway's handler, in order. */
    private final Consumer<Object> dispatch;

    private State state = State.AWAITING_HEAD;
    /** The last Content-Length this connection sent, and its text ({@link #lengthText}). */
    private long lastLength = -1;

    private @Nullable AsciiString lastLengthText;
    /**
     * The messages that arrived behind a running exchange: the next request's head first, then
     * whatever the decoder gave before reading stopped. Null while nothing waits.
     */
    private @Nullable ArrayDeque<Object> waiting;
    /** The decoder, found the first time a pipelined request pauses it; null before (or another codec). */
    private ClientCodec.@Nullable Decoder decoder;
    /** A closing connection reads and discards what still arrives (closeAfterFlush). */
    private boolean lingering;
    /** The client's request asked to keep the connection (HTTP/1.1 without {@code Connection: close}). */
    private boolean clientKeepsAlive;
    /** The current request asked for an upgrade: reading stops when it has arrived. */
    private boolean upgradeRequest;
    /**
     * The current request is an upgrade the gateway passes on ({@link Upgrades#isUpgrade}): its
     * connection ends after any answer but a {@code 101}. What the client sent behind it waits as
     * bytes in the decoder, which holds itself at the request's end (ClientCodec), for the splice.
     */
    private boolean passedUpgrade;

    // ---- the current exchange (reset by begin) ----
    private @Nullable Exchange exchange;
    private boolean http10;
    private boolean keepAlive;
    private boolean headRequest;
    private Body body = Body.COMPLETE;
    private boolean bodyWanted;
    private boolean pullPending; // a readBody() read that no body part has answered yet
    private long bodyProgressNanos;
    private @Nullable ScheduledFuture<?> bodyTimer;
    private boolean counted;
    private boolean inFlight;
    private boolean responseStarted;
    private boolean continueSent; // this request's 100 (Continue) went: once (an exchange handed on asks again)
    private boolean responseEnded;
    private boolean closeAfterResponse;
    /** The response's framing length (its {@code Content-Length}), or -1: chunked, close-delimited or none. */
    private long responseLength = -1;
    /** A response body may be going out by splice (from {@link #spliceTarget} to the exchange's end). */
    private boolean splicing;
    /** Whether this connection holds a slot of the gateway's splice pipes ({@link SplicePipes}). */
    private boolean holdsPipe;

    private int status;
    private long startNanos;
    private String route = "";
    private @Nullable HttpHeaders corsRequest;
    // The exchange as its access log line shows it (AccessLog.Entry); set at begin, filled as it runs.
    private String requestId = "";
    private long startMillis;
    private String method = "";
    private String path = "-";
    private long bytesIn;
    private long bytesOut;
    private long upstreamHeadNanos = -1;
    private @Nullable String upstream;
    private int attempts;
    private @Nullable String retargets;
    private @Nullable String tenant;
    private @Nullable String error;
    private @Nullable String traceId;
    private boolean wasReset;
    private @Nullable String client; // the peer's ip:port, once asked
    private @Nullable String clientIp; // the peer's ip, once asked

    private @Nullable ScheduledFuture<?> headTimer;
    private long headStartNanos; // 0 while no head is arriving

    /** The send clock's one check, armed while the connection is not writable ({@link #onUnwritable}). */
    private @Nullable ScheduledFuture<?> sendTimer;
    /** The outbound buffer's first message (its identity hash) and its progress at the last check. */
    private int sendMessage;

    private long sendProgress;

    private long sendBytesOut; // bytesOut at the last note (spliced bytes count)

    /** When the connection last became idle: opened, or a response ended on it. */
    private long idleSinceNanos;
    /** Its listener's idle connections, which a full listener closes longest idle first; and its place there. */
    private final ReusableConnections idleConnections;

    private final ReusableConnections.Entry reusableEntry;
    /** The one idle check of the connection, re-armed as it finds the connection busy; null once it closed. */
    private @Nullable ScheduledFuture<?> idleTimer;

    ClientConnection(
            ChannelHandlerContext ctx,
            GatewayContext context,
            long idleNanos,
            long headTimeoutNanos,
            ReusableConnections reusable,
            Consumer<Object> dispatch) {
        this.ctx = ctx;
        this.idleConnections = reusable;
        this.reusableEntry = reusable.register(ctx.channel(), this::reusableSince);
        this.context = context;
        this.idleNanos = idleNanos;
        this.dispatch = dispatch;
        this.headTimeoutNanos = headTimeoutNanos;
        this.bodyTimeoutNanos = context.bodyTimeout().toNanos();
        this.sendTimeoutNanos = context.sendTimeout().toNanos();
    }

    /**
     * Returns since when ({@code System.nanoTime}) the connection has waited for a head with no byte
     * of it read, no request waiting and no exchange: one the gateway may close when it runs out
     * of connections ({@link ReusableConnections}), as nginx closes its "reusable" ones; -1
     * otherwise. On the connection's loop only.
     */
    long reusableSince() {
        return state == State.AWAITING_HEAD && headStartNanos == 0 && waiting == null ? idleSinceNanos : -1;
    }

    /** Where this gateway finds a request's bearer token (its cookie's name, for one). */
    BearerTokens tokens() {
        return context.tokens();
    }

    // ---- the idle clock ----

    /**
     * Starts the idle clock (nginx's {@code keepalive_timeout}): a connection that sits between
     * requests, with no head begun, for {@code spector.server.idle-timeout} since it opened or
     * since its last response ended is closed. One timer per connection, re-armed when it fires
     * and finds the connection busy or active since, so an exchange costs no timer and no
     * listener on its writes (issue 14: the all-idle handler this replaces put a listener on every
     * write and a hop in both directions). A head that began is the header timeout's.
     */
    void startIdleClock() {
        idleSinceNanos = System.nanoTime();
        idleConnections.idle(reusableEntry);
        idleTimer = ctx.executor().schedule(this::checkIdle, idleNanos, TimeUnit.NANOSECONDS);
    }

    private void checkIdle() {
        idleTimer = null;
        if (state == State.CLOSED || state == State.UPGRADED) {
            return;
        }
        long next = idleNanos;
        if (state == State.AWAITING_HEAD && headStartNanos == 0 && waiting == null) {
            long quiet = System.nanoTime() - idleSinceNanos;
            if (quiet >= idleNanos) {
                log.debug(
                        "client {} idle for {} ms between requests: closed",
                        ctx.channel().remoteAddress(),
                        TimeUnit.NANOSECONDS.toMillis(quiet));
                ctx.close();
                return;
            }
            next = idleNanos - quiet;
        }
        idleTimer = ctx.executor().schedule(this::checkIdle, next, TimeUnit.NANOSECONDS);
    }

    private void cancelIdleTimer() {
        ScheduledFuture<?> t = idleTimer;
        if (t != null) {
            t.cancel(false);
            idleTimer = null;
        }
    }

    // ---- the request head ----

    /**
     * Bytes arrived from the client: the first bytes of a head start the head clock. The timer
     * itself is scheduled only when a read batch ends with the head still incomplete (see {@link
     * #onReadComplete()}): most heads arrive whole in one read, and cost no timer.
     */
    void onBytes() {
        // Bytes during an exchange whose body has arrived can only be the next head (pipelined):
        // its clock starts now, and its timer when the exchange ends (exchangeEnded).
        boolean nextHead = state == State.AWAITING_HEAD || (state == State.EXCHANGE && body != Body.READING);
        if (nextHead && headStartNanos == 0) {
            headStartNanos = System.nanoTime() | 1; // never 0 while running
        }
    }

    /**
     * A request head arrived: the exchange's facts are set from it. Returns false when the
     * connection is already ending (the request is dropped).
     */
    boolean begin(HttpRequest request, String route, boolean trustedClient) {
        cancelHeadTimer();
        if (state != State.AWAITING_HEAD) {
            return false;
        }
        HttpHeaders requestHeaders = request.headers();
        start(route, RequestIds.take(requestHeaders, trustedClient), System.nanoTime(), System.currentTimeMillis());
        traceId = RequestIds.traceId(requestHeaders);
        method = request.method().name();
        http10 = request.protocolVersion().equals(HttpVersion.HTTP_1_0);
        clientKeepsAlive = HttpUtil.isKeepAlive(request);
        keepAlive = clientKeepsAlive && !context.drain().isDraining();
        headRequest = HttpMethod.HEAD.equals(request.method());
        upgradeRequest = requestHeaders.contains(HttpHeaderNames.UPGRADE);
        passedUpgrade = Upgrades.isUpgrade(request);
        if (passedUpgrade) {
            keepAlive = false; // what follows the request may be the new protocol's: never read as HTTP
        }
        boolean hasBody = request.decoderResult().isFailure() || hasBody(request);
        body = hasBody ? Body.READING : Body.COMPLETE;
        return true;
    }

    /**
     * Sets the facts of a new exchange, {@code id}'s, that began at {@code startedNanos} ({@code
     * startedMillis} on the wall clock): what its head says is the caller's to set (until then: no
     * head, no body, no keep-alive).
     */
    private void start(String route, String id, long startedNanos, long startedMillis) {
        state = State.EXCHANGE;
        startNanos = startedNanos;
        startMillis = startedMillis;
        this.route = route;
        requestId = id;
        traceId = null;
        method = "-";
        path = "-";
        bytesIn = 0;
        bytesOut = 0;
        responseLength = -1;
        upstreamHeadNanos = -1;
        upstream = null;
        attempts = 0;
        retargets = null;
        tenant = null;
        error = null;
        wasReset = false;
        http10 = false;
        keepAlive = false;
        headRequest = false;
        upgradeRequest = false;
        passedUpgrade = false;
        body = Body.COMPLETE;
        bodyWanted = false;
        pullPending = false;
        responseStarted = false;
        continueSent = false;
        responseEnded = false;
        closeAfterResponse = false;
        status = 0;
        corsRequest = null;
        exchange = null;
        counted = true;
    }

    /** Answers whether a well-formed request head announces a body (RFC 9112 §6.3). */
    private static boolean hasBody(HttpRequest request) {
        try {
            return HttpUtil.isTransferEncodingChunked(request) || HttpUtil.getContentLength(request, 0L) > 0;
        } catch (NumberFormatException e) {
            return true; // unreadable framing: treated as a body nobody reads, so the connection closes
        }
    }

    /** Sets the metrics route of the current exchange. */
    void route(String name) {
        route = name;
    }

    /** Returns the client's {@code ip:port}, as the access log names it. */
    private String clientAddress() {
        String a = client;
        if (a == null) {
            a = ipAndPort(ctx.channel().remoteAddress(), clientIp());
            client = a;
        }
        return a;
    }

    /** Returns the client's IP, as {@code X-Forwarded-For} and the trusted-proxy rule name it; made once. */
    String clientIp() {
        String ip = clientIp;
        if (ip == null) {
            ip = ip(ctx.channel().remoteAddress());
            clientIp = ip;
        }
        return ip;
    }

    /** Returns a peer's IP as the trusted-proxy rule and {@code X-Forwarded-For} name it. */
    static String ip(@Nullable SocketAddress remote) {
        return remote instanceof InetSocketAddress inet && inet.getAddress() != null
                ? inet.getAddress().getHostAddress()
                : String.valueOf(remote);
    }

    /** Returns a peer's {@code ip:port} as the access log names it, its {@link #ip} given. */
    static String ipAndPort(@Nullable SocketAddress remote, String ip) {
        return remote instanceof InetSocketAddress inet ? ip + ":" + inet.getPort() : ip;
    }

    /** Returns the current exchange's {@code X-Request-Id}. */
    String requestId() {
        return requestId;
    }

    /** Sets the current exchange's normalized path, for its access log line. */
    void path(String normalized) {
        path = normalized;
    }

    /** Sets the tenant the current exchange runs under, for its access log line. */
    void tenant(String name) {
        tenant = name;
    }

    /** The upstream ({@code owner-1}, {@code worker w1}) answered with its head, after {@code tries} attempts. */
    void upstream(String name, int tries, String causes) {
        upstream = name;
        attempts = tries;
        retargets = causes.isEmpty() ? null : causes;
        upstreamHeadNanos = System.nanoTime() - startNanos;
    }

    /**
     * The forwarder gave up on {@code name} after {@code tries} attempts for {@code causes} (no
     * head came through): the access log line still names them.
     */
    void attempted(String name, int tries, String causes) {
        upstream = name;
        attempts = tries;
        retargets = causes.isEmpty() ? null : causes;
    }

    /** The current exchange's response gets the CORS headers for this request's {@code Origin}. */
    void decorateForCors(HttpHeaders requestHeaders) {
        corsRequest = requestHeaders;
    }

    /** Marks the current response as the connection's last (it says {@code Connection: close}). */
    void closeAfterResponse() {
        closeAfterResponse = true;
    }

    /**
     * Hands the current request to an exchange; its body (if any) is read only when it asks. A
     * second call for the same request replaces an exchange that ended without reading the body
     * nor answering.
     */
    void start(Exchange e) {
        exchange = e;
        if (!inFlight) { // a second start hands the same request on (a relay that found no link)
            inFlight = true; // what a drain waits for: forwarded and relayed exchanges, not local answers
            context.drain().exchangeStarted();
        }
        if (body == Body.READING) {
            pauseBody();
        }
    }

    /** Returns the current exchange, or null between requests (tests; on the connection's loop). */
    @Nullable
    Exchange exchange() {
        return exchange;
    }

    /** Answers whether the current request has a body still to come. */
    boolean bodyPending() {
        return body == Body.READING;
    }

    // ---- the request body ----

    /** A part of a request body from the decoder; released here unless an exchange takes it. */
    void onContent(HttpContent content) {
        if (content.decoderResult().isFailure()) {
            content.release();
            onMalformed(content.decoderResult().cause());
            return;
        }
        Exchange e = exchange;
        boolean last = content instanceof LastHttpContent;
        if (state != State.EXCHANGE || body != Body.READING || e == null) {
            content.release(); // a body no exchange reads (a local answer); the connection closes after it
            if (last && state == State.EXCHANGE) {
                if (body == Body.READING) {
                    body = Body.COMPLETE;
                }
                requestArrived();
            }
            return;
        }
        bodyProgressNanos = System.nanoTime();
        pullPending = false;
        ByteBuf b = content.content();
        bytesIn += b.readableBytes();
        if (b.isReadable()) {
            e.onBodyChunk(b);
        } else {
            content.release();
        }
        if (last) {
            body = Body.COMPLETE;
            bodyWanted = false;
            cancelBodyTimer();
            requestArrived();
            e.onBodyEnd();
        }
    }

    /**
     * The current request arrived whole. Reading goes on (a pipelined request that arrives waits
     * in {@link #holdBack}), but for an upgrade: what follows it may be the new protocol's bytes,
     * which stay unread for the splice, in the socket or in the decoder (which held itself at a
     * passed upgrade's end, ClientCodec).
     */
    private void requestArrived() {
        if (upgradeRequest) {
            ctx.channel().config().setAutoRead(false);
        }
    }

    /**
     * Takes a decoded message that arrived while the connection cannot take it: the next request's
     * head during an exchange (reading stops there; the exchange's end hands it on), or anything
     * behind a message already waiting. Returns false for a message to handle now.
     */
    boolean holdBack(Object msg) {
        ArrayDeque<Object> w = waiting;
        if (w != null) {
            w.add(msg);
            return true;
        }
        if (msg instanceof HttpRequest) {
            if (state == State.EXCHANGE) {
                w = new ArrayDeque<>(4);
                w.add(msg);
                waiting = w;
                ctx.channel().config().setAutoRead(false); // the rest waits in the socket
                ClientCodec.Decoder d = decoder();
                if (d != null) {
                    d.pause(); // and as bytes in the decoder (ClientCodec): one request waits decoded
                }
                return true;
            }
            if (state == State.CLOSING && !lingering) {
                ctx.channel().config().setAutoRead(false); // dropped: nothing more is read before the close
            }
        }
        return false;
    }

    /** Hands on the messages that waited, in order, as long as the connection can take them. */
    private void dispatchWaiting() {
        ArrayDeque<Object> w;
        while ((w = waiting) != null) {
            Object next = w.peek();
            if (next == null) {
                waiting = null;
                break;
            }
            if (next instanceof HttpRequest && state == State.EXCHANGE) {
                return; // the next exchange runs: the rest waits for its end
            }
            w.poll();
            if (w.isEmpty()) {
                waiting = null; // before the dispatch: what it reads next is not behind anything
                resumeDecoding();
            }
            dispatch.accept(next);
        }
    }

    /** Returns the connection's decoder when it can pause ({@link ClientCodec}), else null. */
    private ClientCodec.@Nullable Decoder decoder() {
        ClientCodec.Decoder d = decoder;
        if (d == null && ctx.pipeline().get(CLIENT_CODEC) instanceof ClientCodec.Decoder found) {
            d = found;
            decoder = d;
        }
        return d;
    }

    /**
     * Answers whether the decoder holds bytes of a request behind this one (paused or not), or
     * decoded requests behind it that are not answered (called once this one's answer is written).
     */
    private boolean holdsPipelinedBytes() {
        ClientCodec.Decoder d = decoder();
        return d != null && (d.holdsPartialHead() || d.hasUnansweredRequests());
    }

    /** Answers whether the decoder holds the start of a head read with the request before it. */
    private boolean holdsPartialHead() {
        ClientCodec.Decoder d = decoder();
        return d != null && !d.isPaused() && d.holdsPartialHead();
    }

    /** Lets the decoder go on with what waited behind the held request ({@link ClientCodec.Decoder#resume}). */
    private void resumeDecoding() {
        ClientCodec.Decoder d = decoder;
        if (d != null && d.isPaused()) {
            d.resume();
        }
    }

    private void releaseWaiting() {
        ArrayDeque<Object> w = waiting;
        waiting = null;
        if (w != null) {
            Object m;
            while ((m = w.poll()) != null) {
                ReferenceCountUtil.release(m);
            }
        }
    }

    /** The exchange wants body bytes: reading resumes (and the body timer counts). */
    void resumeBody() {
        if (wantBody()) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    /**
     * The exchange wants one more read from the socket (a pull), without turning autoRead on. The
     * pull stands until a body part arrives: a read batch that ends without one (it ended inside a
     * TLS record or a chunk-size line, so no decoder had anything to give) is asked again in {@link
     * #onReadComplete}, because the {@code FlowControlHandler} takes that batch's end as the read's
     * answer and would keep the part that the decoders' own re-read brings in its queue.
     */
    void readBody() {
        if (wantBody()) {
            pullPending = true;
            ctx.channel().read();
        }
    }

    /** Marks that the exchange waits for body bytes (the body timer counts from now); false when none can come. */
    private boolean wantBody() {
        if (body != Body.READING || state != State.EXCHANGE) {
            return false;
        }
        if (!bodyWanted) {
            bodyWanted = true;
            bodyProgressNanos = System.nanoTime();
            armBodyTimer(bodyTimeoutNanos);
        }
        return true;
    }

    /** The exchange takes no more body bytes for now (its upstream is not writable). */
    void pauseBody() {
        bodyWanted = false;
        pullPending = false;
        ctx.channel().config().setAutoRead(false);
    }

    private void armBodyTimer(long delayNanos) {
        if (bodyTimer == null) {
            bodyTimer = ctx.executor().schedule(this::checkBodyTimer, delayNanos, TimeUnit.NANOSECONDS);
        }
    }

    private void checkBodyTimer() {
        bodyTimer = null;
        if (body != Body.READING || state != State.EXCHANGE) {
            return;
        }
        if (!bodyWanted) {
            return; // re-armed when the exchange wants bytes again
        }
        long quiet = System.nanoTime() - bodyProgressNanos;
        if (quiet < bodyTimeoutNanos) {
            armBodyTimer(bodyTimeoutNanos - quiet);
            return;
        }
        long ms = TimeUnit.NANOSECONDS.toMillis(bodyTimeoutNanos);
        log.info(
                "client {} sent no request body byte for {} ms: 408, request id {}",
                ctx.channel().remoteAddress(),
                ms,
                requestId);
        failBody(SpectorException.of(
                ErrorCode.REQUEST_TIMEOUT,
                "the request body stalled: no byte for " + ms + " ms (spector.server.body-timeout)",
                Map.of("phase", "body", "timeoutMs", ms)));
    }

    private void onMalformed(Throwable cause) {
        log.debug(
                "client {} sent a malformed request body: {}, request id {}",
                ctx.channel().remoteAddress(),
                cause.toString(),
                requestId);
        failBody(SpectorException.badRequest("body", "malformed request body: " + cause.getMessage()));
    }

    private void failBody(SpectorException error) {
        if (state != State.EXCHANGE) {
            return; // a malformed head was answered already; the connection is closing
        }
        body = Body.FAILED;
        bodyWanted = false;
        cancelBodyTimer();
        ctx.channel().config().setAutoRead(false);
        Exchange e = exchange;
        if (e != null) {
            e.onBodyFailed(error); // the exchange aborts upstream, then answers through problem() or reset()
        } else if (!responseStarted) {
            answer(Responses.problem(error, null, requestId));
        } else {
            close();
        }
    }

    /**
     * No whole head arrived within the header timeout of its first byte: an exchange of its own,
     * answered 408 and closed, with an access log line (method and path {@code -}, as nginx logs
     * its 408s) and a generated request id (the client's cannot be read from half a head).
     */
    private void onHeadTimeout() {
        headTimer = null;
        if (state != State.AWAITING_HEAD) {
            return;
        }
        long firstByte = headStartNanos;
        cancelHeadTimer();
        long now = System.nanoTime();
        start(
                "malformed",
                RequestIds.generate(),
                firstByte,
                System.currentTimeMillis() - TimeUnit.NANOSECONDS.toMillis(now - firstByte));
        long ms = TimeUnit.NANOSECONDS.toMillis(headTimeoutNanos);
        log.info(
                "client {} sent no whole request head within {} ms: 408, request id {}",
                ctx.channel().remoteAddress(),
                ms,
                requestId);
        SpectorException e = SpectorException.of(
                ErrorCode.REQUEST_TIMEOUT,
                "the request head did not arrive within " + ms + " ms (spector.server.header-timeout)",
                Map.of("phase", "head", "timeoutMs", ms));
        answer(Responses.problem(e, null, requestId)); // no keep-alive: it closes
    }

    // ---- the response ----

    /**
     * Returns {@code length} as header text, reusing the last one this connection sent: a client
     * on keep-alive mostly asks for the same sizes, and a {@code long} header value would be
     * turned into a new {@code String} per response.
     */
    private AsciiString lengthText(long length) {
        AsciiString t = lastLengthText;
        if (t == null || lastLength != length) {
            t = new AsciiString(Long.toString(length));
            lastLength = length;
            lastLengthText = t;
        }
        return t;
    }

    /**
     * Writes the response head. {@code contentLength} is the body's length when known, else -1.
     * Returns false when the response has no body (the caller then calls {@link #end()} at once).
     */
    boolean head(HttpResponseStatus responseStatus, HttpHeaders headers, long contentLength, boolean flush) {
        responseStarted = true;
        status = responseStatus.code();
        boolean bodyless = ResponseFraming.bodyless(headRequest, status);
        long length = ResponseFraming.contentLength(status, contentLength);
        responseLength = bodyless ? -1 : length;
        HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, responseStatus, headers);
        HttpHeaders h = r.headers();
        h.remove(HttpHeaderNames.TRANSFER_ENCODING);
        h.remove(HttpHeaderNames.CONTENT_LENGTH);
        if (length >= 0) { // never on 1xx or 204 (RFC 9110 §8.6); the GET's on HEAD and 304
            h.set(HttpHeaderNames.CONTENT_LENGTH, lengthText(length));
        } else if (!bodyless) {
            if (http10) {
                closeAfterResponse = true; // RFC 9112 §6.1, §6.3: close-delimited, the only framing 1.0 reads
            } else {
                h.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            }
        }
        connectionHeader(h);
        addEdgeHeaders(h);
        // The void promise: a failed write reaches GatewayHandler.exceptionCaught, which closes,
        // with no promise nor the encoder's promise combiner per write (issue 14).
        ctx.write(r, ctx.voidPromise());
        if (flush) {
            ctx.flush();
            watchHeldBytes();
        }
        return !bodyless;
    }

    /** Tells an HTTP/1.1 client that sent {@code Expect: 100-continue} to send its body now. */
    void sendContinue() {
        if (state == State.EXCHANGE && !responseStarted && !continueSent && body == Body.READING) {
            continueSent = true;
            ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE));
        }
    }

    /**
     * Switches protocols: writes the owner's {@code 101} head, takes the HTTP handlers out of both
     * pipelines (what their decoders still held goes first), and splices the two connections
     * (Splice, with {@code idleTimeout}). Must run on the event loop of both channels, in the
     * owner's read of the {@code 101}, so no byte of either side is read in between.
     */
    void upgrade(HttpResponseStatus switching, HttpHeaders headers, Channel owner, Duration idleTimeout) {
        if (state != State.EXCHANGE || responseStarted || !owner.eventLoop().inEventLoop()) {
            owner.close();
            reset();
            return;
        }
        owner.config().setAutoRead(false);
        ByteBuf fromOwner = Splice.removeCodec(owner.pipeline(), OWNER_CODEC);
        Channel client = ctx.channel();
        ByteBuf fromClient = switchProtocols(switching, headers);
        Splice splice = Splice.join(client, owner, idleTimeout, fromClient, fromOwner);
        splice.closeFuture().addListener(f -> {
            state = State.CLOSED;
            log.debug(
                    "upgraded connection {} ended: {} bytes up, {} down, request id {}",
                    client.remoteAddress(),
                    splice.bytesClientToOwner(),
                    splice.bytesOwnerToClient(),
                    requestId);
            bytesIn = splice.bytesClientToOwner();
            bytesOut = splice.bytesOwnerToClient();
            countEnd(status);
        });
    }

    /**
     * Switches protocols for a relayed upgrade (uplink v2, docs/PROTOCOL.md section 9.7): writes
     * the worker's {@code 101} head with {@code Upgrade: <protocol>} and {@code Connection:
     * upgrade} (hop-by-hop, so this hop writes them, RFC 9110 §7.8), takes the HTTP handlers out,
     * and starts {@code splice} with what the codec still held and the 101's body. Runs on this
     * connection's loop.
     */
    void relayUpgrade(
            HttpResponseStatus switching,
            HttpHeaders headers,
            String protocol,
            RelaySplice splice,
            BodySource fromWorker) {
        if (state != State.EXCHANGE || responseStarted) {
            fromWorker.cancel(new IllegalStateException("the client connection is " + state));
            reset();
            return;
        }
        headers.set(HttpHeaderNames.UPGRADE, protocol);
        headers.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE);
        Channel client = ctx.channel();
        ByteBuf fromClient = switchProtocols(switching, headers);
        splice.closeFuture().thenRun(() -> {
            state = State.CLOSED;
            log.debug(
                    "relayed upgraded connection {} ended: {} bytes up, {} down, request id {}",
                    client.remoteAddress(),
                    splice.bytesUp(),
                    splice.bytesDown(),
                    requestId);
            bytesIn = splice.bytesUp();
            bytesOut = splice.bytesDown();
            countEnd(status);
        });
        splice.start(client, fromClient, fromWorker);
    }

    /**
     * The client half of a switch: writes the {@code 101} head (flushed) and removes the HTTP
     * codec and handlers from the client's pipeline in the same task, so no byte is read in
     * between; returns what the codec held (the caller's).
     */
    private ByteBuf switchProtocols(HttpResponseStatus switching, HttpHeaders headers) {
        responseStarted = true;
        responseEnded = true;
        status = switching.code();
        state = State.UPGRADED;
        Channel client = ctx.channel();
        client.config().setAutoRead(false);
        headers.set(RequestIds.HEADER, requestId);
        ctx.writeAndFlush(new DefaultHttpResponse(HttpVersion.HTTP_1_1, switching, headers));
        // What the client sent behind its handshake: held in the decoder since the request's end.
        ByteBuf fromClient = client.pipeline().get(CLIENT_CODEC) != null
                ? Splice.removeCodec(client.pipeline(), CLIENT_CODEC)
                : Unpooled.EMPTY_BUFFER;
        cancelBodyTimer();
        exchange = null;
        for (String name : HTTP_HANDLERS) {
            if (client.pipeline().get(name) != null) {
                client.pipeline().remove(name);
            }
        }
        // The switched connection's send clock: a client that only writes and never reads would
        // keep a splice's idle timer (bytes read either way) alive for ever, the owner connection
        // or a worker's relay slot with it (found by a review). nginx arms send_timeout on an
        // upgraded connection's blocked write the same way. Watched for the connection's life.
        armSendClock();
        return fromClient;
    }

    /** Writes a part of the response body (not flushed). */
    void chunk(ByteBuf chunk) {
        bytesOut += chunk.readableBytes();
        ctx.write(new DefaultHttpContent(chunk), ctx.voidPromise());
    }

    /**
     * Offers this connection's socket for the rest of the response body, spliced from an owner's
     * ({@code ResponseSplice}), or answers null: the response must be framed by its {@code
     * Content-Length} (the bytes go out as they come), the connection plain (TLS encrypts in the
     * JVM) on a native epoll or io_uring socket, and a pipe slot free or already held ({@link
     * SplicePipes}).
     */
    @Nullable
    Channel spliceTarget() {
        Channel ch = ctx.channel();
        if (state != State.EXCHANGE
                || !responseStarted
                || responseEnded
                || responseLength < 0
                || !context.splicePipes().enabled()
                || !(ch instanceof io.netty.channel.epoll.EpollSocketChannel
                        || ch instanceof io.netty.channel.uring.IoUringSocketChannel)
                || ctx.pipeline().get(ServerTls.HANDLER_NAME) != null) {
            return null;
        }
        if (!holdsPipe) {
            if (!context.splicePipes().claim(ch)) {
                return null;
            }
            holdsPipe = true;
        }
        // A splice's bytes wait in the kernel's pipe and a task in the outbound buffer that does not
        // make the channel unwritable, and Netty then pauses the owner itself: the send clock runs.
        splicing = true;
        armSendClock();
        return ch;
    }

    /** Counts {@code bytes} of the response body that went to the client by splice. */
    void spliced(long bytes) {
        bytesOut += bytes;
    }

    /** Writes out what {@link #chunk} queued. */
    void flush() {
        ctx.flush();
        watchHeldBytes();
    }

    /** Answers whether the client connection takes more bytes now. */
    boolean isWritable() {
        return ctx.channel().isWritable();
    }

    /** Ends the response with its last chunk; the connection is reused or closed. */
    void end() {
        end(LastHttpContent.EMPTY_LAST_CONTENT);
    }

    /**
     * Ends the response with {@code last}, its last part (this side owns it), in one write with
     * the end: one pass through the pipeline and the encoder instead of two (issue 14).
     */
    void end(ByteBuf last) {
        if (state != State.EXCHANGE) {
            last.release();
            return;
        }
        bytesOut += last.readableBytes();
        // No trailer map of its own (a response's trailers are not passed on): one empty header
        // map less per response (issue 14).
        end(new DefaultLastHttpContent(last, EmptyHttpHeaders.INSTANCE));
    }

    private void end(LastHttpContent last) {
        if (state != State.EXCHANGE) {
            last.release();
            return;
        }
        boolean reusable = reusable();
        responseEnded = true;
        state = reusable ? State.EXCHANGE : State.CLOSING;
        ctx.writeAndFlush(last).addListener(f -> {
            if (reusable && f.isSuccess()) {
                exchangeEnded(true);
            } else {
                exchangeEnded(false);
                closeAfterFlush(f.isSuccess());
            }
        });
        watchHeldBytes();
    }

    /** Resets a connection whose response began and cannot be completed honestly. */
    void reset() {
        if (state == State.CLOSED) {
            return;
        }
        state = State.CLOSING;
        wasReset = true;
        exchangeEnded(false);
        abort(ctx.channel());
    }

    /**
     * Closes a client connection with a TCP reset (SO_LINGER 0), and over TLS without a
     * close_notify: the close starts at the {@link SslHandler}'s own context, below it, as a close
     * through it would send close_notify first (Netty's {@code SslHandler.close}), the clean end of
     * the stream (RFC 8446 §6.1), and an HTTP/1.0 client reading a close-delimited body would take
     * a cut one for whole (found by a review). Call it on the channel's event loop.
     */
    static void abort(Channel ch) {
        ch.config().setOption(ChannelOption.SO_LINGER, 0);
        ChannelHandlerContext tls = ch.pipeline().context(SslHandler.class);
        if (tls != null) {
            tls.close();
        } else {
            ch.close();
        }
    }

    /**
     * Closes the connection as the gateway stops or fails it: with a reset when a response is under
     * way, its last bytes written or not ({@link #reset}; the client learns its body was cut,
     * whatever its framing, a close-delimited one included), else with a close after what is
     * written.
     */
    void closeCutting() {
        // counted: the exchange has not ended, so the response's last write, even if queued,
        // has not reached the socket, and a close would drop what is still in the outbound
        // buffer before a FIN (found by a review).
        if (responseStarted && (!responseEnded || counted)) {
            reset();
        } else {
            ctx.close();
        }
    }

    /** Answers a failure before any response started, with the edge headers; resets after a start. */
    void problem(SpectorException error, @Nullable String path) {
        if (responseStarted) {
            reset();
            return;
        }
        answer(Responses.problem(error, path, requestId));
    }

    /**
     * Answers with a whole response the gateway made (a local route, a problem), with the edge
     * headers; the connection stays open only when the request was read whole and both sides
     * keep it alive.
     */
    void answer(FullHttpResponse r) {
        if (state != State.EXCHANGE) {
            r.release();
            return;
        }
        responseStarted = true;
        status = r.status().code();
        error = RequestIds.problemCode(r);
        if (body == Body.READING) {
            closeAfterResponse = true; // a body nobody reads: nginx closes too rather than drain it
        }
        HttpHeaders h = r.headers();
        connectionHeader(h);
        addEdgeHeaders(h);
        if (ResponseFraming.bodyless(headRequest, status)) {
            r.content().clear(); // the encoder sends the head only; Content-Length stays the GET's
        }
        bytesOut += r.content().readableBytes();
        boolean reusable = reusable();
        responseEnded = true;
        state = reusable ? State.EXCHANGE : State.CLOSING;
        ctx.writeAndFlush(r).addListener(f -> {
            if (reusable && f.isSuccess()) {
                exchangeEnded(true);
            } else {
                exchangeEnded(false);
                closeAfterFlush(f.isSuccess());
            }
        });
        watchHeldBytes();
    }

    private boolean reusable() {
        return keepAlive
                && !closeAfterResponse
                && body == Body.COMPLETE
                && !context.drain().isDraining();
    }

    private void connectionHeader(HttpHeaders h) {
        h.remove(HttpHeaderNames.CONNECTION);
        if (!reusable()) {
            h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (http10) {
            h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
    }

    private void addEdgeHeaders(HttpHeaders h) {
        h.set(RequestIds.NAME, requestId);
        HttpHeaders request = corsRequest;
        if (request != null) {
            context.cors().decorate(request, h); // adds: Vary merged, an upstream's own CORS answer kept
        }
    }

    // ---- the connection's events ----

    void onReadComplete() {
        if (state == State.AWAITING_HEAD && headStartNanos != 0 && headTimer == null) {
            ClientCodec.Decoder d = decoder();
            if (d != null && !d.isPaused() && !d.holdsPartialHead()) {
                // Only the empty lines a client may send between requests (RFC 9112 §2.2, e.g. a
                // CRLF after a POST's body): no head begun, the idle clock goes on, no 408 (found
                // by a review: the head clock ran, and a 408 could race the client's next request).
                headStartNanos = 0;
            } else {
                armHeadTimer();
            }
        }
        Exchange e = exchange;
        if (e != null && state == State.EXCHANGE) {
            if (pullPending && body == Body.READING && !ctx.channel().config().isAutoRead()) {
                ctx.channel().read(); // the batch brought no body part: the pull stands (see readBody)
            }
            e.onReadComplete();
        }
    }

    void onWritable() {
        Exchange e = exchange;
        if (e != null && state == State.EXCHANGE) {
            e.onWritable();
        }
    }

    // ---- the send clock ----

    /**
     * The connection holds more response bytes than its high-water mark: the client has until
     * {@code spector.server.send-timeout} to take some ({@link #armSendClock}).
     */
    void onUnwritable() {
        armSendClock();
    }

    /**
     * After a flush: bytes the socket did not take at once start the send clock, however few. A
     * client that stops reading with less than the high-water mark waiting (a small answer, the
     * end of a large one, an event stream's heartbeats once the kernel's buffers are full) was
     * held for ever: no timer ran until the buffer passed the mark, and the connection, mid
     * exchange, was neither idle nor reusable (found by a review). nginx arms {@code send_timeout}
     * on every write that blocks. On the usual flush the socket takes everything: one look.
     */
    private void watchHeldBytes() {
        if (sendTimer == null) {
            ChannelOutboundBuffer out = ctx.channel().unsafe().outboundBuffer();
            if (out != null && !out.isEmpty()) {
                armSendClock();
            }
        }
    }

    /**
     * Runs the send clock while response bytes wait for the client (a flush left some, the
     * connection is not writable, or a response is spliced to it). Checked once per timeout: any
     * progress of the outbound buffer's first message since the last check (the socket took bytes
     * of it, or all of it and the next one is first) starts a new period, as Netty's {@code
     * IdleStateHandler} observes output; so a client that takes nothing while bytes wait for it is
     * reset between one and two timeouts after it stopped, whatever the buffer's writability. The
     * clock stops once nothing waits; one timer per stall.
     */
    private void armSendClock() {
        if (sendTimer == null && state != State.CLOSED) {
            observeOutput();
            sendTimer = ctx.executor().schedule(this::checkSend, sendTimeoutNanos, TimeUnit.NANOSECONDS);
        }
    }

    private void checkSend() {
        sendTimer = null;
        Channel ch = ctx.channel();
        if (state == State.CLOSED || !ch.isActive()) {
            return;
        }
        ChannelOutboundBuffer out = ch.unsafe().outboundBuffer();
        // io_uring's spliced bytes wait in the splice's pipe, not in the outbound buffer (UringSplice).
        boolean held = (out != null && !out.isEmpty()) || (splicing && ResponseSplice.holdsBytesFor(ch));
        boolean moved = observeOutput();
        if (!held || moved) {
            if (held || splicing || !ch.isWritable() || state == State.UPGRADED) {
                sendTimer = ctx.executor().schedule(this::checkSend, sendTimeoutNanos, TimeUnit.NANOSECONDS);
            }
            return;
        }
        log.info(
                "client {} took no response byte for {} ms with {} bytes waiting for it (spector.server.send-timeout):"
                        + " connection reset, request id {}",
                clientAddress(),
                TimeUnit.NANOSECONDS.toMillis(sendTimeoutNanos),
                out == null ? 0 : out.totalPendingWriteBytes(),
                requestId);
        context.metrics().sendTimeout();
        if (state == State.UPGRADED) {
            abort(ch); // the splice ends the other side with it
            return;
        }
        if (error == null) {
            error = SEND_TIMEOUT;
        }
        Exchange e = exchange;
        reset();
        if (e != null) {
            e.onClosed(); // ends as when the client goes: the owner connection is closed, never pooled
        }
    }

    /** Notes the outbound buffer's first message and its progress; answers whether they moved since the last note. */
    private boolean observeOutput() {
        ChannelOutboundBuffer out = ctx.channel().unsafe().outboundBuffer();
        if (out == null) {
            return false;
        }
        int message = System.identityHashCode(out.current());
        long progress = out.currentProgress();
        boolean moved = message != sendMessage || progress != sendProgress || (splicing && bytesOut != sendBytesOut);
        sendMessage = message;
        sendProgress = progress;
        sendBytesOut = bytesOut; // a splice on io_uring moves bytes past the outbound buffer
        return moved;
    }

    private void cancelSendTimer() {
        ScheduledFuture<?> t = sendTimer;
        if (t != null) {
            t.cancel(false);
            sendTimer = null;
        }
    }

    void onClosed() {
        cancelHeadTimer();
        cancelBodyTimer();
        cancelIdleTimer();
        cancelSendTimer();
        releaseWaiting();
        idleConnections.remove(reusableEntry);
        state = State.CLOSED;
        Exchange e = exchange;
        exchange = null;
        if (e != null) {
            e.onClosed(); // an exchange that already ended ignores it
        }
        countEnd(responseEnded ? status : 499);
    }

    /**
     * The gateway's handler left the pipeline: the connection is no longer HTTP (an uplink's
     * WebSocket, or an upgrade spliced here). No timer of this side may fire on it any more.
     */
    void onRemoved() {
        cancelHeadTimer();
        cancelBodyTimer();
        cancelIdleTimer();
        cancelSendTimer();
        releaseWaiting();
        idleConnections.remove(reusableEntry);
        if (state == State.AWAITING_HEAD) {
            state = State.CLOSED;
        }
    }

    void close() {
        ctx.close();
    }

    /**
     * Closes after a response that said {@code Connection: close}. When the client may still be
     * sending a body we did not read, closing at once would make the kernel answer its bytes with
     * a reset, which can destroy the response before the client reads it (RFC 9112 §9.6). So, as
     * nginx's {@code lingering_close} does, the gateway half-closes, reads and discards for at
     * most {@link #LINGER_TIME}, then closes.
     */
    private void closeAfterFlush(boolean flushed) {
        Channel ch = ctx.channel();
        // Unread bytes at the close make the kernel answer with a reset, which can destroy the
        // response just written (RFC 9112 §9.6): a body not read whole, and also requests a
        // client that keeps its connection may have pipelined behind this one, decoded, held or
        // still in the socket where no one sees them (found by a review; nginx lingers when its
        // pipeline buffer holds data or the socket is readable, which Netty does not tell).
        boolean unread = body != Body.COMPLETE || clientKeepsAlive || waiting != null || holdsPipelinedBytes();
        if (!flushed || !unread || !(ch instanceof DuplexChannel duplex) || !ch.isActive()) {
            ctx.close();
            return;
        }
        // Over TLS the FIN goes behind a close_notify (RFC 8446 §6.1): the socket's half close
        // alone skipped the TLS layer, and a strict client read a truncated stream.
        SslHandler tls = ch.pipeline().get(SslHandler.class);
        ChannelFuture notified = tls == null ? ch.newSucceededFuture() : tls.closeOutbound();
        notified.addListener(n -> duplex.shutdownOutput().addListener(f -> {
            if (!f.isSuccess()) {
                ctx.close();
                return;
            }
            lingering = true;
            ClientCodec.Decoder d = decoder();
            if (d != null) {
                d.resumeToDiscard(); // a paused or held decoder would keep what arrives: decoded, it is dropped
            }
            ch.config().setAutoRead(true); // whatever still arrives is read and released (state CLOSING)
            ctx.executor().schedule(() -> ctx.close(), LINGER_TIME.toNanos(), TimeUnit.NANOSECONDS);
        }));
    }

    private void exchangeEnded(boolean reuse) {
        Exchange ended = exchange;
        exchange = null;
        if (ended != null) {
            ended.onEnded();
        }
        splicing = false; // the send clock goes on only while bytes wait and the buffer is full
        cancelBodyTimer();
        countEnd(status);
        if (reuse && state == State.EXCHANGE) {
            state = State.AWAITING_HEAD;
            idleSinceNanos = System.nanoTime();
            idleConnections.idle(reusableEntry);
            if (waiting != null) {
                dispatchWaiting(); // the next request, pipelined: its exchange may start (or end) here
            } else if (headStartNanos != 0 && headTimer == null) {
                armHeadTimer(); // part of a next head came during the exchange: its clock runs
            } else if (headStartNanos == 0 && headTimer == null && holdsPartialHead()) {
                // Part of a next head came in the read of the request before it: no read since
                // started its clock (onBytes), and the idle timer would close the connection in
                // silence. Its clock starts now, the latest its first byte can have come.
                headStartNanos = System.nanoTime() | 1;
                armHeadTimer();
            }
            if (waiting == null
                    && (state == State.AWAITING_HEAD
                            || (state == State.EXCHANGE && body != Body.READING && !upgradeRequest))) {
                // A no-op unless a pipelined request stopped it; never behind an upgrade that arrived
                // whole (the next request's, dispatched above): what follows it is not HTTP.
                ctx.channel().config().setAutoRead(true);
            }
        } else if (state != State.CLOSED) {
            state = State.CLOSING;
        }
    }

    /** Counts the exchange's end once: metrics and the drain's in-flight count. */
    private void countEnd(int code) {
        if (counted) {
            counted = false;
            long took = System.nanoTime() - startNanos;
            context.metrics().request(route, code, took);
            AccessLog access = context.accessLog();
            if (access.enabled()) {
                access.log(new AccessLog.Entry(
                        startMillis,
                        requestId,
                        clientAddress(),
                        method,
                        path,
                        responseStarted ? status : 0,
                        bytesIn,
                        bytesOut,
                        took,
                        upstreamHeadNanos,
                        route,
                        upstream,
                        attempts,
                        retargets,
                        tenant,
                        wasReset ? "reset" : responseEnded ? "completed" : "client-gone",
                        error,
                        traceId));
            }
        }
        if (inFlight) {
            inFlight = false;
            context.drain().exchangeEnded();
        }
    }

    private void armHeadTimer() {
        long left = headTimeoutNanos - (System.nanoTime() - headStartNanos);
        headTimer = ctx.executor().schedule(this::onHeadTimeout, Math.max(0, left), TimeUnit.NANOSECONDS);
    }

    private void cancelHeadTimer() {
        headStartNanos = 0;
        ScheduledFuture<?> t = headTimer;
        if (t != null) {
            t.cancel(false);
            headTimer = null;
        }
    }

    private void cancelBodyTimer() {
        ScheduledFuture<?> t = bodyTimer;
        if (t != null) {
            t.cancel(false);
            bodyTimer = null;
        }
    }
}
