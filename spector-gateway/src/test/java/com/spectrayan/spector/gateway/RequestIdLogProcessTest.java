package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
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
    /**
     * RFC 9110 section 15.5.9: a head that never arrives is answered 408; its id is in the answer,
     * in the access log's line and in the INFO line that says why.
     */
    @Test
    void aTimedOutHead_isOneIdInTheAnswerTheAccessLineAndTheLogLine(@TempDir Path dir) throws Exception {
        GatewayProcess g = GatewayProcess.startReplicas(
                        1,
                        Map.of(
                                "spector.cell.role", "gateway",
                                "spector.cell.ring-members", "owner-0=http://127.0.0.1:9",
                                "spector.server.host", "127.0.0.1",
                                "spector.routing.redis.enabled", "false",
                                "spector.security.jwt.hmac-secret", Cell.SECRET,
                                "spector.server.header-timeout", "1s"),
                        dir)
                .get(0);
        try (g) {
            String id;
            try (RawClient c = new RawClient(g.port)) {
                RawClient.Response r = c.send("GET /api/v1/namespaces/a/x HTTP/1.1\r\nHost: x\r\n")
                        .read();
                assertThat(r.status()).isEqualTo(408);
                id = r.header("X-Request-Id");
                assertThat(id).matches("[0-9a-f]{32}");
            }
            Waits.until(
                    "the access line and the log line of " + id,
                    Duration.ofSeconds(15),
                    () -> g.output().stream().filter(l -> l.contains(id)).count() >= 2);
            List<String> about = g.output().stream().filter(l -> l.contains(id)).toList();
            assertThat(about)
                    .anySatisfy(l -> assertThat(l).startsWith("{\"time\":").contains("\"status\":408"))
                    .anySatisfy(l -> assertThat(l).contains("INFO", "sent no whole request head", "408"));
        }
    }
}
