package com.spectrayan.spector.gateway;

import static com.spectrayan.spector.gateway.EdgeSpliceTest.FIRST;
import static com.spectrayan.spector.gateway.EdgeSpliceTest.get;
import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.cluster.gateway.ForwarderMetrics;
import com.spectrayan.spector.gateway.EdgeSpliceTest.Wire;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client that stops reading its response ({@code spector.server.send-timeout}, nginx's {@code
 * send_timeout}), on the wire: raw client sockets that read a response's head and first bytes and
 * then nothing, in front of a {@link StagedOwner} that writes the rest as fast as the gateway
 * takes it. The gateway must not hold the owner connection for ever: once the bytes it holds for
 * the client wait {@link #SEND_TIMEOUT} without one taken, the client connection is reset and the
 * owner connection closed, never pooled (RFC 9112 §9.6 leaves a stalled peer to the server's
 * timeouts; a response cut short must not look complete, RFC 9112 §8). A client that reads slowly
 * but steadily is not cut. Each test checks both ends: what the client got, and the owner's
 * connection ending (or not), with the counter and the access log's line.
 */
final class EdgeSendTimeoutTest {
    /** The cells' send timeout: the smallest the setting takes. */
    static final Duration SEND_TIMEOUT = Duration.ofSeconds(1);

    /** A body larger than every buffer between the owner and a client that reads nothing. */
    static final int LARGE = 48 * 1024 * 1024;

    private static final Duration BOUND = Duration.ofSeconds(20);

    @TempDir
    static Path dir;

    private static @Nullable StagedOwner owner;
    private static @Nullable Cell spliceOn;
    private static @Nullable Cell spliceOff;
    private static @Nullable Cell spliceOnUring;
    private static @Nullable Path onLog;

    @BeforeAll
    static void start() throws Exception {
        owner = StagedOwner.start();
        onLog = dir.resolve("on.log");
        spliceOn = Cell.builder()
                .owners(1)
                .member("staged-0", owner().baseUri())
                .set("spector.server.send-timeout", "1s")
                .set("spector.server.access-log", onLog.toString())
                .start();
        spliceOff = Cell.builder()
                .owners(1)
                .member("staged-0", owner().baseUri())
                .set("spector.server.send-timeout", "1s")
                .set("spector.server.splice-pipes", "0")
                .start();
        spliceOnUring = Cell.builder()
                .owners(1)
                .member("staged-0", owner().baseUri())
                .set("spector.server.send-timeout", "1s")
                .set("spector.server.transport", "io_uring")
                .start();
    }

    @AfterAll
    static void stop() {
        if (spliceOn != null) {
            spliceOn.close();
        }
        if (spliceOff != null) {
            spliceOff.close();
        }
        if (spliceOnUring != null) {
            spliceOnUring.close();
        }
        if (owner != null) {
            owner.close();
        }
    }

    /** The copy path: the body goes through the client connection's outbound buffer, which fills. */
    @Test
    void clientStopsReading_copiedBody_isResetAfterTheSendTimeout_andTheOwnerConnectionClosed() throws Exception {
        Cell cell = requireNonNull(spliceOff);
        stalls(cell, get(cell.namespaceOwnedBy("staged-0"), "len=" + LARGE + "&first=" + FIRST), false);
    }

    /** The same with a chunked answer, which is never spliced: re-framed chunk by chunk. */
    @Test
    void clientStopsReading_chunkedBody_isResetAfterTheSendTimeout() throws Exception {
        Cell cell = requireNonNull(spliceOn);
        stalls(cell, get(cell.namespaceOwnedBy("staged-0"), "len=" + LARGE + "&first=" + FIRST + "&chunked=1"), true);
    }

    /**
     * The splice path: the bytes wait in the kernel's pipe and Netty pauses the owner itself; the
     * client connection's buffer never fills, and the clock runs all the same.
     */
    @Test
    void clientStopsReading_splicedBody_isResetAfterTheSendTimeout_andLogged() throws Exception {
        Cell cell = requireNonNull(spliceOn);
        long spliced = cell.gateway.forwarder().metrics().splicedResponses();
        String id = stalls(cell, get(cell.namespaceOwnedBy("staged-0"), "len=" + LARGE + "&first=" + FIRST), false);
        assertThat(cell.gateway.forwarder().metrics().splicedResponses() - spliced)
                .as("the body went by splice")
                .isEqualTo(1);
        JsonNode line = AccessLogTest.lineOf(requireNonNull(onLog), id); // waits for the line
        assertThat(line.get("outcome").asText()).isEqualTo("reset");
        assertThat(line.get("error").asText()).isEqualTo(ClientConnection.SEND_TIMEOUT);
        assertThat(line.get("status").asInt()).isEqualTo(200);
    }

    /**
     * The splice path on io_uring: the bytes wait in the splice's own pipe, outside the client
     * connection's outbound buffer, and the clock runs all the same ({@code UringSplice}'s notes).
     */
    @Test
    void clientStopsReading_splicedBodyOnIoUring_isResetAfterTheSendTimeout() throws Exception {
        Cell cell = requireNonNull(spliceOnUring);
        long spliced = cell.gateway.forwarder().metrics().splicedResponses();
        stalls(cell, get(cell.namespaceOwnedBy("staged-0"), "len=" + LARGE + "&first=" + FIRST), false);
        assertThat(cell.gateway.forwarder().metrics().splicedResponses() - spliced)
                .as("the body went by splice")
                .isEqualTo(1);
    }

    /**
     * A relayed download (through a worker's uplink to its {@code http-forward} upstream): the
     * same clock, on the same client connection. The reset cancels the relay, and the worker
     * closes its connection to the upstream.
     */
    @Test
    void clientStopsReading_relayedBody_isReset_andTheWorkersUpstreamConnectionClosed() throws Exception {
        try (RelayCell relay = RelayCell.start(
                Cell.builder().owners(1).set("spector.server.send-timeout", "1s"),
                "send-timeout-worker",
                (c, httpForward) -> Map.of("staged", httpForward.apply(owner().baseUri())))) {
            stalls(relay.cell, relayGet("send-timeout-worker", "len=" + LARGE + "&first=" + FIRST), false, false);
        }
    }

    /**
     * A client that stops reading with less than the connection's high-water mark waiting: it
     * pipelines small requests (the gateway's own 404s) behind a tiny receive window and reads
     * nothing, so once the kernel's buffers are full one small answer waits in the gateway, the
     * buffer never unwritable. It is reset within the send timeout's bounds all the same.
     * Regression (a review): no clock ran below the mark, and the connection, mid exchange, was
     * held for ever (neither idle nor reusable), a slot of {@code max-connections} each.
     */
    @Test
    void clientStopsReading_withFewBytesWaiting_isResetAfterTheSendTimeout() throws Exception {
        Cell cell = requireNonNull(spliceOff);
        long timeouts = sendTimeouts(cell);
        byte[] request = "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
        try (Socket s = new Socket()) {
            s.setReceiveBufferSize(1024); // before the connect: the window the client offers
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), cell.gateway.port()), 5000);
            Thread writer = new Thread(
                    () -> {
                        try {
                            OutputStream out = s.getOutputStream();
                            for (int i = 0; i < 50_000; i++) {
                                out.write(request); // blocks once the gateway stops reading: the pipeline waits
                            }
                        } catch (IOException e) {
                            // the reset ends the writes
                        }
                    },
                    "pipelining-client");
            writer.setDaemon(true);
            writer.start();

            await().atMost(BOUND).until(() -> sendTimeouts(cell) > timeouts);

            s.setSoTimeout((int) BOUND.toMillis());
            assertThat(drainsToTheEnd(s.getInputStream()))
                    .as("the gateway ended the connection")
                    .isTrue();
        }
        assertThat(sendTimeouts(cell) - timeouts).isEqualTo(1);
    }

    /**
     * A switched connection (a WebSocket to the reference owner's echo) whose client writes and
     * never reads: the echo fills the gateway's buffer toward it, and the send timeout ends the
     * connection, where the splice's idle timer (a byte read either way) never would while the
     * client keeps writing. Regression (a review): the send clock was off once upgraded, and the
     * owner connection (or a worker's relay slot) was held for as long as the client wrote.
     */
    @Test
    void clientStopsReading_onAWebSocket_isClosedAfterTheSendTimeout() throws Exception {
        Cell cell = requireNonNull(spliceOff);
        String ns = cell.namespaceOwnedBy("owner-0");
        long timeouts = sendTimeouts(cell);
        try (Socket s = new Socket()) {
            s.setReceiveBufferSize(1024);
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), cell.gateway.port()), 5000);
            s.setSoTimeout((int) BOUND.toMillis());
            OutputStream out = s.getOutputStream();
            out.write(("GET /api/v1/namespaces/" + ns + "/ws HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\n"
                            + "Connection: Upgrade\r\nSec-WebSocket-Key: " + RawWebSocket.KEY + "\r\n"
                            + "Sec-WebSocket-Version: 13\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                            + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = s.getInputStream();
            assertThat(RawClient.line(in)).startsWith("HTTP/1.1 101");
            byte[] frame = RawWebSocket.frame(0x2, new byte[60 * 1024]);
            Thread writer = new Thread(
                    () -> {
                        try {
                            for (int i = 0; i < 2_000; i++) { // 120 MB at most: far past every buffer
                                out.write(frame); // blocks once the echo backs up: the client never reads
                            }
                        } catch (IOException e) {
                            // the close ends the writes
                        }
                    },
                    "websocket-writer");
            writer.setDaemon(true);
            writer.start();

            await().atMost(BOUND).until(() -> sendTimeouts(cell) > timeouts);
            assertThat(drainsToTheEnd(in))
                    .as("the gateway ended the connection")
                    .isTrue();
        }
        assertThat(sendTimeouts(cell) - timeouts).isEqualTo(1);
    }

    /**
     * At the limit's other side: a client that pauses for less than the timeout between reads, for
     * several timeouts in all, gets the whole body and keeps its connection.
     */
    @Test
    void slowButSteadyReader_pausingUnderTheTimeout_getsEveryByte() throws Exception {
        Cell cell = requireNonNull(spliceOff);
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 8 * 1024 * 1024;
        long timeouts = sendTimeouts(cell);
        int ended = owner().connectionsEnded();
        long started = System.nanoTime();
        try (Wire c = new Wire(cell.gateway.port())) {
            c.send(get(ns, "len=" + len + "&first=" + FIRST));
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            got.write(c.readStagedStart(len));
            owner().release();
            int piece = 1024 * 1024;
            for (int at = FIRST; at < len; at += piece) {
                pace(SEND_TIMEOUT.multipliedBy(2).dividedBy(5)); // the client's pace, not a wait for the gateway
                got.write(c.readNBytes(Math.min(piece, len - at)));
            }
            assertThat(got.toByteArray()).isEqualTo(StagedOwner.body(len));
            // The same connection carries the next exchange.
            assertThat(c.stagedGet(owner(), ns, 256 * 1024)).isEqualTo(StagedOwner.body(256 * 1024));
        }
        assertThat(Duration.ofNanos(System.nanoTime() - started))
                .as("the reads spanned several send timeouts")
                .isGreaterThan(SEND_TIMEOUT.multipliedBy(2));
        assertThat(sendTimeouts(cell) - timeouts).isZero();
        assertThat(owner().connectionsEnded()).isEqualTo(ended);
    }

    // ---- helpers ----

    /** Reads {@code in} to its end or reset; false when it neither ends nor resets within its timeout. */
    private static boolean drainsToTheEnd(InputStream in) {
        byte[] buf = new byte[64 * 1024];
        try {
            while (in.read(buf) >= 0) {
                // what was sent before the end
            }
            return true;
        } catch (java.net.SocketTimeoutException e) {
            return false;
        } catch (IOException reset) {
            return true;
        }
    }

    /**
     * Sends {@code request}, reads the head and the first bytes, releases the owner and reads no
     * more; then checks that the owner connection ends no sooner than {@link #SEND_TIMEOUT} and
     * within {@link #BOUND}, that the client's connection ends with fewer bytes than the body,
     * that the exchange counts as one send timeout and a cancelled forward (not a failed one);
     * returns the exchange's request id.
     */
    private static String stalls(Cell cell, String request, boolean chunked) throws Exception {
        return stalls(cell, request, chunked, true);
    }

    /** As {@link #stalls(Cell, String, boolean)}; {@code forwarded}: the forwarder's counters move too. */
    private static String stalls(Cell cell, String request, boolean chunked, boolean forwarded) throws Exception {
        long timeouts = sendTimeouts(cell);
        ForwarderMetrics m = cell.gateway.forwarder().metrics();
        long cancelled = m.cancelled();
        long failed = m.failed();
        int ended = owner().connectionsEnded();
        String id;
        try (Wire c = new Wire(cell.gateway.port())) {
            c.send(request);
            var head = c.readHead();
            id = requireNonNull(head.get("x-request-id"), "X-Request-Id");
            assertThat(head.containsKey("transfer-encoding")).isEqualTo(chunked);
            long released = System.nanoTime();
            owner().release();
            await().atMost(BOUND).until(() -> owner().connectionsEnded() > ended);
            assertThat(Duration.ofNanos(System.nanoTime() - released))
                    .as("not before the client had a send timeout to take a byte")
                    .isGreaterThanOrEqualTo(SEND_TIMEOUT);
            byte[] rest = c.readToEnd();
            assertThat(rest.length).as("the client never gets the whole body").isLessThan(LARGE);
            if (!chunked) {
                // Each byte that arrived is the owner's, in order (RFC 9112 §8: cut, never altered).
                assertThat(rest).isEqualTo(Arrays.copyOf(StagedOwner.body(LARGE), rest.length));
            }
        }
        assertThat(sendTimeouts(cell) - timeouts).isEqualTo(1);
        if (forwarded) {
            await().atMost(BOUND).until(() -> m.cancelled() > cancelled);
        }
        assertThat(m.failed() - failed).isZero();
        return id;
    }

    /** A GET of the staged owner's answer through worker {@code worker}'s {@code staged} target. */
    private static String relayGet(String worker, String query) {
        return "GET /relay/" + worker + "/staged/big?" + query + " HTTP/1.1\r\nHost: gateway\r\n"
                + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n";
    }

    /** {@code spector_gateway_send_timeouts_total} from the cell's {@code /actuator/prometheus}. */
    private static long sendTimeouts(Cell cell) throws Exception {
        try (WireClient scrape = new WireClient(cell.gateway.port())) {
            String metrics = scrape.send(WireClient.head("GET", "/actuator/prometheus", null))
                    .read()
                    .text();
            for (String line : metrics.split("\n", -1)) {
                if (line.startsWith("spector_gateway_send_timeouts_total ")) {
                    return (long) Double.parseDouble(
                            line.substring(line.indexOf(' ') + 1).strip());
                }
            }
        }
        throw new AssertionError("no spector_gateway_send_timeouts_total in /actuator/prometheus");
    }

    private static StagedOwner owner() {
        return requireNonNull(owner);
    }

    /** Parks the client's thread for {@code d}: how fast it reads is the behaviour under test. */
    private static void pace(Duration d) {
        long until = System.nanoTime() + d.toNanos();
        for (long left = d.toNanos(); left > 0; left = until - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }
}
