package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.owner.RecordedRequest;
import com.spectrayan.spector.owner.ReferenceOwner;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The request target and Host through a running gateway, byte for byte over raw sockets: what the
 * client got, and what the owners received (their request logs). Issue 9 section 2.
 */
final class EdgeTargetTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder().owners(2).start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static String token() {
        return "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n";
    }

    private static int ownerRequests() {
        int n = 0;
        for (ReferenceOwner o : cell.owners) {
            n += o.requests().size();
        }
        return n;
    }

    /** Sends one request and expects an answer from the gateway itself that closes the connection. */
    private static RawClient.Response refusedAndClosed(String request) throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send(request).read();
            assertThat(r.header("Connection")).as("the refusal says close").isEqualToIgnoringCase("close");
            assertThat(c.closedByServer()).as("and the close follows").isTrue();
            return r;
        }
    }

    /** Sends one request on a connection of its own and returns the answer. */
    private static RawClient.Response once(String request) throws Exception {
        return RawClient.exchange(cell.gateway.port(), request);
    }

    /** Sends one request an owner must answer 200 with its echo, and returns the echo. */
    private static JsonNode echoed(String request) throws Exception {
        RawClient.Response r = once(request);
        assertThat(r.status()).as("the echo's status").isEqualTo(200);
        return JSON.readTree(r.body());
    }

    /**
     * Sends one request the gateway must refuse itself: asserts its 400, the close, and that no
     * owner saw a request meanwhile; returns the answer.
     */
    private static RawClient.Response refused400(String request) throws Exception {
        String head = Bytes.escape(request.replace(token(), "")); // the token says nothing
        int before = ownerRequests();
        RawClient.Response r = refusedAndClosed(request);
        assertThat(r.status()).as("%s: the status", head).isEqualTo(400);
        assertThat(ownerRequests()).as("%s: nothing reached an owner", head).isEqualTo(before);
        return r;
    }

    /**
     * RFC 3986 §5.2.4: dot-segments are removed before the auth skip list looks at the path.
     * Regression: {@code /api/v1/auth/../namespaces/x/echo} skipped auth and reached an owner.
     */
    @Test
    void shouldRequireATokenForADotSegmentPathThatStartsInTheAuthPrefix() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        int before = ownerRequests();
        RawClient.Response r = once("GET /api/v1/auth/../namespaces/" + ns + "/echo HTTP/1.1\r\n" + "Host: gw\r\n\r\n");
        assertThat(r.status()).isEqualTo(401);
        assertThat(r.text()).contains("\"code\":\"UNAUTHENTICATED\"");
        assertThat(ownerRequests()).as("nothing reached an owner").isEqualTo(before);
    }

    /** RFC 3986 §2.3, §5.2.4: {@code %2e} is a dot; encoded dot-segments are removed as well. */
    @Test
    void shouldDecodeEncodedDotsBeforeAuthAndRouting() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        int before = ownerRequests();
        RawClient.Response r =
                once("GET /api/v1/auth/%2e%2E/namespaces/" + ns + "/echo HTTP/1.1\r\n" + "Host: gw\r\n\r\n");
        assertThat(r.status()).as("the encoded dots do not skip auth").isEqualTo(401);
        assertThat(ownerRequests()).isEqualTo(before);
        JsonNode echo = echoed(
                "GET /api/v1/auth/%2e%2E/namespaces/" + ns + "/echo HTTP/1.1\r\n" + "Host: gw\r\n" + token() + "\r\n");
        assertThat(echo.get("path").asText()).isEqualTo("/api/v1/namespaces/" + ns + "/echo");
        assertThat(cell.recorded(ns))
                .extracting(RecordedRequest::path)
                .containsExactly("/api/v1/namespaces/" + ns + "/echo");
    }

    /**
     * RFC 3986 §5.2.4: a path that leaves its namespace is routed (and refused) as what it
     * becomes. Regression: {@code /api/v1/namespaces/a/../../../admin/requests} reached owners
     * verbatim, where a framework that normalizes would serve its admin API.
     */
    @Test
    void shouldNeverForwardAPathThatClimbsOutOfTheApi() throws Exception {
        int before = ownerRequests();
        RawClient.Response r = once(
                "GET /api/v1/namespaces/a/../../../admin/requests HTTP/1.1\r\n" + "Host: gw\r\n" + token() + "\r\n");
        assertThat(r.status()).as("/api/admin/requests is no route").isEqualTo(404);
        assertThat(r.text()).contains("\"path\":\"/api/admin/requests\"");
        assertThat(ownerRequests()).isEqualTo(before);
    }

    /** RFC 3986 §5.2.4: climbing above the root is refused, not clamped. */
    @Test
    void shouldRefuseAPathThatClimbsAboveTheRoot() throws Exception {
        RawClient.Response r = refused400("GET /api/v1/../../../../x HTTP/1.1\r\nHost: gw\r\n" + token() + "\r\n");
        assertThat(r.text()).contains("\"code\":\"BAD_REQUEST\"");
    }

    /**
     * RFC 3986 §2.2: an encoded '/' or '\' would mean another path to a server that decodes it.
     * Regression: {@code ..%2f} reached owners verbatim.
     */
    @Test
    void shouldRefuseEncodedSlashesAndBackslashes() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        for (String rest : List.of("/..%2f..%2fadmin", "/%2F", "/..%5c..%5cadmin", "/a\\b", "/%00")) {
            refused400("GET /api/v1/namespaces/" + ns + rest + " HTTP/1.1\r\nHost: gw\r\n" + token() + "\r\n");
        }
    }

    /**
     * RFC 3986 §6.2.2: what the owner receives is the normalized path (unreserved escapes
     * decoded, dot-segments removed, slashes merged); the query travels unchanged.
     */
    @Test
    void shouldForwardTheNormalizedPathAndTheQueryUnchanged() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        JsonNode echo = echoed("GET /api/v1//namespaces/" + ns + "/./x/../ech%6F?q=%2e%2E&y=a/../b HTTP/1.1\r\n"
                + "Host: gw\r\n" + token() + "\r\n");
        assertThat(echo.get("path").asText()).isEqualTo("/api/v1/namespaces/" + ns + "/echo");
        assertThat(echo.get("query").asText()).isEqualTo("q=%2e%2E&y=a/../b");
    }

    /**
     * RFC 9112 §3.2.2: a server MUST accept absolute-form; its authority replaces Host.
     * Regression: absolute-form was answered 404.
     */
    @Test
    void shouldAcceptAbsoluteFormAndTakeItsAuthorityAsHost() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        JsonNode echo = echoed("GET http://api.example:8080/api/v1/namespaces/" + ns + "/echo?x=1 HTTP/1.1\r\n"
                + "Host: other.example\r\n" + token() + "\r\n");
        assertThat(echo.get("query").asText()).isEqualTo("x=1");
        RecordedRequest seen = cell.recorded(ns).get(0);
        assertThat(seen.path()).isEqualTo("/api/v1/namespaces/" + ns + "/echo");
        assertThat(seen.header("X-Forwarded-Host")).isEqualTo("api.example:8080");
    }

    /** RFC 9112 §3.2.3: authority-form is for CONNECT, which a gateway to owners does not tunnel. */
    @Test
    void shouldRefuseAuthorityForm() throws Exception {
        refused400("CONNECT owner:443 HTTP/1.1\r\nHost: owner:443\r\n\r\n");
    }

    /**
     * RFC 9112 §3.2.3: CONNECT takes only an authority-form target, so an origin-form one is
     * malformed; and a 2xx to a CONNECT makes the connection a tunnel for the client (RFC 9110
     * §9.3.6), ignoring its Content-Length, which an owner's answer is not. Regression: an
     * origin-form CONNECT reached an owner, and its 200 with a body desynchronized the client.
     */
    @Test
    void shouldRefuseConnectWithAnOriginFormTarget() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        RawClient.Response r =
                refused400("CONNECT /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n" + token() + "\r\n");
        assertThat(JSON.readTree(r.body()).at("/details/reason").asText()).contains("CONNECT");
    }

    /**
     * RFC 3986 §3.3 keeps {@code ..;x} a segment of its own, but Tomcat and Spring MVC drop path
     * parameters before they remove dot-segments: {@code /api/v1/auth/..;/namespaces/x/echo}
     * would skip edge auth here (it starts with the auth prefix) and reach {@code
     * /api/v1/namespaces/x/echo} there. Refused before auth, as Spring Security's firewall does;
     * a parameter on any other segment passes.
     */
    @Test
    void shouldRefuseADotSegmentWithParameters() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        for (String dots : new String[] {"..;", "..;x=1", ".;", "%2e%2e;", ".%2E;v"}) {
            RawClient.Response r =
                    refused400("GET /api/v1/auth/" + dots + "/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n\r\n");
            assertThat(JSON.readTree(r.body()).at("/details/reason").asText())
                    .as(dots)
                    .contains("dot-segment with parameters");
        }
        int before = cell.recorded(ns).size();
        once("GET /api/v1/namespaces/" + ns + "/echo;v=1 HTTP/1.1\r\nHost: gw\r\n" + token() + "\r\n");
        assertThat(cell.recorded(ns))
                .as("a parameter on another segment reaches the owner as sent")
                .extracting(RecordedRequest::path)
                .hasSize(before + 1)
                .last()
                .isEqualTo("/api/v1/namespaces/" + ns + "/echo;v=1");
    }

    /**
     * RFC 3986 §2.1: a {@code %} not followed by two hex digits is a malformed target, a 400 like
     * every other. Regression: the uplink's path check threw on it, and the connection closed
     * with no answer at all, taking the answer of a request pipelined before it (RFC 9112 §9.3.2:
     * answered in order).
     */
    @Test
    void shouldAnswerABrokenEscape400_afterThePipelinedRequestBeforeIt() throws Exception {
        for (String target : new String[] {"/a%", "/api/v1/x%zz", "/a/%u002e", "/uplink%2"}) {
            try (RawClient c = new RawClient(cell.gateway.port())) {
                c.send("GET /actuator/health HTTP/1.1\r\nHost: gw\r\n\r\n" + "GET " + target
                        + " HTTP/1.1\r\nHost: gw\r\n\r\n");
                assertThat(c.read().status())
                        .as("%s: the request before it", target)
                        .isEqualTo(200);
                RawClient.Response r = c.read();
                assertThat(r.status()).as(target).isEqualTo(400);
                assertThat(JSON.readTree(r.body()).at("/details/field").asText())
                        .isEqualTo("target");
                assertThat(c.closedByServer()).isTrue();
            }
        }
    }

    /**
     * A client that is no trusted proxy cannot speak for one: the fields frameworks read as the
     * client's address, scheme or original URL ({@code X-Real-IP}, {@code True-Client-IP}, {@code
     * X-Original-URL}, {@code X-Forwarded-Prefix}, their underscore spellings) never reach the
     * owner; it sees the gateway's {@code X-Forwarded-For} alone. Regression (a review): they
     * passed, so Go chi's {@code RealIP} read the client's claim, and an owner that honours {@code
     * X-Original-URL} routed by it past its own path checks.
     */
    @Test
    void shouldDropWhatAClientSaysOfItselfInAProxysWords() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        RawClient.Response r = once("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n" + token()
                + "X-Real-IP: 10.0.0.1\r\nTrue-Client-IP: 10.0.0.2\r\nX-Original-URL: /admin\r\n"
                + "X-Forwarded-Prefix: /evil\r\nX_Real_IP: 10.0.0.3\r\nCF-Connecting-IP: 10.0.0.4\r\n"
                + "X-Kept: yes\r\n\r\n");
        assertThat(r.status()).isEqualTo(200);
        RecordedRequest seen = cell.recorded(ns).get(0);
        assertThat(seen.headers().keySet().stream().map(k -> k.toLowerCase(java.util.Locale.ROOT)))
                .doesNotContain(
                        "x-real-ip",
                        "true-client-ip",
                        "x-original-url",
                        "x-forwarded-prefix",
                        "x_real_ip",
                        "cf-connecting-ip")
                .contains("x-kept", "x-forwarded-for");
    }

    /**
     * WHATWG URL: a browser sends {@code [ ] { } | ^ `} in a query as they are; the owner gets the
     * query byte for byte, as nginx passes it. Regression (a review): 400 and a close.
     */
    @Test
    void shouldForwardTheQueryCharactersBrowsersLeaveRaw_byteForByte() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        String query = "ids[]=1&ids[]=2&f={x}&q=a|b^c&t=`y`";
        JsonNode echo = echoed(
                "GET /api/v1/namespaces/" + ns + "/echo?" + query + " HTTP/1.1\r\nHost: gw\r\n" + token() + "\r\n");
        assertThat(echo.get("query").asText()).isEqualTo(query);
    }

    /**
     * RFC 9112 §9.3.2: answers go in the order of the requests. An uplink handshake pipelined behind
     * a forwarded request is no handshake (an uplink is its connection's first request): the owner's
     * answer comes first, then the {@code /uplink} request's own, in its turn, and the connection
     * carries on. Regression (a review of the thirty-first stop): the uplink's 400 went out at once,
     * ahead of the owner's answer, and its close left the forwarded request unanswered though the
     * owner had served it.
     */
    @Test
    void shouldAnswerAnUplinkHandshakeBehindAnotherRequest_inItsTurn() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        int before = cell.recorded(ns).size();
        try (RawClient c = new RawClient(cell.gateway.port())) {
            c.send("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n" + token() + "\r\n"
                    + "GET /uplink HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                    + "GET /actuator/health HTTP/1.1\r\nHost: gw\r\n\r\n");

            RawClient.Response echo = c.read();
            assertThat(echo.status())
                    .as("the forwarded request's answer, first")
                    .isEqualTo(200);
            assertThat(JSON.readTree(echo.body()).get("path").asText()).isEqualTo("/api/v1/namespaces/" + ns + "/echo");
            RawClient.Response uplink = c.read();
            assertThat(uplink.status())
                    .as("the /uplink request's, in its turn: no handshake")
                    .isNotEqualTo(101);
            assertThat(uplink.header("Content-Type")).startsWith("application/problem+json");
            if (!"close".equalsIgnoreCase(uplink.header("Connection"))) {
                assertThat(c.read().status()).as("and the next").isEqualTo(200);
            }
        }
        assertThat(cell.recorded(ns)).hasSize(before + 1);
    }

    /**
     * RFC 9110 §9.3.8: TRACE would echo the request as the owner got it, the gateway's forwarding
     * and routing fields and the client's credential with it; nginx refuses it always. Here a 501
     * (a method served for no resource, §15.6.2), nothing reaches an owner, and the connection
     * carries the next request. Regression: TRACE was forwarded, and the reference owner echoed
     * the Authorization header back.
     */
    @Test
    void shouldAnswerTraceItself_withoutForwardingIt() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        int before = ownerRequests();
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send(
                            "TRACE /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n" + token() + "\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(501);
            assertThat(JSON.readTree(r.body()).at("/details/feature").asText()).isEqualTo("TRACE");
            assertThat(r.text()).doesNotContain("Bearer");
            assertThat(c.send("GET /actuator/health HTTP/1.1\r\nHost: gw\r\n\r\n")
                            .read()
                            .status())
                    .as("the connection goes on")
                    .isEqualTo(200);
        }
        assertThat(ownerRequests()).as("nothing reached an owner").isEqualTo(before);
    }

    /** RFC 9112 §3.2.4, RFC 9110 §9.3.7: {@code OPTIONS *} is about the server, answered here. */
    @Test
    void shouldAnswerOptionsAsteriskItself() throws Exception {
        int before = ownerRequests();
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r =
                    c.send("OPTIONS * HTTP/1.1\r\nHost: gw\r\n\r\n").read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.header("Allow")).contains("GET").contains("PUT");
            // and the connection stays usable
            RawClient.Response again =
                    c.send("GET /actuator/health HTTP/1.1\r\nHost: gw\r\n\r\n").read();
            assertThat(again.status()).isEqualTo(200);
        }
        assertThat(ownerRequests()).isEqualTo(before);
    }

    /** RFC 9112 §3.2: an HTTP/1.1 request without Host MUST be answered 400. */
    @Test
    void shouldRefuseAnHttp11RequestWithoutHost() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        RawClient.Response r = refused400("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\n" + token() + "\r\n");
        assertThat(r.text()).contains("host");
    }

    /** RFC 9112 §3.2: more than one Host field line MUST be answered 400 (a smuggling shape). */
    @Test
    void shouldRefuseTwoHostLines() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        refused400("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\n" + "Host: a.example\r\nHost: b.example\r\n"
                + token() + "\r\n");
    }

    /** RFC 9112 §3.2, RFC 3986 §3.2.2: a Host that is not {@code uri-host[:port]} is 400. */
    @Test
    void shouldRefuseAnInvalidHost() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        for (String host : List.of("a b", "h:99999", "user@h", "[::1", "h:-1", "a,b")) {
            refused400("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: " + host + "\r\n" + token() + "\r\n");
        }
    }

    /** RFC 9112 §3.2: HTTP/1.0 has no Host requirement. */
    @Test
    void shouldServeAnHttp10RequestWithoutHost() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        RawClient.Response r = once("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.0\r\n" + token() + "\r\n");
        assertThat(r.status()).isEqualTo(200);
        assertThat(cell.recorded(ns)).hasSize(1);
    }

    /**
     * RFC 9112 §6.3 item 5: differing Content-Length values make the framing invalid for every
     * version: 400, then close. Found by EdgeFuzzTest: Netty took the first of an HTTP/1.0
     * request's two lines, and a list value {@code 0, 1} made the gateway close without an answer.
     */
    @Test
    void shouldRefuseDifferingContentLengthsFromAnyVersion() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        for (String head : List.of(
                "GET /api/v1/namespaces/" + ns + "/echo HTTP/1.0\r\nContent-Length: 0\r\nContent-Length: 1\r\n",
                "GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\nContent-Length: 0, 1\r\n",
                "GET /api/v1/namespaces/" + ns + "/echo HTTP/1.0\r\nContent-Length: 0, 1\r\n")) {
            refused400(head + token() + "\r\nz");
        }
    }

    /**
     * A head of {@link RequestHeaders#MAX_FIELD_LINES} field lines is forwarded, one more is 431
     * and close (RFC 6585 §5) before any owner sees it; the lines counted are the ones on the wire,
     * an underscore spelling the gateway drops included.
     */
    @Test
    void shouldForwardAHeadAtTheFieldLineLimitAndRefuseOnePast() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        StringBuilder fields = new StringBuilder();
        for (int i = 0; i < RequestHeaders.MAX_FIELD_LINES - 3; i++) { // with Host, Authorization and one dropped
            fields.append("X-F").append(i).append(": v\r\n");
        }
        String head = "GET /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: gw\r\n" + token() + fields
                + "X_Spector_Tenant: other\r\n";
        JsonNode atLimit = echoed(head + "\r\n");
        assertThat(atLimit.toString()).contains("X-F96");

        int before = ownerRequests();
        RawClient.Response r = refusedAndClosed(head + "X-Past: v\r\n\r\n");
        assertThat(r.status()).isEqualTo(431);
        assertThat(r.text()).contains("\"status\":431", "101 header field lines");
        assertThat(ownerRequests()).as("nothing reached an owner").isEqualTo(before);
    }

    /**
     * RFC 9110 §15.6.6, RFC 9112 §2.3: a request line naming a major version other than 1 is 505
     * and close (nginx's answer), not served as HTTP/1.1; a higher 1.x minor is 1.1's.
     */
    @Test
    void shouldRefuseAMajorVersionOtherThanOneWith505() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        for (String version : List.of("HTTP/2.0", "HTTP/3.0", "HTTP/0.9")) {
            int before = ownerRequests();
            RawClient.Response r = refusedAndClosed(
                    "GET /api/v1/namespaces/" + ns + "/echo " + version + "\r\nHost: gw\r\n" + token() + "\r\n");
            assertThat(r.status()).as(version).isEqualTo(505);
            assertThat(r.text()).as(version).contains("\"status\":505", version);
            assertThat(ownerRequests())
                    .as("%s: nothing reached an owner", version)
                    .isEqualTo(before);
        }
        assertThat(echoed("GET /api/v1/namespaces/" + ns + "/echo HTTP/1.2\r\nHost: gw\r\n" + token() + "\r\n"))
                .as("HTTP/1.2 is served as 1.1")
                .isNotNull();
    }
}
