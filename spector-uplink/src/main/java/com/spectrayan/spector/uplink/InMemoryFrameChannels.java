package com.spectrayan.spector.uplink;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.wire.Frame;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Two connected in-memory {@link FrameChannel}s, each delivering on its own single thread, for
 * tests of either half of the relay without a socket. Every frame goes through {@link FrameCodec}
 * (encode, then decode), so what crosses is exactly what the wire would carry.
 */
public final class InMemoryFrameChannels {
    private InMemoryFrameChannels() {}

    /**
     * One in-memory connection and the receivers of its two ends.
     *
     * @param gatewayEnd the gateway's end (the caller's)
     * @param gateway what receives the gateway end's frames
     * @param workerEnd the worker's end
     * @param worker what receives the worker end's frames
     * @param <G> the gateway end's receiver
     * @param <W> the worker end's receiver
     */
    public record Pair<G extends FrameChannel.Receiver, W extends FrameChannel.Receiver>(
            FrameChannel gatewayEnd, G gateway, FrameChannel workerEnd, W worker) {}

    /**
     * Connects two ends, each receiver made from its end as a transport would make it (before any
     * frame is delivered to it). A frame sent while a factory runs reaches the other end's receiver
     * once it exists.
     */
    public static <G extends FrameChannel.Receiver, W extends FrameChannel.Receiver> Pair<G, W> pair(
            Function<? super FrameChannel, G> gateway, Function<? super FrameChannel, W> worker) {
        return pair(new End(thread("gateway"), true), new End(thread("worker"), true), gateway, worker);
    }

    /**
     * As {@link #pair(Function, Function)}, but both ends deliver on {@code delivery}, in the order
     * frames were sent: given an executor that runs only when the test drains it, nothing crosses
     * until then, so a test can prove exactly that nothing more was sent.
     */
    public static <G extends FrameChannel.Receiver, W extends FrameChannel.Receiver> Pair<G, W> pair(
            Executor delivery, Function<? super FrameChannel, G> gateway, Function<? super FrameChannel, W> worker) {
        requireNonNull(delivery, "delivery");
        return pair(new End(delivery, false), new End(delivery, false), gateway, worker);
    }

    private static ExecutorService thread(String name) {
        return Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "in-memory-uplink-" + name);
            t.setDaemon(true);
            return t;
        });
    }

    private static <G extends FrameChannel.Receiver, W extends FrameChannel.Receiver> Pair<G, W> pair(
            End a, End b, Function<? super FrameChannel, G> gateway, Function<? super FrameChannel, W> worker) {
        requireNonNull(gateway, "gateway");
        requireNonNull(worker, "worker");
        a.peer = b;
        b.peer = a;
        try {
            G g = requireNonNull(gateway.apply(a), "the gateway end's receiver");
            a.receiver.complete(g);
            W w = requireNonNull(worker.apply(b), "the worker end's receiver");
            b.receiver.complete(w);
            return new Pair<>(a, g, b, w);
        } catch (RuntimeException e) {
            a.receiver.completeExceptionally(e);
            b.receiver.completeExceptionally(e);
            a.close("the pair failed to start");
            throw e;
        }
    }

    private static final class End implements FrameChannel {
        private final Executor thread;
        private final boolean owned; // A thread of its own, shut down with the end.
        private final AtomicBoolean open = new AtomicBoolean(true);
        private final CompletableFuture<Receiver> receiver = new CompletableFuture<>();
        private @Nullable End peer;

        End(Executor thread, boolean owned) {
            this.thread = thread;
            this.owned = owned;
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
                    p.receiver.join().onFrame(FrameCodec.decode(ByteBuffer.wrap(text)));
                }
            });
            return written;
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
                    try {
                        receiver.join().onClose(null);
                    } finally {
                        if (owned) {
                            ((ExecutorService) thread).shutdown();
                        }
                    }
                });
            }
        }

        @Override
        public boolean isOpen() {
            return open.get();
        }
    }
}
