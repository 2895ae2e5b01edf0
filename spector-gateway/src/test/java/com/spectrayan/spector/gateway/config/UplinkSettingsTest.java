package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.HASH;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Validation of the {@code spector.uplink.*} keys: the relay bound and the worker tokens. */
final class UplinkSettingsTest {
    @Test
    void relayMaxPerWorker_atSixtyFour_isAcceptedAndSixtyFiveIsRefused() {
        assertThat(withProps(Map.of("spector.uplink.relay.max-per-worker", "64"))
                        .uplink()
                        .relayMaxPerWorker())
                .isEqualTo(64);

        assertThat(refused(Map.of("spector.uplink.relay.max-per-worker", "65")).getMessage())
                .contains("spector.uplink.relay.max-per-worker: 65 (expected: an integer in 1..64)");
        assertThat(refused(Map.of("spector.uplink.relay.max-per-worker", "0")).getMessage())
                .contains("spector.uplink.relay.max-per-worker: 0");
    }

    @Test
    void relayMaxUpgradesPerWorker_defaultsToHalfTheSlots_oneToSixtyFourAccepted() {
        assertThat(withProps(Map.of()).uplink().relayMaxUpgradesPerWorker())
                .as("4: with the 8 slots within a link's 16 streams")
                .isEqualTo(4);
        assertThat(withProps(Map.of("spector.uplink.relay.max-upgrades-per-worker", "64"))
                        .uplink()
                        .relayMaxUpgradesPerWorker())
                .isEqualTo(64);
        assertThat(withProps(Map.of("spector.uplink.relay.max-upgrades-per-worker", "1"))
                        .uplink()
                        .relayMaxUpgradesPerWorker())
                .isEqualTo(1);
        assertThat(refused(Map.of("spector.uplink.relay.max-upgrades-per-worker", "65"))
                        .getMessage())
                .contains("spector.uplink.relay.max-upgrades-per-worker: 65 (expected: an integer in 1..64)");
        assertThat(refused(Map.of("spector.uplink.relay.max-upgrades-per-worker", "0"))
                        .getMessage())
                .contains("spector.uplink.relay.max-upgrades-per-worker: 0");
    }

    @Test
    void uplinkTokens_badHexOrDuplicate_isRefused() {
        assertThat(refused(Map.of("spector.uplink.tokens", "w1=" + HASH.substring(1)))
                        .problems())
                .as("63 hex chars")
                .singleElement()
                .asString()
                .startsWith("spector.uplink.tokens: w1=<redacted> (expected: workerId=<64 hex chars");
        assertThat(refused(Map.of("spector.uplink.tokens", "w1=" + HASH.replace('a', 'g')))
                        .getMessage())
                .contains("spector.uplink.tokens: w1=<redacted>");
        assertThat(refused(Map.of("spector.uplink.tokens", "w1=" + HASH + ",w1=" + HASH))
                        .getMessage())
                .contains("listed twice");
    }
}
