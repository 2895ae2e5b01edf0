package com.spectrayan.spector.cluster.gateway;

import io.netty.buffer.ByteBuf;
import java.util.ArrayDeque;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A request body's chunks held for later (a replay copy, a relay's read-ahead) in memory about the
 * size of the bytes they count.
 *
 * <p>Design notes. A chunk the HTTP decoder hands over is a slice of the buffer one read filled, and
 * holding the slice holds that whole buffer. A client that sends its body a byte at a time makes
 * every read one byte long, so its held bytes cost their read buffers: on a gateway process, 200
 * clients that each sent 300 bytes of a small body a byte at a time took 8.5 MiB of Netty's direct
 * memory for 60 000 body bytes (149 bytes a byte; {@code bench/trickle-memory.sh}), and a bound
 * counted in body bytes (the replay budget, a relay's read-ahead) bounded two orders of magnitude
 * less than it said. So a
 * chunk is held as it is (no copy: the reads of an upload) only when it is at least {@link
 * #MIN_SLICE_BYTES} long and fills at least half of its buffer; any other is copied into a buffer of
 * this queue's own, appended to the last one while that has room ({@link #COPY_BUFFER_BYTES}). The
 * memory held is then at most about twice the bytes counted, plus one partly filled buffer. nginx
 * copies every body into its own {@code client_body_buffer_size} buffer; here only the small and
 * the sparse chunks are copied.
 *
 * <p>Ownership: {@link #add} takes the chunk; {@link #poll} hands the first one over; {@link
 * #release} releases what is left. Threading: confined to one thread (the exchange's event loop).
 */
public final class BodyChunks {
    /** The shortest chunk held as the slice it came as; a shorter one is copied. */
    static final int MIN_SLICE_BYTES = 4096;

    /** The most bytes one buffer of copied chunks takes before another is started. */
    static final int COPY_BUFFER_BYTES = 16384;

    /** Made at the first chunk: most requests have no body. */
    private @Nullable ArrayDeque<ByteBuf> chunks;

    /** The last of {@link #chunks}, a buffer of copies still taking bytes; null when none is. */
    private @Nullable ByteBuf open;

    private long bytes;

    /** Adds {@code chunk} after the others, taking it (released here when copied). */
    public void add(ByteBuf chunk) {
        int n = chunk.readableBytes();
        if (n == 0) {
            chunk.release();
            return;
        }
        ArrayDeque<ByteBuf> c = chunks;
        if (c == null) {
            c = new ArrayDeque<>();
            chunks = c;
        }
        bytes += n;
        if (n >= MIN_SLICE_BYTES && 2L * n >= bufferCapacity(chunk)) {
            open = null; // later copies go after this chunk
            c.add(chunk);
            return;
        }
        try {
            ByteBuf o = open;
            if (o == null || o.maxWritableBytes() < n) {
                o = chunk.alloc().directBuffer(n, Math.max(n, COPY_BUFFER_BYTES));
                c.add(o);
                open = o;
            }
            o.writeBytes(chunk, chunk.readerIndex(), n);
        } finally {
            chunk.release();
        }
    }

    /** Takes the first chunk out, its ownership with it; null when there is none. */
    @SuppressWarnings("ReferenceEquality") // the very buffer still taking copies
    public @Nullable ByteBuf poll() {
        ArrayDeque<ByteBuf> c = chunks;
        ByteBuf b = c == null ? null : c.poll();
        if (b != null) {
            bytes -= b.readableBytes();
            if (b == open) {
                open = null;
            }
        }
        return b;
    }

    /**
     * Hands each chunk, in order, to {@code each} (which must not keep it without retaining it); no
     * chunk seen is appended to afterwards, so a duplicate of it written somewhere stays as it was.
     */
    public void forEach(Consumer<ByteBuf> each) {
        ArrayDeque<ByteBuf> c = chunks;
        if (c != null) {
            open = null;
            c.forEach(each);
        }
    }

    /** Returns the bytes held. */
    public long bytes() {
        return bytes;
    }

    /** Answers whether no byte is held. */
    public boolean isEmpty() {
        return bytes == 0;
    }

    /** Returns the memory the chunks held keep: their buffers' capacities (tests). */
    long memory() {
        long m = 0;
        ArrayDeque<ByteBuf> c = chunks;
        if (c != null) {
            for (ByteBuf b : c) {
                m += bufferCapacity(b);
            }
        }
        return m;
    }

    /** Releases every chunk held. */
    public void release() {
        ByteBuf b;
        while ((b = poll()) != null) {
            b.release();
        }
    }

    /**
     * The capacity of the buffer whose bytes {@code chunk} shows: a slice's, its parent's, through
     * any wrapper (a leak detector's).
     */
    private static int bufferCapacity(ByteBuf chunk) {
        ByteBuf b = chunk;
        for (ByteBuf parent = b.unwrap(); parent != null; parent = parent.unwrap()) {
            b = parent;
        }
        return b.capacity();
    }
}
