package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spector.server.max-connections-per-address} (nginx's {@code limit_conn} keyed by the
 * client's address): at the limit, one more connection from the same address is closed as it is
 * accepted, while the ones it holds go on; when one closes, the next is accepted. A trusted proxy
 * is never counted. The map of addresses empties as their connections close. Every test client
 * here is 127.0.0.1, so one address holds them all.
 */
final class ConnectionsPerAddressTest {
    private static final int PER_ADDRESS = 3;
    private static final String LOOPBACK = "127.0.0.1";

    private static String health() {
        return "GET /actuator/health/liveness HTTP/1.1\r\nHost: x\r\n\r\n";
    }

    @Test
    void atTheLimit_oneMoreFromTheSameAddressIsClosed_andTheHeldOnesGoOn() throws Exception {
        try (Cell cell = Cell.builder()
                .owners(1)
                .set("spector.server.max-connections-per-address", Integer.toString(PER_ADDRESS))
                .start()) {
            List<RawClient> held = new ArrayList<>();
            try {
                for (int i = 0; i < PER_ADDRESS; i++) { // at the limit: each is served
                    RawClient c = new RawClient(cell.gateway.port());
                    held.add(c);
                    assertThat(c.send(health()).read().status())
                            .as("connection %d of %d", i + 1, PER_ADDRESS)
                            .isEqualTo(200);
                }
                try (RawClient past = new RawClient(cell.gateway.port())) { // one past it
                    past.send(health());
                    assertThat(past.closedByServer())
                            .as("one past the limit from the same address")
                            .isTrue();
                }
                for (RawClient c : held) {
                    assertThat(c.send(health()).read().status())
                            .as("the connections held go on")
                            .isEqualTo(200);
                }
                assertThat(cell.gateway.addressLimit().held(LOOPBACK)).isEqualTo(PER_ADDRESS);

                held.remove(0).close(); // room for one
                await("the closed connection is counted out")
                        .atMost(Duration.ofSeconds(5))
                        .until(() -> cell.gateway.addressLimit().held(LOOPBACK) == PER_ADDRESS - 1);
                RawClient next = new RawClient(cell.gateway.port());
                held.add(next);
                assertThat(next.send(health()).read().status())
                        .as("accepted again once one closed")
                        .isEqualTo(200);
            } finally {
                closeAll(held);
            }
            await("every address is forgotten once its connections closed")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> cell.gateway.addressLimit().addresses() == 0);
            try (RawClient scrape = new RawClient(cell.gateway.port())) {
                String text = scrape.send("GET /actuator/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        .read()
                        .text();
                assertThat(text).contains("spector_gateway_connections_refused_per_address_total 1.0");
                assertThat(text)
                        .as("the global limit's counter is not this one's")
                        .contains("spector_gateway_connections_refused_total 0.0");
            }
        }
    }

    /**
     * An IPv6 client is counted by its /64: the gateway listening on {@code ::1}, connections from
     * {@code ::1} are held by {@code ::/64}, so another address of that /64 ({@code ::8000:0:0:2}, its 65th bit set) is seen
     * holding them, and one past the limit is closed. Keyed by whole addresses, that one would
     * hold none, and a client could open the limit again from each of its 2^64 addresses.
     */
    @Test
    void anIpv6Client_isCountedByItsSlash64() throws Exception {
        InetAddress v6loopback = InetAddress.getByAddress(new byte[] {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
        try (Cell cell = Cell.builder()
                .owners(1)
                .set("spector.server.host", "::1")
                .set("spector.server.max-connections-per-address", Integer.toString(PER_ADDRESS))
                .start()) {
            List<RawClient> held = new ArrayList<>();
            try {
                for (int i = 0; i < PER_ADDRESS; i++) {
                    RawClient c = new RawClient(v6loopback, cell.gateway.port());
                    held.add(c);
                    assertThat(c.send(health()).read().status()).isEqualTo(200);
                }
                assertThat(cell.gateway.addressLimit().held("0:0:0:0:8000:0:0:2"))
                        .as("another address of ::1's /64 holds what ::1 opened")
                        .isEqualTo(PER_ADDRESS);
                try (RawClient past = new RawClient(v6loopback, cell.gateway.port())) {
                    past.send(health());
                    assertThat(past.closedByServer())
                            .as("one past the limit from the /64")
                            .isTrue();
                }
            } finally {
                closeAll(held);
            }
            await("the /64 is forgotten once its connections closed")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> cell.gateway.addressLimit().addresses() == 0);
        }
    }

    /** The two listeners count together: a TLS connection and a plain one from one address are two. */
    @Test
    void thePlainAndTheTlsListener_countTogether(@TempDir Path dir) throws Exception {
        TestPki ca = TestPki.authority("per-address");
        SSLContext trusting = TestPki.clientTrusting(ca);
        try (Cell cell = Cell.builder()
                        .owners(1)
                        .set("spector.server.max-connections-per-address", "2")
                        .tls(ca, dir)
                        .start();
                RawClient plain = new RawClient(cell.gateway.port());
                SSLSocket tls = TlsWire.handshake(cell.tlsPort(), trusting)) {
            assertThat(plain.send(health()).read().status()).isEqualTo(200);
            tls.getOutputStream().write(health().getBytes(StandardCharsets.ISO_8859_1));
            tls.getOutputStream().flush();
            assertThat(new String(tls.getInputStream().readNBytes(12), StandardCharsets.ISO_8859_1))
                    .as("the TLS connection is served")
                    .isEqualTo("HTTP/1.1 200");
            assertThat(cell.gateway.addressLimit().held(LOOPBACK)).isEqualTo(2);
            for (int port : new int[] {cell.tlsPort(), cell.gateway.port()}) {
                try (Socket past = TlsWire.connect(port)) {
                    assertThat(past.getInputStream().read())
                            .as("a third connection, on port %d, is closed as accepted", port)
                            .isEqualTo(-1);
                }
            }
        }
    }

    @Test
    void aTrustedProxy_isNotCounted() throws Exception {
        try (Cell cell = Cell.builder()
                .owners(1)
                .set("spector.server.max-connections-per-address", "1")
                .set("spector.server.trusted-proxies", LOOPBACK)
                .start()) {
            List<RawClient> open = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    RawClient c = new RawClient(cell.gateway.port());
                    open.add(c);
                    assertThat(c.send(health()).read().status())
                            .as("connection %d from a trusted proxy, past a limit of 1", i + 1)
                            .isEqualTo(200);
                }
                assertThat(cell.gateway.addressLimit().addresses()).isZero();
            } finally {
                closeAll(open);
            }
        }
    }

    /**
     * A worker's uplinks count against the limit only until their handshake is accepted: the two
     * links of a worker on this address fit the limit of 2 as they dial, and once connected they
     * leave the two places to HTTP clients of the address, a third of which is refused. Keyed by
     * /64, a fleet of workers in one subnet would otherwise share one HTTP client's limit (found by
     * a review).
     */
    @Test
    void aWorkersAcceptedUplinks_leaveTheAddressesPlaces() throws Exception {
        String token = "address-worker-token-0123456789";
        try (Cell cell = Cell.builder()
                        .owners(1)
                        .set("spector.server.max-connections-per-address", "2")
                        .set("spector.uplink.tokens", "aw=" + TokenHashes.sha256Hex(token))
                        .start();
                WorkerDaemon worker = WorkerDaemon.builder(
                                URI.create("ws://127.0.0.1:" + cell.gateway.port() + "/uplink"),
                                "aw",
                                token,
                                Map.of("own", URI.create("http://127.0.0.1:9")))
                        .uplinks(2)
                        .start()) {
            await("two links")
                    .atMost(Duration.ofSeconds(15))
                    .until(() -> cell.gateway.workerDirectory().links("aw").size() == 2);
            assertThat(cell.gateway.addressLimit().held(LOOPBACK))
                    .as("the accepted links hold no place")
                    .isZero();
            List<RawClient> held = new ArrayList<>();
            try {
                for (int i = 0; i < 2; i++) {
                    RawClient c = new RawClient(cell.gateway.port());
                    held.add(c);
                    assertThat(c.send(health()).read().status()).isEqualTo(200);
                }
                try (RawClient past = new RawClient(cell.gateway.port())) {
                    past.send(health());
                    assertThat(past.closedByServer()).as("a third HTTP client").isTrue();
                }
            } finally {
                closeAll(held);
            }
            assertThat(cell.gateway.workerDirectory().links("aw"))
                    .as("the links stay")
                    .hasSize(2);
            assertThat(worker.activeRelays()).isZero();
        }
    }

    private static void closeAll(List<RawClient> clients) throws IOException {
        for (RawClient c : clients) {
            c.close();
        }
    }
}
