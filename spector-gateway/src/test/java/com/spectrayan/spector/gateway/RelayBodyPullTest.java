package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.gateway.WireClient.Response;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A relay's request body is pulled by the worker one read at a time; a socket read that brings no
 * body byte must not lose the pull. Over the TLS listener (the same pipeline as the plain port,
 * issue 11, "TLS"; the provider is the default, {@code auto}) to a worker whose uplink came in on
 * the plain port, and on the plain port with chunk lines split across reads.
 */
final class RelayBodyPullTest {
    private static final String WORKER = "tw";
    private static final Duration WITHIN = Duration.ofSeconds(10);
    private static final RecordingTarget target = new RecordingTarget();

    @TempDir
    static Path dir;

    private static RelayCell relayCell;
    private static SSLContext trusting;

    @BeforeAll
    static void start() throws Exception {
        TestPki ca = TestPki.authority("relay");
        trusting = TestPki.clientTrusting(ca);
        relayCell = RelayCell.start(
                Cell.builder().owners(1).tls(ca, dir), WORKER, (c, httpForward) -> Map.of("record", target));
    }

    @AfterAll
    static void stop() {
        relayCell.close();
    }

    /**
     * Regression: a chunked body trickled a byte at a time on the plain port. Most reads end inside
     * a chunk-size line, so the decoder has nothing to give the pull; the batch's end answered the
     * {@code FlowControlHandler}'s read, the pull was lost and the relay waited for a body part that
     * sat, decoded, in the handler's queue.
     */
    @Test
    void shouldRelayAChunkedBodyWhoseChunkLinesArriveAByteAtATime() throws Exception {
        Cell cell = relayCell.cell;
        String chunked = "5\r\nhello\r\n7\r\n, relay\r\n0\r\n\r\n";

        try (WireClient plain = new WireClient(cell.gateway.port())) {
            plain.send(WireClient.head(
                    "PUT",
                    "/relay/" + WORKER + "/record/trickled",
                    Cell.token(Cell.TENANT),
                    "Transfer-Encoding: chunked"));
            plain.trickle(chunked.getBytes(StandardCharsets.US_ASCII), chunked.length(), Duration.ofMillis(20))
                    .get(WITHIN.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            Response r = plain.read();

            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.json().get("bytes").asLong()).isEqualTo("hello, relay".length());
        }
        assertThat(target.awaitCall("/trickled", WITHIN).outcome(WITHIN)).isEqualTo(RecordingTarget.Outcome.COMPLETED);
    }

    /**
     * A body over TLS: a record (16 KiB) is often split across socket reads, and a read that ends
     * inside one gives the HTTP decoder nothing, which lost the pull the same way (issue 11).
     */
    @Test
    void shouldRelayARequestBodyToTheWorkerOverTls() throws Exception {
        Cell cell = relayCell.cell;
        byte[] body = "0123456789".repeat(10_000).getBytes(StandardCharsets.US_ASCII);

        try (SSLSocket socket = TlsWire.handshake(cell.tlsPort(), trusting);
                WireClient https = new WireClient(socket)) {
            https.send(WireClient.head(
                            "PUT",
                            "/relay/" + WORKER + "/record/upload",
                            Cell.token(Cell.TENANT),
                            "Content-Length: " + body.length))
                    .send(body);
            Response r = https.read();

            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.json().get("bytes").asLong()).isEqualTo(body.length);
            assertThat(r.json().get("sha256").asText())
                    .isEqualTo(HexFormat.of()
                            .formatHex(MessageDigest.getInstance("SHA-256").digest(body)));
        }
        assertThat(target.awaitCall("/upload", WITHIN).outcome(WITHIN)).isEqualTo(RecordingTarget.Outcome.COMPLETED);
    }
}
