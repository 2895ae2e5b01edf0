package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The access log and {@code X-Request-Id} over raw sockets (issue 14): what the client got (the
 * header, the problem's {@code requestId}), what the owner received (the same id, the client's
 * {@code traceparent} unchanged) and the line the gateway wrote, all naming one exchange.
 */
final class AccessLogTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    private static final String WORKER_TOKEN = "worker-token-0123456789";

    @TempDir
    static Path dir;

    private static MockOwner mock;
    private static Cell cell;
    private static Cell trusting;
    private static Path log;
    private static Path trustingLog;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        mock = MockOwner.start(r -> MockOwner.response(200, "OK", "owner body", "Content-Type: text/plain"));
        log = dir.resolve("access.log");
        trustingLog = dir.resolve("trusting.log");
        cell = Cell.builder()
                .owners(1)
                .member("mock-0", mock.baseUri())
                .set("spector.server.access-log", log.toString())
                .set("spector.uplink.tokens", "w1=" + TokenHashes.sha256Hex(WORKER_TOKEN))
                .start();
        trusting = Cell.builder()
                .owners(1)
                .member("mock-0", mock.baseUri())
                .set("spector.server.access-log", trustingLog.toString())
                .set("spector.server.trusted-proxies", "127.0.0.1")
                .start();
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        cell.close();
        trusting.close();
        mock.close();
    }

    /** RFC 9110 section 5.1: a field the gateway adds travels as any other, byte for byte. */
    @Test
    void forwardedExchange_oneIdInTheResponseTheOwnerAndTheLine_andTheTraceparentPassesUnchanged() throws Exception {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0") + "/things";
        int before = mock.requests().size();
        WireClient.Response r;
        try (WireClient c = new WireClient(cell.gateway.port())) {
            r = c.send(WireClient.head(
                            "GET",
                            path + "?secret=1",
                            token,
                            "traceparent: " + TRACEPARENT,
                            "X-Request-Id: forged-by-client"))
                    .read();
        }

        assertThat(r.status()).isEqualTo(200);
        String id = java.util.Objects.requireNonNull(r.header("X-Request-Id"), "X-Request-Id");
        assertThat(id).as("a generated id: the client is not a trusted proxy").matches("[0-9a-f]{32}");
        MockOwner.Request got = mock.requests().get(before);
        assertThat(got.header("X-Request-Id"))
                .as("the owner received the same id")
                .isEqualTo(id);
        assertThat(got.header("traceparent")).isEqualTo(TRACEPARENT);

        JsonNode line = lineOf(log, id);
        assertThat(line.get("method").asText()).isEqualTo("GET");
        assertThat(line.get("path").asText()).as("normalized, no query").isEqualTo(path);
        assertThat(line.get("status").asInt()).isEqualTo(200);
        assertThat(line.get("bytesOut").asLong()).isEqualTo("owner body".length());
        assertThat(line.get("bytesIn").asLong()).isZero();
        assertThat(line.get("upstream").asText()).isEqualTo("mock-0");
        assertThat(line.get("attempts").asInt()).isEqualTo(1);
        assertThat(line.get("tenant").asText()).isEqualTo(Cell.TENANT);
        assertThat(line.get("outcome").asText()).isEqualTo("completed");
        assertThat(line.get("traceId").asText()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
        assertThat(line.get("client").asText()).startsWith("127.0.0.1:");
        assertThat(line.get("durationMs").asDouble())
                .isGreaterThanOrEqualTo(line.get("upstreamHeadMs").asDouble());
        assertThat(line.has("error")).isFalse();
        assertThat(line.has("retargets")).as("one attempt").isFalse();
    }

    /**
     * RFC 9110 §7.6.1 has the gateway drop what the client's {@code Connection} nominates, but
     * {@code X-Request-Id} is the gateway's own field on the next hop. Regression: {@code
     * Connection: X-Request-Id} kept the id from the owner while the client got it back, so the
     * owner's log could not be matched with the gateway's.
     */
    @Test
    void connectionNamingTheRequestId_doesNotKeepItFromTheOwner() throws Exception {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-0") + "/things";
        for (String connection : new String[] {"X-Request-Id", "keep-alive, x-request-id"}) {
            int before = mock.requests().size();
            WireClient.Response r;
            try (WireClient c = new WireClient(cell.gateway.port())) {
                r = c.send(WireClient.head("GET", path, token, "Connection: " + connection))
                        .read();
            }
            assertThat(r.status()).isEqualTo(200);
            String id = java.util.Objects.requireNonNull(r.header("X-Request-Id"), "X-Request-Id");
            assertThat(mock.requests().get(before).header("X-Request-Id"))
                    .as("Connection: %s", connection)
                    .isEqualTo(id);
        }
    }

    @Test
    void problem_carriesTheRequestId_andTheLineItsCode() throws Exception {
        WireClient.Response r;
        try (WireClient c = new WireClient(cell.gateway.port())) {
            r = c.send(WireClient.head("GET", "/nowhere", token)).read();
        }

        assertThat(r.status()).isEqualTo(404);
        String id = java.util.Objects.requireNonNull(r.header("X-Request-Id"), "X-Request-Id");
        JsonNode problem = JSON.readTree(r.text());
        assertThat(problem.get("requestId").asText()).isEqualTo(id);
        JsonNode line = lineOf(log, id);
        assertThat(line.get("error").asText()).isEqualTo("NOT_FOUND");
        assertThat(line.get("attempts").asInt()).isZero();
        assertThat(line.has("upstream")).isFalse();
    }

    @Test
    void trustedClient_keepsItsWellFormedId_andAMalformedOneIsReplaced() throws Exception {
        String path = "/api/v1/namespaces/" + trusting.namespaceOwnedBy("mock-0") + "/things";
        String at128 = "a".repeat(RequestIds.MAX_CHARS);
        WireClient.Response kept;
        WireClient.Response replaced;
        try (WireClient c = new WireClient(trusting.gateway.port())) {
            kept = c.send(WireClient.head("GET", path, token, "X-Request-Id: " + at128))
                    .read();
            replaced = c.send(WireClient.head("GET", path, token, "X-Request-Id: " + at128 + "a"))
                    .read();
        }
        assertThat(kept.header("X-Request-Id")).as("at the limit").isEqualTo(at128);
        assertThat(replaced.header("X-Request-Id")).as("one past it").matches("[0-9a-f]{32}");
        lineOf(trustingLog, at128);
    }

    /**
     * An uplink handshake the gateway refuses is an exchange like any other (issue 14): its id in
     * the header and the problem (RFC 9457's extension member), and one line, route {@code uplink},
     * with the problem's code. RFC 6455 section 4.2.2: the refusal is an HTTP answer.
     */
    @Test
    void refusedUplinkHandshake_carriesTheRequestId_andTheLineItsCode() throws Exception {
        WireClient.Response r;
        try (WireClient c = new WireClient(cell.gateway.port())) {
            r = c.send(uplinkHandshake("Bearer not-the-token", "traceparent: " + TRACEPARENT))
                    .read();
        }

        assertThat(r.status()).isEqualTo(401);
        String id = java.util.Objects.requireNonNull(r.header("X-Request-Id"), "X-Request-Id");
        assertThat(id).matches("[0-9a-f]{32}");
        JsonNode problem = JSON.readTree(r.text());
        assertThat(problem.get("requestId").asText()).isEqualTo(id);
        assertThat(problem.get("code").asText()).isEqualTo("UNAUTHENTICATED");
        JsonNode line = lineOf(log, id);
        assertThat(line.get("route").asText()).isEqualTo(UplinkHandshakes.ROUTE);
        assertThat(line.get("method").asText()).isEqualTo("GET");
        assertThat(line.get("path").asText()).isEqualTo("/uplink");
        assertThat(line.get("status").asInt()).isEqualTo(401);
        assertThat(line.get("error").asText()).isEqualTo("UNAUTHENTICATED");
        assertThat(line.get("bytesOut").asLong()).isEqualTo(r.body().length);
        assertThat(line.get("outcome").asText()).isEqualTo("completed");
        assertThat(line.get("traceId").asText()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
        assertThat(line.has("upstream")).as("no worker answered").isFalse();
    }

    /**
     * An accepted uplink gets its id in the {@code 101} and one line when it ends, as nginx logs a
     * proxied WebSocket: status 101, the worker, and exactly the bytes each side sent after the
     * {@code 101} (here a masked close frame up, and whatever the gateway sent down, counted by
     * the worker's end of the socket).
     */
    @Test
    void acceptedUplink_getsItsIdInThe101_andOneLineWhenItEnds_withTheBytesEachSideSent() throws Exception {
        String id;
        int down;
        // RFC 6455 section 5.5.1: close, FIN, masked (key 0), code 1000
        byte[] close = {(byte) 0x88, (byte) 0x82, 0, 0, 0, 0, 0x03, (byte) 0xe8};
        try (RawUplink u = RawUplink.dial(cell.gateway.port())) {
            id = u.id();
            assertThat(id).matches("[0-9a-f]{32}");
            u.socket().getOutputStream().write(close);
            down = u.socket().getInputStream().readAllBytes().length; // until the gateway closes
        }

        JsonNode line = lineOf(log, id);
        assertThat(line.get("route").asText()).isEqualTo(UplinkHandshakes.ROUTE);
        assertThat(line.get("status").asInt()).isEqualTo(101);
        assertThat(line.get("upstream").asText()).isEqualTo("w1");
        assertThat(line.get("bytesIn").asLong()).as("the close frame").isEqualTo(close.length);
        assertThat(line.get("bytesOut").asLong())
                .as("what the worker got after the 101")
                .isEqualTo(down)
                .isPositive();
        assertThat(line.get("outcome").asText()).isEqualTo("completed");
        assertThat(line.has("error")).isFalse();
    }

    /**
     * Nothing lost at a stop: a link the drain closes (1001, its worker re-dials elsewhere) is
     * logged before the access log's last flush.
     */
    @Test
    void uplinkOpenWhenTheGatewayStops_isLoggedBeforeTheLogCloses() throws Exception {
        Path stopping = dir.resolve("stopping.log");
        Cell c = Cell.builder()
                .owners(1)
                .set("spector.server.access-log", stopping.toString())
                .set("spector.uplink.tokens", "w1=" + TokenHashes.sha256Hex(WORKER_TOKEN))
                .start();
        String id;
        try (RawUplink u = RawUplink.dial(c.gateway.port())) {
            id = u.id();
            Waits.until("the link registered", () -> c.gateway.workerDirectory().live("w1") != null);
            c.close(); // the drain closes the link, then the access log
        }
        // Read once, no wait: the line must be in the file when close() returns.
        assertThat(read(stopping))
                .as("the link's line, written before the log closed")
                .anySatisfy(l -> assertThat(l).contains("\"requestId\":\"" + id + "\"", "\"status\":101"));
    }

    /**
     * Nothing lost at a stop: an exchange the drain cuts (an event stream still open when the
     * drain timeout, 0 s here, passes) is logged before the access log closes, not completed.
     * Its line is written on its loop after the connection's close completes, so the stop lets
     * every loop run before it closes the log (found by a review: such lines could be dropped,
     * uncounted).
     */
    @Test
    void exchangeCutByTheDrain_isLoggedBeforeTheLogCloses() throws Exception {
        Path stopping = dir.resolve("cut.log");
        Cell c = Cell.builder()
                .owners(1)
                .set("spector.server.access-log", stopping.toString())
                .start();
        String id;
        try (RawClient stream = new RawClient(c.gateway.port())) {
            stream.send("GET /api/v1/events HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + token + "\r\n\r\n");
            RawClient.Response head = stream.readHead();
            assertThat(head.status()).isEqualTo(200);
            id = head.header("X-Request-Id");
            c.close(); // the drain cuts the stream, then the access log closes
        }
        assertThat(id).isNotEmpty();
        // Read once, no wait: the line must be in the file when close() returns.
        assertThat(read(stopping))
                .as("the cut stream's line, written before the log closed")
                .anySatisfy(l -> assertThat(l)
                        .contains("\"requestId\":\"" + id + "\"", "\"status\":200")
                        .doesNotContain("\"outcome\":\"completed\""));
    }

    /**
     * RFC 9112 section 3.2: an uplink handshake is held to the edge's rules as every request on the
     * port: no Host, or two Host lines, is a 400 (with its id and line), before the token is looked
     * at.
     */
    @ParameterizedTest
    @ValueSource(strings = {"", "Host: 127.0.0.1\r\nHost: elsewhere\r\n"})
    void uplinkHandshake_withoutOneHost_is400_asEveryRequest(String hostLines) throws Exception {
        String head = "GET /uplink HTTP/1.1\r\n" + hostLines
                + uplinkHandshake("Bearer " + WORKER_TOKEN)
                        .substring(uplinkHandshake("").indexOf("Upgrade:"));
        WireClient.Response r;
        try (WireClient c = new WireClient(cell.gateway.port())) {
            r = c.send(head).read();
        }
        assertThat(r.status()).as("%s", r).isEqualTo(400);
        JsonNode problem = JSON.readTree(r.text());
        assertThat(problem.path("details").path("field").asText()).isEqualTo("host");
        String id = java.util.Objects.requireNonNull(r.header("X-Request-Id"), "X-Request-Id");
        assertThat(problem.get("requestId").asText()).isEqualTo(id);
        assertThat(lineOf(log, id).get("status").asInt()).isEqualTo(400);
    }

    @Test
    void refusedUplinkHandshake_fromATrustedClient_keepsItsId() throws Exception {
        WireClient.Response r;
        try (WireClient c = new WireClient(trusting.gateway.port())) {
            r = c.send(uplinkHandshake("Bearer nope", "X-Request-Id: uplink-from-the-proxy"))
                    .read();
        }
        assertThat(r.status()).isEqualTo(401);
        assertThat(r.header("X-Request-Id")).isEqualTo("uplink-from-the-proxy");
        assertThat(JSON.readTree(r.text()).get("requestId").asText()).isEqualTo("uplink-from-the-proxy");
        assertThat(lineOf(trustingLog, "uplink-from-the-proxy").get("error").asText())
                .isEqualTo("UNAUTHENTICATED");
    }

    private static String uplinkHandshake(String authorization, String... fields) {
        StringBuilder b = new StringBuilder("GET /uplink HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "Sec-WebSocket-Version: 13\r\nX-Spector-Worker: w1\r\nAuthorization: " + authorization + "\r\n");
        for (String f : fields) {
            b.append(f).append("\r\n");
        }
        return b.append("\r\n").toString();
    }

    /** Worker w1's v1 uplink dialled by hand, its {@code 101} read: the socket, and the id the 101 named. */
    private record RawUplink(Socket socket, String id) implements AutoCloseable {
        static RawUplink dial(int port) throws IOException {
            Socket s = new Socket(InetAddress.getLoopbackAddress(), port);
            try {
                s.setSoTimeout((int) WireClient.DEFAULT_TIMEOUT.toMillis());
                s.getOutputStream()
                        .write(uplinkHandshake("Bearer " + WORKER_TOKEN, "Sec-WebSocket-Protocol: spector-uplink.v1")
                                .getBytes(StandardCharsets.ISO_8859_1));
                String head = readHead(s.getInputStream());
                assertThat(head).startsWith("HTTP/1.1 101 ");
                return new RawUplink(s, requestId(head));
            } catch (IOException | RuntimeException | AssertionError e) {
                s.close();
                throw e;
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** Returns the {@code X-Request-Id} of a response head. */
    static String requestId(String head) {
        return head.lines()
                .filter(l -> l.regionMatches(true, 0, "X-Request-Id:", 0, 13))
                .map(l -> l.substring(13).strip())
                .findFirst()
                .orElseThrow(() -> new AssertionError("no X-Request-Id in " + head));
    }

    /** Reads a response head, byte by byte, up to its blank line (nothing after it). */
    static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b == -1) {
                throw new AssertionError("closed before a whole head: " + head);
            }
            head.append((char) b);
        }
        return head.toString();
    }

    // ---- units ----

    @Test
    void requestIds_wellFormed_atTheLimitAndOnePast_andItsChars() {
        assertThat(RequestIds.isWellFormed("x".repeat(RequestIds.MAX_CHARS))).isTrue();
        assertThat(RequestIds.isWellFormed("x".repeat(RequestIds.MAX_CHARS + 1)))
                .isFalse();
        assertThat(RequestIds.isWellFormed("")).isFalse();
        assertThat(RequestIds.isWellFormed("a-b_c.d:e+f/g=h@i")).isTrue();
        for (String bad : List.of("a b", "a\"b", "a\\b", "a\u0000b", "é", "a,b")) {
            assertThat(RequestIds.isWellFormed(bad)).as(bad).isFalse();
        }
        HttpHeaders h = new DefaultHttpHeaders().set(RequestIds.HEADER, "mine");
        assertThat(RequestIds.take(h, true)).isEqualTo("mine");
        String generated = RequestIds.take(h, false);
        assertThat(generated).matches("[0-9a-f]{32}").isNotEqualTo(RequestIds.generate());
        assertThat(h.getAll(RequestIds.HEADER))
                .as("the request carries the id once")
                .containsExactly(generated);
    }

    @Test
    void traceId_onlyFromAValidTraceparent() {
        assertThat(trace(TRACEPARENT)).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
        assertThat(trace("00-00000000000000000000000000000000-00f067aa0ba902b7-01"))
                .as("all zero")
                .isNull();
        assertThat(trace("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"))
                .as("upper case")
                .isNull();
        assertThat(trace("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
                .as("version ff")
                .isNull();
        assertThat(trace(TRACEPARENT + "-x"))
                .as("version 00 is exactly 55 chars")
                .isNull();
        assertThat(trace("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future"))
                .as("a later version may be longer")
                .isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
        assertThat(trace("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"))
                .isNull();
        assertThat(trace("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"))
                .as("the parent id all zero")
                .isNull();
        assertThat(trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz"))
                .as("flags not hex")
                .isNull();
        assertThat(trace("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"))
                .as("a later version's fields follow a dash")
                .isNull();
        assertThat(trace(null)).isNull();
    }

    private static @Nullable String trace(@Nullable String traceparent) {
        HttpHeaders h = new DefaultHttpHeaders();
        if (traceparent != null) {
            h.set("traceparent", traceparent);
        }
        return RequestIds.traceId(h);
    }

    @Test
    void format_isOneJsonObjectPerLine_withEveryStringEscaped() throws Exception {
        String line = AccessLog.format(new AccessLog.Entry(
                0,
                "id",
                "127.0.0.1:1",
                "GET",
                "/a\"b\\c\n\u0001\u007f😀",
                200,
                1,
                2,
                1_234_567,
                -1,
                "r",
                null,
                0,
                "moved,stale-connection",
                "t\txé€",
                "completed",
                null,
                null));
        assertThat(line).endsWith("}\n").doesNotContain("upstream").doesNotContain("upstreamHeadMs");
        assertThat(line.indexOf('\n')).as("one line").isEqualTo(line.length() - 1);
        JsonNode n = JSON.readTree(line);
        assertThat(n.get("path").asText()).isEqualTo("/a\"b\\c\n\u0001\u007f😀");
        assertThat(n.get("tenant").asText()).isEqualTo("t\txé€");
        assertThat(n.get("retargets").asText()).isEqualTo("moved,stale-connection");
        assertThat(n.get("durationMs").asText()).isEqualTo("1.234");
        assertThat(n.get("time").asText()).isEqualTo("1970-01-01T00:00:00.000Z");
    }

    @Test
    void fullQueue_dropsAndCounts_neverBlocks_andWritesEverythingItKept() throws Exception {
        java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        StringBuilder written = new StringBuilder();
        java.io.OutputStream blocking = new java.io.OutputStream() {
            @Override
            public void write(int b) {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                entered.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                synchronized (written) {
                    written.append(new String(b, off, len, StandardCharsets.UTF_8));
                }
            }
        };
        AccessLog access = AccessLog.writingTo(blocking, new SimpleMeterRegistry());
        try {
            access.log(entry("first"));
            assertThat(entered.await(10, java.util.concurrent.TimeUnit.SECONDS))
                    .as("the writer took the first line")
                    .isTrue();
            long started = System.nanoTime();
            for (int i = 0; i < AccessLog.QUEUE_ENTRIES; i++) {
                access.log(entry("queued-" + i));
            }
            access.log(entry("one-too-many"));
            assertThat(System.nanoTime() - started).as("log() never blocks").isLessThan(5_000_000_000L);
            assertThat(access.dropped()).as("exactly the one past the queue").isEqualTo(1);
            release.countDown();
            Waits.until("every kept line is written", () -> {
                synchronized (written) {
                    return written.toString().lines().count() == AccessLog.QUEUE_ENTRIES + 1;
                }
            });
            synchronized (written) {
                assertThat(written.toString()).doesNotContain("one-too-many");
            }
        } finally {
            release.countDown();
            access.close();
        }
    }

    /**
     * A write that fails (a full disk, a closed pipe) loses the lines it held, counted, and the log
     * goes on once the destination takes bytes again. Regression (a review): the writer thread
     * ended at the first failure, and every later line was queued, then dropped, until a restart.
     */
    @Test
    void aFailedWrite_countsItsLines_andTheLogResumes() {
        java.util.concurrent.atomic.AtomicBoolean full = new java.util.concurrent.atomic.AtomicBoolean(true);
        java.io.ByteArrayOutputStream kept = new java.io.ByteArrayOutputStream();
        java.io.OutputStream disk = new java.io.OutputStream() {
            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                if (full.get()) {
                    throw new IOException("No space left on device (a test's)");
                }
                kept.write(b, off, len);
            }
        };
        AccessLog access = AccessLog.writingTo(disk, new SimpleMeterRegistry());
        try {
            access.log(entry("lost-1"));
            access.log(entry("lost-2"));
            Waits.until("the failed lines counted", () -> access.dropped() == 2);
            full.set(false);
            access.log(entry("after"));
            Waits.until(
                    "the log resumes",
                    () -> kept.toString(StandardCharsets.UTF_8).contains("\"after\""));
            assertThat(kept.toString(StandardCharsets.UTF_8)).doesNotContain("lost-");
            assertThat(access.dropped()).isEqualTo(2);
        } finally {
            access.close();
        }
    }

    /**
     * Lines still queued when a write fails during the stop are counted as dropped, every one: the
     * writer stopped at the failure, and what the queue held was lost uncounted (found by a review).
     */
    @Test
    void aFailedWriteDuringTheStop_countsEveryLineLeftInTheQueue() {
        java.io.OutputStream full = new java.io.OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException("No space left on device (a test's)");
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                throw new IOException("No space left on device (a test's)");
            }
        };
        AccessLog access = AccessLog.writingTo(full, new SimpleMeterRegistry());
        access.log(entry("first"));
        Waits.until("the first failure counted; the writer waits before it writes again", () -> access.dropped() == 1);
        int queued = 1_000; // more than the output buffer takes: a write fails with lines still queued
        for (int i = 0; i < queued; i++) {
            access.log(entry("queued-" + i + "-" + "x".repeat(200)));
        }
        access.close();
        assertThat(access.dropped()).isEqualTo(1 + queued);
    }

    /** A path longer than a line carries is cut, marked, and the line stays one JSON object. */
    @Test
    void aLongPath_isCutInItsLine() throws Exception {
        String path = "/api/v1/namespaces/n/" + "p".repeat(60_000);
        AccessLog.Entry e = new AccessLog.Entry(
                0, "id", "c", "GET", path, 404, 0, 0, 0, -1, "r", null, 0, null, null, "completed", null, null);
        assertThat(e.path())
                .hasSize(AccessLog.FIELD_CHARS)
                .endsWith(AccessLog.CUT)
                .startsWith("/api/v1/namespaces/n/p");
        JsonNode line = new com.fasterxml.jackson.databind.ObjectMapper().readTree(AccessLog.format(e));
        assertThat(line.get("path").asText()).isEqualTo(e.path());
        AccessLog.Entry atTheLimit = new AccessLog.Entry(
                0,
                "id",
                "c",
                "GET",
                "p".repeat(AccessLog.FIELD_CHARS),
                404,
                0,
                0,
                0,
                -1,
                "r",
                null,
                0,
                null,
                null,
                "completed",
                null,
                null);
        assertThat(atTheLimit.path()).isEqualTo("p".repeat(AccessLog.FIELD_CHARS));
    }

    /**
     * A writer blocked in a write (a standard output nobody reads) does not hold the gateway's stop:
     * the close returns within its bound, and a line offered after it is counted as dropped.
     * Regression (a review): the close's final flush waited on the blocked writer's lock for good.
     */
    @Test
    void close_withTheWriterBlocked_returnsWithinItsBound_andLaterLinesAreCounted() throws Exception {
        java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
        java.io.OutputStream stuck = new java.io.OutputStream() {
            @Override
            public void write(int b) {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public synchronized void write(byte[] b, int off, int len) {
                entered.countDown();
                try {
                    never.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }

            @Override
            public synchronized void flush() {}
        };
        AccessLog access = AccessLog.writingTo(stuck, new SimpleMeterRegistry());
        try {
            access.log(entry("stuck"));
            assertThat(entered.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            long started = System.nanoTime();
            access.close();
            assertThat(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started))
                    .as("the close waits at most its bound")
                    .isLessThan(AccessLog.CLOSE_TIMEOUT.toMillis() + 2_000);
            access.log(entry("late"));
            assertThat(access.dropped()).as("a line after the close").isEqualTo(1);
        } finally {
            never.countDown();
        }
    }

    /**
     * An idle writer parks until a line comes (an idle gateway woke 100 times a second), and the
     * line that wakes it is written at once; then it sleeps again, and wakes again. A writer that
     * stays awake never reaches WAITING (its sleeps are timed), so this fails without the wake-up;
     * a producer that did not wake it would leave the line unwritten past the bound.
     */
    @Test
    void idleWriter_parksUntilALineComes_andThatLineIsWritten() {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(); // synchronized
        AccessLog access = AccessLog.writingTo(out, new SimpleMeterRegistry());
        try {
            for (int round = 1; round <= 3; round++) {
                Waits.until("the writer asleep", access::isAsleep);
                access.log(entry("wake-" + round));
                int lines = round;
                Waits.until(
                        "line " + round + " written",
                        () -> out.toString(StandardCharsets.UTF_8).lines().count() == lines);
            }
            assertThat(out.toString(StandardCharsets.UTF_8)).contains("wake-1", "wake-2", "wake-3");
        } finally {
            access.close();
        }
    }

    private static AccessLog.Entry entry(String id) {
        return new AccessLog.Entry(
                0, id, "c", "GET", "/", 200, 0, 0, 0, -1, "r", null, 0, null, null, "completed", null, null);
    }

    /** Waits for the line of exchange {@code id} in {@code file} and returns it. */
    /** Waits (bounded) for the one line of exchange {@code id} in {@code file}, and returns it. */
    static JsonNode lineOf(Path file, String id) {
        List<JsonNode> found = new ArrayList<>();
        Waits.until("the access log line of " + id, () -> {
            found.clear();
            for (String l : read(file)) {
                try {
                    JsonNode n = JSON.readTree(l);
                    if (n.get("requestId").asText().equals(id)) {
                        found.add(n);
                    }
                } catch (IOException e) {
                    throw new UncheckedIOException("not a JSON line: " + l, e);
                }
            }
            return !found.isEmpty();
        });
        assertThat(found).as("one line per exchange").hasSize(1);
        return found.get(0);
    }

    private static List<String> read(Path file) {
        try {
            return Files.exists(file) ? Files.readAllLines(file, StandardCharsets.UTF_8) : List.of();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
