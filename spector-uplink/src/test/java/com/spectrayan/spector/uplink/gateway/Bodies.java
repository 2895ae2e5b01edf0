package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.BodySource;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/** A body the relay tests hand out part by part ({@link ManualBody}); the others are in {@code uplink.testing}. */
final class Bodies {
    private Bodies() {}

    /** A caller's body whose parts the test hands out one {@code next()} at a time. */
    static final class ManualBody implements BodySource {
        private final java.util.concurrent.LinkedBlockingQueue<CompletableFuture<@Nullable ByteBuffer>> asked =
                new java.util.concurrent.LinkedBlockingQueue<>();
        private volatile @Nullable Throwable cancelled;

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            CompletableFuture<@Nullable ByteBuffer> part = new CompletableFuture<>();
            asked.add(part);
            return part;
        }

        @Override
        public void cancel(Throwable reason) {
            cancelled = reason;
        }

        /** Waits (bounded) for the relay to ask for the next part. */
        CompletableFuture<@Nullable ByteBuffer> asked() {
            return Waits.take(asked, "the relay reads the caller's body");
        }

        @Nullable
        Throwable cancelled() {
            return cancelled;
        }
    }
}
