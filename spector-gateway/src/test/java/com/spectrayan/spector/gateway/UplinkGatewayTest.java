package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.cluster.gateway.HeadBuffers;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A worker dials the real gateway's {@code /uplink} WebSocket, and {@code /relay/...} reaches it. */
final class UplinkGatewayTest {
    private static final String TOKEN = "worker-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(15);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Cell cell;
    private static EventLoopGroup group;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .set(
                        "spector.uplink.tokens",
                        "w1=" + TokenHashes.sha256Hex(TOKEN) + ",w2=" + TokenHashes.sha256Hex(TOKEN) + ",w3="
                                + TokenHashes.sha256Hex(TOKEN) + ",w4=" + TokenHashes.sha256Hex(TOKEN))
                // the shortest head timer: an uplink (no longer HTTP) must never get it
                .set("spector.server.header-timeout", "1s")
                .start();
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    }

    @AfterAll
    static void stop() {
        cell.close();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /** A target that answers "hello from LABEL URL". */
    private static RelayTarget hello(String label) {
        return request -> CompletableFuture.completedFuture(new RelayedResponse(
                200,
                List.of(new Header("Content-Type", "text/plain")),
                DialedWorker.body(("hello from " + label + " " + request.url()).getBytes(StandardCharsets.UTF_8))));
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return cell.http.send(cell.request(path).timeout(WAIT).build(), HttpResponse.BodyHandlers.ofString());
    }

    /**
     * Regression: the head timer armed by an uplink's upgrade request kept running after the
     * upgrade, so every uplink was answered "408" and closed after spector.server.header-timeout.
     */
    @Test
    void uplink_outlivesTheHeaderTimeout_andStillRelays() throws Exception {
        try (DialedWorker w = DialedWorker.dialOnce(cell, "w4", TOKEN, Map.of("app", hello("w4")), group)
                .awaitLive(cell)) {
            await("w4's first uplink stays up past the 1 s header timeout")
                    .during(Duration.ofMillis(2500))
                    .atMost(Duration.ofSeconds(6))
                    .until(() -> w.connections.size() == 1 && w.dialer.isConnected());
            HttpResponse<String> r = get("/relay/w4/app/x");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(w.failures).isEmpty();
        }
    }

    @Test
    void shouldRelayThroughAnUplinkTheWorkerDialed() throws Exception {
        try (DialedWorker w = DialedWorker.dial(cell, "w1", TOKEN, Map.of("app", hello("w1")), group)
                .awaitLive(cell)) {
            HttpResponse<String> r = get("/relay/" + w.id + "/app/a/b?x=1");

            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("hello from w1 http://app/a/b?x=1");
            HttpResponse<String> workers = get("/gateway/v1/workers");
            assertThat(JSON.readTree(workers.body()).at("/workers/0/id").asText())
                    .isEqualTo("w1");
            String metrics = get("/actuator/prometheus").body();
            assertThat(metrics)
                    .as("uplink meters")
                    .containsPattern("(?m)^spector_uplinks_connected(\\{[^}]*\\})? [1-9]")
                    .containsPattern("(?m)^spector_relays_active(\\{[^}]*\\})? 0")
                    .containsPattern("(?m)^spector_relay_bytes_total\\{direction=\"from-worker\"[^}]*\\} [1-9]");
        }
    }

    /**
     * Issue 14: a plain client connection encodes its heads on the heap ({@link HeadBuffers}); a
     * connection that became an uplink goes back to the default allocator, so its WebSocket
     * decoder's payload copies stay direct on their way to the client.
     */
    @Test
    void heapHeads_onAPlainClientConnection_notOnAnUplink() throws Exception {
        try (DialedWorker w = DialedWorker.dial(cell, "w1", TOKEN, Map.of("app", hello("w1")), group)
                        .awaitLive(cell);
                RawClient client = new RawClient(cell.gateway.port())) {
            RawClient.Response r = client.send("GET /relay/" + w.id + "/app/h HTTP/1.1\r\nHost: x\r\n"
                            + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.text()).isEqualTo("hello from w1 http://app/h");
            assertThat(List.<Channel>copyOf(cell.gateway.clientChannels()))
                    .as("the client's connection")
                    .isNotEmpty()
                    .allSatisfy(ch -> assertThat(ch.alloc()).isSameAs(HeadBuffers.HEAP_HEADS));
            assertThat(List.<Channel>copyOf(cell.gateway.uplinkChannels()))
                    .as("the worker's uplinks")
                    .isNotEmpty()
                    .allSatisfy(ch -> assertThat(ch.alloc()).isSameAs(ByteBufAllocator.DEFAULT));
        }
    }

    @Test
    void shouldRefuseAWrongWorkerTokenAtTheUpgrade() {
        try (DialedWorker w = DialedWorker.dial(cell, "w2", "not-the-token", Map.of(), group)) {
            await("the gateway refused the upgrade").atMost(WAIT).until(() -> !w.failures.isEmpty());
            assertThat(cell.gateway.workerDirectory().live("w2"))
                    .as("no uplink registered")
                    .isNull();
            assertThat(w.connections).as("no uplink was ever opened").isEmpty();
            assertThat(w.dialer.isConnected())
                    .as("a dialer between refused attempts is not connected")
                    .isFalse();
        }
    }

    @Test
    void secondUplinkForTheSameWorker_replacesTheFirst_andFailsItsRelaysWithWorkerUnreachable() throws Exception {
        CompletableFuture<AbortSignal> hung = new CompletableFuture<>();
        RelayTarget neverAnswers = request -> {
            hung.complete(request.signal());
            return new CompletableFuture<>();
        };
        try (DialedWorker first = DialedWorker.dialOnce(cell, "w3", TOKEN, Map.of("app", neverAnswers), group)
                .awaitLive(cell)) {
            WorkerLink firstLink = cell.gateway.workerDirectory().live("w3");
            CompletableFuture<HttpResponse<String>> relayed = cell.http.sendAsync(
                    cell.request("/relay/w3/app/slow").timeout(WAIT).build(), HttpResponse.BodyHandlers.ofString());
            AbortSignal firstSignal = hung.get(WAIT.toSeconds(), TimeUnit.SECONDS);

            try (DialedWorker second =
                    DialedWorker.dial(cell, "w3", TOKEN, Map.of("app", hello("the second uplink")), group)) {
                await("the second uplink replaces the first in the directory")
                        .atMost(WAIT)
                        .until(() -> {
                            WorkerLink live = cell.gateway.workerDirectory().live("w3");
                            return live != null && live != firstLink && second.dialer.isConnected();
                        });

                HttpResponse<String> failed = relayed.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                JsonNode problem = JSON.readTree(failed.body());
                assertThat(failed.statusCode())
                        .as("the relay running on the replaced uplink fails: %s", failed.body())
                        .isEqualTo(503);
                assertThat(problem.path("code").asText()).isEqualTo("WORKER_UNREACHABLE");
                await("the first worker's target is aborted when its uplink closes")
                        .atMost(WAIT)
                        .until(firstSignal::isAborted);
                await("the replaced uplink is closed on the first worker's side")
                        .atMost(WAIT)
                        .until(() -> !first.lastConnection().isOpen());

                HttpResponse<String> next = get("/relay/w3/app/again");
                assertThat(next.body())
                        .as("a new relay goes to the uplink that replaced the first")
                        .isEqualTo("hello from the second uplink http://app/again");
            }
        }
    }
}
