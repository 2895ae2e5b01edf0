package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Client-connection limits (concurrent connections, idle keep-alive connections) and CORS at the
 * edge, on a real gateway with small limits.
 */
final class ConnectionsAndCorsTest {
    private static final int MAX_CONNECTIONS = 2;
    private static final Duration IDLE = Duration.ofMillis(300);
    private static final String ORIGIN = "https://app.example";
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .set("spector.server.max-connections", Integer.toString(MAX_CONNECTIONS))
                .set("spector.server.idle-timeout", IDLE.toMillis() + "ms")
                .set("spector.cors.allowed-origins", ORIGIN)
                .set("spector.server.trusted-proxies", "127.0.0.1")
                .start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static String health() {
        return "GET /actuator/health/liveness HTTP/1.1\r\nHost: x\r\n\r\n";
    }

    @Test
    void connections_atTheLimit_areServed_andOnePast_isClosed() throws Exception {
        await("connections of earlier tests are no longer counted")
                .atMost(Duration.ofSeconds(5))
                .until(() -> cell.gateway.clientConnections() == 0);
        try (RawClient first = new RawClient(cell.gateway.port());
                RawClient second = new RawClient(cell.gateway.port())) {
            // Each in an exchange (an event stream open), so neither is one an idle-connection
            // eviction may take (ConnectionLimitTest), and the one past the limit is refused.
            String busy = Cell.eventStreamRequest();
            assertThat(first.send(busy).read200HeadOnly()).isEqualTo(200);
            assertThat(second.send(busy).read200HeadOnly())
                    .as("connection %d of %d", MAX_CONNECTIONS, MAX_CONNECTIONS)
                    .isEqualTo(200);
            try (RawClient third = new RawClient(cell.gateway.port())) {
                third.send(health());
                assertThat(third.closedByServer())
                        .as("connection %d is one past spector.server.max-connections", MAX_CONNECTIONS + 1)
                        .isTrue();
            }
        }
    }

    @Test
    void idleKeepAliveConnection_isClosedAfterTheIdleTimeout() throws Exception {
        long start = System.nanoTime();
        try (RawClient c = new RawClient(cell.gateway.port())) {
            assertThat(c.send(health()).read().status()).isEqualTo(200);
            assertThat(c.closedByServer())
                    .as("the idle connection is closed by the gateway")
                    .isTrue();
        }
        long tookMs = (System.nanoTime() - start) / 1_000_000;
        assertThat(tookMs)
                .as("closed after %d ms (idle timeout %d ms)", tookMs, IDLE.toMillis())
                .isBetween(IDLE.toMillis(), 5_000L);
        await("the gateway forgot the closed connection")
                .atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> {
                    try (RawClient again = new RawClient(cell.gateway.port())) {
                        assertThat(again.send(health()).read().status()).isEqualTo(200);
                    }
                });
    }

    @Test
    void corsPreflight_fromAnAllowedOrigin_isAnsweredAtTheEdgeWithoutAToken() throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send(
                            "OPTIONS /api/v1/namespaces/orders/echo HTTP/1.1\r\nHost: x\r\nOrigin: " + ORIGIN
                                    + "\r\nAccess-Control-Request-Method: POST\r\n"
                                    + "Access-Control-Request-Headers: Authorization, Idempotency-Key\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(204);
            assertThat(r.header("Access-Control-Allow-Origin")).isEqualTo(ORIGIN);
            assertThat(r.header("Access-Control-Allow-Methods")).contains("POST");
            assertThat(r.header("Vary")).contains("Origin");
        }
        assertThat(cell.owners.get(0).requests())
                .as("a preflight never reaches an owner")
                .isEmpty();
    }

    @Test
    void corsPreflight_fromAnotherOrigin_isRefused() throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            String evil = "https://evil.example";
            RawClient.Response r = c.send("OPTIONS /api/v1/namespaces/orders/echo HTTP/1.1\r\nHost: x\r\nOrigin: "
                            + evil + "\r\nAccess-Control-Request-Method: POST\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(403);
            assertThat(r.header("Access-Control-Allow-Origin")).isEmpty();
        }
    }

    @Test
    void forwardedFor_fromATrustedProxy_isAppendedTo() throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /api/v1/namespaces/trusted/echo HTTP/1.1\r\nHost: x\r\n"
                            + "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nAuthorization: Bearer "
                            + Cell.token(Cell.TENANT) + "\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(200);
        }
        var seen = cell.owners.get(0).requests().stream()
                .filter(q -> "trusted".equals(q.namespace()))
                .findFirst()
                .orElseThrow();
        assertThat(seen.header("X-Forwarded-For"))
                .as("a trusted proxy's chain is kept and appended to")
                .isEqualTo("6.6.6.6, 127.0.0.1");
        assertThat(seen.header("X-Forwarded-Proto")).isEqualTo("https");
    }

    /**
     * RFC 9110 §5.3: field lines of one name are one list. A trusted proxy that adds its own
     * {@code X-Forwarded-For} line behind the client's (HAProxy's {@code option forwardfor} does)
     * keeps both, in order, and the gateway appends the proxy's address. Regression (a review):
     * only the first line was kept, so the owner read the client's forged address followed by the
     * proxy's, and the address the proxy saw was lost.
     */
    @Test
    void forwardedFor_onTwoLinesFromATrustedProxy_keepsBothInOrder() throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /api/v1/namespaces/twolines/echo HTTP/1.1\r\nHost: x\r\n"
                            + "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 203.0.113.7\r\nAuthorization: Bearer "
                            + Cell.token(Cell.TENANT) + "\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(200);
        }
        var seen = cell.owners.get(0).requests().stream()
                .filter(q -> "twolines".equals(q.namespace()))
                .findFirst()
                .orElseThrow();
        assertThat(seen.headers().entrySet().stream()
                        .filter(e -> e.getKey().equalsIgnoreCase("X-Forwarded-For"))
                        .flatMap(e -> e.getValue().stream())
                        .toList())
                .as("one line, every address in order, the proxy's last")
                .containsExactly("6.6.6.6, 203.0.113.7, 127.0.0.1");
    }

    @Test
    void forwardedResponse_toAnAllowedOrigin_carriesTheCorsHeaders() throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /api/v1/namespaces/orders/echo HTTP/1.1\r\nHost: x\r\nOrigin: " + ORIGIN
                            + "\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.header("Access-Control-Allow-Origin")).isEqualTo(ORIGIN);
        }
    }
}
