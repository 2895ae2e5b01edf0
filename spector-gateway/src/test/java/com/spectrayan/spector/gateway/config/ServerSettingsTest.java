package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsFixtures.reader;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.refused;
import static com.spectrayan.spector.gateway.config.SettingsFixtures.withProps;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.gateway.config.ServerSettings.Transport;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Bounds of the {@code spector.server.*} keys, each at its limit and one past, and the trusted proxies. */
final class ServerSettingsTest {
    @Test
    void maxConnections_atOne_isAcceptedAndZeroIsRefused() {
        assertThat(withProps(Map.of("spector.server.max-connections", "1"))
                        .server()
                        .maxConnections())
                .isEqualTo(1);
        assertThat(withProps(Map.of("spector.server.max-connections", "2147483647"))
                        .server()
                        .maxConnections())
                .isEqualTo(Integer.MAX_VALUE);

        assertThat(refused(Map.of("spector.server.max-connections", "0")).getMessage())
                .contains("spector.server.max-connections: 0 (expected: an integer >= 1)");
        assertThat(refused(Map.of("spector.server.max-connections", "2147483648"))
                        .getMessage())
                .as("past an int")
                .contains("spector.server.max-connections: 2147483648");
    }

    @Test
    void maxConnectionsPerAddress_isOffByDefault_zeroAndUpAreAccepted_andBelowIsRefused() {
        assertThat(withProps(Map.of()).server().maxConnectionsPerAddress())
                .isEqualTo(ServerSettings.UNLIMITED_PER_ADDRESS)
                .isZero();
        assertThat(withProps(Map.of("spector.server.max-connections-per-address", "1"))
                        .server()
                        .maxConnectionsPerAddress())
                .isEqualTo(1);
        assertThat(withProps(Map.of("spector.server.max-connections-per-address", "2147483647"))
                        .server()
                        .maxConnectionsPerAddress())
                .isEqualTo(Integer.MAX_VALUE);
        assertThat(refused(Map.of("spector.server.max-connections-per-address", "-1"))
                        .getMessage())
                .contains("spector.server.max-connections-per-address: -1 (expected: an integer >= 0 (0: no limit))");
    }

    @Test
    void transport_eachValueInAnyCase_isReadAutoByDefault_andOthersAreRefused() {
        assertThat(withProps(Map.of()).server().transport()).isEqualTo(Transport.AUTO);
        for (Transport t : Transport.values()) {
            assertThat(withProps(Map.of("spector.server.transport", t.label().toUpperCase(Locale.ROOT)))
                            .server()
                            .transport())
                    .as("%s, on this Linux machine (io_uring and epoll both run here)", t)
                    .isEqualTo(t);
        }

        assertThat(refused(Map.of("spector.server.transport", "kqueue")).getMessage())
                .contains("spector.server.transport: kqueue (expected: auto, io_uring, epoll or nio)");
        assertThat(refused(Map.of("spector.server.transport", "iouring")).getMessage())
                .as("the setting's spelling is Netty's and the kernel's")
                .contains("spector.server.transport: iouring (expected: auto, io_uring, epoll or nio)");
    }

    @Test
    void transport_oneThatCannotRunHere_isRefusedSayingWhy() {
        SettingsReader r = reader(Map.of("spector.server.transport", "io_uring"));

        ServerSettings.transport(r, t -> t == Transport.IO_URING ? "io_uring is not available here (seccomp)" : null);

        assertThat(r.problems())
                .containsExactly("spector.server.transport: io_uring (expected: auto or another transport: "
                        + "io_uring is not available here (seccomp))");
    }

    @Test
    void splicePipes_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of()).server().splicePipes()).isEqualTo(ServerSettings.DEFAULT_SPLICE_PIPES);
        assertThat(withProps(Map.of("spector.server.splice-pipes", "0"))
                        .server()
                        .splicePipes())
                .as("off")
                .isZero();
        assertThat(withProps(Map.of("spector.server.splice-pipes", "100000"))
                        .server()
                        .splicePipes())
                .isEqualTo(ServerSettings.MAX_SPLICE_PIPES);

        assertThat(refused(Map.of("spector.server.splice-pipes", "-1")).getMessage())
                .contains("spector.server.splice-pipes: -1 (expected: an integer in 0..100000 (0: no splicing))");
        assertThat(refused(Map.of("spector.server.splice-pipes", "100001")).getMessage())
                .contains("spector.server.splice-pipes: 100001");
    }

    @Test
    void maxHeaderSize_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.max-header-size", "1024"))
                        .server()
                        .maxHeaderSize())
                .isEqualTo(ServerSettings.MIN_HEADER_SIZE);
        assertThat(withProps(Map.of("spector.server.max-header-size", "1048576"))
                        .server()
                        .maxHeaderSize())
                .isEqualTo(ServerSettings.MAX_HEADER_SIZE_LIMIT);

        assertThat(refused(Map.of("spector.server.max-header-size", "1023")).getMessage())
                .contains("spector.server.max-header-size: 1023 (expected: an integer in 1024..1048576 bytes)");
        assertThat(refused(Map.of("spector.server.max-header-size", "1048577")).getMessage())
                .contains("spector.server.max-header-size: 1048577");
    }

    @Test
    void maxInitialLineLength_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.max-initial-line-length", "256"))
                        .server()
                        .maxInitialLineLength())
                .isEqualTo(256);
        assertThat(withProps(Map.of("spector.server.max-initial-line-length", "65536"))
                        .server()
                        .maxInitialLineLength())
                .isEqualTo(65536);

        assertThat(refused(Map.of("spector.server.max-initial-line-length", "255"))
                        .getMessage())
                .contains("spector.server.max-initial-line-length: 255");
        assertThat(refused(Map.of("spector.server.max-initial-line-length", "65537"))
                        .getMessage())
                .contains("spector.server.max-initial-line-length: 65537");
    }

    @Test
    void port_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.port", "0")).server().port())
                .isZero();
        assertThat(withProps(Map.of("spector.server.port", "65535")).server().port())
                .isEqualTo(65535);

        assertThat(refused(Map.of("spector.server.port", "65536")).getMessage())
                .contains("spector.server.port: 65536 (expected: a port in 0..65535");
        assertThat(refused(Map.of("spector.server.port", "-1")).getMessage()).contains("spector.server.port: -1");
        assertThat(refused(Map.of("spector.server.port", "http")).getMessage()).contains("spector.server.port: http");
    }

    @Test
    void headerTimeout_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertThat(withProps(Map.of("spector.server.header-timeout", "1s"))
                        .server()
                        .headerTimeout())
                .isEqualTo(ServerSettings.MIN_CLIENT_TIMEOUT);
        assertThat(withProps(Map.of("spector.server.header-timeout", "10m"))
                        .server()
                        .headerTimeout())
                .isEqualTo(ServerSettings.MAX_HEADER_TIMEOUT);

        assertThat(refused(Map.of("spector.server.header-timeout", "999ms")).problems())
                .containsExactly("spector.server.header-timeout: 999ms (expected: a duration in 1s..10m, e.g. 200ms,"
                        + " 10s, 5m, 1h or PT10S)");
        assertThat(refused(Map.of("spector.server.header-timeout", "601s")).getMessage())
                .contains("spector.server.header-timeout: 601s (expected: a duration in 1s..10m");
        assertThat(refused(Map.of("spector.server.header-timeout", "30")).getMessage())
                .as("a bare number has no unit in a key not named -ms or -seconds")
                .contains("spector.server.header-timeout: 30 ");
    }

    @Test
    void bodyTimeout_atEachLimit_isAcceptedAndOnePastIsRefused() {
        assertHourLongClientTimeout("spector.server.body-timeout", ServerSettings::bodyTimeout);
        assertThat(ServerSettings.MAX_BODY_TIMEOUT).isEqualTo(Duration.ofHours(1));
    }

    @Test
    void sendTimeout_defaultsToNginxsSendTimeout_atEachLimitIsAccepted_andOnePastIsRefused() {
        assertThat(withProps(Map.of()).server().sendTimeout()).isEqualTo(Duration.ofSeconds(60));
        assertHourLongClientTimeout("spector.server.send-timeout", ServerSettings::sendTimeout);
        assertThat(ServerSettings.MAX_SEND_TIMEOUT).isEqualTo(Duration.ofHours(1));
    }

    /** A client timeout of 1s..1h: both limits taken, one past each refused with the key and the range. */
    private static void assertHourLongClientTimeout(String key, Function<ServerSettings, Duration> read) {
        assertThat(read.apply(withProps(Map.of(key, "1s")).server())).isEqualTo(ServerSettings.MIN_CLIENT_TIMEOUT);
        assertThat(read.apply(withProps(Map.of(key, "1h")).server())).isEqualTo(Duration.ofHours(1));

        assertThat(refused(Map.of(key, "999ms")).problems())
                .containsExactly(key + ": 999ms (expected: a duration in 1s..1h, e.g. 200ms, 10s, 5m, 1h or PT10S)");
        assertThat(refused(Map.of(key, "3601s")).getMessage())
                .contains(key + ": 3601s (expected: a duration in 1s..1h");
    }

    @Test
    void trustedProxies_ipLiterals_areReadAndNamesRefusedWithoutDns() {
        GatewaySettings s = withProps(Map.of("spector.server.trusted-proxies", "10.0.0.1, ::1,[fe80::1]"));

        assertThat(s.server().trustedProxies())
                .extracting(InetAddress::getHostAddress)
                .containsExactly("10.0.0.1", "0:0:0:0:0:0:0:1", "fe80:0:0:0:0:0:0:1");
        SettingsException e = refused(Map.of("spector.server.trusted-proxies", "proxy.internal,256.0.0.1,10.0.0.0/8"));
        assertThat(e.problems())
                .as("a name, an octet past 255, a CIDR")
                .hasSize(3)
                .allSatisfy(p -> assertThat(p).startsWith("spector.server.trusted-proxies: "));
    }
}
