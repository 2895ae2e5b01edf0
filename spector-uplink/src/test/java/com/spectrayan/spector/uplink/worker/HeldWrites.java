package com.spectrayan.spector.uplink.worker;

import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.wire.Frame;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A worker end whose relay-chunk writes report "written" only when the test releases them, so a
 * test sees whether the session waits for a write before reading the target's next part.
 */
final class HeldWrites implements FrameChannel {
    private final FrameChannel delegate;
    final List<CompletableFuture<Void>> held = new CopyOnWriteArrayList<>();

    HeldWrites(FrameChannel delegate) {
        this.delegate = delegate;
    }

    void releaseAll() {
        held.forEach(w -> w.complete(null));
    }

    @Override
    public CompletionStage<Void> send(Frame frame) {
        CompletionStage<Void> sent = delegate.send(frame);
        if (frame instanceof Frame.Push push && push.push().equals(RelayChunk.PUSH)) {
            CompletableFuture<Void> release = new CompletableFuture<>();
            held.add(release);
            return sent.thenCombine(release, (a, b) -> null);
        }
        return sent;
    }

    @Override
    public void close(String reason) {
        delegate.close(reason);
    }

    @Override
    public boolean isOpen() {
        return delegate.isOpen();
    }
}
