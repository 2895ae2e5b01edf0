package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.gateway.RetargetPolicy.Decision;
import com.spectrayan.spector.cluster.gateway.RetargetPolicy.Exhausted;
import com.spectrayan.spector.cluster.gateway.RetargetPolicy.Hint;
import com.spectrayan.spector.cluster.gateway.RetargetPolicy.Retarget;
import com.spectrayan.spector.cluster.gateway.RetargetPolicy.Stop;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The retarget decision over every combination of what an exchange knows after a 421; no Netty. */
final class RetargetPolicyTest {
    private static final Set<String> RING = Set.of("a", "b", "c");
    private static final int RETRY_MAX = 2;

    private static Hint hint(String owner, long epoch, long fence) {
        return new Hint(owner, RING.contains(owner), epoch, fence);
    }

    /** One combination of what an exchange knows after a 421, and the decision expected. */
    private record Row(
            String name,
            int attempts,
            Hint hint,
            long attemptEpoch,
            Map<String, Long> epochsSeen,
            boolean replayable,
            Decision expected) {
        @Override
        public String toString() {
            return name;
        }
    }

    private static Retarget retarget(String owner, long epoch, long fence) {
        return new Retarget(new RouteEntry(owner, epoch, fence));
    }

    static Stream<Row> combinations() {
        Map<String, Long> a5 = Map.of("a", 5L);
        Map<String, Long> a5b6 = Map.of("a", 5L, "b", 6L);
        Map<String, Long> a5b6c7 = Map.of("a", 5L, "b", 6L, "c", 7L);
        Stop tried = new Stop(RetargetPolicy.HINT_ALREADY_TRIED);
        Stop regressed = new Stop(RetargetPolicy.EPOCH_REGRESSED);
        Stop noHint = new Stop(RetargetPolicy.NO_OWNER_HINT);
        Stop notReplayable = new Stop(RetargetPolicy.BODY_NOT_REPLAYABLE);
        Exhausted exhausted = new Exhausted(RetargetPolicy.RETRIES_EXHAUSTED);
        return Stream.of(
                new Row("a new owner at a newer epoch", 1, hint("b", 6, 3), 5, a5, true, retarget("b", 6, 3)),
                new Row("a new owner at the same epoch", 1, hint("b", 5, 0), 5, a5, true, retarget("b", 5, 0)),
                new Row("no epoch in the hint: the attempt's", 1, hint("b", -1, 0), 5, a5, true, retarget("b", 5, 0)),
                new Row("a tried owner at a newer epoch", 2, hint("a", 7, 0), 6, a5b6, true, retarget("a", 7, 0)),
                new Row("the same node at the same epoch", 1, hint("a", 5, 0), 5, a5, true, tried),
                new Row("the same node without an epoch", 1, hint("a", -1, 0), 5, a5, true, tried),
                // The hint's epoch is also older than the newest seen.
                new Row("a node tried at an epoch newer than the hint's", 2, hint("a", 4, 0), 6, a5b6, true, regressed),
                new Row("an untried node at an epoch older than seen", 2, hint("c", 5, 0), 6, a5b6, true, regressed),
                new Row("the retarget budget spent", 3, hint("c", 9, 0), 7, a5b6c7, true, exhausted),
                new Row("the budget spent wins over an unusable hint", 3, Hint.NONE, 7, a5, false, exhausted),
                new Row("the body not replayable", 1, hint("b", 6, 0), 5, a5, false, notReplayable),
                new Row("an unknown owner", 1, hint("stranger", 6, 0), 5, a5, true, noHint),
                new Row("no hint", 1, Hint.NONE, 5, a5, true, noHint),
                new Row("no hint, the body not replayable either", 1, Hint.NONE, 5, a5, false, noHint),
                new Row("the last retarget the budget allows", 2, hint("c", 7, 0), 6, a5b6, true, retarget("c", 7, 0)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("combinations")
    void decide_combination_decides(Row row) {
        assertThat(RetargetPolicy.decide(
                        row.attempts(), RETRY_MAX, row.hint(), row.attemptEpoch(), row.epochsSeen(), row.replayable()))
                .isEqualTo(row.expected());
    }

    @Test
    void reresolved_anUntriedOwner_isTheNextAttempt_atWhatTheResolverSaid() {
        RouteEntry ring = new RouteEntry("b", 1, RouteEntry.NO_FENCE);

        assertThat(RetargetPolicy.reresolved(1, RETRY_MAX, ring, Map.of("a", 5L), true))
                .as("the ring's older epoch is no regression: nothing newer was learned of b")
                .isEqualTo(new Retarget(ring));
    }

    @Test
    void reresolved_anOwnerTriedAtAnyEpoch_stopsWithNoOwnerHint() {
        RouteEntry again = new RouteEntry("a", 9, RouteEntry.NO_FENCE);

        assertThat(RetargetPolicy.reresolved(1, RETRY_MAX, again, Map.of("a", 5L), true))
                .isEqualTo(new Stop(RetargetPolicy.NO_OWNER_HINT));
    }

    @Test
    void reresolved_theBudgetOrTheBody_stopAsForAHint() {
        RouteEntry c = new RouteEntry("c", 1, RouteEntry.NO_FENCE);

        assertThat(RetargetPolicy.reresolved(3, RETRY_MAX, c, Map.of("a", 5L, "b", 6L), true))
                .isEqualTo(new Exhausted(RetargetPolicy.RETRIES_EXHAUSTED));
        assertThat(RetargetPolicy.reresolved(1, RETRY_MAX, c, Map.of("a", 5L), false))
                .isEqualTo(new Stop(RetargetPolicy.BODY_NOT_REPLAYABLE));
    }

    @Test
    void decide_retryMaxZero_exhaustsAtTheFirst421() {
        assertThat(RetargetPolicy.decide(1, 0, hint("b", 6, 0), 5, Map.of("a", 5L), true))
                .isEqualTo(new Exhausted(RetargetPolicy.RETRIES_EXHAUSTED));
    }

    @Test
    void hintOf_headerValues_parsesOwnerEpochAndFence() {
        Hint h = Hint.of("b", " 7 ", "3", RING::contains);

        assertThat(h).isEqualTo(new Hint("b", true, 7, 3));
        assertThat(h.reportable()).isTrue();
    }

    @Test
    void hintOf_missingOrMalformedNumbers_readAsAbsent() {
        Hint h = Hint.of("b", "seven", null, RING::contains);

        assertThat(h.epoch()).isEqualTo(-1);
        assertThat(h.fence()).isEqualTo(RouteEntry.NO_FENCE);
        assertThat(h.reportable()).as("no epoch: nothing to report").isFalse();
    }

    @Test
    void hintOf_negativeFence_readsAsNoFence() {
        assertThat(Hint.of("b", "7", "-4", RING::contains).fence()).isEqualTo(RouteEntry.NO_FENCE);
    }

    @Test
    void hintOf_strangerOwner_isNotAMemberAndNotReportable() {
        Hint h = Hint.of("stranger", "7", "1", RING::contains);

        assertThat(h.member()).isFalse();
        assertThat(h.reportable()).isFalse();
    }

    @Test
    void hintOf_noOwner_isNotReportable() {
        Hint h = Hint.of(null, "7", "1", RING::contains);

        assertThat(h.owner()).isNull();
        assertThat(h.reportable()).isFalse();
    }
}
