package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.gateway.OwnerHealth.Admission;
import com.spectrayan.spector.testkit.FakeTicker;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/** Passive health's states, exactly, on a fake clock (issue 13). */
final class OwnerHealthTest {
    private static final Duration BACKOFF = Duration.ofSeconds(1);
    private static final Duration MAX = Duration.ofSeconds(4);

    private final FakeTicker ticker = new FakeTicker();
    private final Set<String> members = ConcurrentHashMap.newKeySet();
    private final OwnerHealth health = new OwnerHealth(spec(3), ticker, o -> o.equals("o") || members.contains(o));

    private static ForwarderSpec spec(int downAfter) {
        ForwarderSpec d = ForwarderSpec.defaults();
        return new ForwarderSpec(
                d.retryMax(),
                d.maxBodyBytes(),
                d.replayBufferBytes(),
                d.replayBudgetBytes(),
                d.ownerTimeout(),
                d.headDeadline(),
                d.responseIdleTimeout(),
                d.streamIdleTimeout(),
                downAfter,
                BACKOFF,
                MAX);
    }

    @Test
    void downAfterExactlyNFailuresInARow_anAnswerBetweenResetsTheCount() {
        health.failed("o", false);
        health.failed("o", false);
        health.succeeded("o");
        health.failed("o", false);
        health.failed("o", false);
        assertThat(health.admit("o")).as("two in a row, after an answer").isEqualTo(Admission.GO);

        health.failed("o", false);

        assertThat(health.isDown("o")).isTrue();
        assertThat(health.admit("o")).isEqualTo(Admission.REFUSE);
        assertThat(health.downFor("o")).isEqualTo(BACKOFF);
        assertThat(health.admit("other")).as("each owner on its own").isEqualTo(Admission.GO);
    }

    @Test
    void afterTheBackoff_oneProbeAtATime_itsHeadMarksUp() {
        down();
        ticker.advance(BACKOFF.minusNanos(1));
        assertThat(health.admit("o")).as("a nanosecond before the backoff ends").isEqualTo(Admission.REFUSE);
        ticker.advance(Duration.ofNanos(1));

        assertThat(health.admit("o")).as("at the end of the backoff: the probe").isEqualTo(Admission.PROBE);
        assertThat(health.admit("o")).as("while it runs, no second one").isEqualTo(Admission.REFUSE);

        health.succeeded("o");

        assertThat(health.isDown("o")).isFalse();
        assertThat(health.admit("o")).isEqualTo(Admission.GO);
    }

    @Test
    void aFailedProbe_doublesTheBackoff_upToTheMax() {
        down();
        long[] expected = {2, 4, 4, 4};
        for (long seconds : expected) {
            ticker.advance(health.downFor("o"));
            assertThat(health.admit("o")).isEqualTo(Admission.PROBE);
            health.failed("o", true);
            assertThat(health.downFor("o")).isEqualTo(Duration.ofSeconds(seconds));
        }
    }

    @Test
    void aProbeWithNoVerdict_letsTheNextRequestProbe_atOnce() {
        down();
        ticker.advance(BACKOFF);
        assertThat(health.admit("o")).isEqualTo(Admission.PROBE);

        health.probeEnded("o"); // cancelled, or timed out: the owner is neither up nor down

        assertThat(health.admit("o")).isEqualTo(Admission.PROBE);
    }

    @Test
    void aLateFailureOfARequestAdmittedBeforeTheOwnerWentDown_doesNotExtendTheBackoff() {
        down();
        health.failed("o", false);
        assertThat(health.downFor("o")).isEqualTo(BACKOFF);
    }

    @Test
    void zeroTurnsItOff() {
        OwnerHealth off = new OwnerHealth(spec(0), ticker, o -> true);
        for (int i = 0; i < 100; i++) {
            off.failed("o", false);
        }
        assertThat(off.admit("o")).isEqualTo(Admission.GO);
        assertThat(off.isDown("o")).isFalse();
    }

    @Test
    void entriesOfOwnersTheRingDropped_goWhenTheNextEntryIsMade() {
        members.addAll(Set.of("a", "b"));
        for (int i = 0; i < 3; i++) {
            health.failed("a", false);
        }
        health.failed("b", false);
        assertThat(health.isDown("a")).isTrue();
        assertThat(health.tracked()).isEqualTo(2);

        members.remove("a"); // a ring without a
        health.failed("b", false);
        assertThat(health.tracked()).as("no new entry: nothing dropped yet").isEqualTo(2);
        health.failed("c", false); // c: not a member either, but the entry being made is kept

        assertThat(health.tracked()).as("b and c; a dropped").isEqualTo(2);
        down();
        assertThat(health.tracked()).as("b and o; c dropped").isEqualTo(2);
        members.add("a");
        assertThat(health.isDown("a")).as("a, back in a ring, starts up").isFalse();
        assertThat(health.admit("a")).isEqualTo(Admission.GO);
        health.failed("b", false);
        assertThat(health.isDown("b")).as("b kept its count: down at its third").isTrue();
    }

    private void down() {
        for (int i = 0; i < 3; i++) {
            health.failed("o", false);
        }
        assertThat(health.isDown("o")).isTrue();
    }
}
