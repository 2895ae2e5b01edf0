package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * The client side of one {@code /relay/...} exchange: the client's body as the relay pulls it
 * ({@link BodySource}, one read at a time), and the worker's answer written back part by part,
 * the next part pulled only while the client connection is writable.
 *
 * <p>Threading: every state change runs on the connection's event loop; relay callbacks hop to it.
 */
final class RelayExchange implements ClientSide, BodySource {
    private final ChannelHandlerContext ctx;
    private final ClientSide.Done done;
    private final boolean keepAlive;
    private final boolean head;
    private final String path;
    private final AbortSignal signal = new AbortSignal();
    private final ArrayDeque<ByteBuf> queued = new ArrayDeque<>(); // at most one read batch
    private @Nullable CompletableFuture<@Nullable ByteBuffer> pending;
    private @Nullable BodySource responseBody;
    private boolean bodyEnded;
    private boolean discarded;
    private boolean headSent;
    private boolean waitingWritable;
    private boolean finished;
    private int status;
    private final GatewayMetrics metrics;

    RelayExchange(
            ChannelHandlerContext ctx,
            ClientSide.Done done,
            boolean keepAlive,
            boolean head,
            boolean hasBody,
            String path,
            GatewayMetrics metrics) {
        this.ctx = ctx;
        this.metrics = metrics;
        this.done = done;
        this.keepAlive = keepAlive;
        this.head = head;
        this.path = path;
        this.bodyEnded = !hasBody;
        if (hasBody) {
            ctx.channel().config().setAutoRead(false); // the relay pulls the body
        }
    }

    AbortSignal signal() {
        return signal;
    }

    /** Answers the relay's outcome (called on any thread). */
    void onRelayed(CompletionStage<RelayedResponse> relayed) {
        relayed.whenComplete((response, error) -> ctx.executor().execute(() -> {
            if (error != null) {
                fail(unwrap(error));
            } else {
                respond(response);
            }
        }));
    }

    // ---- the request body, pulled by the relay ----

    @Override
    public CompletionStage<@Nullable ByteBuffer> next() {
        CompletableFuture<@Nullable ByteBuffer> f = new CompletableFuture<>();
        ctx.executor().execute(() -> {
            ByteBuf b = queued.poll();
            if (b != null) {
                metrics.relayedToWorker(b.readableBytes());
                f.complete(copy(b));
            } else if (bodyEnded || discarded) {
                f.complete(null);
            } else {
                pending = f;
                ctx.channel().read();
            }
        });
        return f;
    }

    @Override
    public void cancel(Throwable reason) {
        ctx.executor().execute(() -> {
            discarded = true;
            releaseQueued();
        });
    }

    @Override
    public void onContent(HttpContent content) {
        boolean last = content instanceof LastHttpContent;
        ByteBuf b = content.content();
        if (discarded || bodyEnded || !b.isReadable()) {
            content.release();
        } else {
            CompletableFuture<@Nullable ByteBuffer> p = pending;
            if (p != null) {
                pending = null;
                metrics.relayedToWorker(b.readableBytes());
                p.complete(copy(b));
            } else {
                queued.add(b);
            }
        }
        if (last && !bodyEnded) {
            bodyEnded = true;
            CompletableFuture<@Nullable ByteBuffer> p = pending;
            if (p != null) {
                pending = null;
                p.complete(null);
            }
        }
    }

    @Override
    public void onReadComplete() {}

    // ---- the response, written as the client takes it ----

    private void respond(RelayedResponse response) {
        if (finished) {
            BodySource b = response.body();
            if (b != null) {
                b.cancel(SpectorException.of(ErrorCode.DAEMON_CONNECTION_LOST, "the caller went away"));
            }
            return;
        }
        headSent = true;
        status = response.status();
        HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status));
        for (Header h : response.headers()) {
            r.headers().add(h.name(), h.value());
        }
        BodySource body = response.body();
        if (body != null && !head) {
            r.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        } else if (status != 204 && status != 304) {
            r.headers().set(HttpHeaderNames.CONTENT_LENGTH, 0);
        }
        if (!keepAlive) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        ctx.write(r);
        if (body == null || head) {
            if (body != null) {
                body.cancel(new IllegalStateException("HEAD: no body"));
            }
            end();
            return;
        }
        responseBody = body;
        ctx.flush();
        pump();
    }

    private void pump() {
        BodySource body = responseBody;
        if (finished || body == null) {
            return;
        }
        body.next()
                .whenComplete((part, error) -> ctx.executor().execute(() -> {
                    if (finished) {
                        return;
                    }
                    if (error != null) {
                        fail(unwrap(error));
                    } else if (part == null) {
                        end();
                    } else {
                        metrics.relayedFromWorker(part.remaining());
                        ctx.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(part)));
                        if (ctx.channel().isWritable()) {
                            pump();
                        } else {
                            waitingWritable = true;
                        }
                    }
                }));
    }

    @Override
    public void onWritable() {
        if (waitingWritable) {
            waitingWritable = false;
            pump();
        }
    }

    private void end() {
        finished = true;
        Responses.endBody(ctx, keepAlive && bodyEnded && !discarded, open -> done.exchangeDone(this, open, status));
    }

    private void fail(Throwable error) {
        if (finished) {
            return;
        }
        finished = true;
        releaseQueued();
        if (headSent) {
            Responses.reset(ctx);
            done.exchangeDone(this, false, status);
            return;
        }
        SpectorException e = error instanceof SpectorException se
                ? se
                : SpectorException.of(ErrorCode.INTERNAL, "relay failed: " + error);
        boolean reusable = keepAlive && bodyEnded && !discarded;
        status = Responses.answerProblem(ctx, e, path, null, reusable);
        done.exchangeDone(this, reusable, status);
    }

    @Override
    public void onClosed() {
        releaseQueued();
        CompletableFuture<@Nullable ByteBuffer> p = pending;
        pending = null;
        SpectorException gone = SpectorException.of(ErrorCode.DAEMON_CONNECTION_LOST, "the caller went away");
        if (p != null) {
            p.completeExceptionally(gone);
        }
        BodySource b = responseBody;
        if (b != null && !finished) {
            b.cancel(gone);
        }
        finished = true;
        signal.abort(gone);
    }

    @Override
    public boolean isFinished() {
        return finished;
    }

    private void releaseQueued() {
        ByteBuf b;
        while ((b = queued.poll()) != null) {
            b.release();
        }
    }

    private static ByteBuffer copy(ByteBuf b) {
        try {
            ByteBuffer out = ByteBuffer.allocate(b.readableBytes());
            b.readBytes(out);
            out.flip();
            return out;
        } finally {
            b.release();
        }
    }

    private static Throwable unwrap(Throwable t) {
        return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
    }
}
