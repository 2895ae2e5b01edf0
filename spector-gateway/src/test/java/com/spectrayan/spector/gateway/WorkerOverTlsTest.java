package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real worker daemon dials the real gateway's TLS listener ({@code wss://}, a test CA given as
 * its CA file) with two links, and relays cross them; a worker that trusts another CA never gets a
 * link, and a worker that dials the TLS port in clear text never does either.
 */
final class WorkerOverTlsTest {
    private static final String TOKEN = "tls-worker-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(20);

    @TempDir
    static Path dir;

    private static Cell cell;
    private static Path caFile;
    private static Path otherCaFile;

    @BeforeAll
    static void start() throws Exception {
        TestPki ca = TestPki.authority("worker-tls");
        caFile = Files.writeString(dir.resolve("ca.pem"), ca.rootPem(), StandardCharsets.US_ASCII);
        otherCaFile = Files.writeString(
                dir.resolve("other-ca.pem"), TestPki.authority("other").rootPem(), StandardCharsets.US_ASCII);
        cell = Cell.builder()
                .owners(1)
                .tls(ca, dir)
                .set(
                        "spector.uplink.tokens",
                        "wt=" + TokenHashes.sha256Hex(TOKEN) + ",wx=" + TokenHashes.sha256Hex(TOKEN) + ",wc="
                                + TokenHashes.sha256Hex(TOKEN))
                .start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static WorkerDaemon worker(String id, String uri, Path ca) {
        return WorkerDaemon.builder(
                        URI.create(uri),
                        id,
                        TOKEN,
                        Map.of("owner", cell.owner("owner-0").baseUri()))
                .uplinks(2)
                .caFile(ca)
                .start();
    }

    @Test
    void workerOverWss_twoLinks_relaysReachTheOwnerThroughThem() throws Exception {
        try (WorkerDaemon w = worker("wt", "wss://localhost:" + cell.tlsPort() + "/uplink", caFile)) {
            await("both links over TLS")
                    .atMost(WAIT)
                    .until(() -> w.connectedUplinks() == 2
                            && cell.gateway.workerDirectory().links("wt").size() == 2);
            assertThat(cell.gateway.workerDirectory().links("wt"))
                    .extracting(WorkerLink::slot)
                    .containsExactly(0, 1);
            for (int i = 0; i < 4; i++) {
                HttpResponse<String> r = cell.get("/relay/wt/owner/api/v1/namespaces/tls/echo?i=" + i);
                assertThat(r.statusCode()).as("relay %d: %s", i, r.body()).isEqualTo(200);
                assertThat(r.body()).contains("\"query\":\"i=" + i + "\"");
            }
        }
    }

    @Test
    void workerTrustingAnotherCa_orDiallingTheTlsPortInClearText_neverGetsALink() {
        try (WorkerDaemon wrongCa = worker("wx", "wss://localhost:" + cell.tlsPort() + "/uplink", otherCaFile);
                WorkerDaemon clear = worker("wc", "ws://127.0.0.1:" + cell.tlsPort() + "/uplink", caFile)) {
            await("both workers tried and failed at least twice")
                    .atMost(WAIT)
                    .until(() -> wrongCa.attempts() >= 4 && clear.attempts() >= 4);
            assertThat(wrongCa.connectedUplinks()).isZero();
            assertThat(clear.connectedUplinks()).isZero();
            assertThat(cell.gateway.workerDirectory().links("wx")).isEmpty();
            assertThat(cell.gateway.workerDirectory().links("wc")).isEmpty();
        }
    }
}
