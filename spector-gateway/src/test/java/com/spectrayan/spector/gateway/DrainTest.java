package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.transport.WebSocketFrameChannel;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The graceful stop ({@link GatewayServer#close}, what SIGTERM runs): stop accepting, readiness
 * DOWN, in-flight exchanges finish within {@code spector.server.drain-timeout}, then the uplinks
 * close with a reason that sends their workers elsewhere.
 */
final class DrainTest {
    private static final String TOKEN = "worker-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(15);

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final ExecutorService background = Executors.newFixedThreadPool(2);
    private final CompletableFuture<RelayedResponse> gate = new CompletableFuture<>();
    private final CountDownLatch targetCalled = new CountDownLatch(1);
    private @Nullable Cell cell;
    private @Nullable DialedWorker worker;

    @AfterEach
    void tearDown() {
        gate.complete(new RelayedResponse(204, List.of(), null));
        DialedWorker w = worker;
        if (w != null) {
            w.close();
        }
        Cell c = cell;
        if (c != null) {
            c.close(); // a second close is a no-op for a stopped gateway's parts
        }
        background.shutdownNow();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private Cell start(String drainTimeout) throws IOException {
        Cell c = Cell.builder()
                .owners(1)
                .set("spector.uplink.tokens", "w1=" + TokenHashes.sha256Hex(TOKEN))
                .set("spector.server.drain-timeout", drainTimeout)
                .set("spector.server.admin-port", "0")
                .start();
        cell = c;
        RelayTarget gated = request -> {
            targetCalled.countDown();
            return gate;
        };
        worker = DialedWorker.dialOnce(c, "w1", TOKEN, Map.of("gate", gated), group)
                .awaitLive(c);
        return c;
    }

    private static String relayGet() {
        return "GET /relay/w1/gate/slow HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                + "\r\n\r\n";
    }

    @Test
    void drain_letsTheInFlightExchangeFinish_refusesNewConnections_answersReadinessDown_thenClosesUplinks()
            throws Exception {
        Cell c = start("10s");
        int port = c.gateway.port();
        try (RawClient busy = new RawClient(port);
                RawClient idle = new RawClient(port)) {
            idle.send("GET /actuator/health/readiness HTTP/1.1\r\nHost: gw\r\n\r\n");
            assertThat(idle.read().status()).as("readiness before the drain").isEqualTo(200);
            busy.send(relayGet());
            assertThat(targetCalled.await(WAIT.toSeconds(), TimeUnit.SECONDS))
                    .as("the relayed request reached the worker's target")
                    .isTrue();

            long stopStarted = System.nanoTime();
            Future<?> stopping = background.submit(c.gateway::close);
            await("the gateway starts draining").atMost(WAIT).until(c.gateway::isDraining);

            RawClient.Response readiness = idle.send("GET /actuator/health/readiness HTTP/1.1\r\nHost: gw\r\n\r\n")
                    .read();
            assertThat(readiness.status())
                    .as("readiness while draining, asked on a connection opened before")
                    .isEqualTo(503);
            assertThat(readiness.text()).contains("OUT_OF_SERVICE");
            assertThat(readiness.header("connection"))
                    .as("a response while draining ends its keep-alive connection")
                    .isEqualToIgnoringCase("close");
            assertThat(refusesConnections(port))
                    .as("no new connection is accepted while draining")
                    .isTrue();
            RawClient.Response probe = RawClient.exchange(
                    c.gateway.adminPort(), "GET /actuator/health/readiness HTTP/1.1\r\nHost: gw\r\n\r\n");
            assertThat(probe.status())
                    .as("readiness on a new connection to the admin port while draining (a kubelet's probe)")
                    .isEqualTo(503);
            assertThat(probe.text()).contains("OUT_OF_SERVICE");
            assertThat(stopping.isDone())
                    .as("the stop waits for the exchange in flight")
                    .isFalse();

            assertThat(Objects.requireNonNull(worker).lastConnection().isOpen())
                    .as("the uplink carrying the relay stays open while the relay runs")
                    .isTrue();
            gate.complete(new RelayedResponse(
                    200,
                    List.of(new Header("content-type", "text/plain")),
                    DialedWorker.body("finished while draining")));
            RawClient.Response finished = busy.read();
            assertThat(finished.status())
                    .as("the in-flight exchange completes during the drain")
                    .isEqualTo(200);
            assertThat(finished.text()).isEqualTo("finished while draining");

            int adminPort = c.gateway.adminPort();
            stopping.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertThat(refusesConnections(adminPort))
                    .as("the admin listener closes with the stop, after the drain")
                    .isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - stopStarted))
                    .as("the stop returns once the last exchange ended, well before the 10 s drain timeout")
                    .isLessThan(Duration.ofSeconds(8));
            WebSocketFrameChannel uplink = Objects.requireNonNull(worker).lastConnection();
            await("the worker sees its uplink closed").atMost(WAIT).until(() -> !uplink.isOpen());
            assertThat(uplink.peerCloseReason())
                    .as(
                            "the close reason tells the worker the gateway is draining (close code %d)",
                            uplink.peerCloseCode())
                    .isEqualTo(GatewayServer.DRAIN_CLOSE_REASON);
            assertThat(uplink.peerCloseCode())
                    .as("1001 Going Away (RFC 6455 section 7.4.1): the worker re-dials at once")
                    .isEqualTo(1001);
        }
    }

    /**
     * A small upload still being read first when the drain begins (its relay not started, so no
     * link counts it) is finished too: its relay starts before the links are sent away, and the
     * rest of the body streams. Before, the relay started at the body's end, after the links had
     * gone, and found none: a 503 for an exchange the drain promised to finish.
     */
    @Test
    void drain_finishesAnUploadStillReadFirst() throws Exception {
        RecordingTarget target = new RecordingTarget();
        Cell c = Cell.builder()
                .owners(1)
                .set("spector.uplink.tokens", "w1=" + TokenHashes.sha256Hex(TOKEN))
                .set("spector.server.drain-timeout", "10s")
                .start();
        cell = c;
        worker = DialedWorker.dialOnce(c, "w1", TOKEN, Map.of("record", target), group)
                .awaitLive(c);
        byte[] body = new byte[30_000];
        java.util.Arrays.fill(body, (byte) 'u');
        try (RawClient upload = new RawClient(c.gateway.port())) {
            upload.send("PUT /relay/w1/record/up HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "
                    + Cell.token(Cell.TENANT) + "\r\nContent-Length: " + body.length + "\r\n\r\n");
            upload.send(java.util.Arrays.copyOf(body, 1_000));
            await("the gateway reads the body first")
                    .atMost(WAIT)
                    .until(() -> !c.get("/actuator/prometheus")
                            .body()
                            .contains("spector_forwarder_replay_budget_available_bytes 6.7108864E7"));
            assertThat(target.call("/up")).as("the relay waits for the body").isNull();

            Future<?> stopping = background.submit(c.gateway::close);
            await("the gateway starts draining").atMost(WAIT).until(c.gateway::isDraining);
            target.awaitCall("/up", WAIT); // started before the links were sent away
            upload.send(java.util.Arrays.copyOfRange(body, 1_000, body.length));

            RawClient.Response r = upload.read();
            assertThat(r.status()).as(r.text()).isEqualTo(200);
            assertThat(r.text())
                    .isEqualTo(
                            "{\"bytes\":" + body.length + ",\"sha256\":\"" + RecordingTarget.sha256Hex(body) + "\"}");
            stopping.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        }
    }

    @Test
    void drain_cutsTheExchangesStillRunningAtTheDrainTimeout() throws Exception {
        Cell c = start("300ms");
        try (RawClient busy = new RawClient(c.gateway.port())) {
            busy.send(relayGet());
            assertThat(targetCalled.await(WAIT.toSeconds(), TimeUnit.SECONDS))
                    .as("the relayed request reached the worker's target")
                    .isTrue();
            long started = System.nanoTime();
            c.gateway.close();
            assertThat(Duration.ofNanos(System.nanoTime() - started))
                    .as("the stop ends soon after the 300 ms drain timeout, not when the target answers")
                    .isLessThan(Duration.ofSeconds(3));
            assertThat(endedWithout200(busy))
                    .as("the exchange cut at the drain timeout gets no 200")
                    .isTrue();
        }
    }

    /**
     * An HTTP/1.0 client reads a body of unknown length to the connection's close (RFC 9112 §6.3
     * item 8). An event stream still running at the drain timeout is cut with a reset, so that
     * client learns its body was cut: a FIN ended it as a whole body (found by a review).
     */
    @Test
    void drain_cutsAClosedDelimitedResponseWithAReset_notAnEnd() throws Exception {
        Cell c = start("300ms");
        try (Socket client = new Socket(InetAddress.getLoopbackAddress(), c.gateway.port())) {
            client.setSoTimeout((int) WAIT.toMillis());
            client.getOutputStream()
                    .write(("GET /api/v1/events HTTP/1.0\r\nHost: x\r\nAccept: text/event-stream\r\n"
                                    + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n")
                            .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            java.io.InputStream in = client.getInputStream();
            String statusLine = RawClient.line(in);
            assertThat(statusLine).startsWith("HTTP/1.1 200");
            boolean framed = false;
            for (String f = RawClient.line(in); !f.isEmpty(); f = RawClient.line(in)) {
                String name = f.toLowerCase(java.util.Locale.ROOT);
                framed |= name.startsWith("content-length:") || name.startsWith("transfer-encoding:");
            }
            assertThat(framed)
                    .as("to an HTTP/1.0 client, the stream is close-delimited")
                    .isFalse();

            c.gateway.close();
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> {
                        while (in.read() != -1) {
                            // the stream's events until the cut
                        }
                    })
                    .as("the cut body ends in a reset, never an end the client takes for whole")
                    .isInstanceOf(java.net.SocketException.class);
        }
    }

    /** Answers whether the cut exchange ended in a 503 (the lost uplink) or a closed connection. */
    private static boolean endedWithout200(RawClient client) {
        try {
            return client.read().status() != 200;
        } catch (IOException e) {
            return true; // the connection closed before a response
        }
    }

    private static boolean refusesConnections(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2_000);
            s.setSoTimeout(2_000);
            return s.getInputStream().read() == -1; // accepted in the instant before: closed at once
        } catch (IOException e) {
            return true; // refused, or reset
        }
    }
}
