package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Bounds of {@code spector.server.peer-port}, {@code peer-address} and {@code spector.cell.peer-secret}. */
final class PeerSettingsTest {
    private static final String SECRET_32 = "p".repeat(PeerSettings.MIN_SECRET_CHARS);

    @Test
    void defaults_port7090_noAddress_noSecret() {
        GatewaySettings s = withProps(Map.of());

        assertThat(s.server().peer()).isEqualTo(new PeerSettings(PeerSettings.DEFAULT_PORT, null));
        assertThat(s.cell().peerSecret()).isNull();
    }

    @Test
    void peerPort_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.peer-port", "-1"))
                        .server()
                        .peer()
                        .port())
                .as("off")
                .isEqualTo(PeerSettings.OFF);
        assertThat(withProps(Map.of("spector.server.peer-port", "0"))
                        .server()
                        .peer()
                        .port())
                .as("any free port")
                .isZero();
        assertThat(withProps(Map.of("spector.server.peer-port", "65535"))
                        .server()
                        .peer()
                        .port())
                .isEqualTo(65535);

        assertThat(refused(Map.of("spector.server.peer-port", "-2")).getMessage())
                .contains("spector.server.peer-port: -2 (expected: a port in 1..65535, 0 for any free port, or -1"
                        + " for no peer listener)");
        assertThat(refused(Map.of("spector.server.peer-port", "65536")).getMessage())
                .contains("spector.server.peer-port: 65536");
    }

    @ParameterizedTest
    @ValueSource(strings = {"10.0.0.7", "10.0.0.7:7090", "gw-0.gateway.svc:1", "gw:65535", "[fd00::7]:7090", "[::1]"})
    void peerAddress_hostOrHostAndPort_isAccepted(String address) {
        assertThat(withProps(Map.of("spector.server.peer-address", address))
                        .server()
                        .peer()
                        .address())
                .isEqualTo(address);
    }

    @ParameterizedTest
    @ValueSource(
            strings = {"10.0.0.7:0", "gw:65536", "http://gw:7090", "gw:7090/x", "a b", "-gw", "fd00::7:7090", "u@gw"})
    void peerAddress_notHostAndPort_isRefused(String address) {
        assertThat(refused(Map.of("spector.server.peer-address", address)).getMessage())
                .contains("spector.server.peer-address: " + address + " (expected: host or host:port");
    }

    @Test
    void peerAddress_pastItsLength_isRefused() {
        String name = "a".repeat(PeerSettings.MAX_ADDRESS_CHARS - 5) + ":7090"; // at the limit
        assertThat(withProps(Map.of("spector.server.peer-address", name))
                        .server()
                        .peer()
                        .address())
                .isEqualTo(name);
        assertThat(refused(Map.of("spector.server.peer-address", "a" + name)).getMessage())
                .contains("spector.server.peer-address");
    }

    @Test
    void peerSecret_atLeast32Chars_isAcceptedAnd31IsRefused_neverShown() {
        assertThat(withProps(Map.of("spector.cell.peer-secret", SECRET_32))
                        .cell()
                        .peerSecret())
                .isEqualTo(SECRET_32);

        String message = refused(Map.of("spector.cell.peer-secret", SECRET_32.substring(1)))
                .getMessage();

        assertThat(message)
                .contains("spector.cell.peer-secret: <redacted> of 31 chars (expected: a secret of at least 32 chars")
                .doesNotContain(SECRET_32.substring(1));
    }

    @Test
    void previousPeerSecret_isTakenBesideASecret_only_atLeast32Chars_neverShown() {
        String previous = "q".repeat(PeerSettings.MIN_SECRET_CHARS);
        GatewaySettings s =
                withProps(Map.of("spector.cell.peer-secret", SECRET_32, "spector.cell.peer-secret-previous", previous));
        assertThat(s.cell().peerSecretPrevious()).isEqualTo(previous);
        assertThat(s.describe()).containsEntry("spector.cell.peer-secret-previous", "<redacted>");
        assertThat(s.toString()).doesNotContain(previous);

        assertThat(refused(Map.of(
                                "spector.cell.peer-secret",
                                SECRET_32,
                                "spector.cell.peer-secret-previous",
                                previous.substring(1)))
                        .getMessage())
                .contains("spector.cell.peer-secret-previous: <redacted> of 31 chars")
                .doesNotContain(previous.substring(1));
        assertThat(refused(Map.of("spector.cell.peer-secret-previous", previous))
                        .getMessage())
                .contains("spector.cell.peer-secret-previous")
                .contains("accepted beside that secret only");
    }

    @Test
    void describe_andToString_redactTheSecret() {
        GatewaySettings s = withProps(Map.of("spector.cell.peer-secret", SECRET_32));

        assertThat(s.describe()).containsEntry("spector.cell.peer-secret", "<redacted>");
        assertThat(s.toString()).doesNotContain(SECRET_32);
        assertThat(s.cell().toString()).doesNotContain(SECRET_32);
    }

    @Test
    void everyProblem_isReportedAtOnce() {
        String message = refused(Map.of(
                        "spector.server.peer-port", "70000",
                        "spector.server.peer-address", "http://x",
                        "spector.cell.peer-secret", "short"))
                .getMessage();

        assertThat(message)
                .contains("spector.server.peer-port: 70000")
                .contains("spector.server.peer-address: http://x")
                .contains("spector.cell.peer-secret: <redacted> of 5 chars");
    }
}
