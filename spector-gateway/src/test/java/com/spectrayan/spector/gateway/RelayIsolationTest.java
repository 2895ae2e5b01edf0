package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A worker's answer runs in a browser under its own opaque origin, never as the gateway's: a
 * worker's page is served on the gateway's origin by path ({@code /relay/...}), where it could
 * otherwise read and set the token cookie ({@code document.cookie}), read other relays' and the
 * owners' answers with the user's cookie, and register a service worker for the whole origin
 * (found by a review). The client, on a raw socket, gets the worker's answer with a {@code
 * Content-Security-Policy: sandbox} without {@code allow-same-origin} beside the worker's own
 * policy, {@code nosniff}, and no {@code Service-Worker-Allowed}.
 */
final class RelayIsolationTest {
    private static final String TOKEN = "iso-token-0123456789-0123456789";
    private static final String PAGE = "<script>document.cookie='t=x'</script>";

    private static final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private static Cell cell;
    private static DialedWorker worker;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .set("spector.uplink.tokens", "iso=" + TokenHashes.sha256Hex(TOKEN))
                .start();
        RelayTarget page = request -> CompletableFuture.completedFuture(new RelayedResponse(
                200,
                List.of(
                        new Header("Content-Type", "text/html"),
                        new Header("Content-Security-Policy", "default-src 'self'"),
                        new Header("Service-Worker-Allowed", "/")),
                once(PAGE)));
        worker = DialedWorker.dialOnce(cell, "iso", TOKEN, Map.of("app", page), group)
                .awaitLive(cell);
    }

    @AfterAll
    static void stop() {
        worker.close();
        cell.close();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static BodySource once(String text) {
        return new BodySource() {
            private boolean sent;

            @Override
            public CompletionStage<@Nullable ByteBuffer> next() {
                if (sent) {
                    return CompletableFuture.completedFuture(null);
                }
                sent = true;
                return CompletableFuture.completedFuture(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
            }

            @Override
            public void cancel(Throwable reason) {}
        };
    }

    @Test
    void aWorkersPage_runsSandboxed_withoutItsServiceWorkerScope() throws Exception {
        try (java.net.Socket client =
                new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), cell.gateway.port())) {
            client.setSoTimeout(10_000);
            client.getOutputStream()
                    .write(("GET /relay/iso/app/index.html HTTP/1.1\r\nHost: gw\r\n" + "Authorization: Bearer "
                                    + Cell.token(Cell.TENANT) + "\r\n\r\n")
                            .getBytes(StandardCharsets.ISO_8859_1));
            java.io.InputStream in = client.getInputStream();
            assertThat(RawClient.line(in)).startsWith("HTTP/1.1 200 ");
            List<String> fields = new java.util.ArrayList<>();
            for (String f = RawClient.line(in); !f.isEmpty(); f = RawClient.line(in)) {
                fields.add(f.toLowerCase(java.util.Locale.ROOT));
            }
            assertThat(fields).contains("transfer-encoding: chunked"); // the worker said no length
            int size = Integer.parseInt(RawClient.line(in).strip(), 16);
            assertThat(new String(in.readNBytes(size), StandardCharsets.UTF_8)).isEqualTo(PAGE);
            assertThat(fields)
                    .as("the worker's policy and the gateway's sandbox, both enforced by a browser")
                    .contains(
                            "content-security-policy: default-src 'self'",
                            "content-security-policy: " + RelayedExchange.RELAY_SANDBOX)
                    .contains("x-content-type-options: nosniff")
                    .noneMatch(f -> f.startsWith("service-worker-allowed:"));
            assertThat(RelayedExchange.RELAY_SANDBOX).startsWith("sandbox ").doesNotContain("allow-same-origin");
        }
    }
}
