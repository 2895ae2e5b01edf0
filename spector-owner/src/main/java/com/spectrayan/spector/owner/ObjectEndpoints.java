package com.spectrayan.spector.owner;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpChunkedInput;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.stream.ChunkedNioFile;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code PUT/GET/DELETE /api/v1/namespaces/{ns}/objects/{key}}: objects of the {@link
 * ObjectStore}, streamed both ways. A PUT or DELETE publishes an {@code object} event.
 *
 * <p>File I/O runs on the event loop, briefly (see {@link ObjectStore}); a GET is written by the
 * {@code ChunkedWriteHandler} as the channel drains, so a large object never sits in memory.
 */
final class ObjectEndpoints {
    private static final Logger log = LoggerFactory.getLogger(ObjectEndpoints.class);

    private ObjectEndpoints() {}

    /**
     * Returns the sink of an object request.
     *
     * @throws SpectorException BAD_REQUEST for a malformed key, NOT_FOUND for another method
     */
    static BodySink open(Exchange ex, RoutingKey key, String objectKey) throws IOException {
        Path file = ex.node.objects.pathOf(key.tenant(), key.namespace(), ObjectStore.checkKey(objectKey));
        return switch (ex.method) {
            case "PUT" -> put(ex, key, objectKey, file);
            case "GET" -> Sinks.atEnd(() -> get(ex, file));
            case "DELETE" -> Sinks.atEnd(() -> delete(ex, key, objectKey, file));
            default -> throw OwnerHandler.noRoute(ex);
        };
    }

    private static BodySink put(Exchange ex, RoutingKey key, String objectKey, Path file) throws IOException {
        ObjectStore.Upload upload = ex.node.objects.begin(file);
        return new BodySink() {
            @Override
            public void onContent(ByteBuf content) throws IOException {
                upload.write(content);
            }

            @Override
            public void onEnd() throws IOException {
                ObjectStore.Stored stored;
                try {
                    stored = upload.finish();
                } finally {
                    upload.abort();
                }
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("key", objectKey);
                body.put("bytes", stored.bytes());
                body.put("sha256", stored.sha256());
                body.put("created", stored.created());
                ex.respondJson(stored.created() ? HttpResponseStatus.CREATED : HttpResponseStatus.OK, body);
                publish(ex, "put", key, objectKey, stored.bytes());
            }

            @Override
            public void onAbort() {
                upload.abort();
            }
        };
    }

    private static void get(Exchange ex, Path file) throws IOException {
        FileChannel channel;
        try {
            channel = FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw notFound(ex);
        }
        ChunkedNioFile input;
        try {
            input = new ChunkedNioFile(channel, 0, channel.size(), OwnerLimits.OBJECT_READ_CHUNK_BYTES);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
        HttpResponse head = new DefaultHttpResponse(ex.version, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/octet-stream");
        HttpUtil.setContentLength(head, input.length());
        ex.startStream(head, null).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        // The ChunkedWriteHandler closes the input (and the file) when done or when the channel dies.
        ex.writeLast(new HttpChunkedInput(input));
    }

    private static void delete(Exchange ex, RoutingKey key, String objectKey, Path file) throws IOException {
        if (!ex.node.objects.delete(file)) {
            throw notFound(ex);
        }
        ex.respondEmpty(HttpResponseStatus.NO_CONTENT);
        publish(ex, "delete", key, objectKey, -1);
    }

    private static SpectorException notFound(Exchange ex) {
        return SpectorException.of(ErrorCode.NOT_FOUND, "no object at " + ex.path, Map.of("path", ex.path));
    }

    private static void publish(Exchange ex, String op, RoutingKey key, String objectKey, long bytes) {
        Map<String, @Nullable Object> data = new LinkedHashMap<>();
        data.put("node", ex.node.nodeId);
        data.put("op", op);
        data.put("tenant", key.tenant());
        data.put("namespace", key.namespace());
        data.put("key", objectKey);
        if (bytes >= 0) {
            data.put("bytes", bytes);
        }
        EventHub.Event event = ex.node.events.publish("object", Json.text(data));
        log.debug("{} {}: event {}", op, ex.path, event.id());
    }
}
