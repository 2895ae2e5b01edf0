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
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The retarget decision over every combination of what an exchange knows after a 421; no Netty. */
final class RetargetPolicyTest {
    private static final Set<String> RING = Set.of("a", "b", "c");
    private static final int RETRY_MAX = 2;

    private static Hint hint(String owner, long epoch, long fence) {
        return new Hint(owner, RING.contains(owner), epoch, fence);
    }

    static Stream<Arguments> combinations() {
        return Stream.of(
                // name, attempts, hint, attemptEpoch, epochsSeen, replayable, expected
                Arguments.of(
                        "a new owner at a newer epoch",
                        1,
                        hint("b", 6, 3),
                        5,
                        Map.of("a", 5L),
                        true,
                        new Retarget(new RouteEntry("b", 6, 3))),
                Arguments.of(
                        "a new owner at the same epoch",
                        1,
                        hint("b", 5, 0),
                        5,
                        Map.of("a", 5L),
                        true,
                        new Retarget(new RouteEntry("b", 5, 0))),
                Arguments.of(
                        "a hint without an epoch takes the failed attempt's",
                        1,
                        hint("b", -1, 0),
                        5,
                        Map.of("a", 5L),
                        true,
                        new Retarget(new RouteEntry("b", 5, 0))),
                Arguments.of(
                        "an owner tried before, now at a newer epoch",
                        2,
                        hint("a", 7, 0),
                        6,
                        Map.of("a", 5L, "b", 6L),
                        true,
                        new Retarget(new RouteEntry("a", 7, 0))),
                Arguments.of(
                        "the same node at the same epoch",
                        1,
                        hint("a", 5, 0),
                        5,
                        Map.of("a", 5L),
                        true,
                        new Stop(RetargetPolicy.HINT_ALREADY_TRIED)),
                Arguments.of(
                        "the same node without an epoch",
                        1,
                        hint("a", -1, 0),
                        5,
                        Map.of("a", 5L),
                        true,
                        new Stop(RetargetPolicy.HINT_ALREADY_TRIED)),
                Arguments.of(
                        "a node tried at a newer epoch than the hint's (also older than seen)",
                        2,
                        hint("a", 4, 0),
                        6,
                        Map.of("a", 5L, "b", 6L),
                        true,
                        new Stop(RetargetPolicy.EPOCH_REGRESSED)),
                Arguments.of(
                        "an untried node at an epoch older than one seen",
                        2,
                        hint("c", 5, 0),
                        6,
                        Map.of("a", 5L, "b", 6L),
                        true,
                        new Stop(RetargetPolicy.EPOCH_REGRESSED)),
                Arguments.of(
                        "the retarget budget spent",
                        3,
                        hint("c", 9, 0),
                        7,
                        Map.of("a", 5L, "b", 6L, "c", 7L),
                        true,
                        new Exhausted(RetargetPolicy.RETRIES_EXHAUSTED)),
                Arguments.of(
                        "the budget spent wins over an unusable hint",
                        3,
                        Hint.NONE,
                        7,
                        Map.of("a", 5L),
                        false,
                        new Exhausted(RetargetPolicy.RETRIES_EXHAUSTED)),
                Arguments.of(
                        "the body not replayable",
                        1,
                        hint("b", 6, 0),
                        5,
                        Map.of("a", 5L),
                        false,
                        new Stop(RetargetPolicy.BODY_NOT_REPLAYABLE)),
                Arguments.of(
                        "an unknown owner",
                        1,
                        hint("stranger", 6, 0),
                        5,
                        Map.of("a", 5L),
                        true,
                        new Stop(RetargetPolicy.NO_OWNER_HINT)),
                Arguments.of("no hint", 1, Hint.NONE, 5, Map.of("a", 5L), true, new Stop(RetargetPolicy.NO_OWNER_HINT)),
                Arguments.of(
                        "no hint, the body not replayable either",
                        1,
                        Hint.NONE,
                        5,
                        Map.of("a", 5L),
                        false,
                        new Stop(RetargetPolicy.NO_OWNER_HINT)),
                Arguments.of(
                        "the last retarget the budget allows",
                        2,
                        hint("c", 7, 0),
                        6,
                        Map.of("a", 5L, "b", 6L),
                        true,
                        new Retarget(new RouteEntry("c", 7, 0))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("combinations")
    void decide_combination_decides(
            String name,
            int attempts,
            Hint hint,
            long attemptEpoch,
            Map<String, Long> epochsSeen,
            boolean replayable,
            Decision expected) {
        assertThat(RetargetPolicy.decide(attempts, RETRY_MAX, hint, attemptEpoch, epochsSeen, replayable))
                .isEqualTo(expected);
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
