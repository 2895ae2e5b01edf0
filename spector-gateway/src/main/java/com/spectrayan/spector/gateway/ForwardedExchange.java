package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.gateway.ForwardResponse;
import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.gateway.RequestBody;
import com.spectrayan.spector.cluster.gateway.ResponseSink;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import java.time.Duration;
import java.util.ArrayDeque;
import org.jspecify.annotations.Nullable;

/**
 * One exchange forwarded to an owner, between the {@link ClientConnection} and the forwarder: it
 * feeds the client's body to the forwarder ({@link RequestBody}) and hands the owner's answer to
 * the connection ({@link ResponseSink}).
 *
 * <p>Threading: confined to the connection's event loop. Buffers: at most the chunks of one read
 * batch wait before the forwarder starts pulling (reading is paused from the moment the request
 * head arrives); whoever takes a chunk releases it.
 */
final class ForwardedExchange implements RequestBody, ResponseSink, ClientConnection.Exchange {
    private final ClientConnection connection;
    private final String path;
    private final boolean expectContinue;
    private final Duration upgradeIdleTimeout;
    /** Body chunks that came before the forwarder pulled; made at the first (most requests have none). */
    private @Nullable ArrayDeque<ByteBuf> early;

    private RequestBody.@Nullable Consumer consumer;
    private GatewayForwarder.@Nullable Exchange forwarded;
    private boolean bodyComplete;
    private boolean discarded;
    private boolean finished;
    private boolean clientGone;
    private boolean responseBodyless;
    /** Run once when the connection is done with this exchange ({@link #whenDone}); then null. */
    private @Nullable Runnable whenDone;

    ForwardedExchange(ClientConnection connection, String path, boolean expectContinue, Duration upgradeIdleTimeout) {
        this.connection = connection;
        this.upgradeIdleTimeout = upgradeIdleTimeout;
        this.path = path;
        this.expectContinue = expectContinue;
        this.bodyComplete = !connection.bodyPending();
    }

    /**
     * Takes the forwarder's handle. An exchange that is already over on this side (the client
     * went, or its body failed, while the upstream was still being found) cancels it at once.
     */
    void attach(GatewayForwarder.Exchange exchange) {
        this.forwarded = exchange;
        if (isOver()) {
            exchange.cancel(); // a no-op when the forwarder already ended it
        }
    }

    /** Answers whether this side is over: the client went, or the exchange was answered. */
    boolean isOver() {
        return clientGone || finished;
    }

    // ---- from the connection ----

    @Override
    public void onBodyChunk(ByteBuf chunk) {
        RequestBody.Consumer c = consumer;
        if (discarded || finished) {
            chunk.release();
        } else if (c != null) {
            c.onChunk(chunk);
        } else {
            ArrayDeque<ByteBuf> q = early;
            if (q == null) {
                q = new ArrayDeque<>(4);
                early = q;
            }
            q.add(chunk);
        }
    }

    @Override
    public void onBodyEnd() {
        bodyComplete = true;
        RequestBody.Consumer c = consumer;
        if (c != null && !discarded) {
            c.onEnd();
        }
    }

    @Override
    public void onBodyFailed(SpectorException error) {
        releaseEarly();
        RequestBody.Consumer c = consumer;
        if (c != null && !discarded && !finished) {
            c.onError(error); // the forwarder aborts the owner's request and answers through onError
        } else if (!finished) {
            // The forwarder is still resolving or connecting: stop it (it never pulls), then answer.
            finished = true;
            GatewayForwarder.Exchange e = forwarded;
            if (e != null) {
                e.cancel();
            }
            connection.problem(error, path);
        }
    }

    @Override
    public void onReadComplete() {
        RequestBody.Consumer c = consumer;
        if (c != null && !discarded) {
            c.flush();
        }
    }

    @Override
    public void onWritable() {
        GatewayForwarder.Exchange e = forwarded;
        if (e != null) {
            e.onClientWritable();
        }
    }

    @Override
    public void onClosed() {
        clientGone = true;
        releaseEarly();
        GatewayForwarder.Exchange e = forwarded;
        if (e != null && !finished) {
            finished = true;
            e.cancel();
        }
        done();
    }

    @Override
    public void onEnded() {
        done();
    }

    /**
     * Runs {@code r} once, when the connection is done with this exchange: it ended (answered or
     * reset) or the connection closed, whichever comes first. One at most; on the loop.
     */
    void whenDone(Runnable r) {
        whenDone = requireNonNull(r, "r");
    }

    private void done() {
        Runnable r = whenDone;
        whenDone = null;
        if (r != null) {
            r.run();
        }
    }

    // ---- RequestBody ----

    @Override
    public void start(RequestBody.Consumer c) {
        consumer = c;
        if (expectContinue && !bodyComplete) {
            connection.sendContinue(); // RFC 9110 §10.1.1: the body is wanted now
        }
        ArrayDeque<ByteBuf> q = early;
        ByteBuf b;
        while (q != null && (b = q.poll()) != null) {
            c.onChunk(b);
        }
        if (bodyComplete) {
            c.onEnd();
        } else {
            resume();
        }
    }

    @Override
    public void pause() {
        connection.pauseBody();
    }

    @Override
    public void resume() {
        if (!bodyComplete && !discarded) {
            connection.resumeBody();
        }
    }

    @Override
    public void discard() {
        discarded = true;
        releaseEarly();
    }

    private void releaseEarly() {
        ArrayDeque<ByteBuf> q = early;
        ByteBuf b;
        while (q != null && (b = q.poll()) != null) {
            b.release();
        }
    }

    // ---- ResponseSink ----

    @Override
    public void onHead(ForwardResponse response) {
        connection.upstream(response.owner(), response.attempts(), response.retargets());
        // A response without a body (HEAD, 204, 304, ...) drops whatever the owner still sends.
        responseBodyless =
                !connection.head(response.status(), response.headers(), response.contentLength(), response.streaming());
    }

    @Override
    public void onChunk(ByteBuf chunk) {
        if (responseBodyless) {
            chunk.release();
        } else {
            connection.chunk(chunk);
        }
    }

    @Override
    public void flush() {
        connection.flush();
    }

    @Override
    public void onEnd() {
        finished = true;
        connection.end();
    }

    @Override
    public void onEnd(ByteBuf last) {
        finished = true;
        if (responseBodyless) {
            last.release();
            connection.end();
        } else {
            connection.end(last);
        }
    }

    @Override
    public void onError(SpectorException error, boolean headSent) {
        finished = true;
        releaseEarly();
        if (headSent) {
            connection.reset();
        } else {
            connection.problem(error, path);
        }
    }

    @Override
    public void onGaveUp(String owner, int attempts, String retargets) {
        connection.attempted(owner, attempts, retargets);
    }

    @Override
    public void onUpgrade(ForwardResponse head, Channel owner) {
        finished = true;
        connection.upgrade(head.status(), head.headers(), owner, upgradeIdleTimeout);
    }

    @Override
    public boolean isWritable() {
        return connection.isWritable();
    }

    @Override
    public @Nullable Channel spliceTarget() {
        return responseBodyless ? null : connection.spliceTarget();
    }

    @Override
    public void onSpliced(long bytes) {
        connection.spliced(bytes);
    }
}
