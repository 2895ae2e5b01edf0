package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.WireClient.Framing;
import com.spectrayan.spector.gateway.WireClient.Response;
import com.spectrayan.spector.owner.RecordedRequest;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.wire.Header;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The one client side, on the wire (issue 9, section 1): response framing for HTTP/1.0 and 1.1,
 * keep-alive, pipelining and the responses without a body, for forwarded and relayed exchanges
 * alike (the headers the edge adds: {@link EdgeCorsTest}). Raw sockets only ({@link WireClient} fails any response
 * that does not parse, whose framing is wrong, or that says {@code Connection: close} and is not
 * followed by the close); each test also checks what the owner or the worker's target received.
 *
 * <p>The cell: two reference owners, a {@link MockOwner} ring member for the framings the reference
 * owner never sends, and a worker on the real uplink whose {@code mock} target is the worker's
 * {@code http-forward} to the mock owner. CORS is off here, so that no rule hides behind it.
 */
final class EdgeFramingTest {
    private static final String WORKER = "fw";

    /** The mock owner's fixed body; its length is the one a HEAD must keep. */
    private static final String FIXED = fixed(246);

    /** The relay target {@code stream}'s body: parts of unknown total length. */
    private static final int STREAM_PARTS = 3;

    private static final int STREAM_PART_BYTES = 1000;

    private static final List<String> streamCalls = new CopyOnWriteArrayList<>();

    /** How long the mock holds a {@code /held} answer at most (the test releases it sooner). */
    private static final Duration HOLD_AT_MOST = Duration.ofSeconds(10);

    /** What the mock's {@code /held} answer waits for; the test that uses it completes it. */
    private static volatile CompletableFuture<Void> held = new CompletableFuture<>();

    private static MockOwner mock;
    private static RelayCell relayCell;
    private static Cell cell;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        mock = MockOwner.start(EdgeFramingTest::script);
        relayCell = RelayCell.start(
                Cell.builder().owners(2).member("mock-0", mock.baseUri()),
                WORKER,
                (c, httpForward) -> Map.of(
                        "mock", httpForward.apply(mock.baseUri()), "stream", EdgeFramingTest::streamOfUnknownLength));
        cell = relayCell.cell;
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        relayCell.close();
        mock.close();
    }

    // ---- HTTP/1.0 ----

    /**
     * An HTTP/1.0 client cannot read chunked, so a response of unknown length is close-delimited:
     * no {@code Transfer-Encoding}, and the server's close ends the body (RFC 9112 §6.1, §6.3 rule
     * 8). Regression: a streamed response to an HTTP/1.0 client was sent {@code Transfer-Encoding:
     * chunked}.
     */
    @Test
    void shouldCloseDelimitAResponseOfUnknownLengthToAnHttp10Client() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/stream";
        try (WireClient c = client()) {
            Response r = c.send(http10("GET", path + "?bytes=10000&chunk=1000")).read();

            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.has("Transfer-Encoding"))
                    .as("no Transfer-Encoding to an HTTP/1.0 client: %s", r)
                    .isFalse();
            assertThat(r.framing()).as("%s", r).isEqualTo(Framing.CLOSE);
            assertThat(r.closed()).isTrue();
            assertPattern(r.body(), 10000);
        }
        assertThat(cell.served("owner-0", "GET", path))
                .as("the owner served the stream once")
                .singleElement()
                .extracting(RecordedRequest::status)
                .isEqualTo(200);
    }

    /**
     * An HTTP/1.0 client that asked for a persistent connection, given a response of known length,
     * is told {@code Connection: keep-alive} and may send its next request on the same connection
     * (RFC 9112 §9.3, Appendix C.2.2; what {@code ab -k} needs). Regression: the connection stayed
     * open without {@code Connection: keep-alive}, so the client waited for a close.
     */
    @Test
    void shouldKeepAnHttp10ConnectionAliveWhenTheClientAskedAndTheLengthIsKnown() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-1") + "/echo";
        try (WireClient c = client()) {
            Response first = c.send(http10("GET", path + "?n=1", "Connection: keep-alive"))
                    .read();
            assertThat(first.status()).as("%s", first).isEqualTo(200);
            assertThat(first.framing()).as("%s", first).isEqualTo(Framing.LENGTH);
            assertThat(first.connectionHas("keep-alive"))
                    .as("Connection: keep-alive echoed to the HTTP/1.0 client: %s", first)
                    .isTrue();
            assertThat(first.closed()).isFalse();

            Response second = c.send(http10("GET", path + "?n=2", "Connection: keep-alive"))
                    .read();
            assertThat(second.status())
                    .as("the second request on the same socket: %s", second)
                    .isEqualTo(200);
            assertThat(second.json().path("query").asText()).isEqualTo("n=2");
            assertThat(second.connectionHas("keep-alive")).isTrue();
        }
        assertThat(cell.served("owner-1", "GET", path))
                .as("the owner served both requests")
                .hasSize(2);
    }

    /**
     * An HTTP/1.0 client that did not ask for a persistent connection gets {@code Connection:
     * close} and the close after its response, even when the length is known (RFC 9112 §9.3:
     * HTTP/1.0 connections are not persistent by default).
     */
    @Test
    void shouldCloseAnHttp10ConnectionThatDidNotAskForKeepAlive() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-1") + "/echo";
        try (WireClient c = client()) {
            Response r = c.send(http10("GET", path)).read();

            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.framing()).as("%s", r).isEqualTo(Framing.LENGTH);
            assertThat(r.connectionHas("close")).as("%s", r).isTrue();
            assertThat(r.closed()).isTrue();
        }
        assertThat(cell.served("owner-1", "GET", path)).hasSize(1);
    }

    // ---- pipelining ----

    /**
     * Requests pipelined in one write, to different owners, are answered in the order they were
     * sent on the one connection, the slowest first (RFC 9112 §9.3.2).
     */
    @Test
    void shouldAnswerPipelinedRequestsToDifferentOwnersInOrder() {
        String slow = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/stream";
        String echo = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-1") + "/echo";
        String fixed = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0") + "/fixed";
        try (WireClient c = client()) {
            c.send(get(slow + "?bytes=3000&chunk=300&delayMs=20") + get(echo + "?order=2") + get(fixed));

            Response first = c.read();
            Response second = c.read();
            Response third = c.read();
            assertThat(first.status()).as("%s", first).isEqualTo(200);
            assertPattern(first.body(), 3000);
            assertThat(second.status()).as("%s", second).isEqualTo(200);
            assertThat(second.json().path("path").asText()).isEqualTo(echo);
            assertThat(second.json().path("query").asText()).isEqualTo("order=2");
            assertThat(third.status()).as("%s", third).isEqualTo(200);
            assertThat(third.text()).isEqualTo(FIXED);
            assertThat(third.closed()).isFalse();
        }
        assertThat(cell.served("owner-0", "GET", slow)).hasSize(1);
        assertThat(cell.served("owner-1", "GET", echo)).hasSize(1);
        assertThat(mock.requestsEndingWith(fixed)).hasSize(1);
    }

    /**
     * A deep pipeline in one write (RFC 9112 §9.3.2: answered in order): 300 requests to an owner,
     * every one answered, in order, on the one connection, and each executed once. Regression (the
     * exhaustion review): the codec decoded a whole read ahead and past 128 unanswered reset the
     * connection, with a PUT carried out and never answered; now the decoder stops while a request
     * waits (ClientCodec), and what follows stays bytes until its turn.
     */
    @Test
    void shouldAnswerThreeHundredPipelinedRequestsInOrder() {
        String echo = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-1") + "/echo";
        int n = 300;
        StringBuilder all = new StringBuilder();
        for (int i = 0; i < n; i++) {
            all.append(get(echo + "?deep=" + i));
        }
        try (WireClient c = client()) {
            c.send(all.toString());
            for (int i = 0; i < n; i++) {
                Response r = c.read();
                assertThat(r.status()).as("answer %d: %s", i, r).isEqualTo(200);
                assertThat(r.json().path("query").asText()).as("answer %d", i).isEqualTo("deep=" + i);
                assertThat(r.closed()).as("answer %d", i).isFalse();
            }
        }
        assertThat(cell.served("owner-1", "GET", echo)).as("each executed once").hasSize(n);
    }

    /**
     * An underscore spelling of a name the gateway owns never reaches an owner (a CGI or WSGI one
     * reads {@code X_Spector_Tenant} as {@code HTTP_X_SPECTOR_TENANT} and merges it with the
     * gateway's {@code X-Spector-Tenant}); the gateway's own names arrive once, its values; an
     * ordinary name with an underscore passes. Regression (the exhaustion review): a wsgiref owner
     * saw {@code HTTP_X_SPECTOR_TENANT="victim,acme"}.
     */
    @Test
    void shouldDropUnderscoreSpellingsOfTheGatewaysNamesBeforeTheOwner() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0") + "/underscores/fixed";
        try (WireClient c = client()) {
            Response r = c.send(get(
                            path,
                            "X_Spector_Tenant: victim",
                            "X-Spector_Namespace: victimns",
                            "X_Spector_Epoch: 999",
                            "X_Forwarded_For: 6.6.6.6",
                            "X_Request_Id: forged",
                            "X_Custom: kept"))
                    .read();
            assertThat(r.status()).as("%s", r).isEqualTo(200);
        }
        MockOwner.Request seen = mock.requestsEndingWith("/underscores/fixed").get(0);
        assertThat(seen.headers().keySet())
                .as("no underscore spelling of a gateway name")
                .doesNotContain(
                        "x_spector_tenant",
                        "x-spector_namespace",
                        "x_spector_epoch",
                        "x_forwarded_for",
                        "x_request_id");
        assertThat(seen.header("X_Custom")).isEqualTo("kept");
        assertThat(seen.header("X-Spector-Tenant")).isEqualTo(Cell.TENANT);
        assertThat(seen.header("X-Forwarded-For")).isEqualTo("127.0.0.1");
    }

    /**
     * A client's {@code Content-Length: 0} reaches the owner as such (RFC 9110 §8.6: a POST with no
     * content; an owner may answer 411 without it), and a request that declared no length gets
     * none and no {@code Transfer-Encoding} (RFC 9112 §6.3 rule 7: no body).
     */
    @Test
    void shouldPassAClientsZeroContentLengthToTheOwner() {
        String base = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0");
        try (WireClient c = client()) {
            assertThat(c.send(WireClient.head("POST", base + "/zero/fixed", token, "Content-Length: 0"))
                            .read()
                            .status())
                    .isEqualTo(200);
            assertThat(c.send(WireClient.head("DELETE", base + "/none/fixed", token))
                            .read()
                            .status())
                    .isEqualTo(200);
        }
        MockOwner.Request zero = mock.requestsEndingWith("/zero/fixed").get(0);
        MockOwner.Request none = mock.requestsEndingWith("/none/fixed").get(0);
        assertThat(zero.header("Content-Length")).isEqualTo("0");
        assertThat(zero.header("Transfer-Encoding")).isNull();
        assertThat(none.header("Content-Length")).isNull();
        assertThat(none.header("Transfer-Encoding")).isNull();
    }

    /**
     * Each response on one keep-alive connection carries its own length (RFC 9110 §8.6, RFC 9112
     * §6.3): responses of two sizes, then the first size again, each with a {@code Content-Length}
     * equal to the body that follows (the gateway reuses the text of the last length it sent).
     */
    @Test
    void shouldSendEachResponsesOwnContentLengthOnAKeepAliveConnection() {
        String echo = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-1") + "/echo";
        try (WireClient c = client()) {
            for (String q : List.of("a=1", "a=22222", "a=1", "a=333")) {
                Response r = c.send(get(echo + "?" + q)).read();

                assertThat(r.status()).as("%s", r).isEqualTo(200);
                assertThat(r.header("Content-Length")).as("%s", q).isEqualTo(Integer.toString(r.body().length));
                assertThat(r.json().path("query").asText()).isEqualTo(q);
                assertThat(r.closed()).isFalse();
            }
        }
    }

    /**
     * Pipelined requests answered by different kinds of exchange (relayed, forwarded, relayed) come
     * back in order on the one connection too (RFC 9112 §9.3.2): the client side is one.
     */
    @Test
    void shouldAnswerPipelinedRelayedAndForwardedRequestsInOrder() {
        String echo = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-1") + "/echo";
        String relayedFixed = "/relay/" + WORKER + "/mock/api/v1/pipelined/fixed";
        try (WireClient c = client()) {
            c.send(get("/relay/" + WORKER + "/stream/pipelined") + get(echo + "?order=2") + get(relayedFixed));

            Response first = c.read();
            Response second = c.read();
            Response third = c.read();
            assertThat(first.status()).as("%s", first).isEqualTo(200);
            assertPattern(first.body(), STREAM_PARTS * STREAM_PART_BYTES);
            assertThat(second.status()).as("%s", second).isEqualTo(200);
            assertThat(second.json().path("query").asText()).isEqualTo("order=2");
            assertThat(third.status()).as("%s", third).isEqualTo(200);
            assertThat(third.text()).isEqualTo(FIXED);
        }
        assertThat(streamCalls).contains("GET /pipelined");
        assertThat(cell.served("owner-1", "GET", echo)).hasSize(1);
        assertThat(mock.requestsEndingWith("/pipelined/fixed")).hasSize(1);
    }

    /**
     * A request pipelined right behind another's body (a PUT's Content-Length, then a GET in the
     * same write) is read as the next request, not as body, and answered after the PUT (RFC 9112
     * §6.3 rule 6, §9.3.2).
     */
    @Test
    void shouldAnswerARequestPipelinedBehindABodyAfterIt() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/objects/pipelined";
        try (WireClient c = client()) {
            c.send(WireClient.head("PUT", path, token, "Content-Length: 5") + "hello" + get(path));

            Response put = c.read();
            Response get = c.read();
            assertThat(put.status()).as("%s", put).isEqualTo(201);
            assertThat(get.status()).as("%s", get).isEqualTo(200);
            assertThat(get.text()).isEqualTo("hello");
        }
        assertThat(cell.owner("owner-0").requests().stream()
                        .filter(q -> q.path().equals(path))
                        .map(RecordedRequest::method))
                .containsExactly("PUT", "GET");
    }

    /**
     * Requests pipelined in writes of their own while the first is still being answered (its
     * owner holds the answer) wait for it: no owner hears of them before the first response ends,
     * and the answers come in order, a body-carrying PUT included (RFC 9112 §9.3.2). The
     * connection keeps reading during an exchange and stops only when the next head arrives, so
     * this is the path that holds a decoded request back, not the socket.
     */
    @Test
    void shouldHoldRequestsPipelinedDuringAnExchangeUntilItsResponseEnded() {
        String first = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0") + "/pipelined/held";
        String echo = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-1") + "/echo";
        String object = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/objects/pipelined-later";
        CompletableFuture<Void> gate = new CompletableFuture<>();
        held = gate;
        try (WireClient c = client()) {
            c.send(get(first));
            await().atMost(Duration.ofSeconds(10))
                    .until(() -> mock.requestsEndingWith("/pipelined/held").size() == 1);
            c.send(get(echo + "?order=2"));
            c.send(WireClient.head("PUT", object, token, "Content-Length: 5"));
            c.send("hello");
            c.send(get(object));
            await().during(Duration.ofMillis(300))
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> cell.served("owner-1", "GET", echo).isEmpty()
                            && cell.served("owner-0", "PUT", object).isEmpty());
            gate.complete(null);

            Response r1 = c.read();
            Response r2 = c.read();
            Response r3 = c.read();
            Response r4 = c.read();
            assertThat(r1.status()).as("%s", r1).isEqualTo(200);
            assertThat(r1.text()).isEqualTo(FIXED);
            assertThat(r2.status()).as("%s", r2).isEqualTo(200);
            assertThat(r2.json().path("query").asText()).isEqualTo("order=2");
            assertThat(r3.status()).as("%s", r3).isEqualTo(201);
            assertThat(r4.status()).as("%s", r4).isEqualTo(200);
            assertThat(r4.text()).isEqualTo("hello");
            assertThat(r4.closed()).isFalse();
        } finally {
            gate.complete(null);
        }
        assertThat(cell.served("owner-1", "GET", echo)).hasSize(1);
        assertThat(cell.owner("owner-0").requests().stream()
                        .filter(q -> q.path().equals(object))
                        .map(RecordedRequest::method))
                .containsExactly("PUT", "GET");
    }

    // ---- responses without a body ----

    /**
     * A forwarded HEAD keeps the Content-Length the owner sent (the GET's, RFC 9110 §9.3.2, §8.6)
     * and carries no body: the next response on the connection parses.
     */
    @Test
    void shouldKeepTheOwnersContentLengthOnAForwardedHeadAndSendNoBody() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0") + "/head/fixed";
        try (WireClient c = client()) {
            Response head = c.send(WireClient.head("HEAD", path, token)).readForHead();
            assertThat(head.status()).as("%s", head).isEqualTo(200);
            assertThat(head.header("Content-Length"))
                    .as("the GET's length on the HEAD: %s", head)
                    .isEqualTo(Integer.toString(FIXED.length()));
            assertThat(head.has("Transfer-Encoding")).isFalse();

            Response next = c.send(get(path)).read();
            assertThat(next.status())
                    .as("the next response parses: the HEAD sent no body")
                    .isEqualTo(200);
            assertThat(next.text()).isEqualTo(FIXED);
        }
        assertThat(mock.requestsEndingWith(path))
                .extracting(MockOwner.Request::method)
                .containsExactly("HEAD", "GET");
    }

    /**
     * A 204 has no body and no {@code Content-Length} (RFC 9110 §15.3.5, §8.6; RFC 9112 §6.3 rule
     * 1), and the connection stays usable.
     */
    @Test
    void shouldSendA204WithoutBodyOrContentLength() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/objects/gone";
        try (WireClient c = client()) {
            Response put = c.send(WireClient.head("PUT", path, token, "Content-Length: 5") + "hello")
                    .read();
            assertThat(put.status()).as("%s", put).isEqualTo(201);

            Response deleted = c.send(WireClient.head("DELETE", path, token)).read();
            assertThat(deleted.status()).as("%s", deleted).isEqualTo(204);
            assertThat(deleted.has("Content-Length")).as("%s", deleted).isFalse();
            assertThat(deleted.has("Transfer-Encoding")).as("%s", deleted).isFalse();
            assertThat(deleted.body()).isEmpty();

            Response after = c.send(get(path)).read();
            assertThat(after.status())
                    .as("the next response parses, and the object is gone: %s", after)
                    .isEqualTo(404);
        }
        assertThat(cell.served("owner-0", "DELETE", path))
                .singleElement()
                .extracting(RecordedRequest::status)
                .isEqualTo(204);
    }

    /**
     * A 304 has no body (RFC 9110 §15.4.5; RFC 9112 §6.3 rule 1) and keeps the owner's validator
     * fields; the connection stays usable.
     */
    @Test
    void shouldSendA304WithoutABody() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0") + "/not-modified";
        try (WireClient c = client()) {
            Response r = c.send(get(path, "If-None-Match: \"v1\"")).read();
            assertThat(r.status()).as("%s", r).isEqualTo(304);
            assertThat(r.header("ETag")).isEqualTo("\"v1\"");
            assertThat(r.has("Transfer-Encoding")).as("%s", r).isFalse();
            assertThat(r.body()).isEmpty();

            Response next = c.send(get(path.replace("not-modified", "fixed"))).read();
            assertThat(next.status())
                    .as("the next response parses: the 304 sent no body")
                    .isEqualTo(200);
        }
        assertThat(mock.requestsEndingWith(path))
                .singleElement()
                .satisfies(q -> assertThat(q.header("If-None-Match")).isEqualTo("\"v1\""));
    }

    // ---- relayed exchanges: the same client side ----

    /**
     * A relayed HEAD keeps the upstream's Content-Length, the GET's (RFC 9110 §9.3.2, §8.6), and
     * carries no body. Regression: HEAD through the relay answered {@code Content-Length: 0} while
     * the upstream's GET length was 246.
     */
    @Test
    void shouldKeepTheUpstreamsContentLengthOnARelayedHead() {
        String path = "/relay/" + WORKER + "/mock/api/v1/relayed-head/fixed";
        try (WireClient c = client()) {
            Response head = c.send(WireClient.head("HEAD", path, token)).readForHead();
            assertThat(head.status()).as("%s", head).isEqualTo(200);
            assertThat(head.header("Content-Length"))
                    .as("the upstream's length on the relayed HEAD: %s", head)
                    .isEqualTo(Integer.toString(FIXED.length()));

            Response next = c.send(get("/relay/" + WORKER + "/mock/api/v1/after-head/fixed"))
                    .read();
            assertThat(next.status())
                    .as("the next response parses: the HEAD sent no body")
                    .isEqualTo(200);
        }
        assertThat(mock.requestsEndingWith("/relayed-head/fixed"))
                .extracting(MockOwner.Request::method)
                .containsExactly("HEAD");
    }

    /**
     * A relayed response whose length the upstream declared is sent with that {@code
     * Content-Length}, not re-framed as chunked (RFC 9110 §8.6; RFC 9112 §6.1). Regression: relayed
     * GETs turned a known length into chunked.
     */
    @Test
    void shouldKeepAKnownLengthOnARelayedGet() {
        String path = "/relay/" + WORKER + "/mock/api/v1/relayed-get/fixed";
        try (WireClient c = client()) {
            Response r = c.send(get(path)).read();
            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.framing())
                    .as("the upstream's Content-Length kept: %s", r)
                    .isEqualTo(Framing.LENGTH);
            assertThat(r.header("Content-Length")).isEqualTo(Integer.toString(FIXED.length()));
            assertThat(r.text()).isEqualTo(FIXED);
        }
        assertThat(mock.requestsEndingWith("/relayed-get/fixed"))
                .extracting(MockOwner.Request::method)
                .containsExactly("GET");
    }

    /**
     * A relayed response of unknown length to an HTTP/1.0 client is close-delimited, as a forwarded
     * one is (RFC 9112 §6.1, §6.3 rule 8).
     */
    @Test
    void shouldCloseDelimitARelayedResponseOfUnknownLengthToAnHttp10Client() {
        try (WireClient c = client()) {
            Response r =
                    c.send(http10("GET", "/relay/" + WORKER + "/stream/http10")).read();
            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.has("Transfer-Encoding"))
                    .as("no Transfer-Encoding to an HTTP/1.0 client: %s", r)
                    .isFalse();
            assertThat(r.framing()).as("%s", r).isEqualTo(Framing.CLOSE);
            assertPattern(r.body(), STREAM_PARTS * STREAM_PART_BYTES);
        }
        assertThat(streamCalls).contains("GET /http10");
    }

    // ---- the cell's peers ----

    /**
     * A relayed request carries the forwarding facts this edge saw, as a forwarded one does
     * (CONFIG.md {@code trusted-proxies}: an untrusted client's own are replaced), so a target
     * that allow-lists, rate-limits or audits by address reads the client's real one; a client's
     * {@code Connection} cannot list them away. Regression: a client's forged {@code
     * X-Forwarded-*} and {@code Forwarded} reached the worker's target unchanged, and the gateway
     * added none.
     */
    @Test
    void shouldSetTheForwardingFactsOfARelayedRequest_replacingAClientsOwn() {
        int before = mock.requests().size();
        try (WireClient c = client()) {
            WireClient.Response r = c.send(WireClient.head(
                            "GET",
                            "/relay/" + WORKER + "/mock/fixed",
                            token,
                            "X-Forwarded-For: 6.6.6.6",
                            "X-Forwarded-Host: evil.example",
                            "X-Forwarded-Proto: https",
                            "Forwarded: for=6.6.6.6;proto=https",
                            "Connection: keep-alive, X-Forwarded-For"))
                    .read();
            assertThat(r.status()).isEqualTo(200);
        }
        MockOwner.Request got = mock.requests().get(before);
        assertThat(got.header("X-Forwarded-For"))
                .as("the address the gateway saw")
                .isEqualTo("127.0.0.1");
        assertThat(got.header("X-Forwarded-Proto")).isEqualTo("http");
        assertThat(got.header("X-Forwarded-Host")).isEqualTo("gateway.test");
        assertThat(got.header("Forwarded")).as("the client's own, dropped").isNull();
    }

    /** The mock owner's answers, by the path's last segment. */
    private static String script(MockOwner.Request r) {
        String p = r.path();
        if (p.endsWith("/held")) {
            try {
                held.get(HOLD_AT_MOST.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                return MockOwner.response(
                        500, "Not Released", "the test never released it", "Content-Type: text/plain");
            }
            p = p.substring(0, p.length() - "/held".length()) + "/fixed";
        }
        if (p.endsWith("/fixed")) {
            String head =
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + FIXED.length() + "\r\n\r\n";
            return r.method().equals("HEAD") ? head : head + FIXED;
        }
        if (p.endsWith("/not-modified")) {
            return r.header("If-None-Match") != null
                    ? "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: max-age=60\r\n\r\n"
                    : MockOwner.response(200, "OK", "fresh", "ETag: \"v1\"", "Content-Type: text/plain");
        }
        return MockOwner.response(404, "Not Found", "no such mock path", "Content-Type: text/plain");
    }

    /** A relay target answering {@link #STREAM_PARTS} parts of the (i mod 251) pattern. */
    private static CompletionStage<RelayedResponse> streamOfUnknownLength(RelayedRequest request) {
        streamCalls.add(request.method() + " " + request.url().getRawPath());
        int[] sent = {0};
        BodySource body = new BodySource() {
            @Override
            public CompletionStage<@Nullable ByteBuffer> next() {
                if (sent[0] == STREAM_PARTS) {
                    return CompletableFuture.completedFuture(null);
                }
                ByteBuffer part = ByteBuffer.allocate(STREAM_PART_BYTES);
                for (int i = 0; i < STREAM_PART_BYTES; i++) {
                    part.put((byte) ((sent[0] * STREAM_PART_BYTES + i) % 251));
                }
                sent[0]++;
                return CompletableFuture.completedFuture(part.flip());
            }

            @Override
            public void cancel(Throwable reason) {}
        };
        return CompletableFuture.completedFuture(
                new RelayedResponse(200, List.of(new Header("Content-Type", "application/octet-stream")), body));
    }

    // ---- helpers ----

    private static WireClient client() {
        return new WireClient(cell.gateway.port());
    }

    private static String get(String target, String... fields) {
        return WireClient.head("GET", target, token, fields);
    }

    private static String http10(String method, String target, String... fields) {
        StringBuilder sb = new StringBuilder(method)
                .append(' ')
                .append(target)
                .append(" HTTP/1.0\r\nHost: gateway.test\r\nAuthorization: Bearer ")
                .append(token)
                .append("\r\n");
        for (String f : fields) {
            sb.append(f).append("\r\n");
        }
        return sb.append("\r\n").toString();
    }

    private static void assertPattern(byte[] body, int length) {
        assertThat(body).as("body length").hasSize(length);
        for (int i = 0; i < body.length; i++) {
            if (body[i] != (byte) (i % 251)) {
                throw new AssertionError("byte " + i + " is " + body[i] + " (expected: i mod 251)");
            }
        }
    }

    private static String fixed(int length) {
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            sb.append((char) ('a' + i % 26));
        }
        return sb.toString();
    }
}
