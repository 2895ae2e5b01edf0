package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.ForwardResponse;
import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.gateway.RequestBody;
import com.spectrayan.spector.cluster.gateway.ResponseSink;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.util.ArrayDeque;
import org.jspecify.annotations.Nullable;

/**
 * The client side of one forwarded exchange on one connection: it feeds the client's body to the
 * forwarder ({@link RequestBody}) and writes the owner's answer back ({@link ResponseSink}).
 *
 * <p>Threading: confined to the connection's event loop. Buffers: at most the chunks of one read
 * batch wait before the forwarder starts pulling (reading is paused from the moment the request
 * head arrives); whoever takes a chunk releases it.
 */
final class ClientExchange implements RequestBody, ResponseSink, ClientSide {
    private final ChannelHandlerContext ctx;
    private final ClientSide.Done done;
    private final boolean keepAlive;
    private final boolean head;
    private final String path;
    private final @Nullable HttpHeaders extraHeaders;
    private final ArrayDeque<ByteBuf> early = new ArrayDeque<>();
    private RequestBody.@Nullable Consumer consumer;
    private GatewayForwarder.@Nullable Exchange exchange;
    private boolean bodyComplete;
    private boolean discarded;
    private boolean responseStarted;
    private boolean finished;
    private int status;

    ClientExchange(
            ChannelHandlerContext ctx,
            ClientSide.Done done,
            boolean keepAlive,
            boolean head,
            boolean hasBody,
            String path,
            @Nullable HttpHeaders extraHeaders) {
        this.ctx = ctx;
        this.extraHeaders = extraHeaders;
        this.done = done;
        this.keepAlive = keepAlive;
        this.head = head;
        this.path = path;
        this.bodyComplete = !hasBody;
        if (hasBody) {
            ctx.channel().config().setAutoRead(false); // until the forwarder pulls
        }
    }

    void attach(GatewayForwarder.Exchange exchange) {
        this.exchange = exchange;
    }

    // ---- from the connection ----

    @Override
    public void onContent(HttpContent content) {
        ByteBuf buf = content.content();
        boolean last = content instanceof LastHttpContent;
        if (discarded || bodyComplete) {
            content.release();
        } else if (!buf.isReadable()) {
            content.release();
        } else if (consumer != null) {
            consumer.onChunk(buf);
        } else {
            early.add(buf);
        }
        if (last && !bodyComplete) {
            bodyComplete = true;
            RequestBody.Consumer c = consumer;
            if (c != null && !discarded) {
                c.onEnd();
            }
            ctx.channel().config().setAutoRead(false); // one exchange at a time on a connection
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
        GatewayForwarder.Exchange e = exchange;
        if (e != null) {
            e.onClientWritable();
        }
    }

    @Override
    public void onClosed() {
        releaseEarly();
        GatewayForwarder.Exchange e = exchange;
        if (e != null && !finished) {
            finished = true;
            e.cancel();
        }
    }

    @Override
    public boolean isFinished() {
        return finished;
    }

    // ---- RequestBody ----

    @Override
    public void start(RequestBody.Consumer c) {
        consumer = c;
        ByteBuf b;
        while ((b = early.poll()) != null) {
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
        ctx.channel().config().setAutoRead(false);
    }

    @Override
    public void resume() {
        if (!bodyComplete && !discarded) {
            ctx.channel().config().setAutoRead(true);
        }
    }

    @Override
    public void discard() {
        discarded = true;
        releaseEarly();
    }

    private void releaseEarly() {
        ByteBuf b;
        while ((b = early.poll()) != null) {
            b.release();
        }
    }

    // ---- ResponseSink ----

    @Override
    public void onHead(ForwardResponse response) {
        responseStarted = true;
        status = response.status().code();
        HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, response.status(), response.headers());
        int code = status;
        boolean bodyless = head || code == 204 || code == 304 || (code >= 100 && code < 200);
        if (response.contentLength() >= 0) {
            r.headers().set(HttpHeaderNames.CONTENT_LENGTH, response.contentLength());
        } else if (!bodyless) {
            r.headers().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        }
        if (!keepAlive) {
            r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        }
        if (extraHeaders != null) {
            r.headers().set(extraHeaders);
        }
        ctx.write(r);
        if (response.streaming()) {
            ctx.flush(); // an event stream's head goes out at once
        }
    }

    @Override
    public void onChunk(ByteBuf chunk) {
        ctx.write(new DefaultHttpContent(chunk));
    }

    @Override
    public void flush() {
        ctx.flush();
    }

    @Override
    public void onEnd() {
        finished = true;
        Responses.endBody(ctx, keepAlive && bodyComplete && !discarded, open -> done.exchangeDone(this, open, status));
    }

    @Override
    public void onError(SpectorException error, boolean headSent) {
        finished = true;
        releaseEarly();
        if (headSent || responseStarted) {
            Responses.reset(ctx);
            done.exchangeDone(this, false, status);
            return;
        }
        boolean reusable = keepAlive && bodyComplete && !discarded;
        status = Responses.answerProblem(ctx, error, path, extraHeaders, reusable);
        done.exchangeDone(this, reusable, status);
    }

    @Override
    public boolean isWritable() {
        return ctx.channel().isWritable();
    }
}
