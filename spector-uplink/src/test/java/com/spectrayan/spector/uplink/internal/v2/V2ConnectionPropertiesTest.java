package com.spectrayan.spector.uplink.internal.v2;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.PropertyLeaks;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.jspecify.annotations.Nullable;

/**
 * Random interleavings on one whole v2 link (PROTOCOL.md sections 9.4-9.6): a gateway and a worker
 * {@link V2Connection} carried by {@link V2Peers}, with streams opened, request bytes written
 * (with or without END_STREAM), the worker's consumers taking bytes, resets from either side, the
 * messages carried across at random points and the clock moved (so round-trip probes grow
 * windows). After the run the link drains and then closes. Checked:
 *
 * <ol>
 *   <li><b>in order, whole</b>: every stream's bytes arrive as written, a prefix of them when the
 *       stream was reset, all of them (and END_STREAM when sent) otherwise;
 *   <li><b>told once</b>: each stream's handler hears of its end (reset or the link's close) at
 *       most once, and exactly once on each side when the stream was still open at the close;
 *   <li><b>no leak</b>: Netty's detector (PARANOID) reports nothing after the properties.
 * </ol>
 */
final class V2ConnectionPropertiesTest {
    /** Streams a try may open (ids 1, 3, 5, 7). */
    private static final int SLOTS = 4;

    @BeforeContainer
    static void paranoid() {
        PropertyLeaks.paranoid();
    }

    @AfterContainer
    static void noLeak() {
        PropertyLeaks.noLeak("3 (no leak)");
    }

    @Property(tries = 300)
    void interleavings_deliverEveryStreamInOrder_tellEachEndOnce_neverLeak(@ForAll("runs") List<Op> ops) {
        try (V2Peers peers = new V2Peers()) {
            Run run = new Run(peers);
            ops.forEach(run::apply);
            run.drain();
            run.checkDelivered();
            peers.gateway.connection.close(WebSocketCloseStatus.NORMAL_CLOSURE, "done");
            peers.pump();
            run.checkToldOnce();
        }
    }

    @Provide
    Arbitrary<List<Op>> runs() {
        Arbitrary<Integer> slot = Arbitraries.integers().between(0, SLOTS - 1);
        Arbitrary<Integer> length = Arbitraries.frequencyOf(
                Tuple.of(1, Arbitraries.just(0)),
                Tuple.of(3, Arbitraries.integers().between(1, 300)),
                Tuple.of(4, Arbitraries.integers().between(301, 40_000)),
                Tuple.of(2, Arbitraries.integers().between(40_001, 300_000)));
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                Tuple.of(2, Arbitraries.just(new Open())),
                Tuple.of(
                        8,
                        Combinators.combine(
                                        slot,
                                        length,
                                        Arbitraries.integers().between(0, 5).map(i -> i == 0))
                                .as(Write::new)),
                Tuple.of(6, Combinators.combine(slot, length).as(Consume::new)),
                Tuple.of(
                        1,
                        Combinators.combine(slot, Arbitraries.of(true, false)).as(Reset::new)),
                Tuple.of(5, Arbitraries.just(new Pump())),
                Tuple.of(1, Arbitraries.just(new Tick())));
        return op.list().ofMinSize(5).ofMaxSize(60);
    }

    /** One step of a try. */
    sealed interface Op permits Open, Write, Consume, Reset, Pump, Tick {}

    /** The gateway opens its next stream (a POST), if it has opened fewer than {@link #SLOTS}. */
    record Open() implements Op {}

    /** The gateway's producer of a slot's stream is asked for {@code length} more bytes (then END_STREAM). */
    record Write(int slot, int length, boolean end) implements Op {}

    /** The worker's consumer of a slot's stream takes up to {@code length} of the bytes it holds. */
    record Consume(int slot, int length) implements Op {}

    /** A slot's stream is reset CANCEL, by the gateway or by the worker. */
    record Reset(int slot, boolean byGateway) implements Op {}

    /** The messages waiting cross, both ways, until none is left. */
    record Pump() implements Op {}

    /** The clock moves on a second: a round-trip probe may go out with the next DATA. */
    record Tick() implements Op {}

    /** One try's link and what the test did to it. */
    private static final class Run {
        private final V2Peers peers;
        private final @Nullable RecordingStreamHandler[] gateway = new RecordingStreamHandler[SLOTS];
        private final boolean[] reset = new boolean[SLOTS];
        private int opened;

        Run(V2Peers peers) {
            this.peers = peers;
        }

        void apply(Op op) {
            if (op instanceof Open) {
                if (opened < SLOTS) {
                    gateway[opened++] = peers.gateway.open(false);
                }
            } else if (op instanceof Write w) {
                RecordingStreamHandler h = w.slot() < opened ? gateway[w.slot()] : null;
                if (h != null && !h.endWritten() && h.ends() == 0 && !reset[w.slot()]) {
                    h.send(h.target() + w.length(), w.end());
                }
            } else if (op instanceof Consume c) {
                RecordingStreamHandler h = worker(c.slot());
                if (h != null) {
                    h.consume((int) Math.min(c.length(), h.unconsumed()));
                }
            } else if (op instanceof Reset r) {
                RecordingStreamHandler h =
                        r.byGateway() ? (r.slot() < opened ? gateway[r.slot()] : null) : worker(r.slot());
                if (h != null) {
                    reset[r.slot()] = true;
                    h.stream().reset(V2ErrorCode.CANCEL, null);
                }
            } else if (op instanceof Pump) {
                peers.pump();
            } else if (op instanceof Tick) {
                peers.time.advance(1, TimeUnit.SECONDS);
            }
        }

        private @Nullable RecordingStreamHandler worker(int slot) {
            List<RecordingStreamHandler> accepted = peers.worker.accepted;
            return slot < accepted.size() ? accepted.get(slot) : null;
        }

        /** Carries and consumes until nothing moves: every stream not reset delivers all it was given. */
        void drain() {
            long before;
            long after = -1;
            int rounds = 0;
            do {
                before = after;
                peers.pump();
                after = 0;
                for (RecordingStreamHandler w : peers.worker.accepted) {
                    w.consumeAll();
                    after += w.receivedBytes();
                }
                peers.pump();
                assertThat(++rounds).as("the drain ends").isLessThan(10_000);
            } while (after != before);
        }

        void checkDelivered() {
            assertThat(peers.worker.accepted).hasSize(opened);
            for (int i = 0; i < opened; i++) {
                RecordingStreamHandler g = gateway[i];
                RecordingStreamHandler w = peers.worker.accepted.get(i);
                int id = g.stream().id();
                byte[] got = w.received();
                assertThat(got.length)
                        .as("stream %d: no more than was sent", id)
                        .isLessThanOrEqualTo((int) g.sent());
                assertThat(Arrays.equals(got, RecordingStreamHandler.body(id, got.length)))
                        .as("stream %d: in order", id)
                        .isTrue();
                if (!reset[i]) {
                    assertThat(got.length).as("stream %d: whole", id).isEqualTo((int) g.target());
                    assertThat(w.events.contains("END"))
                            .as("stream %d: END_STREAM", id)
                            .isEqualTo(g.endWritten());
                }
            }
        }

        void checkToldOnce() {
            for (int i = 0; i < opened; i++) {
                RecordingStreamHandler g = gateway[i];
                RecordingStreamHandler w = peers.worker.accepted.get(i);
                if (reset[i]) {
                    assertThat(g.ends()).isLessThanOrEqualTo(1);
                    assertThat(w.ends()).isLessThanOrEqualTo(1);
                } else {
                    // The worker never answers, so every stream not reset was open at the close.
                    assertThat(g.events).containsOnlyOnce("linkClosed");
                    assertThat(g.ends()).isOne();
                    assertThat(w.ends()).isOne();
                }
            }
            assertThat(peers.gateway.connection.openStreams()).isZero();
            assertThat(peers.worker.connection.openStreams()).isZero();
        }
    }
}
