package com.spectrayan.spector.owner;

import com.spectrayan.spector.contract.Bound;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/** The body sinks every endpoint shares: drop, answer at the end, collect small JSON, echo. */
final class Sinks {
    private Sinks() {}

    /** Runs when a request's body has ended. */
    interface EndAction {
        void run() throws Exception;
    }

    /** Receives a collected small body. */
    interface BodyAction {
        void accept(byte[] body) throws Exception;
    }

    /**
     * Returns a sink that drops the body of a request already answered; past {@link
     * OwnerLimits#MAX_DRAIN_BYTES} it closes the connection rather than keep reading.
     */
    static BodySink drain(Exchange ex) {
        return new BodySink() {
            private long dropped;

            @Override
            public void onContent(ByteBuf content) {
                dropped += content.readableBytes();
                if (dropped > OwnerLimits.MAX_DRAIN_BYTES) {
                    ex.ctx.close();
                }
            }

            @Override
            public void onEnd() {}
        };
    }

    /** Returns a sink that ignores the body and runs an action when it ends. */
    static BodySink atEnd(EndAction action) {
        return new BodySink() {
            @Override
            public void onContent(ByteBuf content) {}

            @Override
            public void onEnd() throws Exception {
                action.run();
            }
        };
    }

    /**
     * Returns a sink that collects a small body (at most {@link OwnerLimits#JSON_BODY_BYTES}) and
     * hands it over when it ends.
     *
     * @throws SpectorException PAYLOAD_TOO_LARGE at once when the declared length is over the cap;
     *     the sink throws it when the streamed body crosses the cap
     */
    static BodySink collect(Exchange ex, BodyAction action) {
        return collect(ex, OwnerLimits.JSON_BODY_BYTES, action);
    }

    /** Returns a sink that collects a body of at most {@code cap}, as {@link #collect(Exchange, BodyAction)} does. */
    static BodySink collect(Exchange ex, Bound cap, BodyAction action) {
        long declared = contentLength(ex);
        if (declared > cap.max()) {
            throw cap.refusal(declared);
        }
        return new BodySink() {
            private final ByteArrayOutputStream body = new ByteArrayOutputStream(
                    declared > 0 ? (int) Math.min(declared, OwnerLimits.JSON_BODY_BYTES.max()) : 256);

            @Override
            public void onContent(ByteBuf content) {
                long total = (long) body.size() + content.readableBytes();
                if (total > cap.max()) {
                    throw cap.refusal(total);
                }
                byte[] piece = new byte[content.readableBytes()];
                content.getBytes(content.readerIndex(), piece);
                body.writeBytes(piece);
            }

            @Override
            public void onEnd() throws Exception {
                action.accept(body.toByteArray());
            }
        };
    }

    /**
     * Returns the echo sink: hashes the body with SHA-256 as it streams (never holding it whole)
     * and answers {@code {node, method, path, query, uri, headers, bodyBytes, bodySha256}}.
     */
    static BodySink echo(Exchange ex) {
        return new BodySink() {
            private final MessageDigest sha256 = Digests.sha256();
            private long bytes;

            @Override
            public void onContent(ByteBuf content) {
                for (ByteBuffer b : content.nioBuffers()) {
                    sha256.update(b);
                }
                bytes += content.readableBytes();
            }

            @Override
            public void onEnd() {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("node", ex.node.nodeId);
                out.put("method", ex.method);
                out.put("path", ex.path);
                out.put("query", ex.rawQuery);
                out.put("uri", ex.uri);
                out.put("headers", ex.headerMap());
                out.put("bodyBytes", bytes);
                out.put("bodySha256", HexFormat.of().formatHex(sha256.digest()));
                ex.respondJson(HttpResponseStatus.OK, out);
            }
        };
    }

    /** Returns the declared Content-Length, or -1 when there is none or it is malformed. */
    static long contentLength(Exchange ex) {
        String value = ex.headers.get(HttpHeaderNames.CONTENT_LENGTH);
        if (value == null) {
            return -1;
        }
        try {
            return Long.parseLong(value.strip());
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
