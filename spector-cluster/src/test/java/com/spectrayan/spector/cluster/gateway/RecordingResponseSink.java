package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/**
 * A client side that records what the forwarder delivers: the first outcome (the response's status,
 * or the error), the body as UTF-8 text, its end, and an error after the head. Always writable.
 * Thread-safe: the forwarder calls it on its loop, the test reads the futures.
 */
class RecordingResponseSink implements ResponseSink {
    /** The status of the head, or the error that came first. */
    final CompletableFuture<Object> outcome = new CompletableFuture<>();
    /** The error, whenever it came (before or after the head). */
    final CompletableFuture<SpectorException> error = new CompletableFuture<>();
    /** The end of the response body. */
    final CompletableFuture<Void> ended = new CompletableFuture<>();

    private final StringBuilder body = new StringBuilder();
    private volatile boolean headSent;

    @Override
    public void onHead(ForwardResponse response) {
        outcome.complete(response.status().code());
    }

    @Override
    public void onChunk(ByteBuf chunk) {
        synchronized (body) {
            body.append(chunk.toString(StandardCharsets.UTF_8));
        }
        chunk.release();
    }

    @Override
    public void flush() {}

    @Override
    public void onEnd() {
        ended.complete(null);
    }

    @Override
    public void onError(SpectorException e, boolean sent) {
        headSent = sent;
        outcome.complete(e);
        error.complete(e);
    }

    @Override
    public boolean isWritable() {
        return true;
    }

    /** Answers whether the error came after the head (the client connection is then reset). */
    boolean errorAfterHead() {
        return headSent;
    }

    /** Returns the body received so far. */
    String body() {
        synchronized (body) {
            return body.toString();
        }
    }
}
