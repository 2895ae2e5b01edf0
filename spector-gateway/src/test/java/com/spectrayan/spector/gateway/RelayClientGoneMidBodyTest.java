package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A client whose connection goes mid-body (a FIN, or a reset) while the worker's response is under
 * way: the relay is aborted (the worker's target hears it) and the worker's relay slot goes back at
 * once, so the next relay to the worker runs. On a gateway with one relay per worker, the worker on
 * the real uplink (v2), raw sockets only. Regression: a reset the gateway read failed the
 * connection (closeCutting), which ended the exchange without cancelling the response body, so the
 * relay, its stream and its slot stayed until the relay deadline (330 s); a v2 relay keeps its slot
 * until its body is taken, so an ended response whose client reset held it the same way.
 */
final class RelayClientGoneMidBodyTest {
    private static final String WORKER = "gw";
    private static final String FIRST_PART = "the first part of a body that goes on later";
    private static final Duration WITHIN = Duration.ofSeconds(5);

    /** The signals of the target's requests, each completed with the path when it aborts. */
    private static final BlockingQueue<String> aborted = new LinkedBlockingQueue<>();

    private static RelayCell relayCell;

    @BeforeAll
    static void start() throws Exception {
        relayCell = RelayCell.startV2(
                Cell.builder().owners(1).set("spector.uplink.relay.max-per-worker", "1"),
                WORKER,
                (c, httpForward) -> Map.of("held", firstPartThenWait(), "small", small()));
        assertThat(relayCell.worker.links).as("the worker's one link").hasSize(1);
        assertThat(relayCell.worker.connections)
                .as("the link speaks v2 (a v1 link's channel is recorded here)")
                .isEmpty();
    }

    @AfterAll
    static void stop() {
        relayCell.close();
    }

    /** A target whose response has no length: one part, then nothing more until its request aborts. */
    private static RelayTarget firstPartThenWait() {
        return request -> {
            CompletableFuture<@Nullable ByteBuffer> never = new CompletableFuture<>();
            request.signal().onAbort(why -> {
                aborted.add(request.url().getPath());
                never.completeExceptionally(why);
            });
            return CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), new BodySource() {
                private boolean sent;

                @Override
                public CompletionStage<@Nullable ByteBuffer> next() {
                    if (sent) {
                        return never;
                    }
                    sent = true;
                    return CompletableFuture.completedFuture(
                            ByteBuffer.wrap(FIRST_PART.getBytes(StandardCharsets.US_ASCII)));
                }

                @Override
                public void cancel(Throwable reason) {}
            }));
        };
    }

    private static RelayTarget small() {
        return request ->
                CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), DialedWorker.body("ok")));
    }

    @ParameterizedTest(name = "reset: {0}")
    @ValueSource(booleans = {true, false})
    void shouldAbortTheRelayAndReleaseItsSlotWhenTheClientGoesMidBody(boolean reset) throws Exception {
        Cell cell = relayCell.cell;
        String path = "/" + (reset ? "reset" : "fin");
        try (Socket client = new Socket()) {
            client.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), cell.gateway.port()), (int)
                    WITHIN.toMillis());
            client.setSoTimeout((int) WITHIN.toMillis());
            client.getOutputStream().write(request("/relay/" + WORKER + "/held" + path));
            client.getOutputStream().flush();
            readUntil(client.getInputStream(), FIRST_PART);
            assertThat(cell.gateway.relay().running(WORKER))
                    .as("the relay under way holds the worker's one slot")
                    .isEqualTo(1);
            if (reset) {
                client.setSoLinger(true, 0); // the close sends RST
            }
        }

        assertThat(aborted.poll(WITHIN.toMillis(), TimeUnit.MILLISECONDS))
                .as("the worker's target hears the abort")
                .isEqualTo(path);
        await("the relay's slot goes back")
                .atMost(WITHIN)
                .until(() -> cell.gateway.relay().running(WORKER) == 0);
        try (Socket next = new Socket()) {
            next.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), cell.gateway.port()), (int)
                    WITHIN.toMillis());
            next.setSoTimeout((int) WITHIN.toMillis());
            next.getOutputStream().write(request("/relay/" + WORKER + "/small/after"));
            next.getOutputStream().flush();
            assertThat(readUntil(next.getInputStream(), "ok"))
                    .as("the next relay to the worker runs")
                    .startsWith("HTTP/1.1 200");
        }
    }

    private static byte[] request(String target) {
        return ("GET " + target + " HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                        + "\r\nConnection: close\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII);
    }

    /** Reads until what was read ends with {@code end}; the socket's timeout bounds it. */
    private static String readUntil(InputStream in, String end) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (!out.toString(StandardCharsets.US_ASCII).endsWith(end)) {
            int b = in.read();
            if (b < 0) {
                throw new AssertionError("the stream ended before " + end + ": " + out);
            }
            out.write(b);
        }
        return out.toString(StandardCharsets.US_ASCII);
    }
}
