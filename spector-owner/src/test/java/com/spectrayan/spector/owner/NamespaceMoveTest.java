package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.testkit.Waits;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The reference owner's planned move for real (issue 13), between two owners on loopback: while
 * the old owner hands a namespace over, its requests are {@code 503} with {@code
 * X-Spector-Handoff}; a write admitted before the mark is waited for and copied; afterwards the
 * old owner answers {@code 421} moved with the higher epoch, and the new owner serves the objects
 * (same hash) and replays the idempotent commands.
 */
final class NamespaceMoveTest {
    private static final String CELL = "cell-m";
    private static final List<String> MEMBERS = List.of("owner-a", "owner-b");
    private static final KetamaRing RING = KetamaRing.of(1, MEMBERS);

    private ReferenceOwner a;
    private ReferenceOwner b;

    @BeforeEach
    void start() {
        a = ReferenceOwner.start(
                OwnerSpec.builder("owner-a").cellId(CELL).ringMembers(MEMBERS).build());
        b = ReferenceOwner.start(
                OwnerSpec.builder("owner-b").cellId(CELL).ringMembers(MEMBERS).build());
    }

    @AfterEach
    void stop() {
        a.close();
        b.close();
    }

    @Test
    void shouldHandTheNamespaceOverWithItsObjectsAndIdempotencyRecords() throws Exception {
        String ns = namespaceOf("owner-a");
        OwnerClient toA = new OwnerClient(a);
        OwnerClient toB = new OwnerClient(b);
        assertThat(put(toA, ns, "one", "first object").statusCode()).isEqualTo(201);
        HttpResponse<byte[]> command = command(toA, ns, "key-1", "0");
        assertThat(command.statusCode()).isEqualTo(200);

        // A write admitted before the mark: the move must wait for it and copy it.
        try (RawHttp slow = new RawHttp(a)) {
            slow.write("PUT /api/v1/namespaces/" + ns + "/objects/slow HTTP/1.1\r\nHost: a\r\n"
                    + "X-Spector-Tenant: acme\r\nContent-Length: 10\r\n\r\nhello");
            Waits.until(
                    "the slow write is admitted",
                    () -> view(toA, ns).path("writesRunning").asInt() == 1);
            CompletableFuture<HttpResponse<byte[]>> move = toA.sendAsync(moveRequest(toA, ns));
            Waits.until("the move marked the key", () -> handingTo(toA, ns).equals("owner-b"));

            HttpResponse<byte[]> during = get(toA, ns, "one");
            assertThat(during.statusCode()).isEqualTo(503);
            assertThat(during.headers().firstValue("X-Spector-Handoff")).hasValue("owner-b");
            assertThat(during.headers().firstValue("Retry-After")).hasValue("1");
            assertThat(move).as("waits for the running write").isNotDone();

            slow.write("world");
            assertThat(slow.readHead().status()).isEqualTo(201);
            JsonNode moved = OwnerClient.json(Waits.done(move, "the move"));

            assertThat(moved.path("from").asText()).isEqualTo("owner-a");
            assertThat(moved.path("to").asText()).isEqualTo("owner-b");
            assertThat(moved.path("epoch").asLong()).isEqualTo(2);
            assertThat(moved.path("objects").asInt()).isEqualTo(2);
            assertThat(moved.path("idempotencyRecords").asInt()).isEqualTo(1);
            assertThat(moved.path("handoffMs").asLong()).isNotNegative();
        }

        HttpResponse<byte[]> atOld = get(toA, ns, "one");
        assertThat(atOld.statusCode()).isEqualTo(421);
        assertThat(atOld.headers().firstValue("X-Spector-Owner")).hasValue("owner-b");
        assertThat(atOld.headers().firstValue("X-Spector-Epoch")).hasValue("2");
        assertThat(new String(get(toB, ns, "one").body(), StandardCharsets.UTF_8))
                .isEqualTo("first object");
        assertThat(new String(get(toB, ns, "slow").body(), StandardCharsets.UTF_8))
                .as("the write admitted before the mark is in the copy")
                .isEqualTo("helloworld");
        HttpResponse<byte[]> replayed = command(toB, ns, "key-1", "2"); // the fence a gateway learned
        assertThat(replayed.headers().firstValue("Idempotent-Replayed"))
                .as(new String(replayed.body(), StandardCharsets.UTF_8))
                .hasValue("true");
        assertThat(replayed.body()).isEqualTo(command.body());
    }

    @Test
    void shouldServeOnWhenTheImportFails() throws Exception {
        String ns = namespaceOf("owner-a");
        OwnerClient toA = new OwnerClient(a);
        assertThat(put(toA, ns, "one", "x").statusCode()).isEqualTo(201);
        b.close(); // the new owner is gone: the import cannot land

        HttpResponse<byte[]> move = toA.send(moveRequest(toA, ns));

        assertThat(move.statusCode()).isEqualTo(502);
        assertThat(handingTo(toA, ns)).isEmpty();
        assertThat(get(toA, ns, "one").statusCode()).as("served on").isEqualTo(200);
    }

    @Test
    void importOverTheCap_isRefused413() throws Exception {
        OwnerClient toB = new OwnerClient(b);
        HttpResponse<byte[]> r = toB.send(toB.request("/admin/import")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(new byte[(int) OwnerLimits.IMPORT_BYTES.max() + 1]))
                .build());

        assertThat(r.statusCode()).isEqualTo(413);
    }

    private HttpRequest moveRequest(OwnerClient c, String ns) {
        return c.request("/admin/move")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"tenant\":\"acme\",\"namespace\":\"" + ns
                        + "\",\"to\":\"owner-b\",\"toUrl\":\"" + b.baseUri() + "\"}"))
                .build();
    }

    private static String handingTo(OwnerClient c, String ns) {
        JsonNode v = view(c, ns);
        return v.path("handingTo").isNull() ? "" : v.path("handingTo").asText();
    }

    private static JsonNode view(OwnerClient c, String ns) {
        try {
            return OwnerClient.json(c.get("/admin/ownership?tenant=acme&namespace=" + ns));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static HttpResponse<byte[]> get(OwnerClient c, String ns, String key) throws Exception {
        return c.send(c.request(objectPath(ns, key))
                .header("X-Spector-Tenant", "acme")
                .GET()
                .build());
    }

    private static HttpResponse<byte[]> put(OwnerClient c, String ns, String key, String body) throws Exception {
        return c.send(c.request(objectPath(ns, key))
                .header("X-Spector-Tenant", "acme")
                .PUT(HttpRequest.BodyPublishers.ofString(body))
                .build());
    }

    private static HttpResponse<byte[]> command(OwnerClient c, String ns, String key, String fence) throws Exception {
        return c.send(c.request("/api/v1/namespaces/" + ns + "/commands")
                .header("X-Spector-Tenant", "acme")
                .header("X-Spector-Fence", fence)
                .header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString("{\"op\":\"add\"}"))
                .build());
    }

    private static String objectPath(String ns, String key) {
        return "/api/v1/namespaces/" + ns + "/objects/" + key;
    }

    private static String namespaceOf(String owner) {
        for (int i = 0; ; i++) {
            if (RING.ownerOf("acme/ns-" + i).equals(owner)) {
                return "ns-" + i;
            }
        }
    }
}
