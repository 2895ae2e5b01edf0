package com.spectrayan.spector.uplink.testing;

import com.spectrayan.spector.uplink.BodySource;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * A body handing out an array in parts of a given size; counts reads, records a cancel, and can fail every read
 * after the first.
 */
public final class ArrayBody implements BodySource {
    private final byte[] data;
    private final int partBytes;
    private final @Nullable RuntimeException failAfterFirst;
    private final AtomicInteger reads = new AtomicInteger();
    private final CompletableFuture<Throwable> cancelled = new CompletableFuture<>();
    private int offset; // Guarded by this.

    public ArrayBody(byte[] data, int partBytes, @Nullable RuntimeException failAfterFirst) {
        this.data = data;
        this.partBytes = partBytes;
        this.failAfterFirst = failAfterFirst;
    }

    public ArrayBody(byte[] data, int partBytes) {
        this(data, partBytes, null);
    }

    /** Returns a body of {@code text} in UTF-8, in parts of 64 KiB. */
    public static ArrayBody of(String text) {
        return new ArrayBody(text.getBytes(StandardCharsets.UTF_8), 64 * 1024);
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
        cancelled.complete(reason);
    }

    /** Returns how many times {@link #next()} was called. */
    public int reads() {
        return reads.get();
    }

    /** Returns the stage that completes with the first cancel's reason. */
    public CompletableFuture<Throwable> cancelled() {
        return cancelled;
    }
}
