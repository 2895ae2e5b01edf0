package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.DecodedHeaders;
import com.spectrayan.spector.cluster.gateway.ForwardRequest;
import com.spectrayan.spector.cluster.gateway.ForwardingHeaders;
import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.gateway.RequestBody;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.gateway.auth.Claims;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.time.Duration;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's request pipeline for one client connection: it decodes, checks the request target
 * and Host ({@link RequestTarget}), answers local routes (health, metrics, CORS preflight),
 * authenticates, routes, and hands the exchange to the one client side ({@link ClientConnection})
 * with a forwarded ({@link ForwardedExchange}) or relayed ({@link RelayedExchange}) exchange.
 *
 * <p>Everything about the connection itself (reading the body, framing, keep-alive, ending) is
 * the {@link ClientConnection}'s. Decisions use the normalized path only: the skip list, auth,
 * routing and the relay route never see the raw target.
 *
 * <p>Threading: confined to the connection's event loop.
 */
final class GatewayHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(GatewayHandler.class);

    /** What {@code OPTIONS *} answers (RFC 9110 §9.3.7): the methods the gateway forwards. */
    static final String ALLOW = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";

    /**
     * The longest a request head may take on the peer port, whatever {@code
     * spector.server.header-timeout} says (when it says less, that): a replica writes its head
     * whole, so a head still arriving after this is no replica's, and each such connection holds
     * one of the port's {@code max-connections} (a review filled them with half-sent heads, and
     * every hop to the replica failed). nginx's {@code client_header_timeout}, kept short on an
     * internal listener.
     */
    static final Duration PEER_HEADER_TIMEOUT = Duration.ofSeconds(2);

    /** The methods the gateway's own read-only resources serve (health, the scrape, the status views). */
    static final String READ_ONLY = "GET, HEAD";

    /** The FORBIDDEN reason of a valid token without {@link Claims#ADMIN_SCOPE} on a status view. */
    static final String INSUFFICIENT_SCOPE = "insufficient-scope";

    /** The challenge that goes with it (RFC 6750 §3.1). */
    private static final String ADMIN_CHALLENGE =
            "Bearer error=\"insufficient_scope\", scope=\"" + Claims.ADMIN_SCOPE + "\"";

    // Routing header names made once: a String name is hashed per look-up, an AsciiString once.
    private static final AsciiString NAMESPACE = AsciiString.cached(SpectorHeaders.NAMESPACE);
    private static final AsciiString TENANT = AsciiString.cached(SpectorHeaders.TENANT);

    private final GatewayContext context;
    private final long idleNanos;
    private final String scheme;
    private final @Nullable PeerRelay peer;
    private final ReusableConnections reusable;
    private @Nullable ClientConnection connection;
    private @Nullable Boolean trusted; // the connection's client, decided at its first request

    /**
     * A handler for a connection of the plain listener ({@code tls} false) or the TLS one, on the
     * client port ({@code peer} null) or on the peer listener: there every checked request goes to
     * {@code peer}, and no client route is served. A connection that sits between requests for
     * {@code idleTimeout} ({@code spector.server.idle-timeout}) is closed. The connection is among
     * {@code reusable} whenever it is idle: its listener's, which closes the longest idle one to make
     * room at its connection limit.
     */
    GatewayHandler(
            GatewayContext context,
            boolean tls,
            @Nullable PeerRelay peer,
            Duration idleTimeout,
            ReusableConnections reusable) {
        this.context = context;
        this.reusable = reusable;
        this.idleNanos = idleTimeout.toNanos();
        this.scheme = tls ? "https" : "http";
        this.peer = peer;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        // The peer port's heads come whole from a replica: a head that takes longer is no replica's,
        // and holds one of the port's connections meanwhile (a review held them all with half heads).
        Duration headTimeout = peer == null
                ? context.headerTimeout()
                : (context.headerTimeout().compareTo(PEER_HEADER_TIMEOUT) < 0
                        ? context.headerTimeout()
                        : PEER_HEADER_TIMEOUT);
        ClientConnection c = new ClientConnection(
                ctx, context, idleNanos, headTimeout.toNanos(), reusable, msg -> dispatch(ctx, msg));
        connection = c;
        c.startIdleClock();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        ClientConnection c = connection;
        if (c != null) {
            c.onRemoved(); // an uplink upgrade took the connection: its head timer must not fire
        }
    }

    /** Returns the connection this handler serves (on its loop). */
    ClientConnection connection() {
        ClientConnection c = connection;
        if (c == null) {
            throw new IllegalStateException("handler not added");
        }
        return c;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!connection().holdBack(msg)) { // a pipelined request waits for the running exchange's end
            dispatch(ctx, msg);
        }
    }

    private void dispatch(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof HttpRequest request) {
            try {
                onRequest(ctx, request);
            } finally {
                if (!(msg instanceof HttpContent)) {
                    ReferenceCountUtil.release(msg);
                }
            }
        }
        if (msg instanceof HttpContent content) {
            connection().onContent(content);
        } else if (!(msg instanceof HttpRequest)) {
            ReferenceCountUtil.release(msg);
        }
    }

    private void onRequest(ChannelHandlerContext ctx, HttpRequest request) {
        DecodedHeaders.seal(request.headers()); // decoded: the names set from here on are constants
        ClientConnection c = connection();
        PeerRelay relay = peer;
        // On the peer port the MAC is checked once, here: it decides whose request id counts, and
        // the relay refuses what it refused.
        String macRefusal = relay == null ? null : relay.refusal(request);
        if (!c.begin(request, "malformed", relay != null ? macRefusal == null : trusted(c))) {
            return; // the connection is ending: a request behind its last response is dropped
        }
        if (request.decoderResult().isFailure()) {
            c.closeAfterResponse(); // the decoder discards the rest of the connection
            c.answer(Responses.decoderFailure(request.decoderResult().cause(), c.requestId()));
            return;
        }
        HttpVersion version = request.protocolVersion();
        if (version.majorVersion() != 1) {
            // RFC 9112 §2.3, RFC 9110 §15.6.6: this edge speaks HTTP/1.x on this port; "HTTP/2.0"
            // or "HTTP/0.9" in a request line is refused (nginx: 505), not served as HTTP/1.1.
            c.closeAfterResponse();
            c.answer(Responses.problem(
                    SpectorException.badRequest("version", version.text() + " (expected: HTTP/1.0 or HTTP/1.1)"),
                    null,
                    c.requestId(),
                    HttpResponseStatus.HTTP_VERSION_NOT_SUPPORTED));
            return;
        }
        String tooMany = relay == null ? RequestHeaders.tooManyFieldLines(request.headers()) : null;
        if (tooMany != null) { // a peer's request carries the hop's own fields beside its client's
            c.closeAfterResponse(); // as for a head past its bytes: nginx and Envoy close too
            c.answer(Responses.problem(
                    SpectorException.badRequest("headers", tooMany),
                    null,
                    c.requestId(),
                    HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE));
            return;
        }
        String badLength = RequestHeaders.contentLengthProblem(request.headers());
        if (badLength != null) {
            c.closeAfterResponse(); // RFC 9112 §6.3: 400, then close (the framing cannot be trusted)
            c.answer(Responses.problem(SpectorException.badRequest("Content-Length", badLength), null, c.requestId()));
            return;
        }
        if (HttpMethod.TRACE.equals(request.method())) {
            // RFC 9110 §9.3.8: TRACE echoes the request as received, with the gateway's own fields
            // (X-Forwarded-*, the routing headers and epoch) and any credential a client's script
            // can then read; nginx refuses it always (405), and so does this edge, as a method it
            // does not serve for any resource (501, RFC 9110 §15.6.2; not in OPTIONS' Allow).
            c.answer(Responses.problem(
                    SpectorException.of(
                            ErrorCode.NOT_IMPLEMENTED,
                            "method TRACE is not served (expected one of " + ALLOW + ")",
                            Map.of("feature", "TRACE")),
                    null,
                    c.requestId()));
            return;
        }
        String coding = RequestHeaders.unknownTransferCoding(request.headers());
        if (coding != null) {
            c.closeAfterResponse(); // the body's framing is one the gateway does not read
            c.answer(Responses.problem(
                    SpectorException.of(
                            ErrorCode.NOT_IMPLEMENTED,
                            "transfer coding '" + coding + "' is not supported (expected: chunked alone)",
                            Map.of("feature", "Transfer-Encoding: " + coding)),
                    null,
                    c.requestId()));
            return;
        }
        RequestTarget target;
        try {
            target = RequestTarget.parse(request.method(), request.uri(), request.protocolVersion(), request.headers());
        } catch (SpectorException e) {
            log.debug(
                    "refused request target from {}: {}, request id {}",
                    ctx.channel().remoteAddress(),
                    e.getMessage(),
                    c.requestId());
            c.closeAfterResponse(); // nginx closes after a 400 for a bad target or Host too
            c.answer(Responses.problem(e, null, c.requestId()));
            return;
        }
        c.path(target.path());
        if (relay != null) {
            relay.serve(ctx, c, request, target, context, macRefusal);
            return;
        }
        if (target.form() == RequestTarget.Form.ASTERISK) {
            c.route("options");
            FullHttpResponse r = Responses.full(HttpResponseStatus.OK, "text/plain", new byte[0]);
            r.headers().set(HttpHeaderNames.ALLOW, ALLOW);
            c.answer(r);
            return;
        }
        String authority = target.authority();
        if (target.form() == RequestTarget.Form.ABSOLUTE && authority != null) {
            request.headers().set(HttpHeaderNames.HOST, authority); // RFC 9112 §3.2.2: it replaces Host
        }
        String path = target.path();
        if (!isRead(request.method()) && context.local().readOnly(path)) {
            c.route(context.local().routeName(path));
            c.answer(methodNotAllowed(path, c.requestId()));
            return;
        }
        if (path.equals(LocalEndpoints.PROMETHEUS)) {
            // Rendered off this loop; the exchange ends when the answer comes back to it. A client
            // that closes meanwhile ends it as any other (onClosed), and gets no answer.
            c.route(context.local().routeName(path));
            context.local().scrape(ctx.channel(), HttpMethod.HEAD.equals(request.method()), c.requestId(), c::answer);
            return;
        }
        FullHttpResponse local = context.local().answer(request.method(), path, request.headers());
        if (local != null) {
            c.route(context.local().routeName(path));
            c.answer(local);
            return;
        }
        boolean admin = path.equals(RelayRoute.WORKERS) || path.equals(GatewayStatus.PATH);
        if (admin || path.startsWith(RelayRoute.PREFIX)) {
            onRelayOrAdmin(ctx, c, request, target, admin);
            return;
        }
        if (!path.startsWith("/api/v1/")) {
            c.route("not-found");
            c.answer(Responses.problem(
                    SpectorException.of(ErrorCode.NOT_FOUND, "no route for " + path, Map.of("path", path)),
                    path,
                    c.requestId()));
            return;
        }
        onForward(ctx, c, request, target);
    }

    private static boolean isRead(HttpMethod method) {
        return HttpMethod.GET.equals(method) || HttpMethod.HEAD.equals(method);
    }

    /** The answer to a method a read-only resource does not serve: 405 with {@code Allow} (RFC 9110 §15.5.6). */
    private static FullHttpResponse methodNotAllowed(String path, @Nullable String requestId) {
        FullHttpResponse r = Responses.problem(
                SpectorException.badRequest("method", READ_ONLY + " only"),
                path,
                requestId,
                HttpResponseStatus.METHOD_NOT_ALLOWED);
        r.headers().set(HttpHeaderNames.ALLOW, READ_ONLY);
        return r;
    }

    private void onRelayOrAdmin(
            ChannelHandlerContext ctx, ClientConnection c, HttpRequest request, RequestTarget target, boolean admin) {
        String path = target.path();
        c.route(admin ? path.substring(path.lastIndexOf('/') + 1) : "relay");
        if (!admin && context.cors() != Cors.OFF) {
            c.decorateForCors(request.headers()); // DESIGN 10: every exchange's answer, relayed too
        }
        Map<String, Object> claims;
        try {
            claims = context.auth().authenticate(context.tokens().find(request.headers(), target.query()));
        } catch (SpectorException e) {
            refuse(c, e, path);
            return;
        }
        if (!admin && loops(c, request, path)) { // after auth: a loop carries its client's token round
            return;
        }
        if (admin && context.auth() != EdgeAuthenticator.NONE && !Claims.grants(claims, Claims.ADMIN_SCOPE)) {
            // The views name every owner's address and every worker: the cell's, not a tenant's.
            // RFC 6750 §3.1: a valid token short of a scope is 403 insufficient_scope.
            c.route("rejected");
            FullHttpResponse r = Responses.problem(
                    SpectorException.of(
                            ErrorCode.FORBIDDEN,
                            "the status views need a token with scope " + Claims.ADMIN_SCOPE,
                            Map.of("reason", INSUFFICIENT_SCOPE)),
                    path,
                    c.requestId());
            r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, ADMIN_CHALLENGE);
            c.answer(r);
            return;
        }
        if (admin) {
            c.answer(
                    !isRead(request.method())
                            ? methodNotAllowed(path, c.requestId())
                            : path.equals(GatewayStatus.PATH)
                                    ? context.status().answer()
                                    : context.relay().workers());
            return;
        }
        String upgrade = Upgrades.isUpgrade(request) ? Upgrades.WEBSOCKET : null;
        context.tokens().removeTokenCookie(request.headers()); // a worker never holds a gateway credential
        String client = c.clientIp();
        // The target reads the address this edge saw, as an owner does: a client's own facts go
        // unless it is a trusted proxy (a peer replica passes on what the first edge set).
        ForwardingHeaders.set(
                request.headers(), context.trustedProxies().contains(client), client, scheme, target.authority());
        context.via().append(request.headers(), request.protocolVersion());
        String workerId = RelayRoute.workerIdOf(path);
        PeerHop hop = context.peerHop();
        if (upgrade != null && workerId != null && hop.forwards(workerId)) {
            c.answer(Responses.problem(Upgrades.relayRefusal(), path, c.requestId())); // no two-way peer hop
            return;
        }
        if (workerId != null && hop.forwards(workerId)) {
            try {
                String tenant = RelayRoute.tenantOf(request, claims);
                String lease = RelayRoute.leaseOf(request);
                hop.forward(ctx, c, request, path, forwardedQuery(target), workerId, tenant, lease, context, null);
            } catch (SpectorException e) {
                c.problem(e, path);
            }
            return;
        }
        RelayedExchange relayed = new RelayedExchange(
                c,
                ctx.executor(),
                path,
                HttpUtil.is100ContinueExpected(request),
                context.metrics(),
                upgrade,
                context.streamIdleTimeout());
        c.start(relayed);
        if (workerId != null && hop != PeerHop.OFF && upgrade == null) {
            // The link seen a moment ago went before the relay started: the hop finds where it is now.
            relayed.onNoLink(() -> {
                try {
                    hop.forward(
                            ctx,
                            c,
                            request,
                            path,
                            forwardedQuery(target),
                            workerId,
                            RelayRoute.tenantOf(request, claims),
                            RelayRoute.leaseOf(request),
                            context,
                            relayed);
                } catch (SpectorException e) {
                    c.problem(e, path);
                }
            });
        }
        RelayRoute.Prepared prepared;
        try { // refused before any body is read, as nginx's access phase runs before its body's
            prepared = context.relay()
                    .prepare(
                            request,
                            path,
                            forwardedQuery(target),
                            RelayRoute.tenantOf(request, claims),
                            RelayRoute.leaseOf(request),
                            c.bodyPending(),
                            relayed);
        } catch (SpectorException e) {
            c.problem(e, path);
            return;
        }
        relayed.startAfterBody(
                declaredLength(request),
                context.requestBufferBytes(),
                context.forwarder().replayBudget(),
                () -> context.relay().start(prepared));
    }

    /** The request's Content-Length, or -1 for a chunked body or none (the edge refused both together). */
    private static long declaredLength(HttpRequest request) {
        return HttpUtil.isTransferEncodingChunked(request) ? -1 : HttpUtil.getContentLength(request, -1L);
    }

    private void onForward(ChannelHandlerContext ctx, ClientConnection c, HttpRequest request, RequestTarget target) {
        String path = target.path();
        c.route("forward");
        HttpHeaders h = request.headers();
        if (context.cors() != Cors.OFF) {
            c.decorateForCors(h);
        }
        RoutingKey key;
        try {
            Map<String, Object> claims = path.startsWith("/api/v1/auth/")
                    ? Map.of()
                    : context.auth().authenticate(context.tokens().find(h, target.query()));
            key = context.extractor().extract(h.get(NAMESPACE), h.get(TENANT), path, claims);
        } catch (SpectorException e) {
            refuse(c, e, path);
            return;
        }
        // After auth (the third review): a loop carries its client's token round, so it is found
        // all the same, and nobody without a token learns the cell's id or raises the loop's WARN.
        if (loops(c, request, path)) {
            return;
        }
        String tenant = key.tenant();
        if (tenant != null) {
            c.tenant(tenant);
        }
        context.via().append(h, request.protocolVersion());
        ForwardedExchange exchange =
                new ForwardedExchange(c, path, HttpUtil.is100ContinueExpected(request), context.streamIdleTimeout());
        c.start(exchange);
        String client = c.clientIp();
        ForwardRequest forward = new ForwardRequest(
                request.method(),
                withQuery(path, forwardedQuery(target)),
                h,
                key,
                c.bodyPending() ? exchange : RequestBody.EMPTY,
                HttpUtil.getContentLength(request, -1L),
                client,
                context.trustedProxies().contains(client),
                scheme,
                target.authority(),
                Upgrades.isUpgrade(request) ? Upgrades.WEBSOCKET : null,
                null);
        try {
            GatewayForwarder.Exchange started =
                    context.forwarder().forward(forward, exchange, ctx.channel().eventLoop());
            exchange.attach(started);
        } catch (SpectorException e) {
            exchange.onError(e, false);
        }
    }

    /**
     * Answers a request that already passed through this cell (its {@code Via}) with 508, and
     * says so: forwarding it again would go round until the pools ran out ({@link Via}).
     */
    private boolean loops(ClientConnection c, HttpRequest request, String path) {
        if (!context.via().loops(request.headers(), path, c.requestId())) {
            return false;
        }
        c.route("loop");
        c.answer(Responses.problem(Via.loopProblem(), path, c.requestId(), Via.LOOP_DETECTED));
        return true;
    }

    /** The query as it travels on: without {@code access_token} when the edge reads it (never upstream). */
    private @Nullable String forwardedQuery(RequestTarget target) {
        String query = target.query();
        return context.tokens().allowsQueryToken() ? BearerTokens.withoutAccessToken(query) : query;
    }

    private static String withQuery(String path, @Nullable String query) {
        return query == null ? path : path + "?" + query;
    }

    private void refuse(ClientConnection c, SpectorException e, String path) {
        c.route(e.code() == ErrorCode.UNAUTHENTICATED ? "unauthenticated" : "rejected");
        FullHttpResponse r = Responses.problem(e, path, c.requestId());
        if (e.code() == ErrorCode.UNAUTHENTICATED) {
            r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, context.auth().challenge(e));
        }
        c.answer(r);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        connection().onReadComplete();
        ctx.fireChannelReadComplete();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            connection().onWritable();
        } else {
            connection().onUnwritable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        connection().onClosed();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("client connection {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        ClientConnection c = connection;
        if (c != null) {
            c.closeCutting(); // a response under way is reset, never ended by a FIN as if whole
        } else {
            ctx.close();
        }
    }

    /** Answers, once per connection, whether its client may set X-Forwarded-* and X-Request-Id. */
    private boolean trusted(ClientConnection c) {
        Boolean t = trusted;
        if (t == null) {
            t = context.trustedProxies().contains(c.clientIp());
            trusted = t;
        }
        return t;
    }

    /**
     * Watches the bytes in front of the HTTP decoder: the first bytes of a request head start the
     * head timer ({@code spector.server.header-timeout}).
     */
    static final class HeadWatch extends ChannelInboundHandlerAdapter {
        private final GatewayHandler gateway;

        HeadWatch(GatewayHandler gateway) {
            this.gateway = gateway;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ClientConnection c = gateway.connection;
            if (c != null && msg instanceof ByteBuf b && b.isReadable()) {
                c.onBytes();
            }
            ctx.fireChannelRead(msg);
        }
    }
}
