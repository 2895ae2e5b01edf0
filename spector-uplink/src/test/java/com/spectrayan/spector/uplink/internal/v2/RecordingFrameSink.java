package com.spectrayan.spector.uplink.internal.v2;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * A {@link FrameSink} that records what a scheduler wrote, in order, as short strings: {@code
 * "C:<frame>"} for a control frame, {@code "D<id>:<length>"} for DATA ({@code ":END"} appended for
 * END_STREAM) and {@code "F"} for a flush. It is writable for a budget of frames the test grants
 * ({@link #allow}), as a channel is until its outbound buffer fills.
 *
 * <p>What becomes of each slice is a {@link Slices} mode: released as it is recorded (the
 * default), its bytes copied first, or kept for the test to inspect and {@link #releaseKept release}.
 */
final class RecordingFrameSink implements FrameSink {
    /** What the sink does with each slice it is handed. */
    enum Slices {
        /** Releases it once its length is recorded. */
        RELEASE,
        /** Copies its bytes into the stream's record ({@link #bytes}), then releases it. */
        COPY,
        /** Keeps it, unreleased, in {@link #kept}. */
        KEEP
    }

    /** A budget that never runs out. */
    static final int UNLIMITED = Integer.MAX_VALUE;

    private final List<String> events = new ArrayList<>();
    private final Map<Integer, ByteArrayOutputStream> bytes = new TreeMap<>();
    private final Map<Integer, Long> dataBytes = new TreeMap<>();
    private final List<ByteBuf> kept = new ArrayList<>();
    private int budget = UNLIMITED;
    private Slices slices = Slices.RELEASE;
    private Runnable onFlush = () -> {};

    /** Makes the sink writable for {@code frames} more frames (UNLIMITED: always; 0: not now). */
    RecordingFrameSink allow(int frames) {
        budget = frames;
        return this;
    }

    /** Runs {@code hook} after each flush is recorded (a channel that drains and turns writable). */
    RecordingFrameSink onFlush(Runnable hook) {
        onFlush = hook;
        return this;
    }

    /** What becomes of each slice from now on. */
    RecordingFrameSink slices(Slices mode) {
        slices = mode;
        return this;
    }

    @Override
    public void control(Object frame) {
        spend();
        events.add("C:" + frame);
    }

    @Override
    public void data(int streamId, ByteBuf slice, boolean endStream) {
        spend();
        int n = slice.readableBytes();
        events.add("D" + streamId + ":" + n + (endStream ? ":END" : ""));
        dataBytes.merge(streamId, (long) n, Long::sum);
        if (slices == Slices.COPY) {
            bytes.computeIfAbsent(streamId, id -> new ByteArrayOutputStream()).writeBytes(ByteBufUtil.getBytes(slice));
        }
        if (slices == Slices.KEEP) {
            kept.add(slice);
        } else {
            slice.release();
        }
    }

    @Override
    public void flush() {
        events.add("F");
        onFlush.run();
    }

    @Override
    public boolean isWritable() {
        return budget > 0;
    }

    /** Returns the events so far, and forgets them. */
    List<String> take() {
        List<String> taken = List.copyOf(events);
        events.clear();
        return taken;
    }

    /** Returns the events so far. */
    List<String> events() {
        return List.copyOf(events);
    }

    /** Returns the DATA bytes written on {@code streamId} so far (with {@link Slices#COPY}). */
    byte[] bytes(int streamId) {
        ByteArrayOutputStream b = bytes.get(streamId);
        return b == null ? new byte[0] : b.toByteArray();
    }

    /** Returns how many DATA bytes were written on {@code streamId} so far. */
    long dataBytes(int streamId) {
        return dataBytes.getOrDefault(streamId, 0L);
    }

    /** Returns the slices kept (with {@link Slices#KEEP}), in the order written. */
    List<ByteBuf> kept() {
        return kept;
    }

    /** Releases the slices kept. */
    void releaseKept() {
        kept.forEach(ByteBuf::release);
        kept.clear();
    }

    private void spend() {
        if (budget <= 0) {
            throw new AssertionError("written while not writable");
        }
        if (budget != UNLIMITED) {
            budget--;
        }
    }

    /** One DATA event read back: its stream, its length and whether it carried END_STREAM. */
    record Data(int streamId, int length, boolean end) {
        /** Reads a {@code "D<id>:<length>[:END]"} event; empty for any other event. */
        static Optional<Data> of(String event) {
            if (!event.startsWith("D")) {
                return Optional.empty();
            }
            int colon = event.indexOf(':');
            int second = event.indexOf(':', colon + 1);
            int id = Integer.parseInt(event.substring(1, colon));
            int length = Integer.parseInt(second < 0 ? event.substring(colon + 1) : event.substring(colon + 1, second));
            return Optional.of(new Data(id, length, second >= 0));
        }
    }
}
