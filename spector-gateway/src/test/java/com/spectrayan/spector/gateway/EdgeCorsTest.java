package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.gateway.WireClient.Framing;
import com.spectrayan.spector.gateway.WireClient.Response;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The headers the edge adds (issue 9, section 1): with CORS on, they are added to the owner's,
 * never replacing them, and the connection's framing and keep-alive are untouched. Raw sockets
 * only; the cell has a reference owner and a {@link MockOwner} ring member that sends its own
 * {@code Vary}.
 */
final class EdgeCorsTest {
    private static final String ORIGIN = "https://app.example";
    private static MockOwner mock;
    private static Cell cell;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        mock = MockOwner.start(r -> r.path().endsWith("/vary")
                ? MockOwner.response(200, "OK", "ok", "Content-Type: text/plain", "Vary: Accept-Encoding")
                : MockOwner.response(404, "Not Found", "no such mock path", "Content-Type: text/plain"));
        cell = Cell.builder()
                .owners(1)
                .member("mock-0", mock.baseUri())
                .set("spector.cors.allowed-origins", ORIGIN)
                .start();
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        cell.close();
        mock.close();
    }

    /**
     * With CORS on, a forwarded response keeps the owner's {@code Content-Type} and {@code
     * Content-Length}, gains {@code Access-Control-Allow-Origin}, and the connection is reused
     * (RFC 9110 §6.4.1, §8.3, §8.6; the edge adds fields, it never replaces the upstream's).
     * Regression: turning CORS on replaced all of the owner's headers, so keep-alive clients hung.
     */
    @Test
    void shouldKeepTheOwnersContentTypeAndLengthAndTheConnectionWhenCorsDecoratesAResponse() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo";
        try (WireClient c = client()) {
            for (int i = 1; i <= 2; i++) {
                Response r = c.send(get(path + "?n=" + i, "Origin: " + ORIGIN)).read();
                assertThat(r.status()).as("request %d: %s", i, r).isEqualTo(200);
                assertThat(r.framing())
                        .as("request %d keeps the owner's Content-Length: %s", i, r)
                        .isEqualTo(Framing.LENGTH);
                assertThat(r.header("Content-Type"))
                        .as("request %d keeps the owner's Content-Type: %s", i, r)
                        .startsWith("application/json");
                assertThat(r.header("Access-Control-Allow-Origin")).isEqualTo(ORIGIN);
                assertThat(r.json().path("query").asText()).isEqualTo("n=" + i);
                assertThat(r.closed()).isFalse();
            }
        }
        assertThat(cell.served("owner-0", "GET", path)).hasSize(2);
    }

    /**
     * DESIGN section 10: the relay's exchanges get the edge's CORS as the forwarded ones do: a
     * preflight of {@code /relay/...} is answered at the edge, and a relayed answer (here the 503
     * of a worker with no link) carries {@code Access-Control-Allow-Origin} and {@code Vary:
     * Origin}. Regression (the fourth review): a preflight was 401 and relayed answers had no CORS
     * header, so a page on an allowed origin could not use the relay.
     */
    @Test
    void shouldGiveRelayedExchangesTheEdgesCors() {
        try (WireClient c = client()) {
            Response preflight = c.send("OPTIONS /relay/w1/app/x HTTP/1.1\r\nHost: gw\r\nOrigin: " + ORIGIN
                            + "\r\nAccess-Control-Request-Method: GET\r\n\r\n")
                    .read();
            assertThat(preflight.status()).as("%s", preflight).isIn(200, 204);
            assertThat(preflight.header("Access-Control-Allow-Origin")).isEqualTo(ORIGIN);

            Response relayed =
                    c.send(get("/relay/w1/app/x", "Origin: " + ORIGIN)).read();
            assertThat(relayed.status()).as("%s", relayed).isEqualTo(503);
            assertThat(relayed.header("Access-Control-Allow-Origin")).isEqualTo(ORIGIN);
            assertThat(relayed.header("Vary")).containsIgnoringCase("Origin");
        }
    }

    /**
     * The edge's {@code Vary: Origin} is merged with the owner's own {@code Vary}, never replacing
     * it (RFC 9110 §12.5.5).
     */
    @Test
    void shouldMergeTheEdgesVaryWithTheOwnersVary() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0") + "/vary";
        try (WireClient c = client()) {
            Response r = c.send(get(path, "Origin: " + ORIGIN)).read();
            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.headerValues("Vary"))
                    .as("the owner's Vary and the edge's: %s", r)
                    .anySatisfy(v -> assertThat(v).isEqualToIgnoringCase("Accept-Encoding"))
                    .anySatisfy(v -> assertThat(v).isEqualToIgnoringCase("Origin"));
            assertThat(r.header("Content-Type")).isEqualTo("text/plain");
            assertThat(r.header("Access-Control-Allow-Origin")).isEqualTo(ORIGIN);
            assertThat(r.text()).isEqualTo("ok");
        }
        assertThat(mock.requestsEndingWith(path))
                .singleElement()
                .satisfies(q -> assertThat(q.header("Origin")).isEqualTo(ORIGIN));
    }

    private static WireClient client() {
        return new WireClient(cell.gateway.port());
    }

    private static String get(String target, String... fields) {
        return WireClient.head("GET", target, token, fields);
    }
}
