package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.owner.ReferenceOwner;
import com.spectrayan.spector.testkit.RedisServer;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 11's acceptance over real processes: three gateway replicas, each its own JVM ({@link
 * GatewayProcess}), sharing one real {@code redis-server}, behind "the Service" ({@link
 * RoundRobinBalancer} in front of their TLS ports); a real {@link WorkerDaemon} with two uplinks
 * over {@code wss://} (a test CA) dials through it, so its links sit on at most two replicas and
 * the third reaches it over the peer hop. Relays go round-robin to the replicas' plain ports.
 *
 * <p>The tests run in order on one cell: the steady state, a replica killed with SIGKILL under a
 * slow relay (and started again), each replica in turn drained with SIGTERM under a client loop
 * (and started again). Each begins with all three replicas up and the worker's two links live.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
final class ReplicaProcessesTest {
    private static final String PEER_SECRET = "peer-secret-of-the-process-cell-0123456789";
    private static final String WORKER = "wp";
    private static final String WORKER_TOKEN = "wp-token-0123456789-0123456789";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The bound on one relay in these tests (a slow one streams for about 6 s). */
    private static final Duration RELAY_TIMEOUT = Duration.ofSeconds(5);

    /** The bound on the worker's links coming back after a replica went, and on the cell settling. */
    private static final Duration SETTLE = Duration.ofSeconds(20);

    /** The drain timeout the replicas run with (short: nothing here runs long on a draining replica). */
    private static final String DRAIN_TIMEOUT = "5s";

    @TempDir
    static Path dir;

    private static RedisServer redis;
    private static ReferenceOwner owner;
    private static final List<GatewayProcess> replicas = new ArrayList<>();
    private static RoundRobinBalancer service;
    private static WorkerDaemon worker;
    private static final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(2))
            .build();

    @BeforeAll
    static void start() throws Exception {
        redis = RedisServer.onFreePort().start();
        owner = Cell.soleOwner();
        TestPki ca = TestPki.authority("replicas");
        Path caFile = Files.writeString(dir.resolve("ca.pem"), ca.rootPem(), StandardCharsets.US_ASCII);
        Path certificate = dir.resolve("tls.crt");
        Path key = dir.resolve("tls.key");
        ca.server("localhost").writeTo(certificate, key);
        Map<String, String> settings = Cell.replicaSettings(owner, redis.uri(), PEER_SECRET);
        settings.put("spector.server.drain-timeout", DRAIN_TIMEOUT);
        settings.put("spector.server.tls.certificate", certificate.toString());
        settings.put("spector.server.tls.private-key", key.toString());
        settings.put("spector.uplink.tokens", WORKER + "=" + TokenHashes.sha256Hex(WORKER_TOKEN));
        int[] ports = GatewayProcess.freePorts(9);
        for (int i = 0; i < 3; i++) {
            replicas.add(new GatewayProcess(
                    "gw-" + (char) ('a' + i), ports[3 * i], ports[3 * i + 1], ports[3 * i + 2], settings, dir));
        }
        List<Process> starts = new ArrayList<>();
        for (GatewayProcess g : replicas) {
            starts.add(g.start());
        }
        for (int i = 0; i < 3; i++) {
            replicas.get(i).awaitReady(starts.get(i));
        }
        service = RoundRobinBalancer.start(replicas.stream().map(g -> g.tlsPort).toList());
        worker = WorkerDaemon.builder(
                        URI.create("wss://localhost:" + service.port() + "/uplink"),
                        WORKER,
                        WORKER_TOKEN,
                        Map.of("owner", owner.baseUri()))
                .uplinks(2)
                .caFile(caFile)
                .start();
    }

    @AfterAll
    static void stop() {
        try {
            if (worker != null) {
                worker.close();
            }
            if (service != null) {
                service.close();
            }
        } finally {
            for (GatewayProcess g : replicas) {
                g.close();
            }
            if (owner != null) {
                owner.close();
            }
            if (redis != null) {
                redis.stop();
            }
        }
        List<GatewayProcess> ran = List.copyOf(replicas);
        replicas.clear();
        for (GatewayProcess g : ran) {
            assertThat(g.output())
                    .as("%s reported no buffer leak and no out-of-memory", g)
                    .noneMatch(l -> l.contains("LEAK") || l.contains("OutOfMemoryError"));
        }
    }

    @BeforeEach
    void allReplicasUpAndTwoLinks() {
        List<Process> starts = new ArrayList<>();
        List<GatewayProcess> restarted = new ArrayList<>();
        for (GatewayProcess g : replicas) {
            if (!g.isAlive()) {
                starts.add(g.start());
                restarted.add(g);
            }
        }
        for (int i = 0; i < restarted.size(); i++) {
            restarted.get(i).awaitReady(starts.get(i));
        }
        awaitTwoLinksOnLiveReplicas();
    }

    @Test
    @Order(1)
    void everyRelaySucceedsRoundRobinAndTheReplicaWithoutALinkForwardsOverThePeerHop() throws Exception {
        List<GatewayProcess> holders = holders();
        assertThat(holders)
                .as("the worker's two links sit on one or two replicas, not three")
                .hasSizeBetween(1, 2);

        assertRelaysSucceed(replicas, 9, "steady");

        for (GatewayProcess g : replicas) {
            double forwarded = counter(g, "spector_relay_peer_hops_total", "outcome", "forwarded");
            if (holders.contains(g)) {
                assertThat(forwarded).as("%s relays on its own link", g).isZero();
            } else {
                assertThat(forwarded)
                        .as("%s has no link: its three relays crossed the peer hop", g)
                        .isEqualTo(3.0);
            }
        }
        for (GatewayProcess g : replicas) {
            long started = System.nanoTime();
            HttpResponse<String> r = send(g, "/relay/nobody/owner/x");
            assertThat(Duration.ofNanos(System.nanoTime() - started))
                    .as("%s answers a worker with no link anywhere within 2 s", g)
                    .isLessThan(PeerHop.UNREACHABLE_WITHIN);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
            JsonNode problem = JSON.readTree(r.body());
            assertThat(problem.get("code").asText()).isEqualTo("WORKER_UNREACHABLE");
            assertThat(problem.at("/details/workerId").asText()).isEqualTo("nobody");
        }
    }

    @Test
    @Order(2)
    void aReplicaKilledWithSigkillFailsOnlyTheRelayItCarried() throws Exception {
        List<GatewayProcess> holders = holders();
        GatewayProcess victim = holders.get(0);
        GatewayProcess otherHolder = holders.size() > 1 ? holders.get(1) : null;
        AtomicBoolean streaming = new AtomicBoolean();
        CompletableFuture<Long> onVictim = slowDownload(victim, streaming);
        CompletableFuture<Long> onOther = otherHolder == null ? null : slowDownload(otherHolder, new AtomicBoolean());
        Waits.until("the slow relay on " + victim + " streams", streaming::get);

        victim.kill();
        List<GatewayProcess> survivors =
                replicas.stream().filter(g -> g != victim).toList();
        // At once, before the worker re-dialled: the survivors' relays go to the worker's other
        // link, or wait for the re-dialled one (the dead holder refuses connections), never fail.
        List<String> rightAfter = new ArrayList<>();
        for (GatewayProcess g : survivors) {
            HttpResponse<String> r = echo(g, "right-after-the-kill");
            rightAfter.add(g.name + ": " + r.statusCode() + (r.statusCode() == 200 ? "" : " " + r.body()));
        }
        assertThat(rightAfter)
                .as("relays sent to the survivors right after the SIGKILL")
                .allMatch(r -> r.endsWith(": 200"));

        Throwable failed = Waits.failure(onVictim, "the slow relay on the killed replica fails at the client");
        assertThat(failed).isInstanceOfAny(IOException.class, UncheckedIOException.class);
        if (onOther != null) {
            assertThat(Waits.done(onOther, "the slow relay on the other holder, " + otherHolder, SETTLE))
                    .as("its other link carried its relay to the end")
                    .isEqualTo(SLOW_BYTES);
        }
        awaitTwoLinksOnLiveReplicas();
        int[] failuresWhileSettling = {0};
        Waits.until("relays to both survivors succeed again", SETTLE, () -> {
            boolean all = true;
            for (GatewayProcess g : survivors) {
                if (status(g) != 200) {
                    failuresWhileSettling[0]++;
                    all = false;
                }
            }
            return all;
        });
        assertRelaysSucceed(survivors, 6, "after-kill");
        assertThat(failuresWhileSettling[0])
                .as("relays that failed after the SIGKILL while the cell settled")
                .isZero();

        victim.awaitReady(victim.start());
        Waits.until(victim.name + " serves again after its restart", SETTLE, () -> status(victim) == 200);
    }

    @Test
    @Order(3)
    void eachReplicaDrainedInTurnClosesItsLinksTheWorkerRedialsAndTheCellServesAgain() throws Exception {
        Set<GatewayProcess> serving = new CopyOnWriteArraySet<>(replicas); // what the loop sends to
        List<String> unsettled = new CopyOnWriteArrayList<>(); // from a drain until the cell settled
        List<String> settled = new CopyOnWriteArrayList<>();
        AtomicBoolean isSettled = new AtomicBoolean();
        AtomicBoolean running = new AtomicBoolean(true);
        AtomicReference<String> phase = new AtomicReference<>("before the drains");
        Thread loop = new Thread(
                () -> {
                    for (int i = 0; running.get(); i++) {
                        List<GatewayProcess> targets = List.copyOf(serving);
                        GatewayProcess via = targets.get(i % targets.size());
                        String sent = phase.get();
                        boolean calm = isSettled.get();
                        String result;
                        try {
                            HttpResponse<String> r = echo(via, "loop=" + i);
                            result = r.statusCode() == 200
                                    ? "ok"
                                    : via.name + ", sent " + sent + ": " + r.statusCode() + " " + r.body() + "\n  "
                                            + via.name + "'s uplink log: " + uplinkLines(via);
                        } catch (IOException e) {
                            result = via.name + ", sent " + sent + ": " + e;
                        } catch (InterruptedException e) {
                            return;
                        }
                        (calm && isSettled.get() ? settled : unsettled).add(result);
                    }
                },
                "client-loop");
        loop.setDaemon(true);
        loop.start();
        try {
            awaitSettled(serving, isSettled, settled);
            for (GatewayProcess victim : replicas) {
                int links = publishedLinks(victim);
                isSettled.set(false);
                serving.remove(victim); // as the Service stops sending to a pod that is terminating
                int removedAt = unsettled.size();
                // the loop is sequential: after two more answers none of its relays is on the victim
                Waits.until(
                        "the loop's relay to " + victim.name + " is answered", () -> unsettled.size() >= removedAt + 2);
                long began = System.nanoTime();
                phase.set("while " + victim.name + " drains");
                victim.terminate();
                victim.awaitExit();
                phase.set(ms(began) + " ms after " + victim.name + " began to drain");
                assertThat(victim.output())
                        .as("the drain closed the worker's %d links on %s", links, victim)
                        .anyMatch(l ->
                                l.matches(".*drained in \\d+ ms: \\d+ exchanges cut, " + links + " uplinks closed.*"));
                awaitTwoLinksOnLiveReplicas();
                awaitSettled(serving, isSettled, settled);

                isSettled.set(false);
                phase.set("after " + victim.name + " restarted");
                victim.awaitReady(victim.start());
                serving.add(victim);
                awaitSettled(serving, isSettled, settled);
            }
        } finally {
            running.set(false);
            loop.join(RELAY_TIMEOUT.toMillis() * 2);
        }

        System.out.println("ReplicaProcessesTest: relays that failed while a drain or a restart settled: "
                + unsettled.stream().filter(r -> !r.equals("ok")).toList());
        assertThat(unsettled)
                .as("no relay that started after a drain began failed, nor one while a replica restarted")
                .hasSizeGreaterThan(0)
                .allMatch("ok"::equals);
        assertThat(settled)
                .as("once the cell settled, no relay failed")
                .hasSizeGreaterThanOrEqualTo(4 * 6)
                .allMatch("ok"::equals);
    }

    /**
     * Waits until every replica the loop sends to answers a relay 200, then lets the loop run six
     * relays as settled ones.
     */
    private static void awaitSettled(Set<GatewayProcess> serving, AtomicBoolean isSettled, List<String> settled) {
        Waits.until(
                "every serving replica relays again",
                SETTLE,
                () -> serving.stream().allMatch(g -> status(g) == 200));
        int before = settled.size();
        isSettled.set(true);
        Waits.until("the loop ran six settled relays", () -> settled.size() >= before + 6);
    }

    /** The replica's last log lines about uplinks, for a failure's message. */
    private static List<String> uplinkLines(GatewayProcess g) {
        List<String> lines = g.output().stream()
                .filter(l -> l.contains("uplink") || l.contains("worker " + WORKER))
                .toList();
        return lines.subList(Math.max(0, lines.size() - 8), lines.size());
    }

    private static long ms(long sinceNanos) {
        return (System.nanoTime() - sinceNanos) / 1_000_000;
    }

    // ---- the cell ----

    private static final long SLOW_BYTES = 64 * 16 * 1024;

    /**
     * Starts a download of {@link #SLOW_BYTES} that the owner streams over about 6 s, relayed by
     * {@code via}; sets {@code streaming} once bytes arrive; completes with the bytes read, or
     * fails when the stream breaks.
     */
    private static CompletableFuture<Long> slowDownload(GatewayProcess via, AtomicBoolean streaming) {
        HttpRequest req = request(
                        via,
                        "/relay/" + WORKER + "/owner/api/v1/namespaces/e2e/stream?bytes=" + SLOW_BYTES
                                + "&chunk=16384&delayMs=100")
                .GET()
                .build();
        return http.sendAsync(req, HttpResponse.BodyHandlers.ofInputStream()).thenApplyAsync(r -> {
            if (r.statusCode() != 200) {
                throw new IllegalStateException(via + " answered " + r.statusCode());
            }
            long n = 0;
            byte[] buf = new byte[8192];
            try (InputStream in = r.body()) {
                for (int read; (read = in.read(buf)) != -1; ) {
                    n += read;
                    streaming.set(true);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return n;
        });
    }

    /** Waits until the worker has two live links, both published (and believed) by running replicas. */
    private static void awaitTwoLinksOnLiveReplicas() {
        Waits.until(
                "the worker's two links are live and published by running replicas",
                SETTLE,
                () -> worker.connectedUplinks() == 2
                        && replicas.stream()
                                        .mapToInt(ReplicaProcessesTest::publishedLinks)
                                        .sum()
                                == 2);
    }

    /** Returns the running replicas that publish a link of the worker in Redis. */
    private static List<GatewayProcess> holders() {
        return replicas.stream().filter(g -> publishedLinks(g) > 0).toList();
    }

    /**
     * Returns how many links of the worker {@code g} publishes in Redis, as a reader believes them
     * (0 when it does not run, has no field, or the field is past its {@code until}).
     */
    private static int publishedLinks(GatewayProcess g) {
        if (!g.isAlive()) {
            return 0;
        }
        String value = RedisReply.bulk(
                redis.port(), "HGET spector:" + Cell.CELL_ID + ":uplinks:" + WORKER + " 127.0.0.1:" + g.peerPort);
        if (value == null) {
            return 0;
        }
        try {
            JsonNode holder = JSON.readTree(value);
            return holder.get("until").asLong() > System.currentTimeMillis()
                    ? holder.get("links").asInt()
                    : 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Sends {@code n} relays round-robin over {@code via}; each must reach the owner and come back. */
    private static void assertRelaysSucceed(List<GatewayProcess> via, int n, String label) throws Exception {
        for (int i = 0; i < n; i++) {
            GatewayProcess g = via.get(i % via.size());
            HttpResponse<String> r = echo(g, label + "=" + i);
            assertThat(r.statusCode())
                    .as("relay %s %d via %s: %s", label, i, g, r.body())
                    .isEqualTo(200);
            assertThat(r.body()).contains("\"query\":\"" + label + "=" + i + "\"");
        }
    }

    private static HttpResponse<String> echo(GatewayProcess via, String query)
            throws IOException, InterruptedException {
        return send(via, "/relay/" + WORKER + "/owner/api/v1/namespaces/e2e/echo?" + query);
    }

    private static HttpResponse<String> send(GatewayProcess via, String pathAndQuery)
            throws IOException, InterruptedException {
        return http.send(request(via, pathAndQuery).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Returns a relay's status, or -1 when it did not get one (for a wait's condition). */
    private static int status(GatewayProcess via) {
        try {
            return echo(via, "probe").statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static HttpRequest.Builder request(GatewayProcess via, String pathAndQuery) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + via.port + pathAndQuery))
                .timeout(RELAY_TIMEOUT)
                .header("Authorization", "Bearer " + Cell.token(Cell.TENANT));
    }

    /** Reads one counter of a replica's {@code /actuator/prometheus}, 0 when absent. */
    private static double counter(GatewayProcess g, String name, String tag, String value) throws Exception {
        return Cell.counter(send(g, "/actuator/prometheus").body(), name, tag, value);
    }
}
