package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.testkit.FakeTicker;
import io.netty.channel.embedded.EmbeddedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link FixedDelays} on an embedded loop whose clock is a {@link FakeTicker}: a deadline expires
 * at its delay exactly, never when disarmed, in the order armed, and the loop holds one task for
 * the whole queue.
 */
final class FixedDelaysTest {
    private static final Duration DELAY = Duration.ofSeconds(3);

    private final FakeTicker ticker = new FakeTicker();
    private final EmbeddedChannel channel =
            EmbeddedChannel.builder().ticker(ticker).build();
    private final FixedDelays queue = new FixedDelays(channel.eventLoop(), ticker, DELAY);
    private final List<String> expired = new ArrayList<>();

    @AfterEach
    void close() {
        channel.finishAndReleaseAll();
    }

    private FixedDelays.Deadline deadline(String name) {
        return new FixedDelays.Deadline(() -> expired.add(name));
    }

    private void elapse(Duration d) {
        ticker.advance(d);
        channel.runScheduledPendingTasks();
    }

    @Test
    void arm_expiresAtTheDelayExactly() {
        FixedDelays.Deadline a = deadline("a");
        queue.arm(a);

        elapse(DELAY.minusNanos(1));
        assertThat(expired).isEmpty();
        assertThat(a.isArmed()).isTrue();

        elapse(Duration.ofNanos(1));
        assertThat(expired).containsExactly("a");
        assertThat(a.isArmed()).isFalse();
        assertThat(queue.armed()).isZero();
    }

    @Test
    void disarm_neverExpires_andTheOthersStillDo() {
        FixedDelays.Deadline a = deadline("a");
        FixedDelays.Deadline b = deadline("b");
        FixedDelays.Deadline c = deadline("c");
        queue.arm(a);
        elapse(Duration.ofSeconds(1));
        queue.arm(b);
        queue.arm(c);

        b.disarm();
        b.disarm(); // twice: nothing
        elapse(Duration.ofSeconds(2));
        assertThat(expired).containsExactly("a");
        elapse(Duration.ofSeconds(1));

        assertThat(expired).containsExactly("a", "c");
        assertThat(queue.armed()).isZero();
    }

    @Test
    void arm_again_countsFromTheNewArming() {
        FixedDelays.Deadline a = deadline("a");
        queue.arm(a);
        elapse(Duration.ofSeconds(2));

        queue.arm(a);
        elapse(Duration.ofSeconds(2));
        assertThat(expired).isEmpty();
        elapse(Duration.ofSeconds(1));

        assertThat(expired).containsExactly("a");
    }

    /** A request stream: one task on the loop at a time, however many deadlines come and go. */
    @Test
    void manyArmsAndDisarms_holdOneTaskOnTheLoop() {
        for (int i = 0; i < 1000; i++) {
            FixedDelays.Deadline d = deadline("r" + i);
            queue.arm(d);
            ticker.advance(Duration.ofMillis(1));
            d.disarm();
        }
        assertThat(queue.schedules()).as("one task for a thousand deadlines").isEqualTo(1);

        elapse(DELAY);
        assertThat(expired).isEmpty();
        assertThat(queue.schedules())
                .as("nothing armed when it ran: not scheduled again")
                .isEqualTo(1);
        queue.arm(deadline("next"));
        assertThat(queue.schedules()).isEqualTo(2);
    }

    /** An expiry that arms another deadline of the queue (a retarget's next attempt) goes behind the rest. */
    @Test
    void expiry_armingAgain_isQueuedBehind() {
        FixedDelays.Deadline later = deadline("later");
        FixedDelays.Deadline first = new FixedDelays.Deadline(() -> {
            expired.add("first");
            queue.arm(later);
        });
        queue.arm(first);
        elapse(DELAY);
        assertThat(expired).containsExactly("first");

        elapse(DELAY);
        assertThat(expired).containsExactly("first", "later");
    }

    @Test
    void expiry_thatThrows_leavesTheOthersToExpire() {
        queue.arm(new FixedDelays.Deadline(() -> {
            throw new IllegalStateException("boom");
        }));
        queue.arm(deadline("b"));

        elapse(DELAY);

        assertThat(expired).containsExactly("b");
    }

    @Test
    void negativeDelay_isRefused() {
        assertThatThrownBy(() -> new FixedDelays(channel.eventLoop(), ticker, Duration.ofNanos(-1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /**
     * Any sequence of arms, disarms and clock moves expires exactly the deadlines a model says,
     * each once, in the order they fell due.
     */
    @Property(tries = 1000)
    void anySequence_expiresAsTheModelSays(@ForAll("steps") List<int[]> steps) {
        FakeTicker clock = new FakeTicker();
        EmbeddedChannel loop = EmbeddedChannel.builder().ticker(clock).build();
        try {
            FixedDelays q = new FixedDelays(loop.eventLoop(), clock, DELAY);
            List<Integer> got = new ArrayList<>();
            FixedDelays.Deadline[] ds = new FixedDelays.Deadline[4];
            for (int i = 0; i < ds.length; i++) {
                int id = i;
                ds[i] = new FixedDelays.Deadline(() -> got.add(id));
            }
            // The model: armed deadline -> due time, in the order armed (equal times expire so).
            Map<Integer, Long> due = new LinkedHashMap<>();
            List<Integer> want = new ArrayList<>();
            long now = 0;
            for (int[] step : steps) {
                int id = step[1];
                switch (step[0]) {
                    case 0 -> {
                        q.arm(ds[id]);
                        due.remove(id); // armed again: behind the others
                        due.put(id, now + DELAY.toNanos());
                    }
                    case 1 -> {
                        ds[id].disarm();
                        due.remove(id);
                    }
                    default -> {
                        long step1 = step[2] * 100_000_000L; // 0 to 4 s in tenths
                        now += step1;
                        long t = now;
                        due.entrySet().stream()
                                .filter(e -> e.getValue() <= t)
                                .sorted(Map.Entry.comparingByValue())
                                .forEach(e -> want.add(e.getKey()));
                        due.values().removeIf(v -> v <= t);
                        clock.advance(Duration.ofNanos(step1));
                        loop.runScheduledPendingTasks();
                    }
                }
                assertThat(got).isEqualTo(want);
                for (int i = 0; i < ds.length; i++) {
                    assertThat(ds[i].isArmed()).isEqualTo(due.containsKey(i));
                }
            }
            assertThat(q.armed()).isEqualTo(due.size());
        } finally {
            loop.finishAndReleaseAll();
        }
    }

    @Provide
    Arbitrary<List<int[]>> steps() {
        Arbitrary<int[]> step = Arbitraries.integers()
                .between(0, 2)
                .flatMap(kind -> Arbitraries.integers()
                        .between(0, 3)
                        .flatMap(id ->
                                Arbitraries.integers().between(0, 40).map(tenths -> new int[] {kind, id, tenths})));
        return step.list().ofMaxSize(40);
    }
}
