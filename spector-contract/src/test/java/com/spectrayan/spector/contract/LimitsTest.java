package com.spectrayan.spector.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

final class LimitsTest {

    /** Every {@link Bound} declared in {@link Limits}, found by reflection so none is forgotten. */
    static Stream<Arguments> bounds() throws IllegalAccessException {
        List<Arguments> all = new ArrayList<>();
        for (Field f : Limits.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == Bound.class) {
                all.add(Arguments.of(f.getName(), f.get(null)));
            }
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("bounds")
    void bound_atItsLimit_isAllowed(String field, Bound bound) {
        assertThat(bound.allows(bound.max()))
                .as("%s allows its max %d", field, bound.max())
                .isTrue();
        assertThat(bound.check(bound.max())).isEqualTo(bound.max());
        assertThat(bound.allows(bound.min()))
                .as("%s allows its min %d", field, bound.min())
                .isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("bounds")
    void bound_onePastItsLimit_isRefusedNamingTheBound(String field, Bound bound) {
        assertThatThrownBy(() -> bound.check(bound.max() + 1))
                .as("%s refuses max+1", field)
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining(bound.name())
                .hasMessageContaining(String.valueOf(bound.max() + 1))
                .satisfies(e -> assertThat(((SpectorException) e).code()).isEqualTo(bound.code()));
        assertThatThrownBy(() -> bound.check(bound.min() - 1))
                .as("%s refuses min-1", field)
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining(bound.name());
    }

    @Test
    void bounds_haveTheValuesOfTheDesign() {
        assertThat(Limits.BODY_BYTES.max()).as("10 MiB body cap").isEqualTo(10L * 1024 * 1024);
        assertThat(Limits.BODY_BYTES.code()).isEqualTo(ErrorCode.PAYLOAD_TOO_LARGE);
        assertThat(Limits.REPLAY_BYTES.max()).as("1 MiB replay buffer").isEqualTo(1024L * 1024);
        assertThat(Limits.RETARGETS.max()).as("two retargets, three attempts").isEqualTo(2);
        assertThat(Limits.ROUTING_NAME_CHARS.max()).isEqualTo(63);
        assertThat(Limits.CHUNK_BYTES.max()).as("256 KiB chunks").isEqualTo(262_144);
        assertThat(Limits.RELAY_ID_CHARS.max()).isEqualTo(64);
        assertThat(Limits.URL_CHARS.max()).isEqualTo(4096);
        assertThat(Limits.HEADER_COUNT.max()).isEqualTo(100);
        assertThat(Limits.HEADER_VALUE_CHARS.max()).isEqualTo(8192);
        assertThat(Limits.TENANT_CHARS.max()).isEqualTo(300);
        assertThat(Limits.ACTIVE_RELAYS_PER_CONNECTION.max()).isEqualTo(16);
        assertThat(Limits.RELAY_LENGTH_BYTES.max())
                .as("2^53 - 1, exact in JSON")
                .isEqualTo(9_007_199_254_740_991L);
        assertThat(Limits.UNANSWERED_BODIES).isEqualTo(4);
        assertThat(Limits.RELAYS_PER_WORKER).isEqualTo(8);
        assertThat(Limits.RELAY_UPGRADES_PER_WORKER).isEqualTo(4);
        assertThat((long) Limits.RELAYS_PER_WORKER + Limits.RELAY_UPGRADES_PER_WORKER)
                .as("slots and upgrade share within a link's streams")
                .isLessThanOrEqualTo(Limits.ACTIVE_RELAYS_PER_CONNECTION.max());
        assertThat(Limits.UNREAD_RELAY_BYTES).isEqualTo(64L * 1024 * 1024);
        assertThat(Limits.RELAY_DEADLINE.toSeconds()).isEqualTo(330);
        assertThat(Limits.RING_POINTS_PER_MEMBER).isEqualTo(160);
    }

    @Test
    void payloadTooLarge_refusal_carriesTheLimitInItsDetails() {
        SpectorException e = Limits.BODY_BYTES.refusal(Limits.BODY_BYTES.max() + 1);

        assertThat(e.code().httpStatus()).isEqualTo(413);
        assertThat(e.details()).containsEntry("limitBytes", Limits.BODY_BYTES.max());
        assertThat(e.getMessage()).isEqualTo("bodyBytes: 10485761 (expected: <= 10485760 bytes)");
    }

    @Test
    void bound_withMinAboveMax_isRefusedAtConstruction() {
        assertThatThrownBy(() -> new Bound("x", 2, 1, "chars", ErrorCode.BAD_REQUEST))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("min: 2 (expected: <= max 1)");
    }
}
