package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.transport.UplinkDialer;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import com.spectrayan.spector.uplink.worker.WorkerOptions;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A worker dials the real gateway's {@code /uplink} WebSocket, and {@code /relay/...} reaches it. */
final class UplinkGatewayTest {
    private static final String TOKEN = "worker-token-0123456789";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Cell cell;
    private static EventLoopGroup group;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .set("spector.uplink.tokens", "w1=" + TokenHashes.sha256Hex(TOKEN))
                .start();
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    }

    @AfterAll
    static void stop() {
        cell.close();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static UplinkDialer dial(String workerId, String token, List<Throwable> failures) {
        WorkerOptions options = WorkerOptions.builder(workerId)
                .relayTarget(
                        "app",
                        request -> CompletableFuture.<RelayedResponse>completedFuture(new RelayedResponse(
                                200,
                                List.of(new Header("Content-Type", "text/plain")),
                                once(("hello from " + workerId + " " + request.url())
                                        .getBytes(StandardCharsets.UTF_8)))))
                .build();
        UplinkDialer dialer = UplinkDialer.builder(
                        URI.create("ws://127.0.0.1:" + cell.gateway.port() + "/uplink"), workerId, token, group)
                .onConnected(ch -> {
                    UplinkSession session = UplinkSession.start(ch, UplinkSession.Role.GATEWAY_UPLINK, options);
                    ch.onCorrupt(session::corruptFrame);
                })
                .onAttemptFailed(failures::add)
                .reconnect(Duration.ofMillis(50), Duration.ofMillis(200))
                .build();
        dialer.start();
        return dialer;
    }

    private static BodySource once(byte[] bytes) {
        boolean[] sent = {false};
        return new BodySource() {
            @Override
            public CompletionStage<@Nullable ByteBuffer> next() {
                if (sent[0]) {
                    return CompletableFuture.completedFuture(null);
                }
                sent[0] = true;
                return CompletableFuture.completedFuture(ByteBuffer.wrap(bytes));
            }

            @Override
            public void cancel(Throwable reason) {}
        };
    }

    @Test
    void shouldRelayThroughAnUplinkTheWorkerDialed() throws Exception {
        try (UplinkDialer dialer = dial("w1", TOKEN, new CopyOnWriteArrayList<>())) {
            await("w1's uplink registered")
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> dialer.isConnected()
                            && cell.gateway.workerDirectory().live("w1") != null);

            HttpResponse<String> r = cell.http.send(
                    HttpRequest.newBuilder(cell.uri("/relay/w1/app/a/b?x=1"))
                            .timeout(Duration.ofSeconds(20))
                            .header("Authorization", "Bearer " + Cell.token(Cell.TENANT))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());

            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("hello from w1 http://app/a/b?x=1");
            HttpResponse<String> workers = cell.http.send(
                    HttpRequest.newBuilder(cell.uri("/gateway/v1/workers"))
                            .header("Authorization", "Bearer " + Cell.token(Cell.TENANT))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(JSON.readTree(workers.body()).at("/workers/0/id").asText())
                    .isEqualTo("w1");
        }
    }

    @Test
    void shouldRefuseAWrongWorkerTokenAtTheUpgrade() {
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        try (UplinkDialer dialer = dial("w2", "not-the-token", failures)) {
            await("the gateway refused the upgrade")
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> !failures.isEmpty());
            assertThat(cell.gateway.workerDirectory().live("w2"))
                    .as("no uplink registered")
                    .isNull();
            assertThat(dialer.isConnected()).isFalse();
        }
    }
}
