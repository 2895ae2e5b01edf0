package com.spectrayan.spector.uplink.transport;

import com.spectrayan.spector.uplink.internal.v2.ResponseHead;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2StreamHandler;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The handler of a stream a test opens itself on the gateway's end of a v2 link (as a raw {@code
 * relay.request} is a v1 test's own call): it records the response head, the DATA bytes (released
 * and credited back at once), the end, and the reset or the link's loss.
 */
final class StreamProbe implements V2StreamHandler {
    /** A RESET and its error object (null when it had none). */
    record Reset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {}

    final CompletableFuture<ResponseHead> head = new CompletableFuture<>();
    final CompletableFuture<Void> ended = new CompletableFuture<>();
    final CompletableFuture<Reset> reset = new CompletableFuture<>();
    private volatile com.spectrayan.spector.uplink.internal.v2.@Nullable V2Stream stream;

    /** Sets the stream (once opened) so DATA read is credited back. */
    StreamProbe on(com.spectrayan.spector.uplink.internal.v2.V2Stream s) {
        this.stream = s;
        return this;
    }

    @Override
    public void onResponseHead(ResponseHead h, boolean endStream) {
        head.complete(h);
        if (endStream) {
            ended.complete(null);
        }
    }

    @Override
    public void onData(ByteBuf data, boolean endStream) {
        int n = data.readableBytes();
        data.release();
        com.spectrayan.spector.uplink.internal.v2.V2Stream s = stream;
        if (s != null) {
            s.consumed(n);
        }
        if (endStream) {
            ended.complete(null);
        }
    }

    @Override
    public void onReset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {
        reset.complete(new Reset(code, error));
    }

    @Override
    public void onLinkClosed(@Nullable Throwable cause) {
        reset.completeExceptionally(new AssertionError("the link closed", cause));
        head.completeExceptionally(new AssertionError("the link closed", cause));
    }
}
