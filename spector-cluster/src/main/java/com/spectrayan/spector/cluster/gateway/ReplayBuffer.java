package com.spectrayan.spector.cluster.gateway;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.handler.codec.http.DefaultHttpContent;

/**
 * One exchange's copy of its request body, kept so that a retarget after a {@code 421} (or a retry
 * on a fresh connection) can send the body again. Chunks are kept as retained slices (no copy) up
 * to a per-exchange limit and within the gateway-wide {@link ReplayBudget}.
 *
 * <p>Once a chunk does not fit (past the limit or the budget) the copy is dropped for good: the
 * body is then no longer replayable, and every later {@link #keep} is a no-op. {@link #discard()}
 * does the same when the copy is no longer needed (the owner's head arrived, the exchange ended).
 *
 * <p>Threading: confined to the exchange's event loop. Releasing: the buffer releases what it
 * retained; the caller keeps ownership of the chunk it passes to {@link #keep}.
 */
final class ReplayBuffer {
    private final long limitBytes;
    private final ReplayBudget budget;
    private final BodyChunks chunks = new BodyChunks();

    private long bytes;
    /** Bytes taken from the budget ahead of the chunks that will use them ({@link #reserve}). */
    private long reserved;
    /** What {@link #reserve} took of the budget's share for bodies read ahead, given back at {@link #discard}. */
    private long reservedAhead;

    private boolean replayable = true;

    ReplayBuffer(long limitBytes, ReplayBudget budget) {
        if (limitBytes < 0) {
            throw new IllegalArgumentException("limitBytes: " + limitBytes + " (expected: >= 0)");
        }
        this.limitBytes = limitBytes;
        this.budget = budget;
    }

    /**
     * Takes {@code n} bytes from the budget for chunks still to come, so that a body of that length
     * is kept whole whatever other exchanges take meanwhile (within the budget's share for bodies
     * read ahead, {@link ReplayBudget#tryReserveAhead}); answers false (and takes nothing) when the
     * copy could not hold them: past the limit, the budget or its share short, or bytes already kept.
     */
    boolean reserve(long n) {
        if (!replayable || bytes > 0 || reserved > 0 || n <= 0 || n > limitBytes || !budget.tryReserveAhead(n)) {
            return false;
        }
        reserved = n;
        reservedAhead = n;
        return true;
    }

    /**
     * Keeps {@code chunk}'s bytes (a retained slice, or a copy: {@link BodyChunks}) when it fits the limit and the budget (bytes {@link
     * #reserve reserved} first); answers whether the body is still replayable. A chunk that does
     * not fit drops the whole copy.
     */
    boolean keep(ByteBuf chunk) {
        if (!replayable) {
            return false;
        }
        int n = chunk.readableBytes();
        long fromReserve = Math.min(n, reserved);
        if (bytes + n <= limitBytes && (fromReserve == n || budget.tryReserve(n - fromReserve))) {
            reserved -= fromReserve;
            chunks.add(chunk.retainedSlice());
            bytes += n;
            return true;
        }
        discard();
        return false;
    }

    /**
     * Writes the kept chunks to {@code channel} (retained duplicates, not flushed); the copy stays
     * for a later attempt. Returns the bytes written.
     */
    long writeTo(Channel channel, ChannelFutureListener onWritten) {
        chunks.forEach(b ->
                channel.write(new DefaultHttpContent(b.retainedDuplicate())).addListener(onWritten));
        return chunks.bytes();
    }

    /** Drops the copy for good, giving its bytes back to the budget. */
    void discard() {
        chunks.release();
        long held = bytes + reserved - reservedAhead; // what was kept past the reserve
        if (reservedAhead > 0) {
            budget.releaseAhead(reservedAhead);
        }
        if (held > 0) {
            budget.release(held); // the budget is shared by every loop: no atomic add of nothing
        }
        bytes = 0;
        reserved = 0;
        reservedAhead = 0;
        replayable = false;
    }

    /** Answers whether the whole body so far is kept (a retry could send it again). */
    boolean isReplayable() {
        return replayable;
    }

    /** Returns the bytes kept. */
    long bytes() {
        return bytes;
    }
}
