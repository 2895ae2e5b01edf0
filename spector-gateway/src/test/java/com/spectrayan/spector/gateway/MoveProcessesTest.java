package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.ReferenceOwner;
import com.spectrayan.spector.testkit.RedisServer;
import com.spectrayan.spector.testkit.Waits;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13's zero-error move over real processes: two gateway replicas, each its own JVM ({@link
 * GatewayProcess}), three reference owners and one real {@code redis-server}. A client loop writes
 * objects to one namespace at a steady rate through both gateways while the namespace moves from
 * its owner to another ({@code POST /admin/move}, what {@code spector move} calls): no client
 * error, every acknowledged write readable afterwards from the new owner with its hash, and the
 * slowest request that overlapped the move at most the hand-off time the owner measured plus
 * {@link #SLACK}.
 *
 * <p>With {@value #REPORT_PROPERTY} set, the run's numbers go to that file ({@code bench/move.sh}).
 */
final class MoveProcessesTest {
    /** The bound on the slowest request beyond the hand-off time. */
    static final Duration SLACK = Duration.ofMillis(100);

    /** The pause between one client's writes: a steady rate of about 50 writes/s per gateway. */
    static final Duration PACE = Duration.ofMillis(20);

    /** The bound on one client request. */
    static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);

    /** Writes acknowledged before the move starts, and after it ends, per client. */
    static final int SETTLE_WRITES = 25;

    private static final List<String> OWNERS = List.of("owner-0", "owner-1", "owner-2");
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    static Path dir;

    private static Harness harness;

    @BeforeAll
    static void start() throws Exception {
        harness = Harness.start(dir);
    }

    @AfterAll
    static void stop() {
        if (harness != null) {
            harness.close();
            for (GatewayProcess g : harness.gateways) {
                assertThat(g.output())
                        .as("%s reported no buffer leak", g)
                        .noneMatch(l -> l.contains("LEAK") || l.contains("OutOfMemoryError"));
            }
        }
    }

    @Test
    void shouldMoveANamespaceUnderAClientLoopWithNoClientError() throws Exception {
        Result r = harness.run();
        String report = System.getProperty(REPORT_PROPERTY);
        if (report != null) { // bench/move.sh
            java.nio.file.Files.writeString(
                    Path.of(report),
                    r.line()
                            + System.lineSeparator()
                            + String.join(System.lineSeparator(), r.errorSamples())
                            + System.lineSeparator());
        }

        assertThat(r.errors()).as("client errors: %s", r.errorSamples()).isZero();
        assertThat(r.acknowledged()).as("writes acknowledged").isGreaterThanOrEqualTo(4L * SETTLE_WRITES);
        assertThat(r.verified())
                .as("acknowledged writes readable at the new owner with their hash")
                .isEqualTo(r.acknowledged());
        assertThat(r.slowestDuringMoveMs())
                .as("slowest request during the move; hand-off %d ms; %s", r.handoffMs(), r.errorSamples())
                .isLessThanOrEqualTo(r.handoffMs() + SLACK.toMillis());
    }

    /** The system property naming a file the run's numbers go to ({@code bench/move.sh}). */
    static final String REPORT_PROPERTY = "spector.move.report";

    /** With this system property {@code true}, the measured move is the first one (no warm-up). */
    static final String COLD_PROPERTY = "spector.move.cold";

    /**
     * One run's numbers.
     *
     * @param errors client requests that were not 2xx (or failed)
     * @param acknowledged writes answered 2xx
     * @param verified acknowledged writes read back from the new owner with the same SHA-256
     * @param slowestMs the slowest request of the run
     * @param slowestDuringMoveMs the slowest request that overlapped the move call
     * @param handoffMs the hand-off time the old owner measured
     * @param writesDuringMove requests that overlapped the move call
     * @param errorSamples a few errors, for the failure message
     */
    record Result(
            long errors,
            long acknowledged,
            long verified,
            long slowestMs,
            long slowestDuringMoveMs,
            long handoffMs,
            long writesDuringMove,
            List<String> errorSamples) {
        /** The numbers on one line, as the bench prints them. */
        String line() {
            return "errors=" + errors + " acknowledged=" + acknowledged + " verified=" + verified
                    + " slowestDuringMoveMs=" + slowestDuringMoveMs + " handoffMs=" + handoffMs
                    + " requestsDuringMove=" + writesDuringMove + " slowestMs=" + slowestMs;
        }
    }

    /** A request of the loop: what was written where, and when. */
    private record Write(String key, String sha256, int status, long startNanos, long endNanos, String error) {}

    /** The processes of one run. */
    static final class Harness implements AutoCloseable {
        final RedisServer redis;
        final List<ReferenceOwner> owners = new ArrayList<>();
        final List<GatewayProcess> gateways = new ArrayList<>();
        final KetamaRing ring = KetamaRing.of(1, OWNERS);
        final HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(2))
                .build();

        private final Path dir;
        private String ns = "";

        private Harness(RedisServer redis, Path dir) {
            this.redis = redis;
            this.dir = dir;
        }

        static Harness start(Path dir) throws Exception {
            Harness h = new Harness(RedisServer.onFreePort().start(), dir);
            try {
                StringBuilder members = new StringBuilder();
                for (String id : OWNERS) {
                    ReferenceOwner o = ReferenceOwner.start(OwnerSpec.builder(id)
                            .cellId(Cell.CELL_ID)
                            .port(0)
                            .ringMembers(OWNERS)
                            .ringEpoch(1)
                            .redisUri(h.redis.uri())
                            .dataDir(dir.resolve(id))
                            .hmacSecret(Cell.SECRET.getBytes(StandardCharsets.UTF_8))
                            .build());
                    h.owners.add(o);
                    members.append(members.length() == 0 ? "" : ",")
                            .append(id)
                            .append('=')
                            .append(o.baseUri());
                }
                Map<String, String> settings =
                        Cell.replicaSettings(h.owners.get(0), h.redis.uri(), "move-peer-secret-0123456789-0123456789");
                settings.put("spector.cell.ring-members", members.toString());
                int[] ports = GatewayProcess.freePorts(6);
                List<Process> starts = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    Map<String, String> own = new java.util.HashMap<>(settings);
                    own.put(
                            "spector.server.access-log",
                            dir.resolve("move-gw-" + i + "-access.log").toString());
                    GatewayProcess g = new GatewayProcess(
                            "move-gw-" + i, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2], own, dir);
                    h.gateways.add(g);
                    starts.add(g.start());
                }
                for (int i = 0; i < 2; i++) {
                    h.gateways.get(i).awaitReady(starts.get(i));
                }
                Waits.until(
                        "the owners are connected to Redis",
                        () -> h.owners.stream().allMatch(ReferenceOwner::isRedisConnected));
                return h;
            } catch (Exception | Error e) {
                h.close();
                throw e;
            }
        }

        /**
         * Moves a first namespace (owner-0 to owner-2) to warm every path of both gateways and the
         * owners, then the measured one (owner-0 to owner-1), and returns the writes and errors of
         * both and the times of the measured one.
         */
        Result run() throws Exception {
            if (Boolean.getBoolean(COLD_PROPERTY)) { // bench/move.sh cold: the first move, fresh JVMs
                return run(namespaceOf("owner-0", 1), 1);
            }
            Result warmUp = run(namespaceOf("owner-0", 0), 2);
            Result measured = run(namespaceOf("owner-0", 1), 1);
            List<String> samples = new ArrayList<>(warmUp.errorSamples());
            samples.addAll(measured.errorSamples());
            return new Result(
                    warmUp.errors() + measured.errors(),
                    warmUp.acknowledged() + measured.acknowledged(),
                    warmUp.verified() + measured.verified(),
                    measured.slowestMs(),
                    measured.slowestDuringMoveMs(),
                    measured.handoffMs(),
                    measured.writesDuringMove(),
                    samples);
        }

        private Result run(String namespace, int toIndex) throws Exception {
            ns = namespace;
            String token = Cell.token(Cell.TENANT);
            AtomicBoolean stop = new AtomicBoolean();
            ConcurrentLinkedQueue<Write> writes = new ConcurrentLinkedQueue<>();
            List<CompletableFuture<Void>> loops = new ArrayList<>();
            for (int i = 0; i < gateways.size(); i++) {
                int client = i;
                loops.add(CompletableFuture.runAsync(() -> loop(client, ns, token, stop, writes)));
            }
            Waits.until(
                    "writes acknowledged before the move",
                    Duration.ofSeconds(60),
                    () -> acknowledged(writes) >= 2L * SETTLE_WRITES);
            ReferenceOwner to = owners.get(toIndex);
            long moveStart = System.nanoTime();
            HttpResponse<String> moved = http.send(
                    HttpRequest.newBuilder(owners.get(0).baseUri().resolve("/admin/move"))
                            .timeout(Duration.ofSeconds(30))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"tenant\":\"" + Cell.TENANT
                                    + "\",\"namespace\":\"" + ns + "\",\"to\":\"" + to.nodeId() + "\",\"toUrl\":\""
                                    + to.baseUri() + "\"}"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            long moveEnd = System.nanoTime();
            assertThat(moved.statusCode()).as(moved.body()).isEqualTo(200);
            JsonNode move = JSON.readTree(moved.body());
            long ackedAtMoveEnd = acknowledged(writes);
            Waits.until(
                    "writes acknowledged after the move",
                    Duration.ofSeconds(60),
                    () -> acknowledged(writes) >= ackedAtMoveEnd + 2L * SETTLE_WRITES);
            stop.set(true);
            for (CompletableFuture<Void> l : loops) {
                Waits.done(l, "a client loop ends", Duration.ofSeconds(30));
            }
            long errors = 0;
            long acked = 0;
            long verified = 0;
            long slowest = 0;
            long slowestDuring = 0;
            long during = 0;
            List<String> samples = new ArrayList<>();
            writes.stream()
                    .sorted((x, y) -> Long.compare(y.endNanos() - y.startNanos(), x.endNanos() - x.startNanos()))
                    .limit(3)
                    .forEach(w -> samples.add("slow " + w.key() + " " + (w.endNanos() - w.startNanos()) / 1_000_000
                            + " ms from " + (w.startNanos() - moveStart) / 1_000_000 + " ms after the move call, "
                            + (moveEnd - moveStart) / 1_000_000 + " ms the call: "
                            + accessLines(w.key())));
            for (Write w : writes) {
                long ms = (w.endNanos() - w.startNanos()) / 1_000_000;
                slowest = Math.max(slowest, ms);
                if (w.endNanos() >= moveStart && w.startNanos() <= moveEnd) {
                    slowestDuring = Math.max(slowestDuring, ms);
                    during++;
                }
                if (w.status() < 200 || w.status() > 299) {
                    errors++;
                    if (samples.size() < 5) {
                        samples.add(w.status() + " " + w.error());
                    }
                    continue;
                }
                acked++;
                HttpResponse<byte[]> back = http.send(
                        HttpRequest.newBuilder(to.baseUri().resolve("/api/v1/namespaces/" + ns + "/objects/" + w.key()))
                                .timeout(REQUEST_TIMEOUT)
                                .header("X-Spector-Tenant", Cell.TENANT)
                                .GET()
                                .build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                if (back.statusCode() == 200 && sha256(back.body()).equals(w.sha256())) {
                    verified++;
                }
            }
            return new Result(
                    errors,
                    acked,
                    verified,
                    slowest,
                    slowestDuring,
                    move.path("handoffMs").asLong(),
                    during,
                    samples);
        }

        private void loop(
                int client, String ns, String token, AtomicBoolean stop, ConcurrentLinkedQueue<Write> writes) {
            GatewayProcess g = gateways.get(client);
            for (int i = 0; !stop.get(); i++) {
                String key = "k-" + client + "-" + i;
                byte[] body = ("object " + key + " " + System.nanoTime()).getBytes(StandardCharsets.UTF_8);
                long start = System.nanoTime();
                int status;
                String error = "";
                try {
                    HttpResponse<String> r = http.send(
                            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + g.port + "/api/v1/namespaces/" + ns
                                            + "/objects/" + key))
                                    .timeout(REQUEST_TIMEOUT)
                                    .header("Authorization", "Bearer " + token)
                                    .PUT(HttpRequest.BodyPublishers.ofByteArray(body))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    status = r.statusCode();
                    error = status >= 300 ? r.body() : "";
                } catch (Exception e) {
                    status = -1;
                    error = e.toString();
                }
                writes.add(new Write(key, sha256(body), status, start, System.nanoTime(), error));
                try {
                    Thread.sleep(PACE.toMillis()); // the client's pace, not a synchronisation
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        private List<String> accessLines(String key) {
            List<String> out = new ArrayList<>();
            for (int i = 0; i < gateways.size(); i++) {
                out.addAll(Cell.accessLogLines(
                        dir.resolve("move-gw-" + i + "-access.log"), "/api/v1/namespaces/" + ns + "/objects/" + key));
            }
            return out;
        }

        private static long acknowledged(ConcurrentLinkedQueue<Write> writes) {
            return writes.stream()
                    .filter(w -> w.status() >= 200 && w.status() <= 299)
                    .count();
        }

        /** Returns the {@code skip}-th namespace the ring gives to {@code owner}. */
        private String namespaceOf(String owner, int skip) {
            int found = 0;
            for (int i = 0; ; i++) {
                if (ring.ownerOf(Cell.TENANT + "/move-" + i).equals(owner) && found++ == skip) {
                    return "move-" + i;
                }
            }
        }

        @Override
        public void close() {
            for (GatewayProcess g : gateways) {
                g.close();
            }
            for (ReferenceOwner o : owners) {
                o.close();
            }
            redis.stop();
        }
    }

    private static String sha256(byte[] data) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
