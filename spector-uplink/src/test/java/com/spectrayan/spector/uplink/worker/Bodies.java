package com.spectrayan.spector.uplink.worker;

import com.spectrayan.spector.uplink.BodySource;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/** Test bodies: a byte array served in parts, one that fails after some parts, and a reader. */
final class Bodies {
    private Bodies() {}

    static byte[] bytes(int size) {
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) (i * 31 + (i >>> 11));
        }
        return bytes;
    }

    /** Reads a body to its end. */
    static CompletableFuture<byte[]> readAll(BodySource body) {
        CompletableFuture<byte[]> done = new CompletableFuture<>();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        readNext(body, out, done);
        return done;
    }

    private static void readNext(BodySource body, ByteArrayOutputStream out, CompletableFuture<byte[]> done) {
        body.next().whenComplete((part, failure) -> {
            if (failure != null) {
                done.completeExceptionally(failure);
            } else if (part == null) {
                done.complete(out.toByteArray());
            } else {
                byte[] bytes = new byte[part.remaining()];
                part.get(bytes);
                out.writeBytes(bytes);
                readNext(body, out, done);
            }
        });
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
