package com.spectrayan.spector.uplink.testing;

import com.spectrayan.spector.uplink.BodySource;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The uplink tests' body that serves itself: an array handed out in parts of a given size, then
 * the end; or instead a failure after the first read ({@link #ArrayBody(byte[], int,
 * RuntimeException)}), a failure in place of the end ({@link #failingAtEnd}), or fresh parts
 * forever ({@link #endless}). Counts reads and the bytes served, records the first cancel.
 * Thread-safe. (A body the test feeds by hand is {@link FedBody}.)
 */
public final class ArrayBody implements BodySource {
    private final byte[] data;
    private final int partBytes;
    private final @Nullable RuntimeException failAfterFirst;
    private final @Nullable RuntimeException failAtEnd;
    private final boolean endless;
    private final AtomicInteger replays = new AtomicInteger();
    private volatile boolean replayable;
    private final AtomicInteger reads = new AtomicInteger();
    private final AtomicLong served = new AtomicLong();
    private final CompletableFuture<Throwable> cancelled = new CompletableFuture<>();
    private int offset; // Guarded by this.

    private ArrayBody(
            byte[] data,
            int partBytes,
            @Nullable RuntimeException failAfterFirst,
            @Nullable RuntimeException failAtEnd,
            boolean endless) {
        this.data = data;
        this.partBytes = partBytes;
        this.failAfterFirst = failAfterFirst;
        this.failAtEnd = failAtEnd;
        this.endless = endless;
    }

    /** Serves {@code data} in parts of {@code partBytes}; every read after the first fails with {@code failAfterFirst} when given. */
    public ArrayBody(byte[] data, int partBytes, @Nullable RuntimeException failAfterFirst) {
        this(data, partBytes, failAfterFirst, null, false);
    }

    /** Serves {@code data} in parts of {@code partBytes}, then the end. */
    public ArrayBody(byte[] data, int partBytes) {
        this(data, partBytes, null, null, false);
    }

    /** Returns a body of {@code text} in UTF-8, in parts of 64 KiB. */
    public static ArrayBody of(String text) {
        return new ArrayBody(text.getBytes(StandardCharsets.UTF_8), 64 * 1024);
    }

    /** Returns a body that serves {@code data} in parts of {@code partBytes}, then fails with {@code failure} instead of ending. */
    public static ArrayBody failingAtEnd(byte[] data, int partBytes, RuntimeException failure) {
        return new ArrayBody(data, partBytes, null, failure, false);
    }

    /**
     * Makes this body give itself again from its first byte ({@link BodySource#replay}), as a body
     * read whole before the relay holds its parts; returns it.
     */
    public ArrayBody replayable() {
        replayable = true;
        return this;
    }

    @Override
    public synchronized @Nullable BodySource replay() {
        if (!replayable) {
            return null;
        }
        replays.incrementAndGet();
        return new ArrayBody(data, partBytes);
    }

    @Override
    public synchronized boolean canReplay() {
        return replayable;
    }

    /** Returns how many times {@link #replay()} gave this body again. */
    public int replays() {
        return replays.get();
    }

    /** Returns a body that never ends: a fresh part of {@code partBytes} zero bytes at each read. */
    public static ArrayBody endless(int partBytes) {
        return new ArrayBody(new byte[0], partBytes, null, null, true);
    }

    @Override
    public synchronized CompletionStage<@Nullable ByteBuffer> next() {
        int read = reads.incrementAndGet();
        RuntimeException failure = failAfterFirst;
        if (failure != null && read > 1) {
            return CompletableFuture.failedFuture(failure);
        }
        if (endless) {
            served.addAndGet(partBytes);
            return CompletableFuture.completedFuture(ByteBuffer.wrap(new byte[partBytes]));
        }
        if (offset >= data.length) {
            RuntimeException atEnd = failAtEnd;
            return atEnd != null ? CompletableFuture.failedFuture(atEnd) : CompletableFuture.completedFuture(null);
        }
        int n = Math.min(partBytes, data.length - offset);
        ByteBuffer part = ByteBuffer.wrap(data, offset, n).slice();
        offset += n;
        served.addAndGet(n);
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

    /** Returns the bytes handed out so far. */
    public long served() {
        return served.get();
    }

    /** Returns the stage that completes with the first cancel's reason. */
    public CompletableFuture<Throwable> cancelled() {
        return cancelled;
    }
}
