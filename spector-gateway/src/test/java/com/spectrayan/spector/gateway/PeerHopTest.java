package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.cluster.routing.UplinkHolders;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.owner.ReferenceOwner;
import com.spectrayan.spector.testkit.FakeWorker;
import com.spectrayan.spector.testkit.RedisCommands;
import com.spectrayan.spector.testkit.RedisServerExtension;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Three gateway replicas of one cell in this process, sharing a real {@code redis-server}, with
 * two workers dialled to replica A only: a real {@link WorkerDaemon} ({@code w1}, one link) whose
 * {@code owner} target forwards to a real reference owner, and the testkit's {@link FakeWorker}
 * ({@code fw}), which records the relay as it arrived. Relays sent to B and C reach them through the
 * peer hop (docs/PROTOCOL.md, "The peer hop"); the peer port refuses what is not signed, fresh and
 * a relay; the client port never takes a peer header for authentication; the registry follows the
 * links; and a replica whose Redis is gone still relays to its own links and answers the others
 * 503 at once.
 */
final class PeerHopTest {
    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static final String PEER_SECRET = "peer-secret-of-the-test-cell-0123456789";
    private static final String W1_TOKEN = "w1-token-0123456789-0123456789";
    private static final String FW_TOKEN = "fw-token-0123456789-0123456789";
    private static final String TOKEN_COOKIE = "spector_token";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    private final List<GatewayServer> replicas = new ArrayList<>();
    private ReferenceOwner owner;
    private GatewayServer a;
    private GatewayServer b;
    private GatewayServer c;
    private WorkerDaemon w1;
    private FakeWorker fw;

    @BeforeEach
    void start() throws Exception {
        owner = Cell.soleOwner();
        a = replica();
        b = replica();
        c = replica();
        w1 = WorkerDaemon.builder(uplink(a), "w1", W1_TOKEN, Map.of("owner", owner.baseUri()))
                .uplinks(1)
                .start();
        fw = FakeWorker.dial(
                uplink(a),
                "fw",
                FW_TOKEN,
                Map.of(
                        "app",
                        r -> FakeWorker.Answer.of(200)
                                .header("X-From", "fw")
                                .body("fw " + r.method() + " " + r.pathAndQuery() + " " + r.body().length)));
        Waits.until("both workers' links are in the registry, at replica A", () -> holds(a, "w1") && holds(a, "fw"));
    }

    @AfterEach
    void stop() {
        fw.close();
        w1.close();
        // a replica that still holds links when it stops keeps its peer port open CellPeers.LINGER
        Waits.until(
                "the workers' links at replica A closed",
                () -> a.uplinkChannels().isEmpty());
        for (GatewayServer g : replicas) {
            g.close();
        }
        owner.close();
    }

    @Test
    void shouldRelayThroughThePeerHopWhenTheWorkerDialledAnotherReplica() throws Exception {
        for (GatewayServer via : List.of(b, c)) {
            HttpResponse<String> r = http.send(
                    relay(via, "/relay/fw/app/hello?x=1")
                            .header(SpectorHeaders.LEASE, "l-9")
                            .header("X-Custom", "kept")
                            .header("Cookie", "app=1; " + TOKEN_COOKIE + "=" + Cell.token(Cell.TENANT))
                            .header(SpectorHeaders.PEER_MAC, "forged-by-the-client")
                            .POST(HttpRequest.BodyPublishers.ofString("ping"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());

            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("fw POST /hello?x=1 4");
            assertThat(r.headers().firstValue("X-From")).hasValue("fw");
            FakeWorker.Relayed got = fw.takeRelay();
            assertThat(got.tenant())
                    .as("the tenant of the caller's token, carried by the hop")
                    .isEqualTo(Cell.TENANT);
            assertThat(got.leaseId()).isEqualTo("l-9");
            assertThat(new String(got.body(), StandardCharsets.UTF_8)).isEqualTo("ping");
            assertThat(got.header("X-Custom")).isEqualTo("kept");
            assertThat(got.header("Cookie"))
                    .as("the app's cookie, not the gateway's")
                    .isEqualTo("app=1");
            assertThat(got.header("Authorization"))
                    .as("never the caller's credential")
                    .isNull();
            for (String peer : List.of(
                    SpectorHeaders.PEER_MAC,
                    SpectorHeaders.PEER_TIME,
                    SpectorHeaders.PEER_TENANT,
                    SpectorHeaders.PEER_LEASE)) {
                assertThat(got.header(peer)).as("%s stays on the hop", peer).isNull();
            }
        }
        assertThat(counter(b, "spector_relay_peer_hops_total", "outcome", "forwarded"))
                .isEqualTo(1.0);
        assertThat(counter(c, "spector_relay_peer_hops_total", "outcome", "forwarded"))
                .isEqualTo(1.0);
    }

    @Test
    void shouldStreamAMebibyteEachWayThroughThePeerHop() throws Exception {
        byte[] upload = new byte[1024 * 1024];
        new Random(11).nextBytes(upload);

        HttpResponse<String> echoed = http.send(
                relay(b, "/relay/w1/owner/api/v1/namespaces/peer/echo")
                        .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(upload)))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<byte[]> download = http.send(
                relay(c, "/relay/w1/owner/api/v1/namespaces/peer/stream?bytes=1048576&chunk=65536")
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofByteArray());

        assertThat(echoed.statusCode()).isEqualTo(200);
        JsonNode json = JSON.readTree(echoed.body());
        assertThat(json.get("node").asText()).as("the owner behind the worker").isEqualTo("owner-0");
        assertThat(json.get("bodyBytes").asLong()).as("what the owner received").isEqualTo(upload.length);
        assertThat(json.get("bodySha256").asText())
                .isEqualTo(HexFormat.of()
                        .formatHex(MessageDigest.getInstance("SHA-256").digest(upload)));
        assertThat(download.statusCode()).isEqualTo(200);
        assertThat(download.body()).hasSize(1024 * 1024);
        for (int i = 0; i < download.body().length; i += 4093) {
            assertThat(download.body()[i] & 0xff).as("byte %d", i).isEqualTo(i % 251);
        }
    }

    @Test
    void shouldAnswer503WithinTwoSecondsForAWorkerWithNoLinkAnywhere() throws Exception {
        long started = System.nanoTime();

        HttpResponse<String> r =
                http.send(relay(b, "/relay/nobody/app/x").GET().build(), HttpResponse.BodyHandlers.ofString());

        assertThat(elapsed(started)).isLessThan(PeerHop.UNREACHABLE_WITHIN);
        assertUnreachable(r, "nobody");
        assertThat(r.body()).contains("no live uplink on any gateway of the cell");
        assertThat(counter(b, "spector_relay_peer_hops_total", "outcome", "no-holder"))
                .isEqualTo(1.0);
    }

    @Test
    void shouldAnswer503WithinTwoSecondsWhenTheHolderIsGone() throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = s.getLocalPort();
        }
        try (ServerSocket hanging = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                Socket f1 = new Socket();
                Socket f2 = new Socket()) {
            fillBacklog(hanging, f1, f2); // connects to it now hang: a holder that is there and says nothing
            Map<String, Integer> ghosts = Map.of("refused", closed, "hanging", hanging.getLocalPort());
            for (Map.Entry<String, Integer> ghost : ghosts.entrySet()) {
                String worker = "ghost-" + ghost.getKey();
                long until = System.currentTimeMillis() + 60_000;
                claim(worker, "127.0.0.1:" + ghost.getValue(), 1, until);
                long started = System.nanoTime();

                HttpResponse<String> r = http.send(
                        relay(c, "/relay/" + worker + "/app/x").GET().build(), HttpResponse.BodyHandlers.ofString());

                Duration took = elapsed(started);
                assertThat(took).as(ghost.getKey()).isLessThan(PeerHop.UNREACHABLE_WITHIN);
                if (ghost.getKey().equals("hanging")) {
                    assertThat(took).as("the connect bound ended it").isGreaterThanOrEqualTo(PeerHop.CONNECT_TIMEOUT);
                }
                assertUnreachable(r, worker);
                assertThat(r.body()).contains("the gateway replica holding its uplink (127.0.0.1:" + ghost.getValue());
            }
        }
        assertThat(counter(c, "spector_relay_peer_hops_total", "outcome", "holder-unreachable"))
                .isEqualTo(2.0);
    }

    /**
     * A holder whose link went since the caller looked it up refuses before reading the body (421
     * no-link, RFC 9110 section 15.5.20), and the caller takes the relay, body and all, to the
     * holder that has one: the worker gets it exactly once.
     */
    @Test
    void shouldTakeARelayToAnotherHolderWhenTheFirstHasNoLinkAnymore() throws Exception {
        long until = System.currentTimeMillis() + 60_000;
        // C claims more links than A, so it is asked first, but C holds no link of fw
        claim("fw", address(c), 5, until);

        HttpResponse<String> r = post(b, "/relay/fw/app/once", "body");

        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("fw POST /once 4");
        assertThat(r.headers().firstValue(SpectorHeaders.PEER_REFUSED)).isEmpty();
        assertThat(new String(fw.takeRelay().body(), StandardCharsets.UTF_8)).isEqualTo("body");
        assertThat(fw.received().stream().filter(f -> f.name().equals("relay.request")))
                .as("the worker got the relay once")
                .hasSize(1);
        assertThat(counter(b, "spector_relay_peer_hops_total", "outcome", "retried"))
                .isEqualTo(1.0);
    }

    /**
     * A small upload is read whole before its relay starts ({@code request-buffer-bytes}): should
     * the worker's link move to another replica while the client sends it (a drain, a deploy),
     * the relay finds no link here when the body is in. Nothing of it reached a worker, so the
     * request and the body read so far go on through the peer hop and arrive whole (before: 503
     * with the body in hand). Both framings: a {@code Content-Length} body read whole, and a chunked
     * one that outgrew the buffer (its first 64 KiB read first, the rest streamed through the hop).
     * RFC 9110 section 15.6.4's 503 is for a worker that is nowhere, not one that moved.
     */
    @ParameterizedTest(name = "chunked={0}")
    @ValueSource(booleans = {false, true})
    void aBodyReadFirst_goesThroughThePeerHop_whenTheLinkMovedWhileItWasSent(boolean chunked) throws Exception {
        int length = chunked ? 100_000 : 40_000;
        int first = 20_000;
        byte[] body = new byte[length];
        new Random(11).nextBytes(body);
        String framing = chunked ? "Transfer-Encoding: chunked" : "Content-Length: " + length;
        double budget = replayBudgetAvailable(a);
        try (RawClient client = new RawClient(a.port())) {
            client.send("POST /relay/fw/app/moved HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                    + Cell.token(Cell.TENANT) + "\r\n" + framing + "\r\nExpect: 100-continue\r\n\r\n");
            assertThat(client.readAnyHead().status())
                    .as("the body is wanted at once: it is read first")
                    .isEqualTo(100);
            client.send(chunked ? chunk(body, 0, first) : Arrays.copyOf(body, first));
            Waits.until(
                    "replica A reads the body first (its reserve taken from the replay budget)",
                    () -> replayBudgetAvailable(a) < budget);

            fw.close();
            try (FakeWorker moved = FakeWorker.dial(
                    uplink(b),
                    "fw",
                    FW_TOKEN,
                    Map.of(
                            "app",
                            r -> FakeWorker.Answer.of(200)
                                    .body("moved " + r.method() + " " + r.pathAndQuery() + " " + r.body().length)))) {
                Waits.until("fw's link moved from A to B", () -> holds(b, "fw") && !holds(a, "fw"));

                if (chunked) {
                    // 70 000 bytes: past the buffer, so the relay starts here and finds no link;
                    // the last 30 000 stream through the hop after what A read first.
                    client.send(chunk(body, first, 70_000));
                    client.send(chunk(body, 70_000, length));
                    client.send("0\r\n\r\n");
                } else {
                    client.send(Arrays.copyOfRange(body, first, length));
                }
                RawClient.Response head = client.readAnyHead();
                RawClient.Response r = new RawClient.Response(head.status(), head.headers(), client.readBody(head));

                assertThat(r.status())
                        .as(
                                "one 100 (Continue) only, though the hop's exchange asks for the body again: %s",
                                new String(r.body(), StandardCharsets.UTF_8))
                        .isEqualTo(200);
                assertThat(new String(r.body(), StandardCharsets.UTF_8)).isEqualTo("moved POST /moved " + length);
                assertThat(moved.takeRelay().body())
                        .as("the body reached the worker whole, through B")
                        .isEqualTo(body);
            }
        }
        assertThat(counter(a, "spector_relay_peer_hops_total", "outcome", "forwarded"))
                .isEqualTo(1.0);
        Waits.until("A's reserves all given back", () -> replayBudgetAvailable(a) == budget);
    }

    /**
     * A small upload that enters at a replica without the worker's link is read first there, before
     * the hop takes it to the holder: a slow client holds none of the worker's relay slots at the
     * holder meanwhile, as at the holder itself. Before, the hop streamed it, and eight slow
     * uploads entering elsewhere held the worker's eight slots until the body timeout.
     */
    @Test
    void aSmallUploadEnteringElsewhere_isReadFirstBeforeTheHop() throws Exception {
        byte[] body = "x".repeat(1000).getBytes(StandardCharsets.US_ASCII);
        double budget = replayBudgetAvailable(b);
        try (RawClient client = new RawClient(b.port())) {
            client.send("POST /relay/fw/app/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                    + Cell.token(Cell.TENANT) + "\r\nContent-Length: " + body.length + "\r\n\r\n");
            client.send(Arrays.copyOf(body, 10));
            Waits.until("replica B reads the body first", () -> replayBudgetAvailable(b) < budget);

            assertThat(fw.calls("relay.request"))
                    .as("the worker has not heard of it while its client sends it")
                    .isEmpty();

            client.send(Arrays.copyOfRange(body, 10, body.length));
            RawClient.Response r = client.read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(new String(r.body(), StandardCharsets.UTF_8)).isEqualTo("fw POST /slow 1000");
            assertThat(fw.takeRelay().body()).isEqualTo(body);
        }
        Waits.until("B's reserve given back", () -> replayBudgetAvailable(b) == budget);
    }

    /** One chunk of {@code body}'s bytes {@code from} to {@code to}, as HTTP/1.1 frames it (RFC 9112 §7.1). */
    private static byte[] chunk(byte[] body, int from, int to) {
        byte[] size = (Integer.toHexString(to - from) + "\r\n").getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[size.length + (to - from) + 2];
        System.arraycopy(size, 0, out, 0, size.length);
        System.arraycopy(body, from, out, size.length, to - from);
        out[out.length - 2] = '\r';
        out[out.length - 1] = '\n';
        return out;
    }

    private double replayBudgetAvailable(GatewayServer g) {
        try {
            String text = prometheus(g);
            java.util.regex.Matcher m = java.util.regex.Pattern.compile(
                            "(?m)^spector_forwarder_replay_budget_available_bytes (\\S+)$")
                    .matcher(text);
            return m.find() ? Double.parseDouble(m.group(1)) : -1;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * A holder that takes the connection and resets it before any answer (a replica stopping as the
     * hop reached it): an idempotent relay (RFC 9110 section 9.2.2) goes on to the holder that has
     * a link, as nginx's {@code proxy_next_upstream error} passes it on; a {@code POST}, which the
     * holder may have acted on, is answered 503 and is not sent again.
     */
    @Test
    void shouldTakeAnIdempotentRelayOnWhenTheHolderResetsBeforeItsHead_butNotAPost() throws Exception {
        try (ResettingHolder ghost = new ResettingHolder()) {
            long until = System.currentTimeMillis() + 60_000;
            // the ghost claims more links than A, so it is asked first
            claim("fw", "127.0.0.1:" + ghost.port(), 5, until);

            HttpResponse<String> get =
                    http.send(relay(b, "/relay/fw/app/again").GET().build(), HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> posted = post(b, "/relay/fw/app/once", "body");

            assertThat(get.statusCode()).as(get.body()).isEqualTo(200);
            assertThat(get.body()).isEqualTo("fw GET /again 0");
            assertUnreachable(posted, "fw");
            assertThat(ghost.requestLines())
                    .as("what the resetting holder was sent before it reset")
                    .containsExactly("GET /relay/fw/app/again HTTP/1.1", "POST /relay/fw/app/once HTTP/1.1");
            FakeWorker.Relayed got = fw.takeRelay();
            assertThat(got.method() + " " + got.pathAndQuery()).isEqualTo("GET /again");
            assertThat(fw.received().stream().filter(f -> f.name().equals("relay.request")))
                    .as("the worker got the GET once and never the POST")
                    .hasSize(1);
            assertThat(counter(b, "spector_relay_peer_hops_total", "outcome", "retried"))
                    .isEqualTo(1.0);
        }
    }

    /**
     * While the registry shows a worker's links moving (a replica drains them), a relay with no
     * holder waits for the re-dialled link instead of failing, and is carried once it appears.
     */
    @Test
    void shouldWaitForALinkThatIsMovingAndRelayOnceItAppears() throws Exception {
        String fwField = java.util.Objects.requireNonNull(
                RedisReply.bulk(redis.server().port(), "HGET " + key("fw") + " " + address(a)), "A's field of fw");
        RedisCommands.send(redis.server().port(), "HDEL " + key("fw") + " " + address(a));
        long until = System.currentTimeMillis() + UplinkHolders.MOVING_TTL.toMillis();
        claim("fw", "127.0.0.1:1", 0, until);
        long started = System.nanoTime();

        CompletableFuture<HttpResponse<String>> r =
                http.sendAsync(relay(b, "/relay/fw/app/moved").GET().build(), HttpResponse.BodyHandlers.ofString());
        Waits.until("the relay waits for the moving link", () -> {
            try {
                return counter(b, "spector_relay_peer_hops_total", "outcome", "waited") == 1.0;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(r).as("it waits, it does not fail").isNotDone();
        RedisCommands.send(
                redis.server().port(),
                "HSET " + key("fw") + " " + address(a) + " \"" + fwField.replace("\"", "\\\"") + "\"");

        HttpResponse<String> done = Waits.done(r, "the relay once the link appeared");
        assertThat(done.statusCode()).as(done.body()).isEqualTo(200);
        assertThat(done.body()).isEqualTo("fw GET /moved 0");
        assertThat(elapsed(started)).isLessThan(PeerHop.UNREACHABLE_WITHIN);
    }

    @Test
    void shouldAnswer503AfterTheWaitWhenAMovingLinkNeverAppears() throws Exception {
        long until = System.currentTimeMillis() + UplinkHolders.MOVING_TTL.toMillis();
        claim("gone", "127.0.0.1:1", 0, until);
        long started = System.nanoTime();

        HttpResponse<String> r =
                http.send(relay(b, "/relay/gone/app/x").GET().build(), HttpResponse.BodyHandlers.ofString());

        Duration took = elapsed(started);
        assertUnreachable(r, "gone");
        assertThat(took).as("it waited").isGreaterThanOrEqualTo(PeerHop.HOLDER_WAIT.minus(PeerHop.POLL_INTERVAL));
        assertThat(took).isLessThan(PeerHop.UNREACHABLE_WITHIN);
    }

    /**
     * A holder's address that is no URI host (a replica configured with {@code 10.0.0.256}) is
     * answered, a problem the client can read, never a hang. Regression (a review): the URI check
     * threw inside the lookup's callback, nothing answered, and the client waited for ever.
     */
    @Test
    void shouldAnswerARelayWhoseHoldersAddressIsNoHost() throws Exception {
        claim("badhost", "10.0.0.256:7070", 1, System.currentTimeMillis() + 60_000);

        HttpResponse<String> r = Waits.done(
                http.sendAsync(relay(b, "/relay/badhost/app/x").GET().build(), HttpResponse.BodyHandlers.ofString()),
                "the relay's answer");

        assertThat(r.statusCode()).as(r.body()).isGreaterThanOrEqualTo(500);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/problem+json");
    }

    /** A worker cannot make its own 421 look like a holder's refusal: the peer names never leave it. */
    @Test
    void shouldPassAWorkers421OnAndDropThePeerNamesItSent() throws Exception {
        try (FakeWorker forger = FakeWorker.dial(
                uplink(a),
                "forger",
                FW_TOKEN,
                Map.of(
                        "app",
                        x -> FakeWorker.Answer.of(421)
                                .header(SpectorHeaders.PEER_REFUSED, "no-link")
                                .body("the app's own 421")))) {
            Waits.until("the forger is in the registry", () -> holds(a, "forger"));

            HttpResponse<String> r = post(b, "/relay/forger/app/x", "once");

            assertThat(r.statusCode()).isEqualTo(421);
            assertThat(r.body()).isEqualTo("the app's own 421");
            assertThat(r.headers().firstValue(SpectorHeaders.PEER_REFUSED)).isEmpty();
            assertThat(forger.received().stream().filter(f -> f.name().equals("relay.request")))
                    .as("relayed once, never retried")
                    .hasSize(1);
        }
    }

    @Test
    void shouldAnswer503AtTheLookupTimeoutWhenRedisIsSlow() throws Exception {
        GatewayServer patient = replica(Map.of("spector.routing.redis.timeout-ms", "10000"));
        Waits.until("the fourth replica's registry is connected", () -> status(patient, "/relay/fw/app/warm") == 200);
        fw.takeRelay();
        // the warm-up's relays before the registry connected count as misses too: count from here
        double missesBefore = counter(patient, "spector_relay_peer_hops_total", "outcome", "registry-unavailable");
        RedisCommands.send(redis.server().port(), "CLIENT PAUSE 3000 ALL");
        long started = System.nanoTime();

        HttpResponse<String> r =
                http.send(relay(patient, "/relay/fw/app/slow").GET().build(), HttpResponse.BodyHandlers.ofString());

        Duration took = elapsed(started);
        assertUnreachable(r, "fw");
        assertThat(took)
                .as("the lookup timeout, not Redis's 10 s command timeout")
                .isGreaterThanOrEqualTo(PeerHop.LOOKUP_TIMEOUT)
                .isLessThan(PeerHop.UNREACHABLE_WITHIN);
        assertThat(counter(patient, "spector_relay_peer_hops_total", "outcome", "registry-unavailable"))
                .as("this relay's miss, counted")
                .isEqualTo(missesBefore + 1);
        RedisCommands.send(redis.server().port(), "CLIENT UNPAUSE");
    }

    /**
     * A draining replica's peer listener stays open {@link CellPeers#LINGER} after it withdrew its
     * links from the registry: a hop whose lookup named it just before the withdraw still reaches
     * it and is refused 421 no-link, which its caller takes elsewhere, never reset by the listener
     * closing under it (the race ReplicaProcessesTest once lost). Then the port closes. (The hops
     * ask for a worker A holds no link of: one relayed on a link would be cut by these replicas'
     * drain timeout of 0.)
     */
    @Test
    void shouldKeepTheDrainingHoldersPeerListenerAnsweringForALookupsTime_thenClose() throws Exception {
        String path = "/relay/elsewhere/app/late";
        int peerPort = a.peerPort();
        long began = System.nanoTime();
        Thread stopping = new Thread(a::close, "stop-replica-a");
        stopping.start();
        Waits.until("replica A drains", a::isDraining);
        List<String> answers = new ArrayList<>();

        while (elapsed(began).compareTo(PeerHop.LOOKUP_TIMEOUT) < 0) {
            long now = System.currentTimeMillis() / 1000;
            RawClient.Response r = peerRequest(a, "GET", path, signed("GET", path, now, "acme", PEER_SECRET));
            answers.add(r.status() + " " + r.header(SpectorHeaders.PEER_REFUSED));
        }

        assertThat(answers)
                .as("every hop within a lookup's time of the drain is refused, none cut")
                .isNotEmpty()
                .allMatch("421 no-link"::equals);
        stopping.join(CellPeers.LINGER.plus(GatewayServer.SHUTDOWN_TIMEOUT).toMillis() * 2);
        assertThat(stopping.isAlive()).as("the stop ends, bounded").isFalse();
        try (Socket late = new Socket()) {
            assertThatThrownBy(() -> late.connect(
                            new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), peerPort), 1000))
                    .as("the peer port is closed after the linger")
                    .isInstanceOf(java.net.ConnectException.class);
        }
    }

    @Test
    void shouldRefusePeerRequestsThatAreNotSignedFreshAndARelay() throws Exception {
        long now = System.currentTimeMillis() / 1000;
        String path = "/relay/fw/app/raw?x=1";

        RawClient.Response unsigned = peerRequest(a, "GET", path, Map.of(SpectorHeaders.PEER_TENANT, "acme"));
        RawClient.Response wrong =
                peerRequest(a, "GET", path, signed("GET", path, now, "acme", "another-secret-0123456789-0123456789"));
        RawClient.Response old = peerRequest(a, "GET", path, signed("GET", path, now - 31, "acme", PEER_SECRET));
        RawClient.Response notARelay = peerRequest(
                a, "GET", "/gateway/v1/workers", signed("GET", "/gateway/v1/workers", now, "acme", PEER_SECRET));
        RawClient.Response fresh = peerRequest(a, "GET", path, signed("GET", path, now, "acme", PEER_SECRET));

        assertRefused(unsigned, "missing");
        assertRefused(wrong, "bad-mac");
        assertRefused(old, "stale");
        assertThat(List.of(unsigned, wrong, old))
                .extracting(x -> x.header(SpectorHeaders.PEER_REFUSED))
                .as("each marked as the replica's own refusal, naming its reason")
                .containsExactly("missing", "bad-mac", "stale");
        assertThat(notARelay.status()).as("the peer port serves /relay/ only").isEqualTo(404);
        assertThat(fresh.status()).as("the same request, signed now").isEqualTo(200);
        assertThat(fresh.text()).isEqualTo("fw GET /raw?x=1 0");
        FakeWorker.Relayed got = fw.takeRelay();
        assertThat(got.tenant()).isEqualTo("acme");
        assertThat(fw.received().stream().filter(f -> f.name().equals("relay.request")))
                .as("only the signed one reached the worker")
                .hasSize(1);
        assertThat(counter(a, "spector_relay_peer_refused_total", "reason", "stale"))
                .isEqualTo(1.0);
    }

    /**
     * A holder that refuses this replica's signature (their peer secrets differ: a rotation under
     * way, or a misconfiguration) is the gateway's fault: the client gets 503 {@code
     * WORKER_UNREACHABLE}, never the holder's 401 with {@code WWW-Authenticate} (RFC 9110 §15.5.2:
     * a 401 is about the request's own credentials), which told the client its valid token was bad
     * and made an OAuth client drop it (found by a review). Raw bytes at the edge.
     */
    @Test
    void shouldAnswer503WhenTheHolderRefusesThisReplicasSignature_neverItsOwn401() throws Exception {
        GatewayServer rotated = replica(Map.of("spector.cell.peer-secret", "a-rotated-peer-secret-0123456789-0123"));
        // A new replica's first registry lookup may wait on its Redis connection past the lookup
        // timeout: asked for a worker no one holds until the registry answers.
        await("the new replica's registry answers")
                .atMost(Duration.ofSeconds(10))
                .until(() -> {
                    try (RawClient warm = new RawClient(rotated.port())) {
                        warm.send("GET /relay/nobody/app/x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "
                                + Cell.token(Cell.TENANT) + "\r\n\r\n");
                        return warm.read().text().contains("no live uplink on any gateway");
                    }
                });
        RawClient.Response r;
        try (RawClient client = new RawClient(rotated.port())) {
            client.send("GET /relay/fw/app/hello HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "
                    + Cell.token(Cell.TENANT) + "\r\n\r\n");
            r = client.read();
        }

        assertThat(r.status()).as(r.text()).isEqualTo(503);
        assertThat(r.header("www-authenticate"))
                .as("no challenge: the client's token is good")
                .isEmpty();
        assertThat(r.header(SpectorHeaders.PEER_REFUSED))
                .as("the hop's marker stays on the hop")
                .isEmpty();
        JsonNode problem = JSON.readTree(r.body());
        assertThat(problem.get("code").asText()).isEqualTo("WORKER_UNREACHABLE");
        assertThat(problem.at("/details/workerId").asText()).isEqualTo("fw");
        assertThat(r.text()).contains("refused this replica's peer signature (bad-mac)");
        assertThat(counter(rotated, "spector_relay_peer_hops_total", "outcome", "holder-refused-signature"))
                .isEqualTo(1.0);
        assertThat(counter(a, "spector_relay_peer_refused_total", "reason", "bad-mac"))
                .as("refused at the holder, by its MAC check")
                .isEqualTo(1.0);
        assertThat(fw.received().stream().filter(f -> f.name().equals("relay.request")))
                .as("nothing reached the worker")
                .isEmpty();
    }

    /**
     * A replica caps the hops in flight to one worker at {@link PeerHop#HOPS_PER_RELAY_SLOT} x
     * {@code relay.max-per-worker}: the holder runs max-per-worker of them and queues the rest,
     * each holding one of this replica's connections to it, so one slow worker's relays took the
     * whole pool to that holder and cut every other worker's hops off (found by a review). Past
     * the cap: 503 at once with {@code Retry-After}; another worker's relay through the same
     * holder goes on; the hops come back as their clients go. Raw bytes at the edge.
     */
    @Test
    void shouldCapTheHopsInFlightToOneWorker_andKeepAnotherWorkersHopsGoing() throws Exception {
        // The class's Redis may still hold an earlier test's (closed) replica as a holder of this id.
        RedisCommands.send(redis.server().port(), "DEL " + key("forger"));
        CompletableFuture<Void> release = new CompletableFuture<>();
        FakeWorker slow = FakeWorker.dial(
                uplink(a),
                "forger",
                FW_TOKEN,
                Map.of("app", r -> FakeWorker.Answer.of(200).holdHead(release)));
        List<RawClient> held = new ArrayList<>();
        try {
            Waits.until("the slow worker's link is in the registry, at replica A", () -> holds(a, "forger"));
            GatewayServer entry = replica(Map.of("spector.uplink.relay.max-per-worker", "1"));
            int cap = PeerHop.HOPS_PER_RELAY_SLOT;
            String auth = "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n";
            for (int i = 0; i < cap; i++) {
                RawClient c = new RawClient(entry.port());
                held.add(c);
                c.send("GET /relay/forger/app/held-" + i + " HTTP/1.1\r\nHost: gw\r\n" + auth + "\r\n");
            }
            Waits.until(
                    "the cap's hops reached the slow worker",
                    () -> slow.received().stream()
                                    .filter(f -> f.name().equals("relay.request"))
                                    .count()
                            == cap);
            assertThat(entry.peerHopsInFlight("forger")).isEqualTo(cap);

            long started = System.nanoTime();
            RawClient.Response past;
            try (RawClient c = new RawClient(entry.port())) {
                c.send("GET /relay/forger/app/one-past HTTP/1.1\r\nHost: gw\r\n" + auth + "\r\n");
                past = c.read();
            }
            assertThat(past.status()).as(past.text()).isEqualTo(503);
            assertThat(elapsed(started)).as("at once").isLessThan(Duration.ofSeconds(1));
            assertThat(past.header("retry-after")).isEqualTo("1");
            assertThat(JSON.readTree(past.body()).at("/details/reason").asText())
                    .isEqualTo(PeerHop.HOPS_FULL);
            assertThat(counter(entry, "spector_relay_peer_hops_total", "outcome", "hops-full"))
                    .isEqualTo(1.0);

            RawClient.Response other;
            try (RawClient c = new RawClient(entry.port())) {
                c.send("GET /relay/fw/app/other HTTP/1.1\r\nHost: gw\r\n" + auth + "\r\n");
                other = c.read();
            }
            assertThat(other.status()).as("another worker, same holder").isEqualTo(200);
            assertThat(other.text()).isEqualTo("fw GET /other 0");

            for (RawClient c : held) {
                c.close();
            }
            held.clear();
            Waits.until("the hops come back as their clients go", () -> entry.peerHopsInFlight("forger") == 0);
        } finally {
            release.complete(null);
            for (RawClient c : held) {
                c.close();
            }
            slow.close();
        }
    }

    /**
     * A replica writes its head whole, so the peer port gives a head at most {@link
     * GatewayHandler#PEER_HEADER_TIMEOUT} (2 s), whatever {@code header-timeout} says for clients
     * (30 s here): a review held every peer connection with half-sent heads, and every hop to the
     * replica failed for as long. Answered 408 (RFC 9110 §15.5.9), then closed; the client port
     * still gives its clients their time.
     */
    @Test
    void shouldAnswer408ToAHalfSentHeadOnThePeerPortWithinItsOwnTimeout() throws Exception {
        long started = System.nanoTime();
        RawClient.Response r;
        try (RawClient half = new RawClient(a.peerPort());
                RawClient client = new RawClient(a.port())) {
            client.send("GET /actuator/health HTTP/1.1\r\nHost: gw\r\n"); // half a head, on the client port
            half.send("GET /relay/fw/app/slow HTTP/1.1\r\nHost: peer\r\n");
            r = half.read();
            assertThat(elapsed(started))
                    .as("within the peer port's own head timeout")
                    .isGreaterThanOrEqualTo(GatewayHandler.PEER_HEADER_TIMEOUT)
                    .isLessThan(GatewayHandler.PEER_HEADER_TIMEOUT.plusSeconds(3));
            client.send("\r\n"); // its head ends well past the peer port's timeout
            assertThat(client.read().status())
                    .as("the client port's head, at its own pace")
                    .isEqualTo(200);
        }
        assertThat(r.status()).isEqualTo(408);
    }

    /**
     * A rotation under way: a replica whose secret is the next one and whose {@code
     * spector.cell.peer-secret-previous} is the cell's current one takes hops signed with either
     * (PROTOCOL section 8): a replica not yet rotated is not refused. A third key is.
     */
    @Test
    void shouldTakeHopsSignedWithThePreviousSecretDuringARotation() throws Exception {
        String next = "the-next-peer-secret-0123456789-012345";
        GatewayServer rotating =
                replica(Map.of("spector.cell.peer-secret", next, "spector.cell.peer-secret-previous", PEER_SECRET));
        long now = System.currentTimeMillis() / 1000;
        String path = "/relay/fw/app/raw";

        RawClient.Response byCurrent =
                peerRequest(rotating, "GET", path, signed("GET", path, now, "acme", PEER_SECRET));
        RawClient.Response byNext = peerRequest(rotating, "GET", path, signed("GET", path, now, "acme", next));
        RawClient.Response byThird = peerRequest(
                rotating, "GET", path, signed("GET", path, now, "acme", "a-third-peer-secret-0123456789-01234"));

        // Past the MAC check, this replica holds no link of fw: its own 421, which a signer takes elsewhere.
        assertThat(List.of(byCurrent, byNext))
                .allSatisfy(r -> assertThat(r.status()).as(r.text()).isEqualTo(421));
        assertRefused(byThird, "bad-mac");
    }

    /**
     * OPERATIONS "X-Request-Id": an id is taken only from a replica, so on the peer port only from
     * a signed hop. Regression: anyone who reached the peer port set the id of its own refusal.
     */
    @Test
    void shouldTakeTheRequestIdOnThePeerPortOnlyFromASignedHop() throws Exception {
        long now = System.currentTimeMillis() / 1000;
        String path = "/relay/fw/app/raw";
        Map<String, String> unsigned = Map.of(SpectorHeaders.PEER_TENANT, "acme", "X-Request-Id", "chosen-by-anyone");
        Map<String, String> signed = new java.util.HashMap<>(signed("GET", path, now, "acme", PEER_SECRET));
        signed.put("X-Request-Id", "set-by-a-replica");

        RawClient.Response refused = peerRequest(a, "GET", path, unsigned);
        RawClient.Response served = peerRequest(a, "GET", path, signed);

        assertThat(refused.status()).isEqualTo(401);
        assertThat(refused.header("X-Request-Id")).as("a generated id").matches("[0-9a-f]{32}");
        assertThat(JSON.readTree(refused.body()).get("requestId").asText()).isEqualTo(refused.header("X-Request-Id"));
        assertThat(served.status()).isEqualTo(200);
        assertThat(served.header("X-Request-Id")).isEqualTo("set-by-a-replica");
        assertThat(fw.takeRelay().header("X-Request-Id")).isEqualTo("set-by-a-replica");
    }

    /**
     * The peer port is bounded as the client port is ({@code max-connections}, counted apart):
     * anyone who reaches it can open sockets, and each would hold a file until its idle timeout.
     * At the limit an idle one makes room (when none is idle the new one is closed, as on the client
     * port: ConnectionLimitTest). Regression: 60 idle sockets on a replica capped at 6 were all held.
     */
    @Test
    void shouldBoundThePeerPortsConnections() throws Exception {
        GatewayServer capped = replica(Map.of("spector.server.max-connections", "2"));
        String health = "GET /relay/fw/app/x HTTP/1.1\r\nHost: x\r\n\r\n";
        try (RawClient first = new RawClient(capped.peerPort());
                RawClient second = new RawClient(capped.peerPort())) {
            assertThat(first.send(health).read().status())
                    .as("unsigned: refused, kept alive")
                    .isEqualTo(401);
            assertThat(second.send(health).read().status()).isEqualTo(401);
            try (RawClient third = new RawClient(capped.peerPort())) {
                assertThat(third.send(health).read().status())
                        .as("an idle one made room")
                        .isEqualTo(401);
            }
            assertThat(first.closedByServer() || second.closedByServer())
                    .as("one idle connection closed for the newcomer")
                    .isTrue();
        }
        Waits.until("the gateway holds at most its limit", () -> capped.peerConnections() <= 2);
    }

    @Test
    void shouldNeverTakePeerHeadersAsAuthenticationOnTheClientPort() throws Exception {
        long now = System.currentTimeMillis() / 1000;
        String path = "/relay/fw/app/raw";
        Map<String, String> valid = signed("GET", path, now, "acme", PEER_SECRET);

        RawClient.Response r;
        try (RawClient client = new RawClient(a.port())) {
            r = client.send(rawHead("GET", path, a.port(), valid)).read();
        }

        assertThat(r.status())
                .as("a valid MAC on the client port is no credential")
                .isEqualTo(401);
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("UNAUTHENTICATED");
        assertThat(fw.received().stream().filter(f -> f.name().equals("relay.request")))
                .as("nothing reached the worker")
                .isEmpty();
    }

    @Test
    void shouldPublishTheLinkInTheRegistryAndWithdrawItWhenTheWorkerCloses() throws Exception {
        assertThat(holders("w1")).as("A alone holds w1").containsExactly(address(a));
        RedisCommands.send(redis.server().port(), "HDEL " + key("w1") + " " + address(a));
        long deleted = System.nanoTime();
        Waits.until("the refresh writes the field again", () -> holds(a, "w1"));
        assertThat(elapsed(deleted))
                .as("within one refresh interval, and a margin")
                .isLessThan(UplinkHolders.REFRESH_INTERVAL.plusSeconds(1));

        w1.close();

        Waits.until("w1's field goes with its link", () -> holders("w1").isEmpty());
        HttpResponse<String> r =
                http.send(relay(b, "/relay/w1/owner/x").GET().build(), HttpResponse.BodyHandlers.ofString());
        assertUnreachable(r, "w1");

        a.close(); // the drain: what this replica published becomes a moving field
        String field = RedisReply.bulk(redis.server().port(), "HGET " + key("fw") + " " + address(a));
        assertThat(field).as("A's field of fw when close() returns").isNotNull();
        JsonNode moving = JSON.readTree(field);
        assertThat(moving.get("links").asInt())
                .as("A's field of fw when close() returns: moving, no links (%s)", field)
                .isZero();
        assertThat(moving.get("until").asLong() - System.currentTimeMillis())
                .as("believed for at most MOVING_TTL")
                .isLessThanOrEqualTo(UplinkHolders.MOVING_TTL.toMillis());
    }

    /**
     * A removal Redis refused is tried again by the next refresh, so the field of a worker whose
     * last link here closed goes within an interval of Redis taking removals again, not at its own
     * expiry ({@link UplinkHolders#FIELD_TTL}). Regression: the replica forgot the worker before its
     * removal succeeded, and a hop to it met a stale holder for up to ten seconds.
     */
    @Test
    void shouldTryAFailedRemovalAgainAtTheNextRefresh() throws Exception {
        assertThat(holders("w1")).as("A alone holds w1").containsExactly(address(a));
        long refusedBefore = rejectedRemovals();
        RedisCommands.send(redis.server().port(), "ACL SETUSER default -hdel");
        try {
            w1.close();
            Waits.until("A's removal of w1's field is refused", () -> rejectedRemovals() > refusedBefore);
        } finally {
            RedisCommands.send(redis.server().port(), "ACL SETUSER default +hdel");
        }
        assertThat(holds(a, "w1")).as("the refused removal left the field").isTrue();
        long allowed = System.nanoTime();

        Waits.until("the next refresh removes w1's field", () -> holders("w1").isEmpty());

        assertThat(elapsed(allowed))
                .as("within one refresh interval, and a margin")
                .isLessThan(UplinkHolders.REFRESH_INTERVAL.plusSeconds(1));
    }

    /** Redis's count of HDEL commands it refused (INFO commandstats, rejected_calls). */
    private static long rejectedRemovals() {
        String stats = String.valueOf(RedisReply.bulk(redis.server().port(), "INFO commandstats"));
        for (String line : stats.lines().toList()) {
            if (line.startsWith("cmdstat_hdel:")) {
                for (String part : line.substring("cmdstat_hdel:".length()).split(",", -1)) {
                    if (part.startsWith("rejected_calls=")) {
                        return Long.parseLong(part.substring("rejected_calls=".length()));
                    }
                }
            }
        }
        return 0;
    }

    @Test
    void shouldRelayToOwnLinksAndAnswer503QuicklyWhenRedisIsDown() throws Exception {
        redis.stop();

        HttpResponse<String> own =
                http.send(relay(a, "/relay/fw/app/own").GET().build(), HttpResponse.BodyHandlers.ofString());
        long started = System.nanoTime();
        HttpResponse<String> other =
                http.send(relay(b, "/relay/fw/app/other").GET().build(), HttpResponse.BodyHandlers.ofString());

        assertThat(own.statusCode()).as("A relays to its own link").isEqualTo(200);
        assertThat(own.body()).isEqualTo("fw GET /own 0");
        assertThat(elapsed(started)).isLessThan(PeerHop.UNREACHABLE_WITHIN);
        assertUnreachable(other, "fw");
        assertThat(other.body()).contains("the cell's uplink registry did not answer");
        assertThat(counter(b, "spector_relay_peer_hops_total", "outcome", "registry-unavailable"))
                .as("the miss is counted")
                .isEqualTo(1.0);
    }

    // ---- the cell ----

    private GatewayServer replica() {
        return replica(Map.of());
    }

    private GatewayServer replica(Map<String, String> extra) {
        Map<String, String> props = Cell.replicaSettings(owner, redis.uri(), PEER_SECRET);
        props.put("spector.server.port", "0");
        props.put("spector.server.drain-timeout", "0s");
        props.put("spector.server.peer-port", "0");
        props.put("spector.server.peer-address", "127.0.0.1");
        props.put("spector.security.jwt.cookie-name", TOKEN_COOKIE);
        props.put(
                "spector.uplink.tokens",
                "w1=" + TokenHashes.sha256Hex(W1_TOKEN) + ",fw=" + TokenHashes.sha256Hex(FW_TOKEN) + ",forger="
                        + TokenHashes.sha256Hex(FW_TOKEN));
        props.putAll(extra);
        GatewayServer g = GatewayServer.start(GatewaySettings.load(null, Map.of(), props));
        replicas.add(g);
        return g;
    }

    private static URI uplink(GatewayServer g) {
        return URI.create("ws://127.0.0.1:" + g.port() + "/uplink");
    }

    private static String address(GatewayServer g) {
        return "127.0.0.1:" + g.peerPort();
    }

    /** POSTs {@code body} to {@code pathAndQuery} through {@code via}, as a tenant's client would. */
    private HttpResponse<String> post(GatewayServer via, String pathAndQuery, String body) throws Exception {
        return http.send(
                relay(via, pathAndQuery)
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static HttpRequest.Builder relay(GatewayServer via, String pathAndQuery) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + via.port() + pathAndQuery))
                .timeout(Cell.REQUEST_TIMEOUT)
                .header("Authorization", "Bearer " + Cell.token(Cell.TENANT));
    }

    private static boolean holds(GatewayServer g, String worker) {
        return RedisCommands.send(redis.server().port(), "HEXISTS " + key(worker) + " " + address(g))
                .equals(":1");
    }

    /**
     * Writes {@code holder}'s field of {@code worker} in the registry as a replica writes it
     * (docs/PROTOCOL.md, "The peer hop"): {@code links} links, valid until {@code untilMillis}; 0
     * links is a moving field.
     */
    private static void claim(String worker, String holder, int links, long untilMillis) {
        RedisCommands.send(
                redis.server().port(),
                "HSET " + key(worker) + " " + holder + " \"{\\\"links\\\":" + links + ",\\\"until\\\":" + untilMillis
                        + "}\"");
    }

    private static String key(String worker) {
        return "spector:" + Cell.CELL_ID + ":uplinks:" + worker;
    }

    /** Returns the replicas that have a field for {@code worker}, of the three. */
    private List<String> holders(String worker) {
        List<String> out = new ArrayList<>();
        for (GatewayServer g : replicas) {
            if (holds(g, worker)) {
                out.add(address(g));
            }
        }
        return out;
    }

    /** Sends a relayed GET and returns its status (for a wait's condition). */
    private int status(GatewayServer via, String pathAndQuery) {
        try {
            return http.send(relay(via, pathAndQuery).GET().build(), HttpResponse.BodyHandlers.discarding())
                    .statusCode();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static Duration elapsed(long startedNanos) {
        return Duration.ofNanos(System.nanoTime() - startedNanos);
    }

    private static void assertUnreachable(HttpResponse<String> r, String worker) throws IOException {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
        JsonNode problem = JSON.readTree(r.body());
        assertThat(problem.get("code").asText()).isEqualTo("WORKER_UNREACHABLE");
        assertThat(problem.at("/details/workerId").asText()).isEqualTo(worker);
    }

    private static void assertRefused(RawClient.Response r, String reason) throws IOException {
        assertThat(r.status()).as(r.text()).isEqualTo(401);
        JsonNode problem = JSON.readTree(r.body());
        assertThat(problem.get("code").asText()).isEqualTo("UNAUTHENTICATED");
        assertThat(problem.at("/details/reason").asText()).isEqualTo(reason);
    }

    /** Reads a counter from the replica's {@code /actuator/prometheus}, 0 when absent. */
    private double counter(GatewayServer g, String name, String tag, String value) throws Exception {
        return Cell.counter(prometheus(g), name, tag, value);
    }

    /** Returns the replica's {@code /actuator/prometheus} text. */
    private String prometheus(GatewayServer g) throws IOException, InterruptedException {
        return http.send(
                        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.port() + "/actuator/prometheus"))
                                .timeout(Cell.REQUEST_TIMEOUT)
                                .build(),
                        HttpResponse.BodyHandlers.ofString())
                .body();
    }

    // ---- the peer port, by hand, from docs/PROTOCOL.md ----

    /** The peer headers of docs/PROTOCOL.md, computed here from the documented formula. */
    private static Map<String, String> signed(
            String method, String pathAndQuery, long time, String tenant, String secret) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        String input = method + "\n" + pathAndQuery + "\n" + tenant + "\n" + "" + "\n" + time;
        String sum = java.util.Base64.getUrlEncoder()
                .withoutPadding()
                .encodeToString(mac.doFinal(input.getBytes(StandardCharsets.UTF_8)));
        return Map.of(
                SpectorHeaders.PEER_TIME, Long.toString(time),
                SpectorHeaders.PEER_TENANT, tenant,
                SpectorHeaders.PEER_MAC, sum);
    }

    private static RawClient.Response peerRequest(
            GatewayServer g, String method, String pathAndQuery, Map<String, String> headers) throws IOException {
        try (RawClient client = new RawClient(g.peerPort())) {
            return client.send(rawHead(method, pathAndQuery, g.peerPort(), headers))
                    .read();
        }
    }

    private static String rawHead(String method, String pathAndQuery, int port, Map<String, String> headers) {
        StringBuilder head = new StringBuilder(method + " " + pathAndQuery + " HTTP/1.1\r\n");
        head.append("Host: 127.0.0.1:").append(port).append("\r\n");
        headers.forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
        return head.append("Connection: close\r\n\r\n").toString();
    }

    /**
     * A holder that accepts each connection, reads the request head and resets the connection
     * (RST: {@code SO_LINGER} 0) without an answer; it records each request line.
     */
    private static final class ResettingHolder implements AutoCloseable {
        private static final int MAX_HEAD = 16 * 1024;
        private final ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        private final List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();
        private final Thread acceptor = new Thread(this::run, "resetting-holder");

        ResettingHolder() throws IOException {
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return server.getLocalPort();
        }

        List<String> requestLines() {
            return List.copyOf(lines);
        }

        private void run() {
            while (!server.isClosed()) {
                try (Socket s = server.accept()) {
                    s.setSoTimeout((int) Cell.REQUEST_TIMEOUT.toMillis());
                    StringBuilder head = new StringBuilder();
                    java.io.InputStream in = s.getInputStream();
                    while (head.length() < MAX_HEAD && head.indexOf("\r\n\r\n") < 0) {
                        int b = in.read();
                        if (b < 0) {
                            break;
                        }
                        head.append((char) b);
                    }
                    lines.add(head.substring(0, Math.max(0, head.indexOf("\r\n"))));
                    s.setSoLinger(true, 0); // the close sends RST
                } catch (IOException e) {
                    return; // closed
                }
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }

    /** Fills a listener's accept queue (it never accepts), so a further connect hangs. */
    private static void fillBacklog(ServerSocket server, Socket... fillers) {
        for (Socket s : fillers) {
            try {
                s.connect(server.getLocalSocketAddress(), 200);
            } catch (IOException e) {
                return; // full already
            }
        }
    }
}
