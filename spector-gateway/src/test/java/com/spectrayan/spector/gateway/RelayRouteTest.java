package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.cluster.gateway.TransportSpec;
import com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.InMemoryFrameChannels;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayWorkerClient;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import com.spectrayan.spector.uplink.worker.WorkerOptions;
import com.spectrayan.spector.worker.HttpForwardTarget;
import com.spectrayan.spector.worker.WorkerDaemon;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The {@code /relay/{workerId}/{target}/...} route end to end: HTTP into a real gateway, over an
 * uplink to a worker session and its relay targets, and back. Worker {@code w1} is a session with
 * fake targets over an in-memory uplink (every frame through the wire codec); worker {@code dw} is
 * the real worker daemon over the real WebSocket, with an {@code http-forward} target to an owner.
 */
final class RelayRouteTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(30);
    private static final int MIB = 1024 * 1024;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Cell cell;
    /** Relays the {@code app} target of w1 served. */
    private static final AtomicInteger ECHOED = new AtomicInteger();

    private static EventLoopGroup workerLoops;
    private static UpstreamHttpTransport workerTransport;
    private static WorkerDaemon daemon;
    private static final String DAEMON_TOKEN = "relay-route-daemon-token-0123456789";

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .set("spector.uplink.tokens", "dw=" + TokenHashes.sha256Hex(DAEMON_TOKEN))
                .start();
        workerLoops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        workerTransport =
                new UpstreamHttpTransport(TransportSpec.defaults(), NioSocketChannel.class, NioDatagramChannel.class);
        HttpForwardTarget http = new HttpForwardTarget(cell.owners.get(0).baseUri(), workerTransport, workerLoops);
        WorkerOptions w1 = WorkerOptions.builder("w1")
                .relayTarget("app", RelayRouteTest::echo)
                .relayTarget("blob", RelayRouteTest::blob)
                .relayTarget("owner", http)
                .build();
        InMemoryFrameChannels.Pair<GatewayWorkerClient, UplinkSession> uplink = InMemoryFrameChannels.pair(
                ch -> GatewayWorkerClient.over("w1", ch),
                ch -> UplinkSession.start(ch, UplinkSession.Role.GATEWAY_UPLINK, w1));
        cell.gateway.workerDirectory().register(new WorkerLink("w1", uplink.gateway()));
        daemon = WorkerDaemon.start(
                URI.create("ws://127.0.0.1:" + cell.gateway.port() + "/uplink"),
                "dw",
                DAEMON_TOKEN,
                Map.of("owner", cell.owners.get(0).baseUri()));
        await("the worker daemon's uplink is registered")
                .atMost(TIMEOUT)
                .until(() ->
                        daemon.isConnected() && cell.gateway.workerDirectory().live("dw") != null);
    }

    @AfterAll
    static void stop() {
        daemon.close();
        cell.close();
        workerTransport.close();
        workerLoops
                .shutdownGracefully(0, 2, java.util.concurrent.TimeUnit.SECONDS)
                .syncUninterruptibly();
    }

    @Test
    void shouldRelayA20MiBPutAndA20MiBGetThroughTheWorkerDaemonsHttpForwardOverTheWebSocketByteForByte()
            throws Exception {
        byte[] upload = new byte[20 * MIB];
        new java.util.Random(5).nextBytes(upload);
        HttpResponse<String> put = cell.http.send(
                request("/relay/dw/owner/api/v1/namespaces/relayed/objects/blob")
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(upload))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(put.statusCode())
                .as("PUT through http-forward: %s", put.body())
                .isBetween(200, 201);
        assertThat(JSON.readTree(put.body()).get("sha256").asText())
                .isEqualTo(HexFormat.of().formatHex(sha256().digest(upload)));

        HttpResponse<byte[]> get = cell.http.send(
                request("/relay/dw/owner/api/v1/namespaces/relayed/objects/blob")
                        .build(),
                HttpResponse.BodyHandlers.ofByteArray());
        assertThat(get.statusCode()).isEqualTo(200);
        assertThat(HexFormat.of().formatHex(sha256().digest(get.body())))
                .as("the 20 MiB object comes back byte for byte through the uplink")
                .isEqualTo(HexFormat.of().formatHex(sha256().digest(upload)));
    }

    /** Answers JSON describing the request, after reading its whole body. */
    private static CompletionStage<RelayedResponse> echo(RelayedRequest request) {
        ECHOED.incrementAndGet();
        MessageDigest sha = sha256();
        long[] bytes = {0};
        BodySource body = request.body();
        CompletableFuture<Void> read = body == null ? CompletableFuture.completedFuture(null) : drain(body, sha, bytes);
        return read.thenApply(v -> {
            String json = "{\"method\":\"" + request.method() + "\",\"url\":\"" + request.url() + "\",\"tenant\":\""
                    + request.tenant() + "\",\"lease\":\"" + request.leaseId() + "\",\"bytes\":" + bytes[0]
                    + ",\"sha256\":\"" + HexFormat.of().formatHex(sha.digest()) + "\",\"authorization\":"
                    + request.headers().stream().anyMatch(h -> h.name().equalsIgnoreCase("authorization")) + "}";
            return new RelayedResponse(
                    200,
                    List.of(new Header("Content-Type", "application/json")),
                    DialedWorker.body(json.getBytes(StandardCharsets.UTF_8)));
        });
    }

    /**
     * RFC 3986 §5.2.4: a relayed path is normalized before it is relayed, so the target's upstream
     * gets {@code /b/c}, never a dot-segment that climbs out of its base path. Regression: {@code
     * /relay/w/t/../../..} escaped the target's base path upstream.
     */
    @Test
    void shouldRelayTheNormalizedPathAndNeverADotSegment() throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /relay/w1/app/a/%2e%2e/b/./c?x=1 HTTP/1.1\r\nHost: gw\r\n"
                            + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(JSON.readTree(r.body()).get("url").asText()).isEqualTo("http://app/b/c?x=1");
        }
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("GET /relay/w1/app/../../../../etc HTTP/1.1\r\nHost: gw\r\n"
                            + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n")
                    .read();
            assertThat(r.status()).as("climbs above the root").isEqualTo(400);
            assertThat(c.closedByServer()).isTrue();
        }
    }

    /** Answers {@code bytes} bytes where byte i is (i mod 251). */
    private static CompletionStage<RelayedResponse> blob(RelayedRequest request) {
        long total = Long.parseLong(request.url().getQuery().substring("bytes=".length()));
        long[] sent = {0};
        BodySource body = new BodySource() {
            @Override
            public CompletionStage<@Nullable ByteBuffer> next() {
                if (sent[0] >= total) {
                    return CompletableFuture.completedFuture(null);
                }
                int n = (int) Math.min(64 * 1024, total - sent[0]);
                ByteBuffer part = ByteBuffer.allocate(n);
                for (int i = 0; i < n; i++) {
                    part.put((byte) ((sent[0] + i) % 251));
                }
                sent[0] += n;
                return CompletableFuture.completedFuture(part.flip());
            }

            @Override
            public void cancel(Throwable reason) {}
        };
        return CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), body));
    }

    private static CompletableFuture<Void> drain(BodySource body, MessageDigest sha, long[] bytes) {
        return body.next().toCompletableFuture().thenCompose(part -> {
            if (part == null) {
                return CompletableFuture.completedFuture(null);
            }
            bytes[0] += part.remaining();
            sha.update(part);
            return drain(body, sha, bytes);
        });
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static HttpRequest.Builder request(String path) {
        return cell.request(path).timeout(TIMEOUT);
    }

    /**
     * DESIGN section 5: a relay's tenant is its token's. A token that names none is 403 {@code
     * no-tenant} whatever {@code X-Spector-Tenant} says, and a header contradicting the token's
     * tenant is 403 {@code tenant-mismatch}, as on the forwarded path; the worker sees neither.
     * Regression (the fourth review): the first ran as the header's tenant, the second silently as
     * the token's.
     */
    @Test
    void shouldRefuseAHeaderTenantTheTokenDoesNotGrant() throws Exception {
        int before = ECHOED.get();
        RawClient.Response none = RawClient.exchange(
                cell.gateway.port(),
                "GET /relay/w1/app/a HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.untenantedToken()
                        + "\r\nX-Spector-Tenant: globex\r\n\r\n");
        assertThat(none.status()).isEqualTo(403);
        assertThat(none.text()).contains("\"reason\":\"no-tenant\"");
        RawClient.Response other = RawClient.exchange(
                cell.gateway.port(),
                "GET /relay/w1/app/a HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                        + "\r\nX-Spector-Tenant: globex\r\n\r\n");
        assertThat(other.status()).isEqualTo(403);
        assertThat(other.text()).contains("\"reason\":\"tenant-mismatch\"");
        assertThat(ECHOED.get()).as("nothing reached the worker").isEqualTo(before);
    }

    @Test
    void shouldRelayAGetWithItsPathQueryTenantAndLease_withoutTheCallersCredentials() throws Exception {
        HttpResponse<String> r = cell.http.send(
                request("/relay/w1/app/a/b?x=1")
                        .header("X-Spector-Lease", "lease-7")
                        .build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode echo = JSON.readTree(r.body());
        assertThat(echo.get("method").asText()).isEqualTo("GET");
        assertThat(echo.get("url").asText())
                .as("GET /relay/w1/app/a/b?x=1 reaches the target as /a/b?x=1")
                .isEqualTo("http://app/a/b?x=1");
        assertThat(echo.get("tenant").asText()).as("tenant from the token").isEqualTo(Cell.TENANT);
        assertThat(echo.get("lease").asText()).isEqualTo("lease-7");
        assertThat(echo.get("authorization").asBoolean())
                .as("the caller's Authorization never crosses the uplink")
                .isFalse();
    }

    @Test
    void shouldRelayA20MiBUploadAndA20MiBDownloadByteForByte() throws Exception {
        byte[] upload = new byte[20 * MIB];
        new java.util.Random(11).nextBytes(upload);
        HttpResponse<String> put = cell.http.send(
                request("/relay/w1/app/upload")
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(upload))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(put.statusCode()).isEqualTo(200);
        JsonNode echo = JSON.readTree(put.body());
        assertThat(echo.get("bytes").asLong()).isEqualTo(upload.length);
        assertThat(echo.get("sha256").asText()).isEqualTo(HexFormat.of().formatHex(sha256().digest(upload)));

        HttpResponse<InputStream> get = cell.http.send(
                request("/relay/w1/blob/big?bytes=" + 20 * MIB).build(), HttpResponse.BodyHandlers.ofInputStream());
        assertThat(get.statusCode()).isEqualTo(200);
        long n = 0;
        byte[] buf = new byte[1 << 16];
        try (InputStream in = get.body()) {
            for (int read; (read = in.read(buf)) != -1; ) {
                for (int i = 0; i < read; i++) {
                    if (buf[i] != (byte) ((n + i) % 251)) {
                        throw new AssertionError("byte " + (n + i) + " (expected: (i mod 251))");
                    }
                }
                n += read;
            }
        }
        assertThat(n).isEqualTo(20L * MIB);
    }

    @Test
    void shouldAcceptAnExpect100ContinueUploadOverTheForwardingCap() throws Exception {
        int size = 11 * MIB; // over the 10 MiB cap of /api/v1/**, which does not apply to relays
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send("PUT /relay/w1/app/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                            + Cell.token(Cell.TENANT) + "\r\nExpect: 100-continue\r\nContent-Length: " + size
                            + "\r\n\r\n")
                    .send(new byte[size])
                    .read();
            assertThat(r.status())
                    .as("a relayed upload past 10 MiB with Expect: 100-continue")
                    .isEqualTo(200);
            assertThat(JSON.readTree(r.body()).get("bytes").asLong()).isEqualTo(size);
        }
    }

    @Test
    void shouldAnswer503WorkerUnreachableForAWorkerWithNoUplink() throws Exception {
        HttpResponse<String> r =
                cell.http.send(request("/relay/nobody/app/x").build(), HttpResponse.BodyHandlers.ofString());

        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("WORKER_UNREACHABLE");
    }

    @Test
    void shouldAnswer503RelayTargetMissingForAnUnknownTarget() throws Exception {
        HttpResponse<String> r =
                cell.http.send(request("/relay/w1/nothing/x").build(), HttpResponse.BodyHandlers.ofString());

        assertThat(r.statusCode()).isEqualTo(503);
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("RELAY_TARGET_MISSING");
    }

    @Test
    void shouldRequireAToken() throws Exception {
        HttpResponse<String> r = cell.getWithoutToken("/relay/w1/app/x");

        assertThat(r.statusCode()).isEqualTo(401);
    }

    @Test
    void shouldListConnectedWorkers() throws Exception {
        HttpResponse<String> r =
                cell.http.send(request("/gateway/v1/workers").build(), HttpResponse.BodyHandlers.ofString());

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(r.body()).get("workers").findValuesAsText("id"))
                .as("both workers: the in-memory one and the daemon on the WebSocket")
                .containsExactlyInAnyOrder("w1", "dw");
    }

    @Test
    void aDaemonKeepsTwoLinksByDefault_listedAsOneWorkerWithBothLinks_andRelaysOverThem() throws Exception {
        await("both of the daemon's links are registered")
                .atMost(TIMEOUT)
                .until(() -> cell.gateway.workerDirectory().links("dw").size() == 2);
        HttpResponse<String> r =
                cell.http.send(request("/gateway/v1/workers").build(), HttpResponse.BodyHandlers.ofString());
        com.fasterxml.jackson.databind.JsonNode dw = null;
        for (com.fasterxml.jackson.databind.JsonNode w : JSON.readTree(r.body()).get("workers")) {
            if (w.path("id").asText().equals("dw")) {
                dw = w;
            }
        }
        com.fasterxml.jackson.databind.JsonNode row = java.util.Objects.requireNonNull(dw, "dw is one row");
        assertThat(row.get("links").findValuesAsText("slot")).containsExactly("0", "1");
        assertThat(row.get("links").findValuesAsText("remote"))
                .as("each link says where it was dialled from")
                .allSatisfy(remote -> assertThat(remote).contains("127.0.0.1"));
        for (int i = 0; i < 6; i++) {
            HttpResponse<String> relayed = cell.http.send(
                    request("/relay/dw/owner/api/v1/namespaces/links/echo?i=" + i)
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(relayed.statusCode())
                    .as("relay %d over the daemon's links", i)
                    .isEqualTo(200);
        }
        HttpResponse<String> metrics =
                cell.http.send(request("/actuator/prometheus").build(), HttpResponse.BodyHandlers.ofString());
        assertThat(metrics.body())
                .containsPattern("(?m)^spector_workers_connected(\\{[^}]*\\})? 2\\.0$")
                .containsPattern("(?m)^spector_uplinks_connected(\\{[^}]*\\})? 3\\.0$");
    }
}
