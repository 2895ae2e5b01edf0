package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.ForwardRequest;
import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.gateway.RequestBody;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's request pipeline for one client connection: local routes (health, metrics,
 * CORS preflight), then edge auth and routing for {@code /api/v1/**}, then the forwarder.
 *
 * <p>One exchange at a time per connection: reading pauses once a request's body has arrived and
 * resumes when its response is written. A request pipelined behind an unfinished one ends the
 * connection after that response.
 *
 * <p>Threading: confined to the connection's event loop.
 */
final class GatewayHandler extends ChannelInboundHandlerAdapter implements ClientSide.Done {
    private static final Logger log = LoggerFactory.getLogger(GatewayHandler.class);

    private final GatewayContext context;
    private @Nullable ClientSide exchange;
    private @Nullable ChannelHandlerContext context0;
    private boolean discardingBody;
    private boolean closeAfterExchange;
    private long startNanos;
    private String route = "";

    GatewayHandler(GatewayContext context) {
        this.context = context;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        context0 = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
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
            ClientSide e = exchange;
            if (e != null && !discardingBody) {
                e.onContent(content);
            } else {
                content.release();
                if (content instanceof LastHttpContent) {
                    discardingBody = false;
                }
            }
        }
    }

    private void onRequest(ChannelHandlerContext ctx, HttpRequest request) {
        if (exchange != null) {
            closeAfterExchange = true; // pipelined: answer the current one, then end the connection
            discardingBody = true;
            return;
        }
        startNanos = System.nanoTime();
        if (request.decoderResult().isFailure()) {
            Throwable cause = request.decoderResult().cause();
            HttpResponseStatus status = cause instanceof TooLongHttpLineException
                    ? HttpResponseStatus.REQUEST_URI_TOO_LONG
                    : cause instanceof TooLongHttpHeaderException
                            ? HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
                            : cause instanceof TooLongFrameException
                                    ? HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE
                                    : HttpResponseStatus.BAD_REQUEST;
            route = "malformed";
            SpectorException e =
                    SpectorException.badRequest("request", status.reasonPhrase() + ": " + cause.getMessage());
            FullHttpResponse r = Responses.problem(e, null);
            r.setStatus(status);
            answerAndClose(ctx, r);
            return;
        }
        String uri = request.uri();
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        boolean hasBody = HttpUtil.isTransferEncodingChunked(request) || HttpUtil.getContentLength(request, 0L) > 0;
        boolean keepAlive = HttpUtil.isKeepAlive(request) && !context.drain().isDraining();

        FullHttpResponse local = context.local().answer(request.method(), path, request.headers());
        if (local != null) {
            route = context.local().routeName(path);
            answerLocal(ctx, local, keepAlive, hasBody);
            return;
        }
        boolean admin = path.equals(RelayRoute.WORKERS) || path.equals(GatewayStatus.PATH);
        if (admin || path.startsWith(RelayRoute.PREFIX)) {
            route = admin ? path.substring(path.lastIndexOf('/') + 1) : "relay";
            Map<String, Object> claims;
            try {
                claims = context.auth().authenticate(request.headers().get(HttpHeaderNames.AUTHORIZATION));
            } catch (SpectorException e) {
                route = "unauthenticated";
                FullHttpResponse r = Responses.problem(e, path);
                r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, context.auth().challenge(e));
                answerLocal(ctx, r, keepAlive, hasBody);
                return;
            }
            if (admin) {
                FullHttpResponse r = !HttpMethod.GET.equals(request.method())
                        ? Responses.problem(SpectorException.badRequest("method", "GET only"), path)
                        : path.equals(GatewayStatus.PATH)
                                ? context.status().answer()
                                : context.relay().workers();
                answerLocal(ctx, r, keepAlive, hasBody);
                return;
            }
            RelayExchange relayed = new RelayExchange(
                    ctx, this, keepAlive, HttpMethod.HEAD.equals(request.method()), hasBody, path, context.metrics());
            begin(relayed); // before start: a relay may settle at once (no uplink) and end the exchange
            try {
                context.relay().start(request, uri, claims, hasBody, relayed);
            } catch (SpectorException e) {
                end();
                ctx.channel().config().setAutoRead(true);
                answerLocal(ctx, Responses.problem(e, path), keepAlive, hasBody);
            }
            return;
        }
        if (!path.startsWith("/api/v1/")) {
            route = "not-found";
            answerLocal(
                    ctx,
                    Responses.problem(
                            SpectorException.of(ErrorCode.NOT_FOUND, "no route for " + path, Map.of("path", path)),
                            path),
                    keepAlive,
                    hasBody);
            return;
        }
        route = "forward";
        RoutingKey key;
        try {
            Map<String, Object> claims = path.startsWith("/api/v1/auth/")
                    ? Map.of()
                    : context.auth().authenticate(request.headers().get(HttpHeaderNames.AUTHORIZATION));
            HttpHeaders h = request.headers();
            key = context.extractor()
                    .extract(h.get(SpectorHeaders.NAMESPACE), h.get(SpectorHeaders.TENANT), path, claims);
        } catch (SpectorException e) {
            route = e.code() == ErrorCode.UNAUTHENTICATED ? "unauthenticated" : "rejected";
            FullHttpResponse r = Responses.problem(e, path);
            if (e.code() == ErrorCode.UNAUTHENTICATED) {
                r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, context.auth().challenge(e));
            }
            context.cors().decorate(request.headers(), r.headers());
            answerLocal(ctx, r, keepAlive, hasBody);
            return;
        }
        HttpHeaders extra = null;
        if (context.cors() != Cors.OFF) {
            extra = new DefaultHttpHeaders();
            context.cors().decorate(request.headers(), extra);
        }
        ClientExchange exchangeSide = new ClientExchange(
                ctx, this, keepAlive, HttpMethod.HEAD.equals(request.method()), hasBody, path, extra);
        begin(exchangeSide);
        String client = clientAddress(ctx.channel().remoteAddress());
        ForwardRequest forward = new ForwardRequest(
                request.method(),
                uri,
                request.headers(),
                key,
                hasBody ? exchangeSide : RequestBody.EMPTY,
                HttpUtil.getContentLength(request, -1L),
                client,
                context.trustedProxies().contains(client),
                "http",
                request.headers().get(HttpHeaderNames.HOST));
        try {
            GatewayForwarder.Exchange started = context.forwarder()
                    .forward(forward, exchangeSide, ctx.channel().eventLoop());
            exchangeSide.attach(started);
        } catch (SpectorException e) {
            exchangeSide.onError(e, false);
        }
    }

    private void begin(ClientSide started) {
        exchange = started;
        context.drain().exchangeStarted();
    }

    private void end() {
        exchange = null;
        context.drain().exchangeEnded();
    }

    private void answerLocal(ChannelHandlerContext ctx, FullHttpResponse r, boolean keepAlive, boolean hasBody) {
        // A body we do not read must be drained, or the connection closed after the answer.
        discardingBody = hasBody;
        context.metrics().request(route, r.status().code(), System.nanoTime() - startNanos);
        if (!keepAlive || hasBody) {
            Responses.closing(r);
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
        } else {
            ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        }
    }

    private void answerAndClose(ChannelHandlerContext ctx, FullHttpResponse r) {
        Responses.closing(r);
        context.metrics().request(route, r.status().code(), System.nanoTime() - startNanos);
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void exchangeDone(ClientSide finished, boolean reusable, int status) {
        if (exchange != finished) {
            return;
        }
        end();
        context.metrics().request(route, status, System.nanoTime() - startNanos);
        ChannelHandlerContext ctx = context0;
        if (ctx == null) {
            return;
        }
        if (closeAfterExchange || !reusable || context.drain().isDraining()) {
            ctx.close();
        } else {
            ctx.channel().config().setAutoRead(true);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ClientSide e = exchange;
        if (e != null) {
            e.onReadComplete();
        }
        ctx.fireChannelReadComplete();
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        ClientSide e = exchange;
        if (e != null && ctx.channel().isWritable()) {
            e.onWritable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        ClientSide e = exchange;
        if (e != null) {
            end();
            e.onClosed();
            if (!e.isFinished()) {
                context.metrics().request(route, 499, System.nanoTime() - startNanos);
            }
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent && exchange == null) {
            ctx.close(); // an idle keep-alive connection past spector.server.idle-timeout
            return;
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("client connection {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        ctx.close();
    }

    private static String clientAddress(@Nullable SocketAddress address) {
        if (address instanceof InetSocketAddress inet && inet.getAddress() != null) {
            return inet.getAddress().getHostAddress();
        }
        return String.valueOf(address);
    }
}
