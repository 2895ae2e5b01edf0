package com.spectrayan.spector.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** RFC 9110 §8.6: a declared Content-Length is exactly the number of bytes that follow. */
final class DeclaredLengthTest {

    @Test
    void admit_upToTheLength_staysWithin_andTheEndIsNotShort() {
        DeclaredLength length = new DeclaredLength(246);

        assertThat(length.admit(100)).isTrue();
        assertThat(length.endsShort()).as("after 100 of 246").isTrue();
        assertThat(length.isComplete()).isFalse();
        assertThat(length.admit(146)).as("exactly the length").isTrue();

        assertThat(length.isComplete()).isTrue();
        assertThat(length.endsShort()).isFalse();
        assertThat(length.admit(0)).as("an empty part at the length").isTrue();
        assertThat(length.counted()).isEqualTo(246);
    }

    @Test
    void admit_oneBytePastTheLength_isRefused_andCounted() {
        DeclaredLength length = new DeclaredLength(246);
        length.admit(246);

        assertThat(length.admit(1)).isFalse();
        assertThat(length.counted()).as("the part that ran past counts").isEqualTo(247);
        assertThat(length.isComplete()).isFalse();
        assertThat(length.endsShort()).isFalse();
    }

    @Test
    void admit_aPartThatStraddlesTheLength_isRefused() {
        DeclaredLength length = new DeclaredLength(10);

        assertThat(length.admit(9)).isTrue();
        assertThat(length.admit(2)).isFalse();
        assertThat(length).hasToString("11 of 10 bytes");
    }

    @Test
    void unknown_admitsAnyBytes_andNeverEndsShort() {
        DeclaredLength length = DeclaredLength.unknown();

        assertThat(length.isKnown()).isFalse();
        assertThat(length.declared()).isEqualTo(ResponseFraming.UNKNOWN_LENGTH);
        assertThat(length.admit(Limits.RELAY_LENGTH_BYTES.max())).isTrue();
        assertThat(length.admit(1)).isTrue();
        assertThat(length.endsShort()).isFalse();
        assertThat(length.isComplete()).isFalse();
    }

    @Test
    void zero_isCompleteAtOnce_andAnyByteRunsPast() {
        DeclaredLength length = new DeclaredLength(0);

        assertThat(length.endsShort()).isFalse();
        assertThat(length.isComplete()).isTrue();
        assertThat(length.admit(1)).isFalse();
    }

    /** {@link Limits#RELAY_LENGTH_BYTES} at its end, and one past either end. */
    @Test
    void constructor_atTheRelayLengthBound_isAccepted_andOnePastEitherEnd_isRefused() {
        long max = Limits.RELAY_LENGTH_BYTES.max();
        assertThat(max).isEqualTo(9_007_199_254_740_991L);
        DeclaredLength atMax = new DeclaredLength(max);
        assertThat(atMax.admit(max)).isTrue();
        assertThat(atMax.isComplete()).isTrue();

        assertThatThrownBy(() -> new DeclaredLength(max + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("declared: 9007199254740992 (expected: -1 or 0..9007199254740991)");
        assertThatThrownBy(() -> new DeclaredLength(-2)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new DeclaredLength(246).admit(-1)).isInstanceOf(IllegalArgumentException.class);
    }
}
