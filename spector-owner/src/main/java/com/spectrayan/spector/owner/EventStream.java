package com.spectrayan.spector.owner;

import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;

/**
 * {@code GET /api/v1/events}: a {@code text/event-stream} of the node's {@link EventHub}, chunked,
 * each event flushed as it is written. A {@code Last-Event-ID} header resumes after that id from
 * the hub's history.
 *
 * <p>Design notes: the hub calls {@link #deliver} from whichever thread published, with the hub
 * held; every delivery is queued on the connection's event loop (even from that loop), so events
 * reach the socket in id order. A subscriber too slow to keep its channel writable is closed (fail
 * closed rather than buffer without bound); it resumes with {@code Last-Event-ID}.
 */
final class EventStream implements ResponseTask, EventHub.Subscriber {
    /** The request header that resumes a stream. */
    static final String LAST_EVENT_ID = "Last-Event-ID";

    private final Exchange ex;
    private final Channel channel;

    private EventStream(Exchange ex) {
        this.ex = ex;
        this.channel = ex.ctx.channel();
    }

    /**
     * Validates {@code Last-Event-ID} and returns the sink that opens the stream when the request
     * ends.
     *
     * @throws SpectorException BAD_REQUEST for a malformed {@code Last-Event-ID}
     */
    static BodySink open(Exchange ex) {
        String header = ex.headers.get(LAST_EVENT_ID);
        long afterId = header == null
                ? -1
                : OwnershipGuard.parseToken(LAST_EVENT_ID, header).orElse(-1);
        return Sinks.atEnd(() -> new EventStream(ex).start(afterId));
    }

    private void start(long afterId) {
        HttpResponse head = new DefaultHttpResponse(ex.version, HttpResponseStatus.OK);
        head.headers()
                .set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
                .set(HttpHeaderNames.CACHE_CONTROL, "no-cache")
                .set("X-Accel-Buffering", "no");
        HttpUtil.setTransferEncodingChunked(head, true);
        ex.startStream(head, this).addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
        ex.node.events.subscribe(this, afterId);
    }

    @Override
    public void deliver(EventHub.Event event) {
        if (!channel.isActive()) {
            return;
        }
        if (!channel.isWritable()) {
            channel.close();
            return;
        }
        byte[] wire = event.wire();
        channel.eventLoop().execute(() -> {
            if (channel.isActive()) {
                ex.writeChunk(new DefaultHttpContent(Unpooled.wrappedBuffer(wire)))
                        .addListener(ChannelFutureListener.CLOSE_ON_FAILURE);
            }
        });
    }

    @Override
    public void onWritable() {}

    @Override
    public void stop() {
        ex.node.events.unsubscribe(this);
    }
}
