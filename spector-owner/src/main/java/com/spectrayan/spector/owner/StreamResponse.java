package com.spectrayan.spector.owner;

import com.spectrayan.spector.contract.Bound;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * {@code GET .../stream?bytes=N&chunk=K&delayMs=D}: a chunked {@code application/octet-stream} of
 * N bytes where byte {@code i} is {@code i mod 251}, written K bytes at a time, D ms apart.
 *
 * <p>Design notes: everything runs on the connection's event loop; delays are scheduled on it,
 * never slept. Backpressure: a chunk is written only while the channel is writable; otherwise the
 * stream waits for {@link #onWritable}. Chunks are views of one shared read-only pattern array, so a
 * stream of any size allocates nothing per byte. When the client disconnects, {@link #stop} cancels
 * the next write.
 */
final class StreamResponse implements ResponseTask {
    /** The pattern's period: a prime, so chunk boundaries never line up with it. */
    static final int PERIOD = 251;

    /** {@code PATTERN[j] = j mod 251}, long enough for a chunk starting at any phase. */
    private static final byte[] PATTERN = pattern((int) OwnerLimits.STREAM_CHUNK_BYTES.max() + PERIOD);

    private final Exchange ex;
    private final int chunk;
    private final long delayMs;
    private long sent;
    private long remaining;
    private boolean waitingForWritable;
    private boolean stopped;
    private @Nullable ScheduledFuture<?> scheduled;

    private StreamResponse(Exchange ex, long bytes, int chunk, long delayMs) {
        this.ex = ex;
        this.remaining = bytes;
        this.chunk = chunk;
        this.delayMs = delayMs;
    }

    /**
     * Validates the query and returns the sink that starts the stream when the request ends.
     *
     * @throws SpectorException BAD_REQUEST for a missing, malformed or out-of-bounds parameter
     */
    static BodySink open(Exchange ex) {
        String bytesParam = ex.queryParam("bytes");
        if (bytesParam == null) {
            throw SpectorException.badRequest("bytes", "missing (expected: 0.." + OwnerLimits.STREAM_BYTES.max() + ")");
        }
        long bytes = parse(OwnerLimits.STREAM_BYTES, bytesParam);
        String chunkParam = ex.queryParam("chunk");
        int chunk = chunkParam == null
                ? OwnerLimits.DEFAULT_STREAM_CHUNK_BYTES
                : (int) parse(OwnerLimits.STREAM_CHUNK_BYTES, chunkParam);
        String delayParam = ex.queryParam("delayMs");
        long delayMs = delayParam == null ? 0 : parse(OwnerLimits.DELAY_MS, delayParam);
        return Sinks.atEnd(() -> new StreamResponse(ex, bytes, chunk, delayMs).start());
    }

    /**
     * Parses a decimal query value within a bound.
     *
     * @throws SpectorException BAD_REQUEST naming the bound otherwise
     */
    static long parse(Bound bound, String value) {
        boolean digits = !value.isEmpty() && value.length() <= 18;
        for (int i = 0; digits && i < value.length(); i++) {
            char c = value.charAt(i);
            digits = (c >= '0' && c <= '9') || (i == 0 && c == '-' && value.length() > 1);
        }
        if (!digits) {
            String shown = value.length() > 32 ? value.substring(0, 32) + "..." : value;
            throw SpectorException.badRequest(
                    bound.name(),
                    "'" + shown + "' (expected: a decimal in " + bound.min() + ".." + bound.max() + " " + bound.unit()
                            + ")");
        }
        return bound.check(Long.parseLong(value));
    }

    private void start() {
        HttpResponse head = new DefaultHttpResponse(ex.version, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/octet-stream");
        HttpUtil.setTransferEncodingChunked(head, true);
        ex.node.activeStreams.incrementAndGet();
        ex.startStream(head, this).addListener(this::onWritten);
        pump();
    }

    private void pump() {
        scheduled = null;
        if (stopped) {
            return;
        }
        Channel channel = ex.ctx.channel();
        int written = 0;
        while (remaining > 0) {
            if (!channel.isWritable()) {
                waitingForWritable = true;
                return;
            }
            if (written == OwnerLimits.STREAM_CHUNKS_PER_TURN) {
                ex.ctx.executor().execute(this::pump); // let other channels of this loop run
                return;
            }
            int n = (int) Math.min(chunk, remaining);
            int phase = (int) (sent % PERIOD);
            sent += n;
            remaining -= n;
            written++;
            ex.writeChunk(new DefaultHttpContent(Unpooled.wrappedBuffer(PATTERN, phase, n)))
                    .addListener(this::onWritten);
            if (delayMs > 0 && remaining > 0) {
                scheduled = ex.ctx.executor().schedule(this::pump, delayMs, TimeUnit.MILLISECONDS);
                return;
            }
        }
        finishOnce();
        ex.endStream();
    }

    private void onWritten(Future<? super Void> future) {
        if (!future.isSuccess() && !stopped) {
            stop();
            ex.ctx.close();
        }
    }

    @Override
    public void onWritable() {
        if (waitingForWritable && ex.ctx.channel().isWritable()) {
            waitingForWritable = false;
            pump();
        }
    }

    @Override
    public void stop() {
        if (stopped) {
            return;
        }
        ScheduledFuture<?> next = scheduled;
        scheduled = null;
        if (next != null) {
            next.cancel(false);
        }
        finishOnce();
    }

    private void finishOnce() {
        if (!stopped) {
            stopped = true;
            ex.node.activeStreams.decrementAndGet();
        }
    }

    private static byte[] pattern(int length) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (i % PERIOD);
        }
        return bytes;
    }
}
