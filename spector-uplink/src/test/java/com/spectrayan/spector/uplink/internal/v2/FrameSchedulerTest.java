package com.spectrayan.spector.uplink.internal.v2;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.testkit.FakeTicker;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntPredicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The scheduler's order and bounds (PROTOCOL.md section 9.6; the windows of section 9.5, RFC 9113
 * section 5.2): control first, DATA round-robin in slices of at most 16 KiB, streams without credit
 * skipped, every queue bounded and released. The sink records each write; its writability is a
 * budget of frames, so every order is asserted exactly.
 */
final class FrameSchedulerTest {
    private static final int SLICE = V2Limits.DATA_SLICE;
    private static final int WINDOW = V2Limits.INITIAL_STREAM_WINDOW;
    private static final int MIB = 1024 * 1024;
    private static final String FULL = "D1:" + SLICE;

    private final RecordingFrameSink sink = new RecordingFrameSink();
    private final List<Integer> resumed = new ArrayList<>();
    private final Map<Integer, Bulk> producers = new HashMap<>();
    private final FrameScheduler scheduler = new FrameScheduler(sink, id -> {
        resumed.add(id);
        Bulk b = producers.get(id);
        if (b != null) {
            b.fill();
        }
    });

    /** Every buffer a test made; all must be released when it ends. */
    private final List<ByteBuf> made = new ArrayList<>();

    @AfterEach
    void nothingLeaks() {
        scheduler.close();
        producers.values().forEach(Bulk::done);
        sink.releaseKept();
        for (ByteBuf b : made) {
            assertThat(b.refCnt())
                    .as("a buffer the test queued, after the close")
                    .isZero();
        }
    }

    // ---- control first ----

    @Test
    void control_queuedBehindData_goesOutFirstInFifoOrder() {
        sink.allow(0);
        scheduler.open(1);
        scheduler.enqueue(1, buf(2 * SLICE), false);
        scheduler.control("HEADERS 3");
        scheduler.control("WINDOW_UPDATE 0");

        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();

        assertThat(sink.take()).containsExactly("C:HEADERS 3", "C:WINDOW_UPDATE 0", FULL, FULL, "F");
    }

    @Test
    void control_queuedWhileABulkStreamWaits_overtakesItsRemainingSlices() {
        sink.allow(1);
        scheduler.open(1);
        scheduler.enqueue(1, buf(3 * SLICE), false);
        assertThat(sink.take()).containsExactly(FULL, "F");

        scheduler.control("PING");
        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();

        assertThat(sink.take()).containsExactly("C:PING", FULL, FULL, "F");
    }

    @Test
    void control_whileWritable_goesOutAtOnceAndIsFlushed() {
        assertThat(scheduler.control("GOAWAY")).isTrue();

        assertThat(sink.take()).containsExactly("C:GOAWAY", "F");
    }

    @Test
    void control_atTheQueueLimit_isTaken_andOnePast_isRefusedAndReleased() {
        sink.allow(0);
        for (int i = 0; i < V2Limits.MAX_QUEUED_CONTROL_FRAMES; i++) {
            assertThat(scheduler.control("P" + i)).as("frame %d", i).isTrue();
        }
        ByteBuf frame = buf(8);

        assertThat(scheduler.control(frame)).isFalse();

        assertThat(frame.refCnt()).isZero();
        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();
        List<String> events = sink.take();
        assertThat(events).hasSize(V2Limits.MAX_QUEUED_CONTROL_FRAMES + 1).endsWith("C:P1023", "F");
    }

    @Test
    void close_releasesQueuedControlFramesAndRefusesMore() {
        sink.allow(0);
        ByteBuf queued = buf(8);
        scheduler.control(queued);

        scheduler.close();

        assertThat(queued.refCnt()).isZero();
        ByteBuf late = buf(8);
        assertThat(scheduler.control(late)).isFalse();
        assertThat(late.refCnt()).isZero();
    }

    // ---- round-robin ----

    @Test
    void roundRobin_twoBulkStreams_takeEqualSlicesInTurn() {
        scheduler.open(1);
        scheduler.open(3);
        sink.allow(0);
        bulk(1, MIB).fill();
        bulk(3, MIB).fill();

        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();

        List<String> expected = new ArrayList<>();
        for (int i = 0; i < WINDOW / SLICE; i++) {
            expected.add(FULL);
            expected.add("D3:" + SLICE);
        }
        expected.add("F");
        assertThat(sink.take()).as("each stream's whole window, in turns").containsExactlyElementsOf(expected);
    }

    @Test
    void roundRobin_smallStreamBehindA200MiBStream_waitsOneSlice() {
        long total = 200L * MIB;
        int perBatch = 8;
        int smallAt = 800;
        scheduler.open(1);
        sink.allow(0);
        bulk(1, total).fill();

        List<String> bulkSlices = new ArrayList<>();
        int batches = 0;
        while (scheduler.isOpen(1)) {
            assertThat(batches).as("batches").isLessThan(2000);
            if (batches == smallAt) {
                scheduler.open(3);
                scheduler.enqueue(3, buf(1024), true);
            }
            List<String> events = batch(perBatch);
            if (batches == smallAt) {
                assertThat(events)
                        .as("the small stream waits one slice of the bulk one")
                        .containsExactly(FULL, "D3:1024:END", FULL, FULL, FULL, FULL, FULL, FULL, "F");
            } else {
                assertThat(events).last().isEqualTo("F");
                assertThat(events).hasSizeBetween(2, perBatch + 1);
            }
            events.stream().filter(e -> e.startsWith("D1:")).forEach(bulkSlices::add);
            batches++;
        }

        int slices = (int) (total / SLICE);
        assertThat(bulkSlices).hasSize(slices);
        assertThat(bulkSlices.subList(0, slices - 1)).containsOnly(FULL);
        assertThat(bulkSlices.get(slices - 1)).isEqualTo(FULL + ":END");
        assertThat(batches)
                .as("full batches, the small one's among them, and the rest")
                .isEqualTo(slices / perBatch + 1);
        assertThat(sink.dataBytes(1)).isEqualTo(total);
    }

    @Test
    void roundRobin_smallStreamBehindTwoBulkStreams_waitsOneSliceOfEach() {
        scheduler.open(1);
        scheduler.open(3);
        sink.allow(0);
        bulk(1, 4 * MIB).fill();
        bulk(3, 4 * MIB).fill();
        for (int i = 0; i < 10; i++) {
            assertThat(batch(8))
                    .containsExactly(FULL, "D3:16384", FULL, "D3:16384", FULL, "D3:16384", FULL, "D3:16384", "F");
        }

        scheduler.open(5);
        scheduler.enqueue(5, buf(100), true);

        assertThat(batch(8))
                .containsExactly(FULL, "D3:16384", "D5:100:END", FULL, "D3:16384", FULL, "D3:16384", FULL, "F");
    }

    // ---- credit ----

    @Test
    void streamWithoutCredit_isSkipped_andOthersGoOn_untilItsWindowUpdate() {
        scheduler.open(1);
        scheduler.open(3);
        sink.allow(0);
        scheduler.enqueue(1, buf(WINDOW + SLICE), false);
        scheduler.enqueue(3, buf(2 * SLICE), true);
        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();
        List<String> expected = new ArrayList<>(List.of(FULL, "D3:16384", FULL, "D3:16384:END"));
        expected.addAll(Collections.nCopies(WINDOW / SLICE - 2, FULL));
        expected.add("F");
        assertThat(sink.take()).containsExactlyElementsOf(expected);
        assertThat(scheduler.streamWindow(1)).isZero();

        scheduler.open(5);
        scheduler.enqueue(5, buf(SLICE), true);
        assertThat(sink.take()).as("stream 1 has bytes but no credit").containsExactly("D5:16384:END", "F");

        scheduler.onWindowUpdate(1, SLICE);
        assertThat(sink.take()).containsExactly(FULL, "F");
    }

    @Test
    void emptyConnectionWindow_holdsEveryStreamsData_inTurnOrder_butNotABareEndStream() {
        scheduler.open(1);
        scheduler.onWindowUpdate(1, MIB);
        scheduler.enqueue(1, buf(MIB + SLICE), false);
        assertThat(sink.take()).hasSize(MIB / SLICE + 1);
        assertThat(scheduler.connectionWindow()).isZero();

        scheduler.open(3);
        scheduler.enqueue(3, buf(SLICE), false);
        scheduler.open(5);
        scheduler.enqueue(5, Unpooled.EMPTY_BUFFER, true);
        assertThat(sink.take()).as("END_STREAM alone needs no credit").containsExactly("D5:0:END", "F");

        scheduler.onWindowUpdate(0, 2 * SLICE);
        assertThat(sink.take()).containsExactly(FULL, "D3:16384", "F");
    }

    @Test
    void stalledReader_holdsBackOnlyItsStream_andResumesWhenItReads() {
        // The peer's receive windows (FlowReceiveWindows) take each DATA frame; stream 3's consumer
        // takes every byte at once, stream 1's reader has stopped.
        FlowReceiveWindows peer = new FlowReceiveWindows(new FakeTicker());
        for (int id : new int[] {1, 3}) {
            scheduler.open(id);
            peer.open(id);
        }
        Map<Integer, Long> received = new HashMap<>();
        bulk(1, 4 * MIB).fill();
        bulk(3, 4 * MIB).fill();
        deliver(peer, received, id -> id == 3);

        assertThat(scheduler.isOpen(3)).as("stream 3 ended").isFalse();
        assertThat(received.get(3)).isEqualTo(4L * MIB);
        assertThat(received.get(1)).as("one window, then held").isEqualTo((long) WINDOW);
        assertThat(scheduler.isWritable(1))
                .as("its producer is paused, not cancelled")
                .isFalse();

        List<WindowCredit> credits = new ArrayList<>(peer.consumed(1, WINDOW));
        credits.forEach(c -> scheduler.onWindowUpdate(c.streamId(), c.increment()));
        List<String> rest = deliver(peer, received, id -> true);

        assertThat(received.get(1)).isEqualTo(4L * MIB);
        assertThat(scheduler.isOpen(1)).isFalse();
        assertThat(rest).endsWith("D1:16384:END", "F");
    }

    // ---- slices ----

    @Test
    void slices_areAtMostDataSlice_andShareTheQueuedBuffersMemory() {
        sink.slices(RecordingFrameSink.Slices.KEEP);
        scheduler.open(1);
        ByteBuf queued = buf(2 * SLICE + 8192);

        scheduler.enqueue(1, queued, true);

        assertThat(sink.take()).containsExactly(FULL, FULL, "D1:8192:END", "F");
        List<ByteBuf> slices = sink.kept();
        for (int i = 0; i < slices.size(); i++) {
            ByteBuf slice = slices.get(i);
            assertThat(slice.array())
                    .as("slice %d: the queued buffer's array, not a copy", i)
                    .isSameAs(queued.array());
            assertThat(slice.arrayOffset() + slice.readerIndex()).isEqualTo(queued.arrayOffset() + i * SLICE);
        }
        assertThat(ByteBufUtil.getBytes(slices.get(2))).isEqualTo(pattern(2 * SLICE, 8192));
    }

    /**
     * A client trickling a byte a write to a stream without credit: each part is a one-byte slice
     * of a socket read buffer of its own (2 KiB here). Each is copied into the stream's gather
     * buffer and its read buffer released at once, so the queue holds its bytes, not a read buffer
     * per byte; the bytes go out in order. Regression (a review): each part was kept, its read
     * buffer with it.
     */
    @Test
    void enqueue_oneBytePartsOfBigReadBuffers_areGathered_andTheReadBuffersReleasedAtOnce() {
        sink.allow(0);
        scheduler.open(1);
        int parts = 20_000;
        List<ByteBuf> reads = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            ByteBuf read = buf(2048).writerIndex(0).writeByte(i);
            reads.add(read);
            scheduler.enqueue(1, read.readRetainedSlice(1), false);
            read.release(); // the decoder's own reference: only the part holds the read buffer now
        }

        assertThat(reads.get(0).refCnt())
                .as("the first, into an empty queue, is kept: it would go out as it is with credit")
                .isOne();
        assertThat(reads.subList(1, parts))
                .as("no read buffer is held by a byte queued behind it")
                .allSatisfy(read -> assertThat(read.refCnt()).isZero());
        assertThat(scheduler.queuedBytes(1)).isEqualTo(parts);

        sink.slices(RecordingFrameSink.Slices.KEEP);
        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();
        byte[] sent = new byte[parts];
        int at = 0;
        for (ByteBuf slice : sink.kept()) {
            int n = slice.readableBytes();
            slice.readBytes(sent, at, n);
            at += n;
        }
        assertThat(at).isEqualTo(parts);
        for (int i = 0; i < parts; i++) {
            assertThat(sent[i]).as("byte %d", i).isEqualTo((byte) i);
        }
    }

    /** A part of {@link FrameScheduler#MIN_KEPT_PART_BYTES} is kept as it is; one byte smaller is copied. */
    @Test
    void enqueue_partAtMinKeptPartBytes_isKept_andOneByteSmaller_isCopied() {
        sink.allow(0);
        scheduler.open(1);
        int bound = FrameScheduler.MIN_KEPT_PART_BYTES;
        ByteBuf atRead = buf(4 * bound);
        ByteBuf belowRead = buf(4 * bound);

        scheduler.enqueue(1, atRead.readRetainedSlice(bound), false);
        scheduler.enqueue(1, belowRead.readRetainedSlice(bound - 1), false);

        assertThat(atRead.refCnt())
                .as("at the bound: the part holds its read buffer")
                .isEqualTo(2);
        assertThat(belowRead.refCnt())
                .as("one byte below: copied, the read buffer not held")
                .isOne();
        atRead.release();
        belowRead.release();
    }

    @Test
    void slice_neverSpansTwoQueuedBuffers() {
        sink.allow(0);
        scheduler.open(1);
        scheduler.enqueue(1, buf(100), false);
        scheduler.enqueue(1, buf(SLICE + 1), true);

        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();

        assertThat(sink.take()).containsExactly("D1:100", FULL, "D1:1:END", "F");
    }

    // ---- END_STREAM ----

    @Test
    void endStream_afterTheLastBytesWereSent_goesAloneOnAnEmptySlice() {
        scheduler.open(1);
        scheduler.enqueue(1, buf(SLICE), false);
        assertThat(sink.take()).containsExactly(FULL, "F");

        scheduler.enqueue(1, Unpooled.EMPTY_BUFFER, true);

        assertThat(sink.take()).containsExactly("D1:0:END", "F");
        assertThat(scheduler.isOpen(1)).isFalse();
        scheduler.onWindowUpdate(1, 10); // its WINDOW_UPDATEs are dropped now
        assertThat(sink.take()).isEmpty();
    }

    @Test
    void endStream_withoutCredit_goesOut_butBytesBeforeItWait() {
        scheduler.open(1);
        scheduler.enqueue(1, buf(WINDOW), false);
        sink.take();
        scheduler.enqueue(1, Unpooled.EMPTY_BUFFER, true);
        assertThat(sink.take()).containsExactly("D1:0:END", "F");

        scheduler.open(3);
        scheduler.enqueue(3, buf(WINDOW), false);
        sink.take();
        scheduler.enqueue(3, buf(1), true);
        assertThat(sink.take()).isEmpty();
        scheduler.onWindowUpdate(3, 1);
        assertThat(sink.take()).containsExactly("D3:1:END", "F");
    }

    @Test
    void enqueue_afterEndStream_isRefusedAndReleased() {
        sink.allow(0);
        scheduler.open(1);
        scheduler.enqueue(1, buf(10), true);
        ByteBuf late = buf(10);

        assertThatThrownBy(() -> scheduler.enqueue(1, late, false)).isInstanceOf(IllegalStateException.class);
        assertThat(late.refCnt()).isZero();
    }

    // ---- bounds and release ----

    @Test
    void isWritable_isTrueBelowTheHighWaterMark_andFalseAtIt() {
        sink.allow(0);
        scheduler.open(1);
        scheduler.enqueue(1, buf(V2Limits.STREAM_QUEUE_HIGH_WATER - 1), false);
        assertThat(scheduler.isWritable(1)).isTrue();

        scheduler.enqueue(1, buf(1), false);

        assertThat(scheduler.isWritable(1)).isFalse();
        assertThat(scheduler.queuedBytes(1)).isEqualTo(V2Limits.STREAM_QUEUE_HIGH_WATER);
    }

    @Test
    void enqueue_toExactlyTheQueueBound_isTaken_andOneBytePast_releasesTheStream() {
        sink.allow(0);
        scheduler.open(1);
        ByteBuf first = buf(V2Limits.STREAM_QUEUE_MAX_BYTES - 1);
        scheduler.enqueue(1, first, false);
        assertThat(scheduler.enqueue(1, buf(1), false)).isTrue();
        assertThat(scheduler.queuedBytes(1)).isEqualTo(V2Limits.STREAM_QUEUE_MAX_BYTES);
        ByteBuf past = buf(1);

        assertThatThrownBy(() -> scheduler.enqueue(1, past, false))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("STREAM_QUEUE_MAX_BYTES");

        assertThat(past.refCnt()).isZero();
        assertThat(first.refCnt()).as("the stream's queue is released").isZero();
        assertThat(scheduler.isOpen(1)).isFalse();
    }

    @Test
    void onStreamWritable_isCalledWhenAFullQueueDrainsToTheLowWaterMark_notBefore() {
        sink.allow(0);
        scheduler.open(1);
        scheduler.enqueue(1, buf(V2Limits.STREAM_QUEUE_HIGH_WATER), false);
        int slicesToLowWater = (V2Limits.STREAM_QUEUE_HIGH_WATER - V2Limits.STREAM_QUEUE_LOW_WATER) / SLICE;

        batch(slicesToLowWater - 1);
        assertThat(resumed).isEmpty();
        assertThat(scheduler.queuedBytes(1)).isEqualTo(V2Limits.STREAM_QUEUE_LOW_WATER + SLICE);

        batch(1);
        assertThat(resumed).containsExactly(1);
        batch(1);
        assertThat(resumed).as("once per pause").containsExactly(1);
    }

    @Test
    void onStreamWritable_oneByteAboveTheLowWaterMark_isNotCalledYet() {
        sink.allow(0);
        scheduler.open(1);
        scheduler.enqueue(1, buf(V2Limits.STREAM_QUEUE_HIGH_WATER + 1), false);
        int slicesToLowWater = (V2Limits.STREAM_QUEUE_HIGH_WATER - V2Limits.STREAM_QUEUE_LOW_WATER) / SLICE;

        batch(slicesToLowWater);
        assertThat(scheduler.queuedBytes(1)).isEqualTo(V2Limits.STREAM_QUEUE_LOW_WATER + 1);
        assertThat(resumed).isEmpty();

        batch(1);
        assertThat(resumed).containsExactly(1);
    }

    @Test
    void reset_releasesQueuedBuffers_andRefusesLaterData() {
        sink.allow(0);
        scheduler.open(1);
        ByteBuf a = buf(SLICE);
        ByteBuf b = buf(3);
        scheduler.enqueue(1, a, false);
        scheduler.enqueue(1, b, false);

        scheduler.reset(1);

        assertThat(a.refCnt()).isZero();
        assertThat(b.refCnt()).isZero();
        assertThat(scheduler.isOpen(1)).isFalse();
        ByteBuf late = buf(5);
        assertThat(scheduler.enqueue(1, late, true)).isFalse();
        assertThat(late.refCnt()).isZero();
        scheduler.onWindowUpdate(1, 7); // dropped: closed
        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();
        assertThat(sink.take()).isEmpty();
    }

    @Test
    void reset_ofAStreamInTheRing_letsTheOthersGoOn() {
        sink.allow(0);
        scheduler.open(1);
        scheduler.open(3);
        scheduler.enqueue(1, buf(SLICE), false);
        scheduler.enqueue(3, buf(SLICE), true);

        scheduler.reset(1);
        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();

        assertThat(sink.take()).containsExactly("D3:16384:END", "F");
    }

    @Test
    void close_releasesEveryQueuedBuffer() {
        sink.allow(0);
        scheduler.open(1);
        scheduler.open(3);
        ByteBuf a = buf(100);
        ByteBuf b = buf(200);
        scheduler.enqueue(1, a, false);
        scheduler.enqueue(3, b, true);

        scheduler.close();

        assertThat(a.refCnt()).isZero();
        assertThat(b.refCnt()).isZero();
        assertThat(scheduler.isWritable(1)).isFalse();
        assertThatThrownBy(() -> scheduler.open(5)).isInstanceOf(IllegalStateException.class);
    }

    // ---- batches ----

    @Test
    void writabilityChanged_resumesWhereTheSocketStopped_withOneFlushPerBatch() {
        sink.allow(2);
        scheduler.open(1);
        scheduler.enqueue(1, buf(5 * SLICE), false);
        assertThat(sink.take()).containsExactly(FULL, FULL, "F");

        scheduler.writabilityChanged();
        assertThat(sink.take())
                .as("still not writable: nothing, not even a flush")
                .isEmpty();

        sink.allow(RecordingFrameSink.UNLIMITED);
        scheduler.writabilityChanged();
        assertThat(sink.take()).containsExactly(FULL, FULL, FULL, "F");
    }

    @Test
    void flush_thatMakesTheSinkWritableAgain_runsAnotherBatch_withoutRecursing() {
        sink.allow(2).onFlush(() -> {
            sink.allow(2);
            scheduler.writabilityChanged(); // re-entrant: the running loop takes it
        });
        scheduler.open(1);

        scheduler.enqueue(1, buf(5 * SLICE), true);

        assertThat(sink.take()).containsExactly(FULL, FULL, "F", FULL, FULL, "F", "D1:16384:END", "F");
    }

    /** Grants the sink {@code frames}, resumes the scheduler, and returns what it wrote; the peer then
     * returns the credit of every DATA byte of the batch (a consumer that takes them at once). */
    private List<String> batch(int frames) {
        sink.allow(frames);
        scheduler.writabilityChanged();
        sink.allow(0);
        List<String> events = sink.take();
        Map<Integer, Integer> bytes = new HashMap<>();
        int total = 0;
        for (String e : events) {
            RecordingFrameSink.Data d = RecordingFrameSink.Data.of(e).orElse(null);
            if (d != null && d.length() > 0) {
                bytes.merge(d.streamId(), d.length(), Integer::sum);
                total += d.length();
            }
        }
        bytes.forEach(scheduler::onWindowUpdate);
        if (total > 0) {
            scheduler.onWindowUpdate(0, total);
        }
        return events;
    }

    /**
     * Feeds what the scheduler writes to the peer's receive windows until it writes nothing more;
     * the consumers of the streams {@code taking} take each frame at once and their credit goes
     * back to the scheduler. Returns every event written meanwhile.
     */
    private List<String> deliver(FlowReceiveWindows peer, Map<Integer, Long> received, IntPredicate taking) {
        List<String> all = new ArrayList<>();
        for (int round = 0; round < 100_000; round++) {
            List<String> events = sink.take();
            if (events.isEmpty()) {
                return all;
            }
            all.addAll(events);
            for (String e : events) {
                RecordingFrameSink.Data d = RecordingFrameSink.Data.of(e).orElse(null);
                if (d == null) {
                    continue;
                }
                assertThat(peer.onData(d.streamId(), d.length())).isEmpty();
                received.merge(d.streamId(), (long) d.length(), Long::sum);
                if (taking.test(d.streamId())) {
                    for (WindowCredit c : peer.consumed(d.streamId(), d.length())) {
                        scheduler.onWindowUpdate(c.streamId(), c.increment());
                    }
                }
            }
        }
        throw new AssertionError("still writing after 100 000 rounds");
    }

    /** A buffer of {@code n} pattern bytes (byte i is i mod 251), tracked for the leak check. */
    private ByteBuf buf(int n) {
        ByteBuf b = Unpooled.buffer(n).writeBytes(pattern(0, n));
        made.add(b);
        return b;
    }

    private static byte[] pattern(int from, int n) {
        byte[] bytes = new byte[n];
        for (int i = 0; i < n; i++) {
            bytes[i] = (byte) ((from + i) % 251);
        }
        return bytes;
    }

    private Bulk bulk(int id, long total) {
        Bulk b = new Bulk(id, total, buf(Bulk.CHUNK));
        producers.put(id, b);
        return b;
    }

    /**
     * A producer of {@code total} bytes on one stream that keeps its queue filled while the
     * scheduler says it is writable, in chunks that are slices of one buffer (so 200 MiB need no
     * 200 MiB of memory), and queues END_STREAM with its last chunk.
     */
    private final class Bulk {
        static final int CHUNK = 64 * 1024;

        final int id;
        final ByteBuf source;
        long left;
        boolean released;

        Bulk(int id, long total, ByteBuf source) {
            this.id = id;
            this.left = total;
            this.source = source;
        }

        void fill() {
            while (left > 0 && scheduler.isWritable(id)) {
                int n = (int) Math.min(CHUNK, left);
                left -= n;
                scheduler.enqueue(id, source.retainedSlice(0, n), left == 0);
            }
            if (left == 0) {
                done();
            }
        }

        /** Releases the source (the chunks queued hold their own references). */
        void done() {
            if (!released) {
                released = true;
                source.release();
            }
        }
    }
}
