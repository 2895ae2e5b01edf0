package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.gateway.WireClient.Framing;
import com.spectrayan.spector.gateway.WireClient.Response;
import java.util.List;
import java.util.Map;
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
                : r.path().endsWith("/expose")
                        ? MockOwner.response(
                                200, "OK", "ok", "Content-Type: text/plain", "Access-Control-Expose-Headers: ETag")
                        : r.path().endsWith("/own-cors")
                                ? MockOwner.response(
                                        200,
                                        "OK",
                                        "ok",
                                        "Content-Type: text/plain",
                                        "Access-Control-Allow-Origin: " + ORIGIN,
                                        "Access-Control-Expose-Headers: ETag")
                                : MockOwner.response(
                                        404, "Not Found", "no such mock path", "Content-Type: text/plain"));
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

    /**
     * A page's script reads a response header only when it is safelisted or listed in {@code
     * Access-Control-Expose-Headers} (Fetch standard, CORS protocol). The edge lists the request id
     * and the retry and replay headers on every answer to an allowed origin: the owner's, and the
     * gateway's own problem (a 401), which a page most needs the request id of. Found with headless
     * Chromium: {@code response.headers.get('x-request-id')} was null for a page on an allowed
     * origin. A request from another origin gets no list.
     */
    @Test
    void shouldLetAPageOfAnAllowedOriginReadTheRequestId() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo";
        String expected = "X-Request-Id, Retry-After, Idempotent-Replayed, X-Spector-Node";
        try (WireClient c = client()) {
            Response r = c.send(get(path, "Origin: " + ORIGIN)).read();
            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(lines(r, "Access-Control-Expose-Headers"))
                    .as("one field: %s", r)
                    .containsExactly(expected);
            assertThat(r.header("X-Request-Id")).isNotEmpty();

            Response refused = c.send("GET " + path + " HTTP/1.1\r\nHost: gw\r\nOrigin: " + ORIGIN + "\r\n\r\n")
                    .read();
            assertThat(refused.status()).as("no token: %s", refused).isEqualTo(401);
            assertThat(refused.header("Access-Control-Expose-Headers")).isEqualTo(expected);
            assertThat(refused.json().path("requestId").asText())
                    .as("the id the page can now read is the problem's")
                    .isEqualTo(refused.header("X-Request-Id"));

            Response other = c.send(get(path, "Origin: https://other.example")).read();
            assertThat(other.status()).isEqualTo(200);
            assertThat(other.header("Access-Control-Expose-Headers"))
                    .as("%s", other)
                    .isNull();
        }
    }

    /**
     * An owner's own {@code Access-Control-Expose-Headers} keeps its names and gains the edge's,
     * in one field, as {@code Vary} does; an owner that answers CORS itself (its own {@code
     * Access-Control-Allow-Origin}) keeps its whole answer.
     */
    @Test
    void shouldMergeTheEdgesExposedHeadersWithTheOwners_unlessTheOwnerAnsweredCors() {
        String ns = cell.namespaceOwnedBy("mock-0");
        try (WireClient c = client()) {
            Response merged = c.send(get("/api/v1/namespaces/" + ns + "/expose", "Origin: " + ORIGIN))
                    .read();
            assertThat(lines(merged, "Access-Control-Expose-Headers"))
                    .as("%s", merged)
                    .containsExactly("ETag, X-Request-Id, Retry-After, Idempotent-Replayed, X-Spector-Node");

            Response own = c.send(get("/api/v1/namespaces/" + ns + "/own-cors", "Origin: " + ORIGIN))
                    .read();
            assertThat(lines(own, "Access-Control-Expose-Headers"))
                    .as("%s", own)
                    .containsExactly("ETag");
            assertThat(lines(own, "Access-Control-Allow-Origin")).containsExactly(ORIGIN);
        }
    }

    /** The response's field lines named {@code name}, each as it came. */
    private static List<String> lines(Response r, String name) {
        return r.fields().stream()
                .filter(f -> f.getKey().equalsIgnoreCase(name))
                .map(Map.Entry::getValue)
                .toList();
    }

    private static WireClient client() {
        return new WireClient(cell.gateway.port());
    }

    private static String get(String target, String... fields) {
        return WireClient.head("GET", target, token, fields);
    }
}
