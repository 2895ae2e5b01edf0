package com.spectrayan.spector.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

/** {@link LogGate}: at most one line per interval, each counting the events since the last. */
final class LogGateTest {
    private static final long SECOND = 1_000_000_000L;

    @Test
    void event_first_isDueAtOnce_thenNoneUntilTheIntervalEnds() {
        LogGate gate = new LogGate(Duration.ofSeconds(10), 5 * SECOND);
        assertThat(gate.event(5 * SECOND)).isEqualTo(1);
        assertThat(gate.event(6 * SECOND)).isZero();
        assertThat(gate.event(15 * SECOND - 1)).isZero();
        assertThat(gate.event(15 * SECOND)).as("this one and the two held back").isEqualTo(3);
        assertThat(gate.event(16 * SECOND)).isZero();
    }

    @Test
    void new_aZeroOrNegativeInterval_isRefused() {
        assertThatThrownBy(() -> new LogGate(Duration.ZERO, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expected: > 0");
        assertThatThrownBy(() -> new LogGate(Duration.ofSeconds(-1), 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Provide
    Arbitrary<List<Long>> gaps() {
        return Arbitraries.longs().between(0, 3 * SECOND).list().ofMinSize(1).ofMaxSize(300);
    }

    /** Whatever the events' times (nanoTime values near the wrap included), lines are an interval apart and count each event once. */
    @Property(tries = 300)
    void event_anyTimes_linesAnIntervalApart_eachEventCountedOnce(
            @ForAll("gaps") List<Long> gaps, @ForAll boolean nearWrap) {
        long interval = 2 * SECOND;
        long now = nearWrap ? Long.MAX_VALUE - 10 * SECOND : 0;
        LogGate gate = new LogGate(Duration.ofNanos(interval), now);
        long lastLine = 0;
        boolean anyLine = false;
        long since = 0;
        long counted = 0;
        for (long gap : gaps) {
            now += gap; // may wrap past Long.MAX_VALUE, as System.nanoTime may
            since++;
            long n = gate.event(now);
            if (n > 0) {
                if (anyLine) {
                    assertThat(now - lastLine).as("lines an interval apart").isGreaterThanOrEqualTo(interval);
                }
                assertThat(n).as("the events since the last line").isEqualTo(since);
                anyLine = true;
                lastLine = now;
                since = 0;
                counted += n;
            }
        }
        assertThat(anyLine).as("the first event is logged").isTrue();
        assertThat(counted + since).isEqualTo(gaps.size());
    }
}
