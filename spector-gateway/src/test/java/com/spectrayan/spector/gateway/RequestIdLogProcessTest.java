package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The request id an exchange's client gets is in what the operator reads about that exchange
 * (issue 14: "in every log line and problem body about that exchange"), checked on a gateway in a
 * JVM of its own, its output read as an operator reads it: the access log on standard output (the
 * gateway process's default) and its log lines.
 */
final class RequestIdLogProcessTest {
    private static GatewayProcess start(Path dir, Map<String, String> extra) throws java.io.IOException {
        Map<String, String> settings = new java.util.HashMap<>(Map.of(
                "spector.cell.role", "gateway",
                "spector.cell.ring-members", "owner-0=http://127.0.0.1:9",
                "spector.server.host", "127.0.0.1",
                "spector.routing.redis.enabled", "false",
                "spector.security.jwt.hmac-secret", Cell.SECRET));
        settings.putAll(extra);
        return GatewayProcess.startReplicas(1, settings, dir).get(0);
    }

    /** Waits for {@code n} lines naming {@code id} and returns every line that does. */
    private static List<String> linesAbout(GatewayProcess g, String id, int n) {
        Waits.until(
                n + " lines about " + id,
                Duration.ofSeconds(15),
                () -> g.output().stream().filter(l -> l.contains(id)).count() >= n);
        return g.output().stream().filter(l -> l.contains(id)).toList();
    }

    /**
     * An uplink handshake is an exchange too: a refused one's id is in its refusal, its access
     * line and the WARN line about it; an accepted one's in its {@code 101}, the INFO line about
     * the link and, when the link ends, its access line.
     */
    @Test
    void uplinkHandshakes_refusedAndAccepted_eachOneIdInTheAnswerAndTheLines(@TempDir Path dir) throws Exception {
        String token = "worker-token-0123456789";
        GatewayProcess g = start(
                dir,
                Map.of(
                        "spector.uplink.tokens",
                        "w1=" + com.spectrayan.spector.uplink.transport.TokenHashes.sha256Hex(token)));
        try (g) {
            String handshake = """
                    GET /uplink HTTP/1.1\r
                    Host: x\r
                    Upgrade: websocket\r
                    Connection: Upgrade\r
                    Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
                    Sec-WebSocket-Version: 13\r
                    Sec-WebSocket-Protocol: spector-uplink.v1\r
                    X-Spector-Worker: w1\r
                    Authorization: Bearer \
                    """;
            String refusedId;
            try (RawClient c = new RawClient(g.port)) {
                RawClient.Response r = c.send(handshake + "nope\r\n\r\n").read();
                assertThat(r.status()).isEqualTo(401);
                refusedId = r.header("X-Request-Id");
                assertThat(r.text()).contains("\"requestId\":\"" + refusedId + "\"");
            }
            assertThat(linesAbout(g, refusedId, 2))
                    .anySatisfy(l -> assertThat(l).startsWith("{\"time\":").contains("\"status\":401"))
                    .anySatisfy(l -> assertThat(l).contains("WARN", "uplink refused: bad token for worker w1"));

            String acceptedId;
            try (java.net.Socket s = new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), g.port)) {
                s.setSoTimeout(RawClient.TIMEOUT_MS);
                s.getOutputStream().write((handshake + token + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                String head = AccessLogTest.readHead(s.getInputStream());
                assertThat(head).startsWith("HTTP/1.1 101 ");
                acceptedId = AccessLogTest.requestId(head);
                assertThat(linesAbout(g, acceptedId, 1))
                        .anySatisfy(l -> assertThat(l).contains("INFO", "worker w1 connected uplink slot 0"));
            }
            assertThat(linesAbout(g, acceptedId, 2))
                    .anySatisfy(l ->
                            assertThat(l).startsWith("{\"time\":").contains("\"status\":101", "\"upstream\":\"w1\""));
        }
    }

    /**
     * RFC 9110 section 15.5.9: a head that never arrives is answered 408; its id is in the answer,
     * in the access log's line and in the INFO line that says why.
     */
    @Test
    void aTimedOutHead_isOneIdInTheAnswerTheAccessLineAndTheLogLine(@TempDir Path dir) throws Exception {
        GatewayProcess g = start(dir, Map.of("spector.server.header-timeout", "1s"));
        try (g) {
            String id;
            try (RawClient c = new RawClient(g.port)) {
                RawClient.Response r = c.send("GET /api/v1/namespaces/a/x HTTP/1.1\r\nHost: x\r\n")
                        .read();
                assertThat(r.status()).isEqualTo(408);
                id = r.header("X-Request-Id");
                assertThat(id).matches("[0-9a-f]{32}");
            }
            List<String> about = linesAbout(g, id, 2);
            assertThat(about)
                    .anySatisfy(l -> assertThat(l).startsWith("{\"time\":").contains("\"status\":408"))
                    .anySatisfy(l -> assertThat(l).contains("INFO", "sent no whole request head", "408"));
        }
    }
}
