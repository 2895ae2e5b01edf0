package com.spectrayan.spector.uplink.transport;

import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import org.jspecify.annotations.Nullable;

/**
 * The receiver of one end of a real uplink, recording what the end received: its frames, the
 * corrupt text offered to it, and its close (a cause, or null for a clean close).
 */
final class RecordingReceiver implements FrameChannel.Receiver {
    final FrameChannel channel;
    final BlockingQueue<Frame> frames = new LinkedBlockingQueue<>();
    final BlockingQueue<CorruptFrameException> corrupt = new LinkedBlockingQueue<>();
    final CompletableFuture<@Nullable Throwable> closed = new CompletableFuture<>();
    private final boolean takesCorrupt;

    private RecordingReceiver(FrameChannel channel, boolean takesCorrupt) {
        this.channel = channel;
        this.takesCorrupt = takesCorrupt;
    }

    /** Records and leaves corrupt text to the transport (which closes with 1007). */
    static RecordingReceiver of(FrameChannel channel) {
        return new RecordingReceiver(channel, false);
    }

    /** Records and takes corrupt text (the connection stays open). */
    static RecordingReceiver takingCorrupt(FrameChannel channel) {
        return new RecordingReceiver(channel, true);
    }

    /** Returns the end as the WebSocket channel it is. */
    WebSocketFrameChannel webSocket() {
        return (WebSocketFrameChannel) channel;
    }

    @Override
    public void onFrame(Frame frame) {
        frames.add(frame);
    }

    @Override
    public void onClose(@Nullable Throwable cause) {
        closed.complete(cause);
    }

    @Override
    public boolean onCorruptFrame(CorruptFrameException failure) {
        corrupt.add(failure);
        return takesCorrupt;
    }
}
