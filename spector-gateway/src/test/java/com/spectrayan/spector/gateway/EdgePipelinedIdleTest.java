package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * RFC 9112 §9.3 and §9.8: after two pipelined requests, a forwarded POST with a body and then one
 * the edge refuses (401), the connection is idle and closes at the idle timeout (EdgeFuzzTest's
 * slow property found it left open).
 */
final class EdgePipelinedIdleTest {
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder().owners(1).set("spector.server.idle-timeout", "1s").start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    @Test
    void shouldCloseAtTheIdleTimeout_afterAForwardedPostAndAPipelined401() {
        String ns = cell.namespaceOwnedBy("owner-0");
        String body = "x".repeat(155);
        String bytes = "POST /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "
                + Cell.token(Cell.TENANT) + "\r\nContent-Length: 155\r\n\r\n" + body
                + "POST /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n"
                + "Authorization: Bearer not.a-jwt\r\n\r\n";
        try (WireClient c = new WireClient(cell.gateway.port())) {
            c.send(bytes.getBytes(StandardCharsets.ISO_8859_1));
            assertThat(c.read().status()).isEqualTo(200);
            assertThat(c.read().status()).isEqualTo(401);
            assertThat(c.closedByServer())
                    .as("closed within the read bound (10 s) after a 1 s idle timeout")
                    .isTrue();
        }
    }
}
