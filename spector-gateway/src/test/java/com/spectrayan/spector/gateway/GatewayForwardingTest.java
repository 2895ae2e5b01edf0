package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.owner.RecordedRequest;
import com.spectrayan.spector.owner.ReferenceOwner;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The ADR's forwarding contract, one rule per test, against a real gateway and three real
 * reference owners on loopback (DESIGN.md section 4).
 */
final class GatewayForwardingTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder().owners(3).start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static List<RecordedRequest> recorded(ReferenceOwner owner, String namespace) {
        return owner.requests().stream()
                .filter(r -> namespace.equals(r.namespace()))
                .toList();
    }

    @Test
    void shouldLandOnTheRingOwnerOfTheNamespace() throws Exception {
        for (ReferenceOwner owner : cell.owners) {
            String ns = cell.namespaceOwnedBy(owner.nodeId());

            HttpResponse<String> r = cell.get("/api/v1/namespaces/" + ns + "/echo?x=1");

            assertThat(r.statusCode()).as("status of %s", ns).isEqualTo(200);
            assertThat(r.headers().firstValue("X-Spector-Node"))
                    .as("the ring owner of acme/%s answers", ns)
                    .hasValue(owner.nodeId());
            JsonNode echo = JSON.readTree(r.body());
            assertThat(echo.get("path").asText()).isEqualTo("/api/v1/namespaces/" + ns + "/echo");
            assertThat(echo.get("query").asText()).isEqualTo("x=1");
        }
    }

    @Test
    void shouldCarryRoutingHeadersAndTheIdempotencyKeyOnEveryAttempt() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        cell.moveNamespace(ns, "owner-0", "owner-1", 2, 5);

        HttpResponse<String> r = cell.http.send(
                cell.request("/api/v1/namespaces/" + ns + "/commands")
                        .header("Idempotency-Key", "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"")
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"op\":\"inc\"}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(r.statusCode()).as("the retargeted command succeeds").isEqualTo(200);
        assertThat(r.headers().firstValue("X-Spector-Node")).hasValue("owner-1");
        RecordedRequest first = recorded(cell.owner("owner-0"), ns).get(0);
        RecordedRequest second = recorded(cell.owner("owner-1"), ns).get(0);
        assertThat(first.status()).as("attempt 1 was misdirected").isEqualTo(421);
        for (RecordedRequest attempt : List.of(first, second)) {
            assertThat(attempt.header("Idempotency-Key"))
                    .as("K7: the client's key, byte for byte, on every attempt")
                    .isEqualTo("\"8e03978e-40d5-43e8-bc93-6894a57f9324\"");
            assertThat(attempt.header("X-Spector-Namespace")).isEqualTo(ns);
            assertThat(attempt.header("X-Spector-Tenant")).isEqualTo(Cell.TENANT);
        }
        assertThat(first.header("X-Spector-Attempt")).isEqualTo("1");
        assertThat(first.header("X-Spector-Epoch"))
                .as("attempt 1 routed by the ring")
                .isEqualTo("1");
        assertThat(second.header("X-Spector-Attempt")).isEqualTo("2");
        assertThat(second.header("X-Spector-Epoch"))
                .as("attempt 2 carries the owner's epoch")
                .isEqualTo("2");
        assertThat(second.header("X-Spector-Fence")).as("and its fence").isEqualTo("5");
    }

    @Test
    void shouldFollowA421ToTheReportedOwnerAndGoStraightThereNextTime() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        cell.moveNamespace(ns, "owner-1", "owner-2", 2, 2);

        HttpResponse<String> first = cell.get("/api/v1/namespaces/" + ns + "/echo");
        HttpResponse<String> second = cell.get("/api/v1/namespaces/" + ns + "/echo");

        assertThat(first.headers().firstValue("X-Spector-Node")).hasValue("owner-2");
        assertThat(second.headers().firstValue("X-Spector-Node")).hasValue("owner-2");
        assertThat(recorded(cell.owner("owner-1"), ns))
                .as("owner-1 saw only the first, misdirected attempt")
                .extracting(RecordedRequest::status)
                .containsExactly(421);
        assertThat(recorded(cell.owner("owner-2"), ns)).hasSize(2);
    }

    @Test
    void shouldEndA421CycleAfterExactlyThreeAttemptsIn503() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        RoutingKey key = RoutingKey.of(Cell.CELL_ID, Cell.TENANT, ns);
        cell.owner("owner-0").guard().setOverride(key, "owner-1", 2, 0);
        cell.owner("owner-1").guard().setOverride(key, "owner-2", 3, 0);
        cell.owner("owner-2").guard().setOverride(key, "owner-0", 4, 0);

        HttpResponse<String> r = cell.get("/api/v1/namespaces/" + ns + "/echo");

        assertThat(r.statusCode())
                .as("a 421 cycle answers 503, never a relayed 421")
                .isEqualTo(503);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("GATEWAY_ROUTING_FAILURE");
        assertThat(JSON.readTree(r.body()).at("/details/attempts").asInt())
                .as("attempts")
                .isEqualTo(3);
        assertThat(r.headers().firstValue("Retry-After"))
                .as("Retry-After 0: the gateway already learned the new owner")
                .hasValue("0");
        int total = 0;
        for (ReferenceOwner o : cell.owners) {
            total += recorded(o, ns).size();
        }
        assertThat(total).as("attempts that reached owners").isEqualTo(3);
    }

    @Test
    void shouldNeverPassHopByHopOrConnectionListedHeadersToTheOwner() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-2");
        RawClient.Response r = cell.rawGet("/api/v1/namespaces/" + ns + "/echo", """
                Host: gateway.example\r
                Connection: keep-alive, X-Secret-Hop\r
                Keep-Alive: timeout=5\r
                X-Secret-Hop: must-not-cross\r
                Proxy-Authorization: Basic Zm9vOmJhcg==\r
                TE: trailers\r
                Upgrade: h2c\r
                X-Spector-Epoch: 99\r
                X-Spector-Owner: owner-0\r
                X-Spector-Fence: 99\r
                X-Forwarded-For: 6.6.6.6\r
                X-End-To-End: kept\r
                """);
        assertThat(r.status()).isEqualTo(200);
        RecordedRequest seen = recorded(cell.owner("owner-2"), ns).get(0);
        for (String dropped : List.of(
                "X-Secret-Hop",
                "Keep-Alive",
                "Proxy-Authorization",
                "TE",
                "Upgrade",
                "X-Spector-Owner",
                "X-Spector-Fence")) {
            assertThat(seen.header(dropped)).as("%s reached the owner", dropped).isNull();
        }
        assertThat(seen.header("X-Spector-Epoch"))
                .as("the client's epoch is overwritten")
                .isEqualTo("1");
        assertThat(seen.header("X-Forwarded-For"))
                .as("an untrusted X-Forwarded-For is replaced")
                .isEqualTo("127.0.0.1");
        assertThat(seen.header("X-Forwarded-Host")).isEqualTo("gateway.example");
        assertThat(seen.header("X-Forwarded-Proto")).isEqualTo("http");
        assertThat(seen.header("X-End-To-End")).isEqualTo("kept");
        assertThat(seen.header("Connection"))
                .as("Connection is the gateway's own")
                .isNotEqualTo("keep-alive, X-Secret-Hop");
    }

    @Test
    void shouldRefuse413ByContentLengthWithoutContactingAnOwner() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("PUT /api/v1/namespaces/" + ns + "/objects/big HTTP/1.1\r\n"
                            + "Host: x\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n"
                            + "Content-Length: 10485761\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(413);
            assertThat(r.text()).contains("\"code\":\"PAYLOAD_TOO_LARGE\"").contains("\"limitBytes\":10485760");
            assertThat(c.closedByServer())
                    .as("the unread body ends the connection")
                    .isTrue();
        }
        assertThat(recorded(cell.owner("owner-0"), ns))
                .as("no owner was contacted")
                .isEmpty();
    }

    @Test
    void shouldStreamA10MiBUploadAtTheCap_andRefuseAChunkedBodyOneBytePast() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        byte[] body = new byte[10 * 1024 * 1024];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i % 251);
        }
        HttpResponse<String> ok = cell.http.send(
                cell.request("/api/v1/namespaces/" + ns + "/echo")
                        .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(ok.statusCode()).isEqualTo(200);
        JsonNode echo = JSON.readTree(ok.body());
        assertThat(echo.get("bodyBytes").asLong()).as("bytes at the cap").isEqualTo(body.length);
        assertThat(echo.get("bodySha256").asText())
                .isEqualTo(HexFormat.of()
                        .formatHex(MessageDigest.getInstance("SHA-256").digest(body)));

        try (RawClient c = new RawClient(cell.gateway.port())) {
            c.send("POST /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                    + Cell.token(Cell.TENANT) + "\r\nTransfer-Encoding: chunked\r\n\r\n");
            byte[] chunk = new byte[64 * 1024];
            String size = Integer.toHexString(chunk.length) + "\r\n";
            for (int sent = 0; sent < body.length; sent += chunk.length) {
                c.send(size.getBytes(StandardCharsets.US_ASCII))
                        .send(chunk)
                        .send("\r\n".getBytes(StandardCharsets.US_ASCII));
            }
            c.send("1\r\nx\r\n");
            RawClient.Response r = c.read();
            assertThat(r.status())
                    .as("one byte past the cap, counted while streaming")
                    .isEqualTo(413);
            assertThat(r.text()).contains("PAYLOAD_TOO_LARGE");
        }
        assertThat(cell.gateway.forwarder().metrics().tooLarge()).isPositive();
    }

    @Test
    void shouldDeliverTheFirstSseEventBeforeTheOwnersStreamEnds() throws Exception {
        HttpResponse<InputStream> r = cell.http.send(
                cell.request("/api/v1/events")
                        .header("Accept", "text/event-stream")
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofInputStream());
        try (InputStream in = r.body()) {
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type"))
                    .hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
            assertThat(r.headers().firstValue("Content-Length"))
                    .as("no Content-Length on a stream")
                    .isEmpty();
            StringBuilder seen = new StringBuilder();
            while (!seen.toString().contains("\n\n")) {
                int b = in.read();
                assertThat(b).as("the stream ended before its first event").isNotEqualTo(-1);
                seen.append((char) b);
            }
            assertThat(seen.toString()).contains("id:").contains("data:");
        }
    }

    @Test
    void shouldCancelTheOwnersRequestWithinASecondWhenTheClientGoesAway() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        long cancelledBefore = cell.gateway.forwarder().metrics().cancelled();
        try (RawClient c = new RawClient(cell.gateway.port())) {
            c.send("GET /api/v1/namespaces/" + ns + "/stream?bytes=1073741824&chunk=65536&delayMs=10 HTTP/1.1\r\n"
                    + "Host: x\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n");
            assertThat(c.read200HeadOnly()).isEqualTo(200);
        }
        await("the gateway cancels the owner exchange")
                .atMost(Duration.ofSeconds(1))
                .until(() -> cell.gateway.forwarder().metrics().cancelled() > cancelledBefore
                        && cell.gateway.forwarder().metrics().active() == 0);
    }

    @Test
    void shouldAnswerHealthAndMetricsLocally() throws Exception {
        HttpResponse<String> health = cell.getWithoutToken("/actuator/health");
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(health.body()).get("status").asText()).isEqualTo("UP");
        assertThat(JSON.readTree(health.body())
                        .at("/components/ring/details/members")
                        .asInt())
                .isEqualTo(3);
        HttpResponse<String> readiness = cell.getWithoutToken("/actuator/health/readiness");
        assertThat(readiness.body()).isEqualTo("{\"status\":\"UP\"}");
        cell.get("/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo");
        HttpResponse<String> metrics = cell.getWithoutToken("/actuator/prometheus");
        assertThat(metrics.body())
                .contains(
                        "spector_gateway_requests_seconds_count{outcome=\"SUCCESS\",route=\"forward\",status=\"200\"}")
                .contains("spector_routing_resolutions_total{level=\"l3\"}")
                .contains("spector_forwarder_retargets_total{cause=\"misdirected\"}")
                .contains("spector_owner_connections");
    }

    @Test
    void shouldAnswerUnknownPathsWith404ProblemJson() throws Exception {
        HttpResponse<String> r = cell.getWithoutToken("/nope");
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("NOT_FOUND");
    }
}
