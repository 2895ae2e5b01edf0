package com.spectrayan.spector.owner;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.ProblemJson;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.stream.ChunkedInput;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One request on a connection and the response to it: what the request said, and the one way to
 * answer it (a full response, or a head then chunks then an end).
 *
 * <p>Threading: every method may be called from any thread; writes hop to the connection's event
 * loop, so callbacks of other libraries (Redis) can answer. Once the response has ended, the
 * handler is told ({@link #onDone}), so that a pipelined request waiting behind it runs.
 *
 * <p>An {@code /api/v1} exchange adds a {@link RecordedRequest} to the node's log when its status
 * is written, whatever the status.
 */
final class Exchange {
    final ChannelHandlerContext ctx;
    final OwnerNode node;
    final String method;
    final String uri;
    final String path;
    final @Nullable String rawQuery;
    final Map<String, List<String>> query;
    final HttpHeaders headers;
    final HttpVersion version;
    final boolean keepAlive;
    private final Runnable onDone;

    /** Whether the request is under {@code /api/v1} and so logged. Event loop only. */
    boolean api;

    /** The request's routing key, once formed. Event loop only. */
    @Nullable
    RoutingKey key;

    private @Nullable ResponseTask task; // Event loop only.
    private @Nullable Runnable finished; // Event loop only; runs once, when the exchange ends.
    private boolean started; // Event loop only.
    private boolean done; // Event loop only.

    Exchange(ChannelHandlerContext ctx, OwnerNode node, HttpRequest request, Runnable onDone) {
        this.ctx = ctx;
        this.node = node;
        this.method = request.method().name();
        this.uri = request.uri();
        QueryStringDecoder decoder = new QueryStringDecoder(uri);
        this.path = decoder.path();
        int q = uri.indexOf('?');
        this.rawQuery = q < 0 ? null : uri.substring(q + 1);
        this.query = decoder.parameters();
        this.headers = request.headers();
        this.version = request.protocolVersion();
        this.keepAlive = HttpUtil.isKeepAlive(request);
        this.onDone = onDone;
    }

    /** Answers whether the response has started (its status is written). */
    boolean started() {
        return started;
    }

    /** Answers whether the response has ended. */
    boolean done() {
        return done;
    }

    /** Returns the running response task, if any. */
    @Nullable
    ResponseTask task() {
        return task;
    }

    /** Returns the request headers, name to values in arrival order. */
    Map<String, List<String>> headerMap() {
        Map<String, List<String>> out = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : headers) {
            out.computeIfAbsent(e.getKey(), k -> new ArrayList<>(1)).add(e.getValue());
        }
        return out;
    }

    /** Returns the single value of a query parameter, or null; repeated is BAD_REQUEST. */
    @Nullable
    String queryParam(String name) {
        List<String> values = query.get(name);
        if (values == null || values.isEmpty()) {
            return null;
        }
        if (values.size() > 1) {
            throw SpectorException.badRequest(name, "given " + values.size() + " times (expected: once)");
        }
        return values.get(0);
    }

    /** Writes a full JSON response. */
    void respondJson(HttpResponseStatus status, Object value) {
        respond(status, "application/json", Json.bytes(value), Map.of());
    }

    /** Writes a problem+json response for a failure. */
    void respondProblem(SpectorException failure) {
        respond(
                HttpResponseStatus.valueOf(failure.code().httpStatus()),
                Problem.CONTENT_TYPE,
                ProblemJson.toBytes(failure.toProblem(path)),
                Map.of());
    }

    /** Writes a 500 problem+json response for a defect, without its message. */
    void respondInternal() {
        respondProblem(SpectorException.of(ErrorCode.INTERNAL, "internal error; see the owner's log"));
    }

    /** Runs {@code action} once when the exchange ends: its response written, or its connection gone. */
    void onFinished(Runnable action) {
        finished = action;
    }

    /**
     * Takes the {@link #onFinished} action away from the exchange and returns it (a no-op when
     * there is none): for work that outlives the exchange (a delayed command still scheduled after
     * its client left), which runs the action itself once it is done, so that a move waits for it.
     * Event loop only.
     */
    Runnable takeFinished() {
        Runnable f = finished;
        finished = null;
        return f == null ? () -> {} : f;
    }

    /**
     * Writes the {@code 503} of a key being handed to {@code to}: {@code X-Spector-Handoff}, {@code
     * Retry-After: 1} (for a client calling this node directly) and a problem+json body.
     */
    void respondHandoff(String to) {
        respond(
                HttpResponseStatus.SERVICE_UNAVAILABLE,
                Problem.CONTENT_TYPE,
                ProblemJson.toBytes(Problem.of(
                        ErrorCode.GATEWAY_ROUTING_FAILURE,
                        node.nodeId + " is handing " + key + " to " + to + "; retry",
                        Map.of("reason", "handing-off", "retryAfterSeconds", 1L),
                        path)),
                Map.of(SpectorHeaders.HANDOFF, to, "Retry-After", "1", "Cache-Control", "no-store"));
    }

    /** Writes an ownership refusal (421 or 503). */
    void respondDecision(OwnershipDecision decision) {
        respond(
                HttpResponseStatus.valueOf(decision.status()),
                Problem.CONTENT_TYPE,
                decision.problemJson(path),
                decision.headers());
    }

    /** Writes a full response with a body and extra headers, then ends the exchange. */
    void respond(HttpResponseStatus status, String contentType, byte[] body, Map<String, String> extraHeaders) {
        if (!ctx.executor().inEventLoop()) {
            ctx.executor().execute(() -> respond(status, contentType, body, extraHeaders));
            return;
        }
        FullHttpResponse response = new DefaultFullHttpResponse(version, status, Unpooled.wrappedBuffer(body));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        extraHeaders.forEach((name, value) -> response.headers().set(name, value));
        HttpUtil.setContentLength(response, body.length);
        if (!begin(response)) {
            response.release();
            return;
        }
        finish(ctx.writeAndFlush(response));
    }

    /** Writes a response with no body and no Content-Length (204). */
    void respondEmpty(HttpResponseStatus status) {
        if (!ctx.executor().inEventLoop()) {
            ctx.executor().execute(() -> respondEmpty(status));
            return;
        }
        FullHttpResponse response = new DefaultFullHttpResponse(version, status, Unpooled.EMPTY_BUFFER);
        if (!begin(response)) {
            return;
        }
        finish(ctx.writeAndFlush(response));
    }

    /**
     * Writes a response head for a body that follows in {@link #writeChunk}s (or one {@link
     * #writeLast}); the head is flushed at once. Event loop only.
     */
    ChannelFuture startStream(HttpResponse head, @Nullable ResponseTask task) {
        if (!begin(head)) {
            return ctx.newFailedFuture(new IllegalStateException("response already started"));
        }
        this.task = task;
        return ctx.writeAndFlush(head);
    }

    /** Writes and flushes one piece of a streamed body (released by the pipeline). Event loop only. */
    ChannelFuture writeChunk(Object content) {
        return ctx.writeAndFlush(content);
    }

    /** Writes the last piece of a streamed body and ends the exchange. Event loop only. */
    void writeLast(Object last) {
        if (done) {
            ReferenceCountUtil.release(last);
            if (last instanceof ChunkedInput<?> input) {
                try {
                    input.close();
                } catch (Exception e) {
                    // Nothing to do: the input was never written.
                }
            }
            return;
        }
        finish(ctx.writeAndFlush(last));
    }

    /** Ends a streamed response with no more content. Event loop only. */
    void endStream() {
        writeLast(LastHttpContent.EMPTY_LAST_CONTENT);
    }

    /** Marks the exchange over without a response (the connection closed). Event loop only. */
    void abandon() {
        done = true;
        runFinished();
        ResponseTask t = task;
        task = null;
        if (t != null) {
            t.stop();
        }
    }

    /**
     * Hands the connection over to another protocol whose handshaker writes the response itself:
     * records the exchange with that response's status and ends it without telling the handler
     * (no HTTP request follows on the connection). Answers false, recording nothing, when a
     * response has already started. Event loop only.
     */
    boolean takeOver(HttpResponseStatus status) {
        if (started) {
            return false;
        }
        started = true;
        record(status.code());
        done = true;
        task = null;
        return true;
    }

    private boolean begin(HttpResponse response) {
        if (started) {
            return false;
        }
        started = true;
        HttpUtil.setKeepAlive(response, keepAlive);
        record(response.status().code());
        return true;
    }

    private void record(int status) {
        if (api) {
            RoutingKey k = key;
            node.requests.add(new RecordedRequest(
                    method,
                    path,
                    k == null ? null : k.tenant(),
                    k == null ? null : k.namespace(),
                    status,
                    headerMap()));
        }
    }

    private void finish(ChannelFuture written) {
        done = true;
        runFinished();
        task = null;
        if (!keepAlive) {
            written.addListener(ChannelFutureListener.CLOSE);
        }
        written.addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        onDone.run();
    }

    private void runFinished() {
        Runnable f = finished;
        finished = null;
        if (f != null) {
            f.run();
        }
    }

    @Override
    public String toString() {
        return method + " " + uri;
    }
}
