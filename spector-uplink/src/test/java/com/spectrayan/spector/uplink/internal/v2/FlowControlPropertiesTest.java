package com.spectrayan.spector.uplink.internal.v2;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.FakeTicker;
import com.spectrayan.spector.testkit.PropertyLeaks;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;

/**
 * Random interleavings of the sender's and the receiver's events on one link (PROTOCOL.md sections
 * 9.5 and 9.6): a {@link FrameScheduler} writes into a sink that hands every DATA frame to the
 * peer's {@link FlowReceiveWindows}, whose WINDOW_UPDATEs go back to the scheduler. Each try runs
 * a list of operations (open a stream, enqueue bytes with or without END_STREAM, a consumer
 * taking bytes, a reset, the socket's writability, a control frame, a round-trip probe and its
 * ack), then drains the link. Checked throughout:
 *
 * <ol>
 *   <li><b>never past a window</b>: the peer's windows never throw (every DATA frame fits both);
 *   <li><b>credit neither lost nor invented</b>: after each operation the scheduler's windows
 *       equal what the peer's windows still allow;
 *   <li><b>in order, whole, once</b>: each stream's bytes arrive in the order queued, in slices
 *       of at most 16 KiB, END_STREAM only after the last byte and nothing after it or after a
 *       reset; after the drain every stream not reset delivered all it queued;
 *   <li><b>control first</b>: no DATA is written while a control frame waits, and control
 *       frames go out in the order queued;
 *   <li><b>no leak</b>: every buffer queued is released once the link closes (its reference
 *       count is 0), and Netty's detector (PARANOID) reports nothing after the properties.
 * </ol>
 */
final class FlowControlPropertiesTest {
    /** Streams a try may open (ids 1, 3, ... 11). */
    private static final int SLOTS = 6;

    @BeforeContainer
    static void paranoid() {
        PropertyLeaks.paranoid();
    }

    @AfterContainer
    static void noLeak() {
        PropertyLeaks.noLeak("5 (no leak)");
    }

    @Property(tries = 2000)
    void interleavings_neverPassAWindow_neverLeak_andDeliverEveryStreamInOrder(@ForAll("runs") List<Op> ops) {
        Link link = new Link();
        try {
            for (Op op : ops) {
                link.apply(op);
                link.checkWindows();
            }
            link.drain();
            link.checkDelivered();
            link.collectStatistics();
        } finally {
            link.close();
        }
        link.checkReleased();
    }

    @Provide
    Arbitrary<List<Op>> runs() {
        Arbitrary<Integer> slot = Arbitraries.integers().between(0, SLOTS - 1);
        Arbitrary<Integer> length = Arbitraries.frequencyOf(
                Tuple.of(1, Arbitraries.just(0)),
                Tuple.of(3, Arbitraries.integers().between(1, 300)),
                Tuple.of(4, Arbitraries.integers().between(301, 40_000)),
                Tuple.of(3, Arbitraries.integers().between(40_001, 130_000)));
        Arbitrary<Op> opening = Arbitraries.of(true, false).map(Open::new);
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                Tuple.of(1, opening),
                Tuple.of(
                        8,
                        Combinators.combine(
                                        slot,
                                        length,
                                        Arbitraries.integers().between(0, 9).map(i -> i == 0))
                                .as(Enqueue::new)),
                Tuple.of(
                        6,
                        Combinators.combine(slot, Arbitraries.integers().between(1, 100))
                                .as(Consume::new)),
                Tuple.of(1, slot.map(Reset::new)),
                Tuple.of(
                        3,
                        Arbitraries.frequencyOf(
                                        Tuple.of(2, Arbitraries.just(Writable.ALWAYS)),
                                        Tuple.of(1, Arbitraries.integers().between(0, 6)))
                                .map(Writable::new)),
                Tuple.of(1, Arbitraries.just(new Control())),
                Tuple.of(2, Arbitraries.just(new Probe())),
                Tuple.of(2, Arbitraries.just(new Ack())));
        // Streams open first, so most operations find one; more may open later.
        return Combinators.combine(
                        opening.list().ofMinSize(1).ofMaxSize(SLOTS),
                        op.list().ofMinSize(10).ofMaxSize(200).withSizeDistribution(RandomDistribution.uniform()))
                .as((opens, rest) -> {
                    List<Op> run = new ArrayList<>(opens);
                    run.addAll(rest);
                    return run;
                });
    }

    /** One step of a try. */
    sealed interface Op permits Open, Enqueue, Consume, Reset, Writable, Control, Probe, Ack {}

    /** Opens the next stream both ways; an eager one's consumer takes each frame as it arrives. */
    record Open(boolean eager) implements Op {}

    /** The producer of a slot's stream queues {@code length} bytes, if the scheduler says it may. */
    record Enqueue(int slot, int length, boolean end) implements Op {}

    /** The consumer of a slot's stream takes {@code percent} of what it holds. */
    record Consume(int slot, int percent) implements Op {}

    /** The slot's stream is reset (both sides forget it). */
    record Reset(int slot) implements Op {}

    /** The socket takes {@code frames} more frames ({@link #ALWAYS}: any number), then resumes the scheduler. */
    record Writable(int frames) implements Op {
        static final int ALWAYS = -1;
    }

    /** A control frame is queued. */
    record Control() implements Op {}

    /** A second passes and the peer probes the round trip if DATA flowed. */
    record Probe() implements Op {}

    /** The probe's ack arrives (the peer may grow its windows). */
    record Ack() implements Op {}

    /** One stream's producer, consumer and what crossed. */
    private static final class Stream {
        final int id;
        final boolean eager;
        long queued;
        long delivered;
        long held; // delivered, not yet taken by the consumer
        boolean ended; // END_STREAM queued
        boolean endDelivered;
        boolean reset;
        boolean peerClosed;

        Stream(int id, boolean eager) {
            this.id = id;
            this.eager = eager;
        }

        static byte at(int id, long offset) {
            return (byte) (offset * 131 + id * 17L + (offset >>> 9));
        }
    }

    /** The scheduler, the peer and the bookkeeping of one try. */
    private static final class Link implements FrameSink {
        final FakeTicker ticker = new FakeTicker();
        final FlowReceiveWindows peer = new FlowReceiveWindows(ticker);
        final FrameScheduler scheduler = new FrameScheduler(this, id -> {});
        final List<Stream> streams = new ArrayList<>();
        final List<ByteBuf> made = new ArrayList<>();
        final ArrayDeque<Integer> controlsWaiting = new ArrayDeque<>();
        int controlsQueued;
        int budget = Writable.ALWAYS;
        OptionalLong probe = OptionalLong.empty();
        boolean grew;
        boolean streamStalled;

        void apply(Op op) {
            if (op instanceof Open o) {
                open(o.eager());
            } else if (op instanceof Enqueue e) {
                stream(e.slot()).ifPresent(s -> enqueue(s, e));
            } else if (op instanceof Consume c) {
                stream(c.slot()).ifPresent(s -> take(s, s.held * c.percent() / 100));
            } else if (op instanceof Reset r) {
                stream(r.slot()).ifPresent(this::reset);
            } else if (op instanceof Writable w) {
                budget = w.frames();
                scheduler.writabilityChanged();
            } else if (op instanceof Control) {
                int n = controlsQueued++;
                controlsWaiting.add(n);
                assertThat(scheduler.control(n)).isTrue();
            } else if (op instanceof Probe) {
                ticker.advance(V2Limits.RTT_PROBE_INTERVAL_NANOS, TimeUnit.NANOSECONDS);
                OptionalLong due = peer.pingDue();
                if (due.isPresent()) {
                    probe = due;
                }
            } else if (op instanceof Ack && probe.isPresent()) {
                ticker.advance(3, TimeUnit.MILLISECONDS);
                long payload = probe.getAsLong();
                probe = OptionalLong.empty();
                List<WindowCredit> growth = peer.onPingAck(payload);
                grew |= !growth.isEmpty();
                credit(growth);
            }
        }

        Optional<Stream> stream(int slot) {
            return streams.isEmpty() ? Optional.empty() : Optional.of(streams.get(slot % streams.size()));
        }

        void open(boolean eager) {
            if (streams.size() == SLOTS) {
                return;
            }
            int id = 2 * streams.size() + 1;
            streams.add(new Stream(id, eager));
            scheduler.open(id);
            credit(peer.open(id));
        }

        void enqueue(Stream s, Enqueue e) {
            if (s.ended || s.reset || !scheduler.isWritable(s.id)) {
                return; // a producer that respects backpressure waits
            }
            byte[] bytes = new byte[e.length()];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = Stream.at(s.id, s.queued + i);
            }
            ByteBuf b = ByteBufAllocator.DEFAULT.buffer(bytes.length).writeBytes(bytes);
            made.add(b);
            s.queued += bytes.length;
            s.ended = e.end();
            assertThat(scheduler.enqueue(s.id, b, e.end())).isTrue();
        }

        void take(Stream s, long n) {
            if (n == 0 || s.peerClosed) {
                return;
            }
            s.held -= n;
            credit(peer.consumed(s.id, (int) n));
            if (s.endDelivered && s.held == 0) {
                s.peerClosed = true;
                credit(peer.close(s.id));
            }
        }

        void reset(Stream s) {
            s.reset = true;
            scheduler.reset(s.id);
            if (!s.peerClosed) {
                s.peerClosed = true;
                s.held = 0;
                credit(peer.close(s.id));
            }
        }

        void credit(List<WindowCredit> credits) {
            for (WindowCredit c : credits) {
                scheduler.onWindowUpdate(c.streamId(), c.increment());
            }
        }

        @Override
        public void control(Object frame) {
            spend();
            assertThat(frame).as("4 (control first): FIFO").isEqualTo(controlsWaiting.poll());
        }

        @Override
        public void data(int streamId, ByteBuf slice, boolean endStream) {
            try {
                spend();
                assertThat(controlsWaiting)
                        .as("4 (control first): DATA while a control frame waits")
                        .isEmpty();
                Stream s = streams.get(streamId / 2);
                assertThat(s.reset).as("3: DATA after a reset on %d", streamId).isFalse();
                assertThat(s.endDelivered)
                        .as("3: DATA after END_STREAM on %d", streamId)
                        .isFalse();
                byte[] bytes = ByteBufUtil.getBytes(slice);
                int n = bytes.length;
                assertThat(n).as("3: a slice").isLessThanOrEqualTo(V2Limits.DATA_SLICE);
                for (int i = 0; i < n; i++) {
                    if (bytes[i] != Stream.at(streamId, s.delivered + i)) {
                        throw new AssertionError("3 (in order): stream " + streamId + " byte " + (s.delivered + i));
                    }
                }
                credit(peer.onData(streamId, n)); // 1: throws past either window
                s.delivered += n;
                s.held += n;
                if (endStream) {
                    assertThat(s.ended && s.delivered == s.queued)
                            .as("3: END_STREAM after the last byte queued on %d", streamId)
                            .isTrue();
                    s.endDelivered = true;
                }
                if (s.eager) {
                    take(s, s.held);
                } else if (endStream && s.held == 0) { // an empty END_STREAM: nothing left to take
                    s.peerClosed = true;
                    credit(peer.close(s.id));
                }
            } finally {
                slice.release();
            }
        }

        @Override
        public void flush() {}

        @Override
        public boolean isWritable() {
            return budget != 0;
        }

        private void spend() {
            assertThat(budget).as("written while not writable").isNotZero();
            if (budget > 0) {
                budget--;
            }
        }

        /** 2: the scheduler may send exactly what the peer still allows. */
        void checkWindows() {
            assertThat(scheduler.connectionWindow())
                    .as("2: the connection's window")
                    .isEqualTo(peer.connectionAvailable());
            for (Stream s : streams) {
                if (scheduler.isOpen(s.id)) {
                    streamStalled |= scheduler.streamWindow(s.id) == 0 && scheduler.queuedBytes(s.id) > 0;
                    assertThat((long) scheduler.streamWindow(s.id))
                            .as("2: stream %d's window", s.id)
                            .isEqualTo(peer.streamAvailable(s.id));
                }
            }
        }

        /** Lets the socket take everything and every consumer take everything, until nothing moves. */
        void drain() {
            budget = Writable.ALWAYS;
            scheduler.writabilityChanged();
            for (int round = 0; round < 10_000; round++) {
                boolean moved = false;
                for (Stream s : streams) {
                    if (s.held > 0 && !s.peerClosed) {
                        take(s, s.held);
                        moved = true;
                    }
                }
                checkWindows();
                if (!moved) {
                    return;
                }
            }
            throw new AssertionError("the link still moves after 10 000 rounds");
        }

        /** 3: every stream not reset delivered all it queued, with END_STREAM if it ended. */
        void checkDelivered() {
            assertThat(controlsWaiting).as("4: control frames left").isEmpty();
            for (Stream s : streams) {
                if (s.reset) {
                    assertThat(s.delivered).isLessThanOrEqualTo(s.queued);
                } else {
                    assertThat(s.delivered).as("3: stream %d delivered", s.id).isEqualTo(s.queued);
                    assertThat(s.endDelivered)
                            .as("3: stream %d's END_STREAM", s.id)
                            .isEqualTo(s.ended);
                    assertThat(scheduler.queuedBytes(s.id)).isZero();
                }
            }
        }

        void close() {
            scheduler.close();
        }

        /** What the try reached, so a run shows the generators reach the corners. */
        void collectStatistics() {
            long bytes = streams.stream().mapToLong(x -> x.delivered).sum();
            Statistics.label("bytes delivered")
                    .collect(
                            bytes == 0
                                    ? "0"
                                    : bytes < 256 * 1024 ? "< 256 KiB" : bytes < 1024 * 1024 ? "< 1 MiB" : ">= 1 MiB");
            Statistics.label("a stream without credit held bytes").collect(streamStalled);
            Statistics.label("a window grew").collect(grew);
            Statistics.label("a stream reset with bytes in flight")
                    .collect(streams.stream().anyMatch(x -> x.reset && x.delivered < x.queued));
        }

        /** 5: every buffer queued is released. */
        void checkReleased() {
            for (ByteBuf b : made) {
                assertThat(b.refCnt())
                        .as("5 (no leak): a queued buffer after the close")
                        .isZero();
            }
        }
    }
}
