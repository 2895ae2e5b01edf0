package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.uplink.BodySource;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/** Request and response bodies for the relay tests. */
final class Bodies {
    private Bodies() {}

    /** A caller's body handing out {@code data} in parts of {@code partBytes}. */
    static final class ArrayBody implements BodySource {
        private final byte[] data;
        private final int partBytes;
        private final @Nullable RuntimeException failAfterFirst;
        private final AtomicInteger reads = new AtomicInteger();
        private volatile int offset;
        private volatile @Nullable Throwable cancelled;

        ArrayBody(byte[] data, int partBytes, @Nullable RuntimeException failAfterFirst) {
            this.data = data;
            this.partBytes = partBytes;
            this.failAfterFirst = failAfterFirst;
        }

        ArrayBody(byte[] data, int partBytes) {
            this(data, partBytes, null);
        }

        @Override
        public synchronized CompletionStage<@Nullable ByteBuffer> next() {
            int read = reads.incrementAndGet();
            RuntimeException failure = failAfterFirst;
            if (failure != null && read > 1) {
                return CompletableFuture.failedFuture(failure);
            }
            if (offset >= data.length) {
                return CompletableFuture.completedFuture(null);
            }
            int n = Math.min(partBytes, data.length - offset);
            ByteBuffer part = ByteBuffer.wrap(data, offset, n).slice();
            offset += n;
            return CompletableFuture.completedFuture(part);
        }

        @Override
        public void cancel(Throwable reason) {
            cancelled = reason;
        }

        int reads() {
            return reads.get();
        }

        @Nullable
        Throwable cancelled() {
            return cancelled;
        }
    }

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
            java.util.concurrent.atomic.AtomicReference<@Nullable CompletableFuture<@Nullable ByteBuffer>> got =
                    new java.util.concurrent.atomic.AtomicReference<>();
            Await.until("the relay reads the caller's body", () -> {
                got.set(asked.poll());
                return got.get() != null;
            });
            CompletableFuture<@Nullable ByteBuffer> part = got.get();
            if (part == null) {
                throw new AssertionError("the relay did not read the caller's body");
            }
            return part;
        }

        @Nullable
        Throwable cancelled() {
            return cancelled;
        }
    }

    /** Reads a whole body. */
    static CompletableFuture<byte[]> readAll(BodySource body) {
        CompletableFuture<byte[]> all = new CompletableFuture<>();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        readNext(body, out, all);
        return all;
    }

    private static void readNext(BodySource body, ByteArrayOutputStream out, CompletableFuture<byte[]> all) {
        body.next().whenComplete((part, error) -> {
            if (error != null) {
                all.completeExceptionally(error);
            } else if (part == null) {
                all.complete(out.toByteArray());
            } else {
                byte[] bytes = new byte[part.remaining()];
                part.get(bytes);
                out.write(bytes, 0, bytes.length);
                readNext(body, out, all);
            }
        });
    }

    static byte[] pattern(int size) {
        byte[] data = new byte[size];
        for (int i = 0; i < size; i++) {
            data[i] = (byte) (i * 31 + (i >>> 8));
        }
        return data;
    }
}
