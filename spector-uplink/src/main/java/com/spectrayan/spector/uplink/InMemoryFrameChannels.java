package com.spectrayan.spector.uplink;

import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.FrameCodec;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Two connected in-memory {@link FrameChannel}s, each delivering on its own single thread, for
 * tests of either half of the relay without a socket. Every frame goes through {@link FrameCodec}
 * (encode, then decode), so what crosses is exactly what the wire would carry.
 */
public final class InMemoryFrameChannels {
    private InMemoryFrameChannels() {}

    /** Returns the two ends of one connection: index 0 is the gateway's, index 1 the worker's. */
    public static FrameChannel[] pair() {
        End a = new End("gateway");
        End b = new End("worker");
        a.peer = b;
        b.peer = a;
        return new FrameChannel[] {a, b};
    }

    private static final class End implements FrameChannel {
        private final ExecutorService thread;
        private final AtomicBoolean open = new AtomicBoolean(true);
        private @Nullable End peer;
        private volatile Consumer<Frame> receiver = f -> {};
        private volatile Consumer<@Nullable Throwable> onClose = c -> {};

        End(String name) {
            this.thread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "in-memory-uplink-" + name);
                t.setDaemon(true);
                return t;
            });
        }

        @Override
        public CompletionStage<Void> send(Frame frame) {
            End p = peer;
            if (!open.get() || p == null || !p.open.get()) {
                return CompletableFuture.failedFuture(new ClosedChannelException());
            }
            byte[] text = FrameCodec.encodeUtf8(frame); // the bytes a WebSocket text frame would carry
            CompletableFuture<Void> written = new CompletableFuture<>();
            p.thread.execute(() -> {
                written.complete(null);
                if (p.open.get()) {
                    p.receiver.accept(FrameCodec.decode(ByteBuffer.wrap(text)));
                }
            });
            return written;
        }

        @Override
        public void onFrame(Consumer<Frame> receiver) {
            this.receiver = receiver;
        }

        @Override
        public void onClose(Consumer<@Nullable Throwable> closed) {
            this.onClose = closed;
        }

        @Override
        public void close(String reason) {
            shut();
            End p = peer;
            if (p != null) {
                p.shut();
            }
        }

        private void shut() {
            if (open.compareAndSet(true, false)) {
                thread.execute(() -> {
                    onClose.accept(null);
                    thread.shutdown();
                });
            }
        }

        @Override
        public boolean isOpen() {
            return open.get();
        }
    }
}
