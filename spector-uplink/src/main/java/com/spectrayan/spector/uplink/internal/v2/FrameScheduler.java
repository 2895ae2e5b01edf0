package com.spectrayan.spector.uplink.internal.v2;

import static java.util.Objects.requireNonNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.collection.IntObjectHashMap;
import java.util.ArrayDeque;
import java.util.function.IntConsumer;
import org.jspecify.annotations.Nullable;

/**
 * Writes one link's frames in v2's order (docs/PROTOCOL.md section 9.6): control frames first, in
 * the order they were queued, then DATA round-robin across the streams that have bytes queued and
 * credit, one slice of at most {@link V2Limits#DATA_SLICE} per turn, while the socket is writable.
 *
 * <p>Design notes.
 *
 * <ul>
 *   <li><b>Concurrency: none, by confinement.</b> One scheduler per link, created and used only on
 *       the link channel's event loop, as its {@link FrameSink} is. Every method must be called
 *       there; nothing is guarded because nothing is shared. A method called from inside a sink
 *       or producer callback (re-entrant) does its bookkeeping and leaves the writing to the loop
 *       already running.
 *   <li><b>The ring.</b> Streams ready to send wait in one FIFO ring; each turn takes the head,
 *       writes one slice and, if it still has bytes and credit, puts it back at the tail. A
 *       stream added behind {@code n} busy streams therefore waits at most {@code n} slices.
 *       <pre>
 *   controls: [HEADERS 7][WINDOW_UPDATE 0]          -&gt; written first, FIFO
 *   ring:     [5: 16K of 200M][3: 16K of 40K][7: 1K END]
 *   turn:     write 5's slice, 5 back to the tail -&gt; [3][7][5]
 *       </pre>
 *       A stream whose own window is 0 leaves the ring and comes back with its WINDOW_UPDATE (a
 *       stalled reader holds back only its stream). When the connection's window is 0 the streams
 *       stay in the ring in their order and only END_STREAMs with no bytes left (which need no
 *       credit) go out until the connection's WINDOW_UPDATE.
 *   <li><b>Slices, never copies, but of small parts.</b> A slice is {@code readRetainedSlice} of
 *       the queued buffer (never spanning two buffers), its length {@code min(DATA_SLICE, the
 *       buffer's readable bytes, the stream's credit)}; the queued buffer is released once read to
 *       its end. The sink owns each slice it is handed. A part of fewer than {@link
 *       #MIN_KEPT_PART_BYTES} is copied into the stream's gather buffer (of {@link
 *       #GATHER_BUFFER_BYTES}, the queue's last) and released at once: a small part is mostly a
 *       slice of a socket read buffer many times its size, and the queue counts readable bytes,
 *       so a client trickling a byte a write to a stream without credit pinned a read buffer per
 *       byte queued (found by a review). What a queue holds is then at most its bytes rounded up
 *       to gather buffers, or a kept part's own buffer.
 *   <li><b>Bounded.</b> Each stream queues at most {@link V2Limits#STREAM_QUEUE_MAX_BYTES}; its
 *       producer asks {@link #isWritable(int)} (false from {@link
 *       V2Limits#STREAM_QUEUE_HIGH_WATER}) and is called back when the queue drains to {@link
 *       V2Limits#STREAM_QUEUE_LOW_WATER}. At most {@link V2Limits#MAX_QUEUED_CONTROL_FRAMES}
 *       control frames wait for the socket. A reset or {@link #close} releases what was queued.
 *   <li><b>Flush once per batch:</b> a batch is everything written in one run, until the work or
 *       the socket's writability ends; then one {@link FrameSink#flush()}.
 * </ul>
 *
 * <p>A stream's sending side moves through these states; a stream not in the map is gone (its
 * END_STREAM was written, or it was reset) and takes no more DATA:
 *
 * <pre>
 *   open(id) -&gt; OPEN --enqueue(.., endStream)--&gt; ENDING --last slice, END_STREAM--&gt; gone
 *                 \___________________reset(id), close()____________________/
 * </pre>
 */
public final class FrameScheduler {
    /** A stream's sending side (see the class's state drawing). */
    private enum State {
        /** The producer may enqueue more. */
        OPEN,
        /** END_STREAM is queued: the bytes before it go out, then the stream is gone. */
        ENDING
    }

    /**
     * Bytes from which a queued part is kept as it is (4 KiB, BodyChunks' rule for the same
     * reads); a smaller one is copied into a gather buffer and released.
     */
    static final int MIN_KEPT_PART_BYTES = 4 * 1024;

    /** Bytes of a gather buffer small parts are copied into: one DATA slice, 16 KiB. */
    static final int GATHER_BUFFER_BYTES = V2Limits.DATA_SLICE;

    private final FrameSink sink;
    private final IntConsumer onStreamWritable;
    private final FlowSendWindows windows = new FlowSendWindows();

    /** The streams still sending, by id. */
    private final IntObjectHashMap<SendStream> streams = new IntObjectHashMap<>();

    /** The streams ready for a turn, in turn order; each at most once ({@link SendStream#scheduled}). */
    private final ArrayDeque<SendStream> ring = new ArrayDeque<>();

    /** Control frames waiting for the socket, FIFO, at most {@link V2Limits#MAX_QUEUED_CONTROL_FRAMES}. */
    private final ArrayDeque<Object> controls = new ArrayDeque<>();

    /** Whether a run is writing (a re-entrant call only sets {@link #rerun}). */
    private boolean running;

    /** Whether something arrived during a run that the run must look at again. */
    private boolean rerun;

    private boolean closed;

    /**
     * Creates the scheduler of a new link, on its event loop.
     *
     * @param sink where the frames go
     * @param onStreamWritable called with a stream id when that stream's queue, having reached the
     *     high-water mark, drained to the low-water mark: its producer may enqueue again
     */
    public FrameScheduler(FrameSink sink, IntConsumer onStreamWritable) {
        this.sink = requireNonNull(sink, "sink");
        this.onStreamWritable = requireNonNull(onStreamWritable, "onStreamWritable");
    }

    /**
     * Queues a control frame to go out before any DATA, after the control frames queued before it.
     * Returns false when {@link V2Limits#MAX_QUEUED_CONTROL_FRAMES} already wait for the socket, or
     * the scheduler is closed: the frame is released (if it is reference-counted) and, unless
     * closed, the caller closes the link.
     */
    public boolean control(Object frame) {
        requireNonNull(frame, "frame");
        if (closed || controls.size() >= V2Limits.MAX_QUEUED_CONTROL_FRAMES) {
            ReferenceCountUtil.release(frame);
            return false;
        }
        controls.add(frame);
        run();
        return true;
    }

    /**
     * Opens {@code streamId} for sending (odd, above every id opened before: section 9.2), with the
     * peer's initial stream window. The gateway opens a stream as it queues its request head, the
     * worker as it reads one.
     */
    public void open(int streamId) {
        if (closed) {
            throw new IllegalStateException("stream " + streamId + ": the scheduler is closed");
        }
        windows.open(streamId);
        streams.put(streamId, new SendStream(streamId));
    }

    /**
     * Queues {@code data}'s readable bytes to go out on {@code streamId}, with END_STREAM after them
     * when {@code endStream}. The scheduler owns {@code data} from this call, whatever happens.
     *
     * @return false when the stream is no longer sending (reset, or closed): {@code data} was
     *     released and nothing is queued
     * @throws IllegalStateException when the stream already queued END_STREAM, or when this
     *     would queue more than {@link V2Limits#STREAM_QUEUE_MAX_BYTES} (the producer ignored
     *     {@link #isWritable(int)}): {@code data} was released, and in the second case so was
     *     the stream's queue; the stream is gone and the caller resets it with the peer
     */
    public boolean enqueue(int streamId, ByteBuf data, boolean endStream) {
        requireNonNull(data, "data");
        SendStream s = closed ? null : streams.get(streamId);
        if (s == null) {
            data.release();
            return false;
        }
        if (s.state != State.OPEN) {
            data.release();
            throw new IllegalStateException("stream " + streamId + ": DATA after END_STREAM");
        }
        int n = data.readableBytes();
        long after = (long) s.queued + n;
        if (after > V2Limits.STREAM_QUEUE_MAX_BYTES) {
            data.release();
            reset(streamId);
            throw new IllegalStateException("stream " + streamId + ": " + after
                    + " bytes queued (expected: <= " + V2Limits.STREAM_QUEUE_MAX_BYTES
                    + ", V2Limits.STREAM_QUEUE_MAX_BYTES; the producer ignored isWritable): its queue was released");
        }
        if (n == 0) {
            data.release();
        } else {
            s.add(data);
            s.queued = (int) after;
        }
        if (s.queued >= V2Limits.STREAM_QUEUE_HIGH_WATER) {
            s.paused = true;
        }
        if (endStream) {
            s.state = State.ENDING;
        }
        schedule(s);
        run();
        return true;
    }

    /**
     * Returns whether {@code streamId}'s producer may enqueue more: the stream is sending, has not
     * queued END_STREAM, and has less than {@link V2Limits#STREAM_QUEUE_HIGH_WATER} queued.
     */
    public boolean isWritable(int streamId) {
        SendStream s = closed ? null : streams.get(streamId);
        return s != null && s.state == State.OPEN && s.queued < V2Limits.STREAM_QUEUE_HIGH_WATER;
    }

    /** Returns whether {@code streamId} is still sending here (opened, not yet ended or reset). */
    public boolean isOpen(int streamId) {
        return !closed && streams.containsKey(streamId);
    }

    /** Returns the bytes queued on {@code streamId}, 0 when it is not sending. */
    public int queuedBytes(int streamId) {
        SendStream s = streams.get(streamId);
        return s == null ? 0 : s.queued;
    }

    /** Returns the peer's window for {@code streamId}: what it may still send (0 when not sending). */
    public int streamWindow(int streamId) {
        return windows.streamWindow(streamId);
    }

    /** Returns the peer's window for the connection. */
    public int connectionWindow() {
        return windows.connectionWindow();
    }

    /**
     * Takes the peer's WINDOW_UPDATE for {@code streamId} (0: the connection), and writes what the
     * credit lets out.
     *
     * @throws FlowControlException as {@link FlowSendWindows#onWindowUpdate}; nothing changed.
     *     For a stream-level error the caller resets the stream ({@link #reset} and a RESET
     *     frame), for a connection-level one it closes the link ({@link #close})
     */
    public void onWindowUpdate(int streamId, int increment) {
        if (closed) {
            return;
        }
        windows.onWindowUpdate(streamId, increment);
        if (streamId != 0) {
            SendStream s = streams.get(streamId);
            if (s != null) {
                schedule(s);
            }
        }
        run();
    }

    /** Answers whether {@code streamId} still sends: opened, and neither its END_STREAM written nor reset. */
    public boolean isSending(int streamId) {
        return streams.containsKey(streamId);
    }

    /**
     * Ends {@code streamId}'s sending here without END_STREAM (it was reset, either way): its
     * queued bytes are released and it takes no more DATA. The caller queues the RESET frame, if
     * this side sends one. Resetting a stream that is gone does nothing.
     */
    public void reset(int streamId) {
        SendStream s = streams.remove(streamId);
        windows.close(streamId);
        if (s != null) {
            if (s.scheduled) {
                ring.remove(s);
                s.scheduled = false;
            }
            s.release();
        }
    }

    /** Resumes writing after the socket turned writable (the channel's writability changed). */
    public void writabilityChanged() {
        run();
    }

    /**
     * Closes the scheduler with its link: every queued buffer and control frame is released, and
     * from now on {@link #enqueue} and {@link #control} release what they are given and refuse it.
     */
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        ring.clear();
        for (SendStream s : streams.values()) {
            s.release();
        }
        streams.clear();
        Object c;
        while ((c = controls.poll()) != null) {
            ReferenceCountUtil.release(c);
        }
    }

    /** Puts {@code s} in the ring if it has something it may send now and is not there. */
    private void schedule(SendStream s) {
        if (s.scheduled) {
            return;
        }
        boolean ready = s.queued > 0 ? windows.streamWindow(s.id) > 0 : s.state == State.ENDING;
        if (ready) {
            ring.addLast(s);
            s.scheduled = true;
        }
    }

    /** Writes batches while there is work the socket takes; one flush per batch. */
    private void run() {
        if (running) {
            rerun = true;
            return;
        }
        running = true;
        try {
            do {
                rerun = false;
                if (writeBatch()) {
                    sink.flush();
                }
            } while (rerun && !closed);
        } finally {
            running = false;
        }
    }

    /** Writes control frames, then slices, while the socket is writable; returns whether it wrote any. */
    private boolean writeBatch() {
        boolean wrote = false;
        while (!closed && sink.isWritable()) {
            Object c = controls.poll();
            if (c != null) {
                sink.control(c);
            } else if (!writeSlice()) {
                break;
            }
            wrote = true;
        }
        return wrote;
    }

    /** Gives the next stream in the ring that can send its turn; returns false when none can. */
    private boolean writeSlice() {
        for (int tries = ring.size(); tries > 0; tries--) {
            SendStream s = ring.pollFirst();
            s.scheduled = false;
            if (s.queued == 0) { // ENDING with nothing left: END_STREAM needs no credit
                finish(s);
                sink.data(s.id, Unpooled.EMPTY_BUFFER, true);
                return true;
            }
            int credit = windows.sendable(s.id);
            if (credit == 0) {
                if (windows.streamWindow(s.id) > 0) { // the connection's window is empty: keep the turn order
                    ring.addLast(s);
                    s.scheduled = true;
                } // else parked: its WINDOW_UPDATE schedules it again
                continue;
            }
            ByteBuf head = s.queue.element();
            int n = Math.min(Math.min(head.readableBytes(), credit), V2Limits.DATA_SLICE);
            ByteBuf slice = head.readRetainedSlice(n);
            if (!head.isReadable()) {
                s.removeHead();
            }
            s.queued -= n;
            windows.consume(s.id, n);
            boolean end = s.queued == 0 && s.state == State.ENDING;
            boolean resume = s.paused && s.queued <= V2Limits.STREAM_QUEUE_LOW_WATER;
            if (end) {
                finish(s);
            } else {
                schedule(s);
                if (resume) {
                    s.paused = false;
                }
            }
            sink.data(s.id, slice, end);
            if (resume && !end) {
                onStreamWritable.accept(s.id);
            }
            return true;
        }
        return false;
    }

    /** Forgets a stream whose END_STREAM is being written. */
    private void finish(SendStream s) {
        streams.remove(s.id);
        windows.close(s.id);
    }

    /** One stream's sending side. */
    private static final class SendStream {
        final int id;

        /** The buffers queued, in order; none empty. */
        final ArrayDeque<ByteBuf> queue = new ArrayDeque<>();

        /**
         * The queue's last buffer when it is a gather buffer this scheduler made (small parts are
         * copied to its end, past the bytes slices were taken of); null when the last is not one.
         */
        @Nullable
        ByteBuf gather;

        /** The readable bytes of {@link #queue}: at most {@link V2Limits#STREAM_QUEUE_MAX_BYTES}. */
        int queued;

        State state = State.OPEN;

        /** Whether it is in the ring. */
        boolean scheduled;

        /** Whether the queue reached the high-water mark since the producer was last told to resume. */
        boolean paused;

        SendStream(int id) {
            this.id = id;
        }

        /**
         * Queues a part it now owns: kept, or, when small and behind other bytes that wait, copied
         * into the gather buffer and released. A small part into an empty queue is kept: it goes
         * out at the next turn when the stream has credit (no copy, no gather buffer per SSE event
         * or WebSocket message, found by a review), and it alone waits when the stream has none,
         * so at most one small part's buffer is held per stream.
         */
        void add(ByteBuf data) {
            int n = data.readableBytes();
            if (n >= MIN_KEPT_PART_BYTES || queue.isEmpty()) {
                queue.add(data);
                gather = null;
                return;
            }
            ByteBuf g = gather;
            try {
                if (g == null || g.maxWritableBytes() < n) {
                    // the default (pooled) allocator: a part's own may be unpooled (a wrapped array)
                    g = ByteBufAllocator.DEFAULT.directBuffer(GATHER_BUFFER_BYTES, GATHER_BUFFER_BYTES);
                    queue.add(g);
                    gather = g;
                }
                g.writeBytes(data);
            } finally {
                data.release();
            }
        }

        /** Drops the head buffer, read to its end. */
        void removeHead() {
            queue.remove().release();
            if (queue.isEmpty()) {
                gather = null; // the gather buffer, always the last, was that head
            }
        }

        void release() {
            ByteBuf b;
            while ((b = queue.poll()) != null) {
                b.release();
            }
            gather = null;
            queued = 0;
        }
    }
}
