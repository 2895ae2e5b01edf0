package com.spectrayan.spector.uplink.worker;

import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.testing.TestBodies;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/** Test bodies: a byte array served in parts, one that fails after some parts or never ends. */
final class Bodies {
    private Bodies() {}

    static byte[] bytes(int size) {
        return TestBodies.pattern(size, 0);
    }

    /**
     * Serves {@code data} in parts of {@code partSize}, then fails with {@code failure} when given
     * (instead of ending), or never ends when {@code endless}.
     */
    static final class Served implements BodySource {
        private final byte[] data;
        private final int partSize;
        private final @Nullable RuntimeException failure;
        private final boolean endless;
        private int offset;
        final AtomicInteger calls = new AtomicInteger();
        final AtomicReference<@Nullable Throwable> cancelled = new AtomicReference<>();

        Served(byte[] data, int partSize, @Nullable RuntimeException failure, boolean endless) {
            this.data = data;
            this.partSize = partSize;
            this.failure = failure;
            this.endless = endless;
        }

        static Served of(byte[] data, int partSize) {
            return new Served(data, partSize, null, false);
        }

        @Override
        public synchronized CompletionStage<@Nullable ByteBuffer> next() {
            calls.incrementAndGet();
            CompletableFuture<@Nullable ByteBuffer> part = new CompletableFuture<>();
            if (endless) {
                part.complete(ByteBuffer.wrap(new byte[partSize]));
            } else if (offset < data.length) {
                int size = Math.min(partSize, data.length - offset);
                part.complete(ByteBuffer.wrap(data, offset, size));
                offset += size;
            } else if (failure != null) {
                part.completeExceptionally(failure);
            } else {
                part.complete(null);
            }
            return part;
        }

        @Override
        public void cancel(Throwable reason) {
            cancelled.compareAndSet(null, reason);
        }
    }
}
