package com.spectrayan.spector.uplink.worker;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.uplink.internal.v2.ResponseHead;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Stream;
import com.spectrayan.spector.uplink.internal.v2.V2StreamHandler;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.io.ByteArrayOutputStream;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * Plays the gateway's relay on one stream: records the worker's response head, its body (each
 * buffer copied, released and consumed at once), the end, a reset with its error object, or the
 * link's close; and produces a request body ({@link #send}) in chunks while the stream is
 * writable, resuming on {@code onWritabilityChanged}. Callbacks run on the gateway's event loop;
 * the futures and the volatile counters are read from the test's thread.
 */
final class GatewayStream implements V2StreamHandler {
    /** Bytes of each request body chunk {@link #send} writes. */
    static final int CHUNK = 64 * 1024;

    final CompletableFuture<ResponseHead> head = new CompletableFuture<>();
    /** The response body, once END_STREAM arrived. */
    final CompletableFuture<byte[]> body = new CompletableFuture<>();
    /** The reset: its code and error object. */
    final CompletableFuture<Reset> reset = new CompletableFuture<>();

    final CompletableFuture<@Nullable Throwable> linkClosed = new CompletableFuture<>();

    private final ByteArrayOutputStream received = new ByteArrayOutputStream(); // Guarded by this.
    private @Nullable V2Stream stream;

    // The producer's state: written on the gateway's loop, read by the test.
    private byte @Nullable [] toSend;
    private volatile int written;
    private volatile boolean paused;

    record Reset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {}

    void attach(V2Stream s) {
        stream = s;
    }

    V2Stream stream() {
        return requireNonNull(stream, "stream");
    }

    @Override
    public void onResponseHead(ResponseHead responseHead, boolean endStream) {
        head.complete(responseHead);
        if (endStream) {
            body.complete(new byte[0]);
        }
    }

    @Override
    public void onData(ByteBuf data, boolean endStream) {
        int n = data.readableBytes();
        synchronized (this) {
            try {
                data.readBytes(received, n);
            } catch (java.io.IOException e) {
                throw new AssertionError(e);
            } finally {
                data.release();
            }
        }
        stream().consumed(n);
        if (endStream) {
            body.complete(receivedBytes());
        }
    }

    @Override
    public void onReset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {
        reset.complete(new Reset(code, error));
    }

    @Override
    public void onLinkClosed(@Nullable Throwable cause) {
        linkClosed.complete(cause);
    }

    @Override
    public void onWritabilityChanged() {
        fill();
    }

    /** Returns the response bytes received so far. */
    synchronized byte[] receivedBytes() {
        return received.toByteArray();
    }

    /** Starts writing {@code bytes} as the request body, END_STREAM after it (on the gateway's loop). */
    void send(byte[] bytes) {
        stream().eventLoop().execute(() -> {
            toSend = bytes;
            fill();
        });
    }

    /** Writes {@code bytes} as one DATA frame, END_STREAM when {@code end} (on the gateway's loop). */
    void data(byte[] bytes, boolean end) {
        stream()
                .eventLoop()
                .execute(() -> stream()
                        .write(ByteBufAllocator.DEFAULT.buffer(bytes.length).writeBytes(bytes), end));
    }

    /** Resets the stream CANCEL, as the gateway does when its caller went away. */
    void cancel() {
        stream().reset(V2ErrorCode.CANCEL, null);
    }

    private void fill() {
        byte[] bytes = toSend;
        V2Stream s = stream();
        if (bytes == null) {
            return;
        }
        int at = written;
        while (at < bytes.length && s.isWritable()) {
            int n = Math.min(CHUNK, bytes.length - at);
            ByteBuf chunk = ByteBufAllocator.DEFAULT.buffer(n).writeBytes(bytes, at, n);
            at += n;
            written = at;
            s.write(chunk, at == bytes.length);
        }
        paused = at < bytes.length;
    }

    /** Returns the request body bytes written into the stream so far. */
    int written() {
        return written;
    }

    /** Returns whether the producer is waiting for the stream to turn writable. */
    boolean paused() {
        return paused;
    }
}
