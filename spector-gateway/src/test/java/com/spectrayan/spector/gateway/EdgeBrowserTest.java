package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What a browser page needs from the edge, over raw sockets (issue 9 section 5): the bearer token
 * from a cookie or {@code access_token} (RFC 6750 §2.3), and CORS with credentials so that an
 * {@code EventSource} opens cross-origin. Regression: browsers could not authenticate an
 * EventSource (it cannot send Authorization).
 */
final class EdgeBrowserTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ORIGIN = "https://app.example";
    private static final String COOKIE = "spector_token";
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .set("spector.security.jwt.cookie-name", COOKIE)
                .set("spector.security.jwt.allow-query-token", "true")
                .set("spector.cors.allowed-origins", ORIGIN)
                .set("spector.cors.allow-credentials", "true")
                .start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    /** A token in the configured cookie authenticates, among other cookies. */
    @Test
    void shouldTakeTheTokenFromTheConfiguredCookie() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n"
                            + "Cookie: theme=dark; " + COOKIE + "=" + Cell.token(Cell.TENANT) + "; lang=en\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(200);
        }
        assertThat(cell.recorded(ns)).hasSize(1);
    }

    /**
     * Cross-site request forgery: a browser sends the cookie with a form post or a WebSocket from
     * any page. From another origin (not the gateway's own, not one allowed credentials) the
     * cookie is refused, 403 {@code cookie-cross-origin}, and nothing reaches an owner; from the
     * allowed origin and from the gateway's own it is taken. Regression (a review): any origin's
     * page could act as the signed-in user.
     */
    @Test
    void shouldRefuseTheCookieFromAPageOfAnotherOrigin() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        String cookie = "Cookie: " + COOKIE + "=" + Cell.token(Cell.TENANT) + "\r\n";
        String post = "POST /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw.example\r\n"
                + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\n" + cookie;
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r =
                    c.send(post + "Origin: https://evil.example\r\n\r\na=1").read();
            assertThat(r.status()).isEqualTo(403);
            assertThat(JSON.readTree(r.body()).at("/details/reason").asText()).isEqualTo("cookie-cross-origin");
        }
        assertThat(cell.recorded(ns)).as("nothing reached the owner").isEmpty();
        for (String origin : new String[] {ORIGIN, "https://gw.example"}) {
            try (RawClient c = new RawClient(cell.gateway.port())) {
                assertThat(c.send(post + "Origin: " + origin + "\r\n\r\na=1")
                                .read()
                                .status())
                        .as(origin)
                        .isEqualTo(200);
            }
        }
        assertThat(cell.recorded(ns)).hasSize(2);
    }

    /** Cookie tossing: the token cookie twice is 400, whichever of the two is the user's. */
    @Test
    void shouldRefuseTheTokenCookieTwice() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        String token = Cell.token(Cell.TENANT);
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n" + "Cookie: "
                            + COOKIE + "=" + token + "; " + COOKIE + "=" + token + "\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(400);
            assertThat(r.text()).doesNotContain(token);
        }
        assertThat(cell.recorded(ns)).isEmpty();
    }

    /** RFC 6750 §2.3: {@code access_token} authenticates, and it never travels on. */
    @Test
    void shouldTakeTheTokenFromAccessTokenAndNeverForwardIt() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /api/v1/namespaces/" + ns + "/echo?a=1&access_token="
                            + Cell.token(Cell.TENANT) + "&b=%20 HTTP/1.1\r\nHost: gw\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(JSON.readTree(r.body()).get("query").asText())
                    .as("the owner saw the query without the token, the rest byte for byte")
                    .isEqualTo("a=1&b=%20");
        }
        assertThat(cell.recorded(ns)).hasSize(1);
    }

    /** RFC 6750 §2: a client MUST NOT use more than one method; two are a 400. */
    @Test
    void shouldRefuseAHeaderAndAQueryTokenTogether() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        String token = Cell.token(Cell.TENANT);
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /api/v1/namespaces/" + ns + "/echo?access_token=" + token
                            + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + token + "\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(400);
            assertThat(r.text()).contains("access_token").doesNotContain(token);
        }
        assertThat(cell.recorded(ns)).isEmpty();
    }

    /**
     * Fetch standard (CORS protocol, credentials): an EventSource with {@code withCredentials}
     * from a listed origin gets its stream head at once, with the origin echoed, credentials
     * allowed, {@code Vary: Origin}, and the owner's own headers kept.
     */
    @Test
    void shouldOpenACrossOriginEventStreamWithACookie() throws Exception {
        try (Socket s = new Socket()) {
            s.connect(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), cell.gateway.port()), RawClient.TIMEOUT_MS);
            s.setSoTimeout(RawClient.TIMEOUT_MS);
            s.getOutputStream()
                    .write(("GET /api/v1/events HTTP/1.1\r\nHost: gw\r\nAccept: text/event-stream\r\n"
                                    + "Origin: " + ORIGIN + "\r\n"
                                    + "Cookie: " + COOKIE + "=" + Cell.token(Cell.TENANT) + "\r\n\r\n")
                            .getBytes(StandardCharsets.ISO_8859_1));
            InputStream in = s.getInputStream();
            String status = RawClient.line(in);
            Map<String, String> headers = new LinkedHashMap<>();
            for (String h = RawClient.line(in); !h.isEmpty(); h = RawClient.line(in)) {
                int c = h.indexOf(':');
                headers.merge(
                        h.substring(0, c).strip().toLowerCase(Locale.ROOT),
                        h.substring(c + 1).strip(),
                        (a, b) -> a + ", " + b);
            }
            assertThat(status).startsWith("HTTP/1.1 200");
            assertThat(headers.get("content-type")).startsWith("text/event-stream");
            assertThat(headers.get("access-control-allow-origin")).isEqualTo(ORIGIN);
            assertThat(headers.get("access-control-allow-credentials")).isEqualTo("true");
            assertThat(headers.get("vary")).containsIgnoringCase("origin");
            assertThat(headers.get("transfer-encoding")).isEqualTo("chunked");
        }
    }
}
