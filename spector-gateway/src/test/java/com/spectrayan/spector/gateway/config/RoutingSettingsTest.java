package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Bounds of the {@code spector.routing.*} keys, each at its limit and one past, and the Redis URI as logged. */
final class RoutingSettingsTest {
    @Test
    void retryMax_atTwo_isAcceptedAndThreeIsRefused() {
        assertThat(withProps(Map.of("spector.routing.gateway.retry-max", "2"))
                        .routing()
                        .gateway()
                        .retryMax())
                .isEqualTo(2);
        assertThat(withProps(Map.of("spector.routing.gateway.retry-max", "0"))
                        .routing()
                        .gateway()
                        .retryMax())
                .isEqualTo(0);

        assertThat(refused(Map.of("spector.routing.gateway.retry-max", "3")).problems())
                .as("retry-max past 2 breaks the three-attempt rule")
                .containsExactly(
                        "spector.routing.gateway.retry-max: 3 (expected: an integer in 0..2, the retargets after an owner's 421)");
        assertThat(refused(Map.of("spector.routing.gateway.retry-max", "-1")).getMessage())
                .contains("spector.routing.gateway.retry-max: -1");
    }

    @Test
    void replayBuffer_upToTheBodyCap_isAcceptedAndOnePastIsRefused() {
        GatewaySettings atCap = withProps(Map.of(
                "spector.routing.gateway.max-buffered-body-bytes", "4096",
                "spector.routing.gateway.replay-buffer-bytes", "4096"));
        assertThat(atCap.routing().gateway().replayBufferBytes()).isEqualTo(4096);
        assertThat(withProps(Map.of("spector.routing.gateway.replay-buffer-bytes", "0"))
                        .routing()
                        .gateway()
                        .replayBufferBytes())
                .as("0 turns replay off")
                .isZero();

        SettingsException e = refused(Map.of(
                "spector.routing.gateway.max-buffered-body-bytes", "4096",
                "spector.routing.gateway.replay-buffer-bytes", "4097"));
        assertThat(e.problems())
                .as("the replay buffer never exceeds the body cap")
                .containsExactly("spector.routing.gateway.replay-buffer-bytes: 4097 (expected: an integer in 0..4096"
                        + " bytes, at most spector.routing.gateway.max-buffered-body-bytes)");
    }

    @Test
    void requestBuffer_upToOneGib_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of()).routing().gateway().requestBufferBytes())
                .as("the default")
                .isEqualTo(65536);
        assertThat(withProps(Map.of("spector.routing.gateway.request-buffer-bytes", "1073741824"))
                        .routing()
                        .gateway()
                        .requestBufferBytes())
                .isEqualTo(RoutingSettings.MAX_BODY_BYTES_LIMIT);

        assertThat(refused(Map.of("spector.routing.gateway.request-buffer-bytes", "1073741825"))
                        .problems())
                .containsExactly("spector.routing.gateway.request-buffer-bytes: 1073741825 (expected: an integer in"
                        + " 0..1073741824 bytes (0: every body streams))");
        assertThat(refused(Map.of("spector.routing.gateway.request-buffer-bytes", "-1"))
                        .problems())
                .singleElement()
                .asString()
                .startsWith("spector.routing.gateway.request-buffer-bytes: -1 ");
    }

    @Test
    void maxBufferedBody_atOneGib_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.routing.gateway.max-buffered-body-bytes", "1073741824"))
                        .routing()
                        .gateway()
                        .maxBufferedBodyBytes())
                .isEqualTo(RoutingSettings.MAX_BODY_BYTES_LIMIT);

        assertThat(refused(Map.of("spector.routing.gateway.max-buffered-body-bytes", "1073741825"))
                        .getMessage())
                .contains("spector.routing.gateway.max-buffered-body-bytes: 1073741825");
        assertThat(refused(Map.of("spector.routing.gateway.max-buffered-body-bytes", "0"))
                        .getMessage())
                .contains("spector.routing.gateway.max-buffered-body-bytes: 0");
    }

    @Test
    void caffeine_atTheirLowerLimits_areAcceptedAndOnePastIsRefused() {
        GatewaySettings s = withProps(Map.of(
                "spector.routing.caffeine.ttl-seconds", "1",
                "spector.routing.caffeine.max-size", "1",
                "spector.cell.ring-epoch", "0"));
        assertThat(s.routing().caffeine().ttl()).isEqualTo(Duration.ofSeconds(1));
        assertThat(s.routing().caffeine().maxSize()).isEqualTo(1);
        assertThat(s.cell().ringEpoch()).isZero();

        SettingsException e = refused(Map.of(
                "spector.routing.caffeine.ttl-seconds", "0",
                "spector.routing.caffeine.max-size", "0",
                "spector.cell.ring-epoch", "-1"));
        assertThat(e.problems())
                .hasSize(3)
                .anySatisfy(p -> assertThat(p).startsWith("spector.routing.caffeine.ttl-seconds: 0 "))
                .anySatisfy(p -> assertThat(p).startsWith("spector.routing.caffeine.max-size: 0 "))
                .anySatisfy(p -> assertThat(p).startsWith("spector.cell.ring-epoch: -1 "));
    }

    @Test
    void redactedUri_withPassword_showsHostButNotThePassword() {
        RoutingSettings.Redis redis = withProps(
                        Map.of("spector.routing.redis.uri", "redis://:hunter2@redis.internal:6379/0"))
                .routing()
                .redis();

        assertThat(redis.uri().toString())
                .as("the URI itself keeps the password")
                .contains("hunter2");
        assertThat(redis.redactedUri())
                .as("the form the start-up log shows")
                .isEqualTo("redis://<redacted>@redis.internal:6379/0");
        assertThat(withProps(Map.of()).routing().redis().redactedUri()).isEqualTo("redis://localhost:6379");
    }

    /**
     * A password written as {@code openssl rand -base64} gives it ({@code /}, {@code +}, {@code =}),
     * or with an {@code @}, is never printed: not in the refusal of a URI it made hostless, not in
     * the redacted form. The old pattern stopped at the first {@code /} or {@code @} and printed
     * the URI whole (found by a review).
     */
    @Test
    void aPasswordWithSlashesOrAts_isNeverPrinted() {
        SettingsException e = refused(Map.of("spector.routing.redis.uri", "redis://:ab/cd+ef==@redis:6379"));
        assertThat(e.getMessage())
                .doesNotContain("ab/cd")
                .doesNotContain("ef==")
                .contains("<redacted>@redis:6379");

        assertThat(SettingsReader.redactUserInfo("redis://:p@ss@redis.internal:6379/0"))
                .isEqualTo("redis://<redacted>@redis.internal:6379/0");
        assertThat(SettingsReader.redactUserInfo("redis:user:secret@host")).isEqualTo("redis:<redacted>@host");
        assertThat(SettingsReader.redactUserInfo("redis://redis.internal:6379/0"))
                .isEqualTo("redis://redis.internal:6379/0");
    }
}
