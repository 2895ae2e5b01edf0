package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.testkit.Waits;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
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

    private static final String TOKEN = "cell-m-admin-token-0123456789";
    private static final String OTHER_TOKEN = "another-admin-token-9876543210";

    /**
     * How long the delayed command of a client that leaves stays scheduled, in ms: well under the
     * move's drain bound ({@link OwnerLimits#MOVE_DRAIN_TIMEOUT}, 5 s), so the move can wait for it.
     */
    private static final int DELAYED_COMMAND_MS = 1500;

    private static final String COMMAND_BODY = "{\"op\":\"add\"}";

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

    /**
     * Defends review finding 4: a delayed command whose client left stopped counting as a running
     * write when its connection closed, while it was still scheduled; a move then copied the
     * namespace without its idempotency record, the old owner ran the command after losing the
     * namespace, and the client's retry with the same Idempotency-Key ran it a second time at the
     * new owner. Now the command counts until it has run: the move waits for it, copies its record,
     * and the retry at the new owner is a replay.
     */
    @Test
    void shouldWaitForADelayedCommandWhoseClientLeft_andCopyItsRecord() throws Exception {
        String ns = namespaceOf("owner-a");
        OwnerClient toA = new OwnerClient(a);
        OwnerClient toB = new OwnerClient(b);
        String target = "/api/v1/namespaces/" + ns + "/commands?delayMs=" + DELAYED_COMMAND_MS;
        try (RawHttp client = new RawHttp(a)) {
            client.write("POST " + target + " HTTP/1.1\r\nHost: a\r\nX-Spector-Tenant: acme\r\n"
                    + "Idempotency-Key: k-delayed\r\nContent-Length: " + COMMAND_BODY.length() + "\r\n\r\n"
                    + COMMAND_BODY);
            Waits.until(
                    "the command is scheduled",
                    () -> OwnerClient.json(uncheckedGet(toA, "/admin/stats"))
                                    .path("commandsInFlight")
                                    .asInt()
                            == 1);
        } // the client leaves while its command is scheduled

        HttpResponse<byte[]> move = toA.send(moveRequest(toA, ns));

        assertThat(move.statusCode())
                .as(new String(move.body(), StandardCharsets.UTF_8))
                .isEqualTo(200);
        assertThat(a.commandExecutions()).as("the move waited for the command").isEqualTo(1);
        assertThat(OwnerClient.json(move).path("idempotencyRecords").asInt())
                .as("the command's record is in the copy")
                .isEqualTo(1);
        HttpResponse<byte[]> retry = toB.send(toB.request(target)
                .header("X-Spector-Tenant", "acme")
                .header("X-Spector-Fence", "2") // the fence a gateway learned from the move
                .header("Idempotency-Key", "k-delayed")
                .POST(HttpRequest.BodyPublishers.ofString(COMMAND_BODY))
                .build());
        assertThat(retry.statusCode()).isEqualTo(200);
        assertThat(retry.headers().firstValue("Idempotent-Replayed"))
                .as("the retry at the new owner replays, it does not run again")
                .hasValue("true");
        assertThat(b.commandExecutions()).isZero();
    }

    private static HttpResponse<byte[]> uncheckedGet(OwnerClient c, String path) {
        try {
            return c.get(path);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
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
    void shouldHandTheNamespaceOverBetweenOwnersThatShareTheAdminToken() throws Exception {
        restart(TOKEN, TOKEN);
        String ns = namespaceOf("owner-a");
        OwnerClient toA = new OwnerClient(a);
        OwnerClient toB = new OwnerClient(b);
        assertThat(put(toA, ns, "one", "first object").statusCode()).isEqualTo(201);

        HttpResponse<byte[]> move = toA.send(moveRequest(toA, ns, TOKEN));

        assertThat(move.statusCode())
                .as(new String(move.body(), StandardCharsets.UTF_8))
                .isEqualTo(200);
        assertThat(OwnerClient.json(move).path("objects").asInt()).isEqualTo(1);
        assertThat(get(toA, ns, "one").statusCode()).as("moved away").isEqualTo(421);
        assertThat(new String(get(toB, ns, "one").body(), StandardCharsets.UTF_8))
                .as("the object is at the new owner")
                .isEqualTo("first object");
        assertThat(view(toB, ns, TOKEN).path("owner").asText()).isEqualTo("owner-b");
        assertThat(view(toB, ns, TOKEN).path("epoch").asLong()).isEqualTo(2);
    }

    @Test
    void shouldCallTheMoveOffWhenTheNewOwnerHasAnotherAdminToken_andServeOn() throws Exception {
        restart(TOKEN, OTHER_TOKEN);
        String ns = namespaceOf("owner-a");

        JsonNode problem = calledOffMove(ns, TOKEN);

        assertThat(problem.path("code").asText()).isEqualTo("OWNER_UNREACHABLE");
        assertThat(problem.path("details").path("owner").asText()).isEqualTo("owner-b");
        assertThat(problem.path("detail").asText())
                .as("the answer says why")
                .contains("401")
                .contains("owner-b refused owner-a's admin token")
                .contains("SPECTOR_OWNER_ADMIN_TOKEN")
                .doesNotContain(TOKEN)
                .doesNotContain(OTHER_TOKEN);
        OwnerClient toB = new OwnerClient(b);
        assertThat(put(new OwnerClient(a), ns, "two", "y").statusCode())
                .as("writes are served on too")
                .isEqualTo(201);
        assertThat(view(toB, ns, OTHER_TOKEN).path("owner").asText())
                .as("the new owner never took it")
                .isEqualTo("owner-a");
        assertThat(get(toB, ns, "one").statusCode()).isEqualTo(421);
    }

    @Test
    void shouldCallTheMoveOffWhenOnlyTheNewOwnerHasAnAdminToken() throws Exception {
        restart(null, TOKEN);

        JsonNode problem = calledOffMove(namespaceOf("owner-a"));

        assertThat(problem.path("detail").asText()).contains("owner-b asks for an admin token and owner-a has none");
    }

    /**
     * Moves a namespace of owner-a holding one object, a move that must be called off, and
     * returns its problem after checking that owner-a serves the namespace on.
     */
    private JsonNode calledOffMove(String ns, String... token) throws Exception {
        OwnerClient toA = new OwnerClient(a);
        assertThat(put(toA, ns, "one", "x").statusCode()).isEqualTo(201);

        HttpResponse<byte[]> move = toA.send(moveRequest(toA, ns, token));

        assertThat(move.statusCode()).isEqualTo(502);
        assertThat(handingTo(toA, ns, token)).as("the hand-off ended").isEmpty();
        assertThat(view(toA, ns, token).path("owner").asText()).isEqualTo("owner-a");
        assertThat(get(toA, ns, "one").statusCode())
                .as("served on by the old owner")
                .isEqualTo(200);
        return OwnerClient.json(move);
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

    /** Restarts both owners with these admin tokens (null: none). */
    /**
     * An import that landed but whose answer was lost (the first connection to the new owner never
     * answers, as through a link that drops it): the move asks the new owner's view, finds it
     * holding the key at the move's epoch, and goes on; the old owner answers 421, never serving a
     * second copy. Regression (the routing review): the move was called off and both owners took
     * writes of one key, and a later move copied the stale one over an acknowledged write.
     */
    @Test
    void shouldGoOnWhenTheImportLandedButItsAnswerWasLost() throws Exception {
        String ns = namespaceOf("owner-a");
        OwnerClient toA = new OwnerClient(a);
        OwnerClient toB = new OwnerClient(b);
        assertThat(put(toA, ns, "one", "first object").statusCode()).isEqualTo(201);
        try (AnswerDropper link = new AnswerDropper(b.baseUri())) {
            HttpResponse<byte[]> move = toA.send(moveRequest(toA, ns, link.uri()));

            assertThat(move.statusCode())
                    .as(new String(move.body(), StandardCharsets.UTF_8))
                    .isEqualTo(200);
            assertThat(OwnerClient.json(move).path("to").asText()).isEqualTo("owner-b");
            assertThat(link.connections())
                    .as("the import, then the look at b's view")
                    .isGreaterThanOrEqualTo(2);
        }
        HttpResponse<byte[]> atOld = get(toA, ns, "one");
        assertThat(atOld.statusCode()).as("no second writer").isEqualTo(421);
        assertThat(atOld.headers().firstValue("X-Spector-Owner")).hasValue("owner-b");
        assertThat(new String(get(toB, ns, "one").body(), StandardCharsets.UTF_8))
                .isEqualTo("first object");
    }

    /**
     * A TCP relay to {@code target} on a loopback port of its own that never passes back the
     * answer on its first connection (the request goes through whole) and relays the later ones
     * both ways. Each relay thread ends with its sockets.
     */
    private static final class AnswerDropper implements AutoCloseable {
        private final ServerSocket server;
        private final URI target;
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();
        private final AtomicInteger accepted = new AtomicInteger();

        AnswerDropper(URI target) throws IOException {
            this.target = target;
            this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread acceptor = new Thread(this::accept, "answer-dropper");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.getLocalPort());
        }

        int connections() {
            return accepted.get();
        }

        private void accept() {
            try {
                while (!server.isClosed()) {
                    Socket client = server.accept();
                    boolean first = accepted.incrementAndGet() == 1;
                    Socket upstream = new Socket(target.getHost(), target.getPort());
                    sockets.add(client);
                    sockets.add(upstream);
                    pump(client, upstream);
                    if (!first) {
                        pump(upstream, client);
                    }
                }
            } catch (IOException closed) {
                // the test is over
            }
        }

        private static void pump(Socket from, Socket to) {
            Thread t = new Thread(
                    () -> {
                        try {
                            from.getInputStream().transferTo(to.getOutputStream());
                        } catch (IOException ended) {
                            // either side closed
                        }
                    },
                    "answer-dropper-pump");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : sockets) {
                s.close();
            }
        }
    }

    private void restart(@Nullable String tokenA, @Nullable String tokenB) {
        stop();
        a = ReferenceOwner.start(spec("owner-a", tokenA));
        b = ReferenceOwner.start(spec("owner-b", tokenB));
    }

    private static OwnerSpec spec(String node, @Nullable String token) {
        OwnerSpec.Builder spec = OwnerSpec.builder(node).cellId(CELL).ringMembers(MEMBERS);
        if (token != null) {
            spec.adminToken(token);
        }
        return spec.build();
    }

    private HttpRequest moveRequest(OwnerClient c, String ns, String... token) {
        return moveRequest(c, ns, b.baseUri(), token);
    }

    private HttpRequest moveRequest(OwnerClient c, String ns, URI toUrl, String... token) {
        return authorized(c.request("/admin/move"), token)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"tenant\":\"acme\",\"namespace\":\"" + ns
                        + "\",\"to\":\"owner-b\",\"toUrl\":\"" + toUrl + "\"}"))
                .build();
    }

    private static String handingTo(OwnerClient c, String ns, String... token) {
        JsonNode v = view(c, ns, token);
        return v.path("handingTo").isNull() ? "" : v.path("handingTo").asText();
    }

    private static JsonNode view(OwnerClient c, String ns, String... token) {
        try {
            return OwnerClient.json(c.send(authorized(c.request("/admin/ownership?tenant=acme&namespace=" + ns), token)
                    .GET()
                    .build()));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Returns {@code b} with {@code Authorization: Bearer} of the token, if one is given. */
    private static HttpRequest.Builder authorized(HttpRequest.Builder b, String... token) {
        for (String t : token) {
            b.header("Authorization", "Bearer " + t);
        }
        return b;
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
