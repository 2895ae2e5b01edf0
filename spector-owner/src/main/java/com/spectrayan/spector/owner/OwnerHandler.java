package com.spectrayan.spector.owner;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.RoutingKeyExtractor;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.ProblemJson;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection of the reference owner: reads requests one message at a time, routes each to an
 * endpoint, and answers it. One instance per channel; every method runs on the channel's event
 * loop.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Flow.</b> The channel does not auto-read; after each batch of decoded messages
 *       ({@code channelReadComplete}) the handler asks for the next, so a body streams in as fast
 *       as its sink takes it, and a closed connection is seen even while a response streams.
 *   <li><b>One response at a time.</b> A request that arrives (pipelined) while the previous
 *       response is still being written (a stream, an event stream, a delayed command) is parked
 *       with whatever was decoded after it, and reading stops until that response ends; parked
 *       messages are then handled in order. At most one socket read's worth is ever parked.
 *   <li><b>Hand-offs.</b> A key this node is handing to another owner ({@link Handoffs}) is
 *       answered {@code 503} with {@code X-Spector-Handoff} after the guard; a write admitted
 *       before is counted until its exchange ends, or, for a command still scheduled when its
 *       client leaves, until the command has run ({@link Exchange#takeFinished}), so a move copies
 *       only settled state.
 *   <li><b>Guard first.</b> Every {@code /api/v1} request is routed by its {@link RoutingKey} and
 *       decided by the {@link OwnershipGuard} before any endpoint sees it. A refusal (and every
 *       other early answer: 400, 403, 404, 413) is written at once; the rest of its body is read
 *       and dropped, up to {@link OwnerLimits#MAX_DRAIN_BYTES}.
 *   <li><b>Buffers.</b> Every message read is released here after its sink returns; sinks only
 *       borrow them.
 *   <li><b>Upgrade.</b> A WebSocket handshake that the guard let through replaces this handler
 *       (and the HTTP codec) with a {@link WebSocketEcho}; the connection speaks no more HTTP.
 * </ul>
 */
final class OwnerHandler extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(OwnerHandler.class);

    private static final String API_PREFIX = "/api/v1/";
    private static final String NAMESPACES = RoutingKeyExtractor.NAMESPACE_PATH_PREFIX;

    private final OwnerNode node;
    private @Nullable Exchange current;
    private @Nullable BodySink sink;
    private final ArrayDeque<Object> parked = new ArrayDeque<>();

    OwnerHandler(OwnerNode node) {
        this.node = node;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.read();
        ctx.fireChannelActive();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!parked.isEmpty() || (msg instanceof HttpRequest && responding())) {
            parked.addLast(msg); // released when handled, or on close
            return;
        }
        process(ctx, msg);
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        if (parked.isEmpty()) {
            ctx.read();
        }
        ctx.fireChannelReadComplete();
    }

    private boolean responding() {
        Exchange ex = current;
        return ex != null && !ex.done();
    }

    private void process(ChannelHandlerContext ctx, Object msg) {
        try {
            handle(ctx, msg);
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    private void handle(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof HttpRequest request) {
            if (request.decoderResult().isFailure()) {
                badMessage(ctx, request.decoderResult(), request.protocolVersion());
                return;
            }
            Exchange ex = new Exchange(ctx, node, request, this::responseDone);
            current = ex;
            sink = guarded(ex, () -> route(ex));
        }
        if (msg instanceof HttpContent content) {
            if (content.decoderResult().isFailure()) {
                badMessage(ctx, content.decoderResult(), HttpVersion.HTTP_1_1);
                return;
            }
            BodySink s = sink;
            Exchange ex = current;
            if (s == null || ex == null) {
                return;
            }
            sink = guarded(ex, () -> {
                s.onContent(content.content());
                return s;
            });
            if (content instanceof LastHttpContent) {
                BodySink last = sink;
                sink = null;
                if (last != null) {
                    guarded(ex, () -> {
                        last.onEnd();
                        return null;
                    });
                }
            }
        }
    }

    /** A step of an exchange that may refuse it; returns the sink to use next. */
    private interface Step {
        @Nullable
        BodySink run() throws Exception;
    }

    /**
     * Runs a step; a refusal answers the exchange (if it has not started) and drains the rest of
     * the body; a defect answers 500 or, mid-response, closes the connection.
     */
    private @Nullable BodySink guarded(Exchange ex, Step step) {
        try {
            return step.run();
        } catch (SpectorException e) {
            if (e.code() == ErrorCode.INTERNAL) {
                log.warn("{}: {} failed", node.nodeId, ex, e);
            }
            return refuse(ex, () -> ex.respondProblem(e));
        } catch (Exception e) {
            log.warn("{}: {} failed", node.nodeId, ex, e);
            return refuse(ex, ex::respondInternal);
        }
    }

    private BodySink refuse(Exchange ex, Runnable answer) {
        if (ex.started()) {
            ex.ctx.close();
        } else {
            answer.run();
        }
        return Sinks.drain(ex);
    }

    private BodySink route(Exchange ex) throws Exception {
        String path = ex.path;
        if (path.equals("/health")) {
            if (!ex.method.equals("GET")) {
                throw noRoute(ex);
            }
            return Sinks.atEnd(
                    () -> ex.respondJson(HttpResponseStatus.OK, Map.of("status", "UP", "node", node.nodeId)));
        }
        if (path.equals("/admin") || path.startsWith("/admin/")) {
            return AdminEndpoints.open(ex);
        }
        if (path.equals("/api/v1") || path.startsWith(API_PREFIX)) {
            return api(ex);
        }
        throw noRoute(ex);
    }

    private BodySink api(Exchange ex) throws Exception {
        ex.api = true;
        String headerNamespace = ex.headers.get(SpectorHeaders.NAMESPACE);
        RoutingKey key =
                node.extractor.extract(headerNamespace, ex.headers.get(SpectorHeaders.TENANT), ex.path, Map.of());
        ex.key = key;
        OwnershipDecision decision = node.guard.decide(
                key, ex.method, ex.headers.get(SpectorHeaders.EPOCH), ex.headers.get(SpectorHeaders.FENCE));
        if (!decision.serves()) {
            ex.respondDecision(decision);
            return Sinks.drain(ex);
        }
        boolean write = OwnershipGuard.isWrite(ex.method);
        String handingTo = node.handoffs.admit(key, write);
        if (handingTo != null) {
            ex.respondHandoff(handingTo); // the gateway holds it until the move ends
            return Sinks.drain(ex);
        }
        if (write) {
            // a move waits for the writes it admitted; an endpoint whose work outlives the exchange
            // takes this over (CommandEndpoint)
            ex.onFinished(() -> node.handoffs.left(key));
        }
        String path = ex.path;
        if (path.equals("/api/v1/events") && ex.method.equals("GET")) {
            return EventStream.open(ex);
        }
        if (path.equals("/api/v1/auth/token") && ex.method.equals("POST")) {
            return TokenEndpoint.open(ex);
        }
        if (path.startsWith(NAMESPACES)) {
            String[] parts = path.substring(NAMESPACES.length()).split("/", -1);
            String namespace = parts[0];
            if (!namespace.equals(key.namespace())) {
                throw SpectorException.badRequest(
                        SpectorHeaders.NAMESPACE,
                        "'" + key.namespace() + "' contradicts the path's namespace (expected: the same or absent)");
            }
            if (parts.length == 2) {
                String endpoint = parts[1];
                if (endpoint.equals("echo")) {
                    return Sinks.echo(ex);
                }
                if (endpoint.equals("stream") && ex.method.equals("GET")) {
                    return StreamResponse.open(ex);
                }
                if (endpoint.equals("commands") && ex.method.equals("POST")) {
                    return CommandEndpoint.open(ex, key);
                }
                if (endpoint.equals("ws") && ex.method.equals("GET")) {
                    return WebSocketEcho.open(ex);
                }
            } else if (parts.length == 3 && parts[1].equals("objects")) {
                return ObjectEndpoints.open(ex, key, parts[2]);
            }
        }
        throw noRoute(ex);
    }

    /** Returns the 404 of a request no endpoint takes. */
    static SpectorException noRoute(Exchange ex) {
        return SpectorException.of(
                ErrorCode.NOT_FOUND, "no route for " + ex.method + " " + ex.path, Map.of("path", ex.path));
    }

    /** The current exchange's response ended: handle what was parked behind it, then read on. */
    private void responseDone() {
        if (parked.isEmpty()) {
            return;
        }
        Exchange ex = current;
        if (ex != null) {
            ex.ctx.executor().execute(() -> drainParked(ex.ctx));
        }
    }

    private void drainParked(ChannelHandlerContext ctx) {
        while (!parked.isEmpty()) {
            if (parked.peekFirst() instanceof HttpRequest && responding()) {
                return; // the next response must wait for this one
            }
            process(ctx, parked.pollFirst());
        }
        ctx.read();
    }

    /** Answers a message the decoder refused (too long a line or headers, bad framing), then closes. */
    private void badMessage(ChannelHandlerContext ctx, DecoderResult result, HttpVersion version) {
        sink = null;
        Exchange ex = current;
        if (ex != null && ex.started()) {
            ctx.close();
            return;
        }
        Throwable cause = result.cause();
        SpectorException problem;
        if (cause instanceof TooLongHttpLineException) {
            problem = SpectorException.badRequest(
                    "requestLine", "too long (expected: <= " + OwnerLimits.MAX_INITIAL_LINE_BYTES + " bytes)");
        } else if (cause instanceof TooLongHttpHeaderException) {
            problem = SpectorException.badRequest(
                    "headers", "too large (expected: <= " + OwnerLimits.MAX_HEADER_BYTES + " bytes)");
        } else {
            problem = SpectorException.badRequest(
                    "request",
                    "malformed HTTP ("
                            + (cause == null ? "unknown" : cause.getClass().getSimpleName()) + ")");
        }
        byte[] body = ProblemJson.toBytes(problem.toProblem(null));
        FullHttpResponse response =
                new DefaultFullHttpResponse(version, HttpResponseStatus.BAD_REQUEST, Unpooled.wrappedBuffer(body));
        response.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, Problem.CONTENT_TYPE)
                .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        HttpUtil.setContentLength(response, body.length);
        ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        Exchange ex = current;
        ResponseTask task = ex == null ? null : ex.task();
        if (task != null && ctx.channel().isWritable()) {
            task.onWritable();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        BodySink s = sink;
        sink = null;
        if (s != null) {
            s.onAbort();
        }
        Exchange ex = current;
        if (ex != null) {
            ex.abandon();
        }
        for (Object p = parked.pollFirst(); p != null; p = parked.pollFirst()) {
            ReferenceCountUtil.release(p);
        }
        ctx.fireChannelInactive();
    }

    /** Releases what was parked when a WebSocket upgrade takes this handler out of the pipeline. */
    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        for (Object p = parked.pollFirst(); p != null; p = parked.pollFirst()) {
            ReferenceCountUtil.release(p);
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug(
                "{}: connection from {} failed: {}", node.nodeId, ctx.channel().remoteAddress(), cause.toString());
        ctx.close();
    }
}
