package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.ProblemJson;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** Builds the responses the gateway originates: problem+json errors and small JSON or text bodies. */
final class Responses {
    private Responses() {}

    /**
     * A problem+json response for a failure about the exchange {@code requestId} (null when there is
     * none); adds {@code Retry-After} when the details carry it.
     */
    static FullHttpResponse problem(SpectorException error, @Nullable String instance, @Nullable String requestId) {
        Problem problem = error.toProblem(instance).withRequestId(requestId);
        FullHttpResponse r =
                full(HttpResponseStatus.valueOf(problem.status()), Problem.CONTENT_TYPE, ProblemJson.toBytes(problem));
        Object retryAfter = error.details().get("retryAfterSeconds");
        if (retryAfter != null) {
            r.headers().set(HttpHeaderNames.RETRY_AFTER, retryAfter.toString());
        }
        if (problem.status() == 401) {
            // RFC 9110 §15.5.2: a 401 MUST carry a challenge. The edge's own refusals set theirs
            // (with the reason); this one is for any other, a worker's relayed UNAUTHENTICATED one.
            r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
        }
        return r;
    }

    /**
     * The answer to a head the decoder refused: 414 for a long request line, 431 for a large head,
     * 413 for a chunk past its bound, else 400; a problem+json with code {@code BAD_REQUEST}, the
     * decoder's reason, and the status answered.
     */
    static FullHttpResponse decoderFailure(Throwable cause, @Nullable String requestId) {
        HttpResponseStatus status = cause instanceof TooLongHttpLineException
                ? HttpResponseStatus.REQUEST_URI_TOO_LONG
                : cause instanceof TooLongHttpHeaderException
                        ? HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
                        : cause instanceof TooLongFrameException
                                ? HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE
                                : HttpResponseStatus.BAD_REQUEST;
        return problem(
                SpectorException.badRequest("request", status.reasonPhrase() + ": " + cause.getMessage()),
                null,
                requestId,
                status);
    }

    /**
     * As {@link #problem(SpectorException, String, String)}, answered with {@code status} instead of
     * the code's own; the body's {@code status} member says the same (RFC 9457 §3.1.2).
     */
    static FullHttpResponse problem(
            SpectorException error, @Nullable String instance, @Nullable String requestId, HttpResponseStatus status) {
        Problem p = error.toProblem(instance);
        p = new Problem(p.type(), p.title(), status.code(), p.detail(), p.code(), p.details(), instance, requestId);
        return full(status, Problem.CONTENT_TYPE, ProblemJson.toBytes(p));
    }

    /** A JSON response. */
    static FullHttpResponse json(HttpResponseStatus status, String json) {
        return full(status, "application/json", json.getBytes(StandardCharsets.UTF_8));
    }

    /** A JSON response with {@code body} (maps, lists, strings, numbers, booleans; {@link PlainJson}). */
    static FullHttpResponse jsonOf(HttpResponseStatus status, Object body) {
        return jsonOf(status, "application/json", body);
    }

    /** As {@link #jsonOf(HttpResponseStatus, Object)}, with a JSON media type of its own. */
    static FullHttpResponse jsonOf(HttpResponseStatus status, String contentType, Object body) {
        return full(status, contentType, PlainJson.write(body).getBytes(StandardCharsets.UTF_8));
    }

    /** A JSON object's members in the order given: {@code object("a", 1, "b", 2)}. */
    static Map<String, Object> object(Object... keyValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            m.put((String) keyValues[i], keyValues[i + 1]);
        }
        return m;
    }

    /** A response with a body of the given type. */
    static FullHttpResponse full(HttpResponseStatus status, String contentType, byte[] body) {
        ByteBuf content = Unpooled.wrappedBuffer(body);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, content);
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        r.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        return r;
    }

    /** Marks a response as the connection's last. */
    static void closing(FullHttpResponse r) {
        r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    }
}
