package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

final class ForwarderSpecTest {
    private static final ForwarderSpec D = ForwarderSpec.defaults();
    private static final Duration S = Duration.ofSeconds(1);

    @Test
    void defaults_holdHandoffsForTwoSeconds_boundedByVitessCount() {
        assertThat(D.handoffHold()).isEqualTo(Duration.ofSeconds(2));
        assertThat(D.handoffMaxHeld()).isEqualTo(1000);
        assertThat(D.handoffMaxHeldBytes()).isEqualTo(16L * 1024 * 1024);
    }

    @Test
    void handoffHold_atTheMax_taken_onePast_refused() {
        assertThat(handoff(ForwarderSpec.MAX_HANDOFF_HOLD, 1, 0).handoffHold())
                .isEqualTo(ForwarderSpec.MAX_HANDOFF_HOLD);
        assertThat(handoff(Duration.ZERO, 1, 0).handoffHold())
                .as("zero: no holds")
                .isZero();
        assertThatThrownBy(() -> handoff(ForwarderSpec.MAX_HANDOFF_HOLD.plusNanos(1), 1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("handoffHold: PT30.000000001S (expected: 0..PT30S)");
        assertThatThrownBy(() -> handoff(Duration.ofMillis(-1), 1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("handoffHold: ");
    }

    @Test
    void handoffMaxHeld_atTheMax_taken_onePast_refused() {
        assertThat(handoff(Duration.ofSeconds(1), ForwarderSpec.MAX_HANDOFF_MAX_HELD, 0)
                        .handoffMaxHeld())
                .isEqualTo(ForwarderSpec.MAX_HANDOFF_MAX_HELD);
        assertThatThrownBy(() -> handoff(Duration.ofSeconds(1), ForwarderSpec.MAX_HANDOFF_MAX_HELD + 1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("handoffMaxHeld: 100001 (expected: 0..100000)");
        assertThatThrownBy(() -> handoff(Duration.ofSeconds(1), 1, -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("handoffMaxHeldBytes: -1 (expected: >= 0)");
    }

    @Test
    void requestBuffer_atTheReplayBuffer_taken_onePast_refused() {
        assertThat(D.requestBufferBytes()).isEqualTo(64 * 1024);
        assertThat(new ForwarderSpec(2, 64, 32, 64, S, S, S, S, 3, S, S, S, 1, 0).requestBufferBytes())
                .as("the default, capped by a smaller replay buffer")
                .isEqualTo(32);
        assertThat(buffering(64).requestBufferBytes()).isEqualTo(64);
        assertThat(buffering(0).requestBufferBytes())
                .as("0: every body streams")
                .isZero();
        assertThatThrownBy(() -> buffering(65))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("requestBufferBytes: 65 (expected: 0..replayBufferBytes 64)");
        assertThatThrownBy(() -> buffering(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("requestBufferBytes: -1 ");
    }

    private static ForwarderSpec buffering(long requestBuffer) {
        return new ForwarderSpec(2, 64, 64, 64, S, S, S, S, 3, S, S, S, 1, 0, requestBuffer);
    }

    private static ForwarderSpec handoff(Duration hold, int maxHeld, long bytes) {
        return new ForwarderSpec(2, 64, 64, 64, S, S, S, S, 3, S, S, hold, maxHeld, bytes);
    }
}
