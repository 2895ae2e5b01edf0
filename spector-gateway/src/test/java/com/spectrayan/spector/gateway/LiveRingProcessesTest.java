package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.PublishedRing;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.RecordedRequest;
import com.spectrayan.spector.owner.ReferenceOwner;
import com.spectrayan.spector.testkit.RedisCommands;
import com.spectrayan.spector.testkit.RedisServer;
import com.spectrayan.spector.testkit.Waits;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13's live ring over real processes: three gateways, each its own JVM ({@link
 * GatewayProcess}), and four reference owners, all sharing one real {@code redis-server}. The
 * gateways start on the configured ring of owner-0..2 at epoch 1; owner-3 runs but is no member.
 * The tests run in order on one cell: a ring with owner-3 published at epoch 2 reaches every
 * gateway within a second and its keys land on owner-3; an equal or older epoch is refused and
 * changes nothing; a gateway restarted after the publication starts on it; Redis stopped keeps
 * the last ring and every gateway keeps serving.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
final class LiveRingProcessesTest {
    private static final String PEER_SECRET = "peer-secret-of-the-live-ring-cell-0123456789";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The bound: every gateway of the cell uses a new ring within 1 s of its publication. */
    private static final Duration PROPAGATION = Duration.ofSeconds(1);

    /** The bound on one request in these tests. */
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);

    /** The bound on the cell settling (the gateways' subscriptions confirmed). */
    private static final Duration SETTLE = Duration.ofSeconds(20);

    private static final List<String> OLD_IDS = List.of("owner-0", "owner-1", "owner-2");
    private static final List<String> NEW_IDS = List.of("owner-0", "owner-1", "owner-2", "owner-3");

    @TempDir
    static Path dir;

    private static RedisServer redis;
    private static final Map<String, ReferenceOwner> owners = new LinkedHashMap<>();
    private static final List<GatewayProcess> gateways = new ArrayList<>();
    private static final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2))
            .build();

    /** A namespace that owner-3 owns on the new ring, and that another owner owned on the old one. */
    private static String moved = "";

    /** Its owner on the old ring. */
    private static String oldOwner = "";

    @BeforeAll
    static void start() throws IOException {
        redis = RedisServer.onFreePort().start();
        for (int i = 0; i < 4; i++) {
            String id = "owner-" + i;
            owners.put(
                    id,
                    ReferenceOwner.start(OwnerSpec.builder(id)
                            .cellId(Cell.CELL_ID)
                            .ringMembers(OLD_IDS) // owner-3 too: the cell's ring before the publication
                            .ringEpoch(1)
                            .redisUri(redis.uri())
                            .hmacSecret(Cell.SECRET.getBytes(StandardCharsets.UTF_8))
                            .build()));
        }
        KetamaRing before = KetamaRing.of(1, OLD_IDS);
        KetamaRing after = KetamaRing.of(2, NEW_IDS);
        for (int n = 0; moved.isEmpty(); n++) {
            String key = Cell.TENANT + "/live-" + n;
            if (after.ownerOf(key).equals("owner-3")) {
                moved = "live-" + n;
                oldOwner = before.ownerOf(key);
            }
        }
        Map<String, String> settings = new HashMap<>();
        settings.put("spector.cell.role", "gateway");
        settings.put("spector.cell.id", Cell.CELL_ID);
        settings.put(
                "spector.cell.ring-members",
                OLD_IDS.stream().map(id -> id + "=" + owner(id).baseUri()).collect(Collectors.joining(",")));
        settings.put("spector.cell.ring-epoch", "1");
        settings.put("spector.cell.peer-secret", PEER_SECRET);
        settings.put("spector.server.host", "127.0.0.1");
        settings.put("spector.routing.redis.enabled", "true");
        settings.put("spector.routing.redis.uri", redis.uri());
        settings.put("spector.security.jwt.hmac-secret", Cell.SECRET);
        gateways.addAll(GatewayProcess.startReplicas(3, settings, dir));
    }

    @AfterAll
    static void stop() {
        try {
            for (GatewayProcess g : gateways) {
                g.close();
            }
            owners.values().forEach(ReferenceOwner::close);
        } finally {
            if (redis != null) {
                redis.stop();
            }
        }
        List<GatewayProcess> ran = List.copyOf(gateways);
        gateways.clear();
        owners.clear();
        for (GatewayProcess g : ran) {
            GatewayProcess.assertNoLeakIn(g);
        }
    }

    @Test
    @Order(1)
    void aRingPublishedWithAFourthOwnerReachesEveryGatewayWithinOneSecondAndItsKeysLandThere() throws Exception {
        for (GatewayProcess g : gateways) {
            JsonNode ring = status(g).get("ring");
            assertThat(ring.get("epoch").asLong()).isEqualTo(1);
            assertThat(ring.get("source").asText()).as("nothing published yet").isEqualTo("config");
            // warm each gateway's L1 with the old ring's answer for the moved namespace
            assertThat(echo(g, moved).statusCode()).isEqualTo(200);
        }
        assertThat(served(oldOwner, moved)).hasSize(3);
        awaitSubscribers(gateways.size() + owners.size());

        long published = System.nanoTime();
        long receivers = PublishedRing.publish(redis.uri(), Cell.CELL_ID, newRing(2), Clock.systemUTC());
        await().atMost(PROPAGATION)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> gateways.stream().allMatch(g -> ringEpoch(g) == 2));
        long tookMs = (System.nanoTime() - published) / 1_000_000;
        System.out.println("LiveRingProcessesTest: the ring reached all three gateways in " + tookMs + " ms");

        assertThat(receivers).as("every gateway and owner was subscribed").isEqualTo(7);
        for (GatewayProcess g : gateways) {
            JsonNode ring = status(g).get("ring");
            assertThat(ring.get("source").asText()).isEqualTo("redis");
            assertThat(memberIds(ring)).containsExactlyElementsOf(NEW_IDS);
            assertThat(ring.get("members").get(3).get("url").asText())
                    .isEqualTo(owner("owner-3").baseUri().toString());
            assertThat(get(g, "/actuator/prometheus").body()).contains("spector_ring_epoch{source=\"redis\"} 2.0");
        }
        await().atMost(PROPAGATION)
                .until(() ->
                        owners.values().stream().allMatch(o -> o.guard().ring().epoch() == 2));

        for (GatewayProcess g : gateways) {
            HttpResponse<String> r = echo(g, moved);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(r.headers().firstValue(SpectorHeaders.NODE)).hasValue("owner-3");
        }
        List<RecordedRequest> onNew = served("owner-3", moved);
        assertThat(onNew).as("owner-3 received the moved namespace's requests").hasSize(3);
        assertThat(onNew).allSatisfy(q -> {
            assertThat(q.status()).isEqualTo(200);
            assertThat(q.header(SpectorHeaders.EPOCH)).isEqualTo("2");
        });
        assertThat(served(oldOwner, moved))
                .as("the L1 entries of epoch 1 went with the swap: nothing went to the old owner first")
                .hasSize(3);
    }

    @Test
    @Order(2)
    void theOldOwnerAnswers421WithTheNewOwnerAndEpoch() throws Exception {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(owner(oldOwner).baseUri().resolve("/api/v1/namespaces/" + moved + "/echo"))
                        .timeout(REQUEST_TIMEOUT)
                        .header("Authorization", "Bearer " + Cell.token(Cell.TENANT))
                        .header(SpectorHeaders.TENANT, Cell.TENANT)
                        .header(SpectorHeaders.EPOCH, "1")
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(r.statusCode()).as(r.body()).isEqualTo(421);
        assertThat(r.headers().firstValue(SpectorHeaders.OWNER)).hasValue("owner-3");
        assertThat(r.headers().firstValue(SpectorHeaders.EPOCH)).hasValue("2");
    }

    @Test
    @Order(3)
    void anEqualOrOlderEpochIsRefusedAndEveryGatewayStaysOnTheRing() throws Exception {
        for (long epoch : new long[] {2, 1}) {
            assertThatThrownBy(() -> PublishedRing.publish(
                            redis.uri(),
                            Cell.CELL_ID,
                            CellRing.of(
                                    epoch, Map.of("owner-0", owner("owner-0").baseUri()), CellRing.Source.REDIS),
                            Clock.systemUTC()))
                    .isInstanceOf(SpectorException.class)
                    .hasMessageContaining("epoch: " + epoch + " (expected: > 2");
        }
        for (GatewayProcess g : gateways) {
            JsonNode ring = status(g).get("ring");
            assertThat(ring.get("epoch").asLong()).isEqualTo(2);
            assertThat(memberIds(ring)).containsExactlyElementsOf(NEW_IDS);
        }
    }

    @Test
    @Order(4)
    void aGatewayRestartedAfterThePublicationStartsOnThePublishedRing() throws Exception {
        GatewayProcess g = gateways.get(0);
        g.kill();
        int before = served("owner-3", moved).size();

        g.awaitReady(g.start());

        JsonNode ring = status(g).get("ring");
        assertThat(ring.get("epoch").asLong()).as("at once, when it is ready").isEqualTo(2);
        assertThat(ring.get("source").asText()).isEqualTo("redis");
        assertThat(memberIds(ring)).containsExactlyElementsOf(NEW_IDS);
        int oldBefore = served(oldOwner, moved).size();
        HttpResponse<String> r = echo(g, moved);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(served("owner-3", moved)).hasSize(before + 1);
        assertThat(served(oldOwner, moved)).as("straight to owner-3").hasSize(oldBefore);
    }

    @Test
    @Order(5)
    void redisStoppedKeepsTheLastRingAndEveryGatewayKeepsServing() throws Exception {
        redis.stop();

        int before = served("owner-3", moved).size();
        for (GatewayProcess g : gateways) {
            HttpResponse<String> r = echo(g, moved);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode ring = status(g).get("ring");
            assertThat(ring.get("epoch").asLong()).isEqualTo(2);
            assertThat(ring.get("source").asText()).isEqualTo("redis");
            // Lettuce notices the lost connection on its own time: wait for it, bounded.
            Waits.until("gateway " + g + " reports Redis disconnected", () -> {
                try {
                    return !status(g).at("/redis/connected").asBoolean();
                } catch (Exception e) {
                    throw new AssertionError("status of " + g, e);
                }
            });
        }
        assertThat(served("owner-3", moved)).hasSize(before + 3);
        assertThat(owners.values())
                .allSatisfy(o -> assertThat(o.guard().ring().epoch()).isEqualTo(2));
    }

    // ---- the cell ----

    private static ReferenceOwner owner(String id) {
        return java.util.Objects.requireNonNull(owners.get(id), id);
    }

    private static CellRing newRing(long epoch) {
        Map<String, URI> members = new LinkedHashMap<>();
        for (String id : NEW_IDS) {
            members.put(id, owner(id).baseUri());
        }
        return CellRing.of(epoch, members, CellRing.Source.REDIS);
    }

    /**
     * Waits until {@code n} processes are subscribed to the announcement channel: an announcement
     * of nothing reaches {@code n} (each reads the ring again, and finds it unchanged).
     */
    private static void awaitSubscribers(int n) {
        String channel = PublishedRing.channel(Cell.CELL_ID);
        await().atMost(SETTLE)
                .until(() -> RedisCommands.send(redis.port(), "PUBLISH " + channel + " 0")
                        .equals(":" + n));
    }

    /** Returns what owner {@code id} recorded for the echo of {@code namespace}. */
    private static List<RecordedRequest> served(String id, String namespace) {
        return owner(id).requests().stream()
                .filter(q -> namespace.equals(q.namespace()) && q.path().endsWith("/echo"))
                .toList();
    }

    private static List<String> memberIds(JsonNode ring) {
        List<String> ids = new ArrayList<>();
        ring.get("members").forEach(m -> ids.add(m.get("id").asText()));
        return ids;
    }

    /** Returns the ring epoch a gateway reports, or -1 when it does not answer (for a wait). */
    private static long ringEpoch(GatewayProcess g) {
        try {
            return status(g).at("/ring/epoch").asLong(-1);
        } catch (IOException | UncheckedIOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private static JsonNode status(GatewayProcess g) throws IOException, InterruptedException {
        HttpResponse<String> r = get(g, GatewayStatus.PATH);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    private static HttpResponse<String> echo(GatewayProcess g, String namespace)
            throws IOException, InterruptedException {
        return get(g, "/api/v1/namespaces/" + namespace + "/echo");
    }

    private static HttpResponse<String> get(GatewayProcess g, String pathAndQuery)
            throws IOException, InterruptedException {
        return http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.port + pathAndQuery))
                        .timeout(REQUEST_TIMEOUT)
                        .header(
                                "Authorization",
                                "Bearer "
                                        + (pathAndQuery.equals(GatewayStatus.PATH)
                                                ? Cell.adminToken()
                                                : Cell.token(Cell.TENANT)))
                        .GET()
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
