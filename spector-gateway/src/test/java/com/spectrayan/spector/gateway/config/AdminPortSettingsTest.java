package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** Bounds of {@code spector.server.admin-port}: off by default, and never another listener's port. */
final class AdminPortSettingsTest {
    private static final String KEY = "spector.server.admin-port";
    private static final String SECRET = "spector.cell.peer-secret";
    private static final String A_SECRET = "s".repeat(PeerSettings.MIN_SECRET_CHARS);

    @Test
    void default_isOff() {
        GatewaySettings s = withProps(Map.of());

        assertThat(s.server().adminPort()).isEqualTo(ServerSettings.ADMIN_OFF);
        assertThat(s.describe()).containsEntry(KEY, "-1");
    }

    @Test
    void adminPort_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of(KEY, "-1")).server().adminPort()).as("off").isEqualTo(-1);
        assertThat(withProps(Map.of(KEY, "0")).server().adminPort())
                .as("any free port")
                .isZero();
        assertThat(withProps(Map.of(KEY, "65535")).server().adminPort()).isEqualTo(65535);

        assertThat(refused(Map.of(KEY, "-2")).getMessage())
                .contains(KEY + ": -2 (expected: a port in 1..65535, 0 for any free port, or -1 for no admin"
                        + " listener)");
        assertThat(refused(Map.of(KEY, "65536")).getMessage()).contains(KEY + ": 65536");
    }

    @Test
    void adminPort_onTheClientOrPeerPort_isRefused() {
        assertThat(refused(Map.of(KEY, "7070")).getMessage())
                .as("the client port's default")
                .contains(KEY + ": 7070 (expected: a port other than spector.server.port's)");
        assertThat(refused(Map.of(KEY, "7090", SECRET, A_SECRET)).getMessage())
                .as("the peer port's default, the hop on")
                .contains(KEY + ": 7090 (expected: a port other than spector.server.peer-port's)");
        assertThat(refused(Map.of(KEY, "7095", "spector.server.peer-port", "7095"))
                        .getMessage())
                .as("a peer port set by hand, the hop off")
                .contains(KEY + ": 7095 (expected: a port other than spector.server.peer-port's)");
        assertThat(withProps(Map.of(KEY, "7091")).server().adminPort()).isEqualTo(7091);
    }

    /**
     * The peer port's default is free for the admin listener when no peer listener binds it (no
     * peer secret: the hop is off). Regression: 7090 was refused whether or not the hop was on.
     */
    @Test
    void adminPort_onThePeerPortsDefault_theHopOff_isAccepted() {
        assertThat(withProps(Map.of(KEY, "7090")).server().adminPort()).isEqualTo(7090);
    }

    /**
     * A peer port set on the client or TLS port is refused by name (the third review: the second
     * bind failed with an anonymous "Address already in use", exit 1); its default is not, since
     * it binds only with the peer hop on.
     */
    @Test
    void peerPort_setOnTheClientOrTlsPort_isRefused_itsDefaultIsNot() {
        String peer = "spector.server.peer-port";
        assertThat(refused(Map.of(peer, "7070")).getMessage())
                .contains(peer + ": 7070 (expected: a port other than spector.server.port's)");
        assertThat(withProps(Map.of("spector.server.port", "7090")).server().port())
                .as("the client port on the peer port's default, the hop off")
                .isEqualTo(7090);
        assertThat(refused(Map.of("spector.server.port", "7090", SECRET, A_SECRET))
                        .getMessage())
                .as("the client port on the peer port's default, the hop on")
                .contains(peer + ": 7090 (expected: a port other than spector.server.port's)");
    }
}
