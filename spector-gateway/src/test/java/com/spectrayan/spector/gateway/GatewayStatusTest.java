package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.testkit.RedisServerExtension;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code GET /gateway/v1/status}: the ring, the cache per level, Redis, workers and their relays. */
final class GatewayStatusTest {
    private static final String TOKEN = "worker-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(15);
    private static final ObjectMapper JSON = new ObjectMapper();

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final CompletableFuture<RelayedResponse> gate = new CompletableFuture<>();
    private Cell cell;

    @BeforeEach
    void start() throws Exception {
        cell = Cell.builder()
                .owners(3)
                .redis(redis.uri())
                .set("spector.uplink.tokens", "w1=" + TokenHashes.sha256Hex(TOKEN))
                .start();
        await("subscribed to invalidations")
                .atMost(WAIT)
                .until(() -> !cell.gateway.resolver().isL1Bypassed());
    }

    @AfterEach
    void stop() {
        gate.complete(new RelayedResponse(204, List.of(), null));
        cell.close();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private HttpResponse<String> get(String path, boolean withToken) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(cell.uri(path)).timeout(WAIT);
        if (withToken) {
            b.header("Authorization", "Bearer " + Cell.adminToken());
        }
        return cell.http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void status_showsRingCacheLevelsRedisWorkersAndActiveRelays() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        for (int i = 0; i < 3; i++) {
            assertThat(get("/api/v1/namespaces/" + ns + "/echo", true).statusCode())
                    .isEqualTo(200);
        }
        RelayTarget gated = request -> gate;
        try (DialedWorker w = DialedWorker.dial(cell, "w1", TOKEN, Map.of("gate", gated), group)
                .awaitLive(cell)) {
            var running = cell.http.sendAsync(
                    cell.request("/relay/w1/gate/x").timeout(WAIT).build(), HttpResponse.BodyHandlers.ofString());
            await("the relay is running")
                    .atMost(WAIT)
                    .until(() -> cell.gateway.relay().running("w1") == 1);
            await("the worker's first status.get answered").atMost(WAIT).until(() -> {
                var link = cell.gateway.workerDirectory().live("w1");
                return link != null && link.lastStatus() != null;
            });

            HttpResponse<String> r = get("/gateway/v1/status", true);

            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("content-type")).hasValue("application/json");
            JsonNode s = JSON.readTree(r.body());
            assertThat(s.path("cell").asText()).isEqualTo(Cell.CELL_ID);
            assertThat(s.path("draining").asBoolean(true)).isFalse();
            assertThat(s.at("/ring/epoch").asLong()).isEqualTo(1);
            assertThat(s.at("/ring/members").findValuesAsText("id"))
                    .as("ring members in ring order")
                    .containsExactly("owner-0", "owner-1", "owner-2");
            assertThat(s.at("/ring/members/1/url").asText()).isEqualTo(String.valueOf(cell.members.get("owner-1")));
            assertThat(s.at("/routing/l1/hits").asLong()
                            + s.at("/routing/l2/hits").asLong())
                    .as("the second and third request were cache hits")
                    .isGreaterThanOrEqualTo(2);
            assertThat(s.at("/routing/l3/hits").asLong())
                    .as("the first request resolved from the ring")
                    .isGreaterThanOrEqualTo(1);
            assertThat(s.at("/routing/l2/enabled").asBoolean()).isTrue();
            assertThat(s.at("/redis/connected").asBoolean()).isTrue();
            assertThat(s.at("/redis/subscribed").asBoolean()).isTrue();
            assertThat(r.body())
                    .as("the Redis URI (it may hold a password) is never shown")
                    .doesNotContain(redis.uri());
            assertThat(s.at("/workers/0/id").asText()).isEqualTo(w.id);
            assertThat(s.at("/workers/0/targets").toString()).contains("gate");
            assertThat(s.at("/workers/0/activeRelays").asInt()).isEqualTo(1);
            assertThat(s.path("activeRelays").asInt()).isEqualTo(1);
            assertThat(s.path("clientConnections").asInt())
                    .as("the status request's own connection, the relay's and the uplink are counted")
                    .isGreaterThanOrEqualTo(2);
            assertThat(s.path("exchangesInFlight").asInt())
                    .as("the running relay is an exchange in flight")
                    .isGreaterThanOrEqualTo(1);

            gate.complete(new RelayedResponse(204, List.of(), null));
            assertThat(running.get(WAIT.toSeconds(), TimeUnit.SECONDS).statusCode())
                    .isEqualTo(204);
        }
    }

    /**
     * The gateway's own read-only resources on the client port answer GET and HEAD, and any other
     * method 405 with {@code Allow} (RFC 9110 §15.5.6), as the admin port does; never the resource
     * itself. Regression (the fourth review): a POST or DELETE to the scrape got the whole scrape,
     * and HEAD on the status view a 400.
     */
    @Test
    void readOnlyResources_answer405WithAllow_toOtherMethods_andHeadWithoutABody() throws Exception {
        String auth = "Authorization: Bearer " + Cell.adminToken() + "\r\n";
        for (String path :
                List.of("/actuator/prometheus", "/actuator/health", "/gateway/v1/status", "/gateway/v1/workers")) {
            for (String method : List.of("POST", "DELETE", "OPTIONS")) {
                RawClient.Response r = RawClient.exchange(
                        cell.gateway.port(),
                        method + " " + path + " HTTP/1.1\r\nHost: gw\r\n" + auth + "Content-Length: 0\r\n\r\n");
                assertThat(r.status()).as("%s %s", method, path).isEqualTo(405);
                assertThat(r.header("allow")).as("%s %s", method, path).isEqualTo("GET, HEAD");
                assertThat(r.text())
                        .as("%s %s", method, path)
                        .doesNotContain("jvm_")
                        .contains("\"code\"");
            }
            try (RawClient c = new RawClient(cell.gateway.port())) {
                c.send("HEAD " + path + " HTTP/1.1\r\nHost: gw\r\n" + auth + "\r\n");
                assertThat(c.read200HeadOnly()).as("HEAD %s", path).isEqualTo(200);
            }
        }
        RawClient.Response relayed = RawClient.exchange(
                cell.gateway.port(),
                "POST /relay/w1/app/health/check HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "
                        + Cell.token(Cell.TENANT) + "\r\nContent-Length: 0\r\n\r\n");
        assertThat(relayed.status())
                .as("a path that only contains /health/ is no local resource")
                .isEqualTo(503);
    }

    /**
     * The status views name every owner's address and every worker: a tenant's valid token is 403
     * {@code insufficient-scope} with RFC 6750 §3.1's challenge; an operator's, with the scope, reads
     * them.
     */
    @Test
    void statusViews_needTheAdminScope_aTenantsTokenIs403() throws Exception {
        for (String path : List.of("/gateway/v1/status", "/gateway/v1/workers")) {
            RawClient.Response tenant = RawClient.exchange(
                    cell.gateway.port(),
                    "GET " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                            + "\r\n\r\n");
            assertThat(tenant.status()).as(path).isEqualTo(403);
            assertThat(tenant.header("WWW-Authenticate"))
                    .isEqualTo("Bearer error=\"insufficient_scope\", scope=\"spector:admin\"");
            JsonNode problem = JSON.readTree(tenant.text());
            assertThat(problem.path("code").asText()).isEqualTo("FORBIDDEN");
            assertThat(problem.at("/details/reason").asText()).isEqualTo("insufficient-scope");
            assertThat(tenant.text()).as("%s: nothing of the view", path).doesNotContain("ring", "workers\":");

            RawClient.Response admin = RawClient.exchange(
                    cell.gateway.port(),
                    "GET " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.adminToken() + "\r\n\r\n");
            assertThat(admin.status()).as(path).isEqualTo(200);
        }
    }

    @Test
    void status_needsAToken_andAnswersOnlyGet() throws Exception {
        HttpResponse<String> anonymous = get("/gateway/v1/status", false);
        assertThat(anonymous.statusCode()).isEqualTo(401);
        assertThat(JSON.readTree(anonymous.body()).path("code").asText()).isEqualTo("UNAUTHENTICATED");

        HttpResponse<String> post = cell.http.send(
                cell.request("/gateway/v1/status")
                        .timeout(WAIT)
                        .POST(HttpRequest.BodyPublishers.noBody())
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(post.statusCode()).isEqualTo(405);
        assertThat(post.headers().firstValue("allow")).hasValue("GET, HEAD");
        assertThat(JSON.readTree(post.body()).at("/details/field").asText()).isEqualTo("method");
    }
}
