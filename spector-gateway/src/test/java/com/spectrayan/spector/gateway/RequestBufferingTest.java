package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.testkit.RecordingUpstream;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Slow uploads do not lock an owner's other requests out of its connection pool: a request body
 * declared at most {@code request-buffer-bytes} long is read whole before the gateway takes an
 * owner connection for it (nginx's {@code proxy_request_buffering}), so clients that trickle their
 * small bodies hold none meanwhile. Before, with {@code owner-connections} 1, two slow uploads on one
 * event loop made the second, and every other request to that owner on that loop, wait 2 s for
 * {@code 503 owner-pool-exhausted}. Raw sockets for the uploads (a client that stops mid-body); the
 * owner's echo says what body it received.
 */
final class RequestBufferingTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int LOOPS = Runtime.getRuntime().availableProcessors(); // the gateway's event loops
    private static final int BUFFER = 1000;
    private static final int SENT_FIRST = 10;
    private static final Duration WITHIN = Duration.ofSeconds(5);

    private static byte[] body(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) ('a' + (i * 7 + seed) % 26);
        }
        return b;
    }

    /** Opens an upload of {@code body} to the owner's echo and sends its head and first bytes only. */
    private static RawClient startUpload(Cell cell, String ns, byte[] body) throws Exception {
        RawClient c = new RawClient(cell.gateway.port());
        c.send("POST /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                + Cell.token(Cell.TENANT) + "\r\nContent-Type: application/octet-stream\r\nContent-Length: "
                + body.length + "\r\n\r\n");
        c.send(Arrays.copyOf(body, SENT_FIRST));
        return c;
    }

    private static List<RawClient> startUploads(Cell cell, String ns, List<byte[]> bodies) throws Exception {
        List<RawClient> uploads = new ArrayList<>();
        for (byte[] b : bodies) {
            uploads.add(startUpload(cell, ns, b));
        }
        return uploads;
    }

    private static List<byte[]> bodies(int n, int length) {
        List<byte[]> bodies = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            bodies.add(body(length, i));
        }
        return bodies;
    }

    private static void closeAll(List<RawClient> clients) throws Exception {
        for (RawClient c : clients) {
            c.close();
        }
    }

    /** A cell whose one member is {@code upstream}, recording what it receives on the wire. */
    private static Cell recordingCell(RecordingUpstream upstream) throws Exception {
        return Cell.builder()
                .owners(0)
                .member("rec-0", upstream.uri())
                .set("spector.routing.gateway.request-buffer-bytes", String.valueOf(BUFFER))
                .start();
    }

    /** Asserts the owner's echo in {@code r}: a 200 whose body was {@code body}, whole. */
    private static void assertEchoed(RawClient.Response r, byte[] body, int upload) throws Exception {
        assertThat(r.status()).as("upload %d", upload).isEqualTo(200);
        JsonNode echo = JSON.readTree(r.body());
        assertThat(echo.get("bodyBytes").asLong())
                .as("the owner received upload %d whole", upload)
                .isEqualTo(body.length);
        assertThat(echo.get("bodySha256").asText()).isEqualTo(sha256(body));
    }

    private static Cell cell() throws Exception {
        return Cell.builder()
                .owners(1)
                .set("spector.routing.gateway.owner-connections", "1")
                .set("spector.routing.gateway.request-buffer-bytes", String.valueOf(BUFFER))
                .start();
    }

    /** One chunk of {@code body}'s bytes {@code from} to {@code to}, framed (RFC 9112 §7.1). */
    static String chunk(byte[] body, int from, int to) {
        return Integer.toHexString(to - from) + "\r\n" + new String(body, from, to - from, StandardCharsets.ISO_8859_1)
                + "\r\n";
    }

    /** Opens a chunked upload of {@code body} to the owner's echo and sends its head and first chunk only. */
    private static RawClient startChunkedUpload(Cell cell, String ns, byte[] body) throws Exception {
        return new RawClient(cell.gateway.port())
                .send("POST /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                        + Cell.token(Cell.TENANT)
                        + "\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + chunk(body, 0, SENT_FIRST));
    }

    /**
     * RFC 9112 §6.3 and §7.1: a body at the buffer's size, its length declared or chunked (then
     * unknown, read while it fits), is read whole first, then forwarded whole; slow uploads hold no
     * owner connection meanwhile. Chunked, before this, a client passed the buffering.
     */
    @ParameterizedTest(name = "chunked: {0}")
    @ValueSource(booleans = {false, true})
    void slowUploadsAtTheBuffer_holdNoOwnerConnection_andArriveWhole(boolean chunked) throws Exception {
        try (Cell cell = cell()) {
            String ns = cell.namespaceOwnedBy("owner-0");
            // 2 loops + 1 uploads: two share a loop whatever the accept order, past its one connection
            List<byte[]> bodies = bodies(2 * LOOPS + 1, BUFFER);
            List<RawClient> uploads = new ArrayList<>();
            try {
                for (byte[] b : bodies) {
                    uploads.add(chunked ? startChunkedUpload(cell, ns, b) : startUpload(cell, ns, b));
                }
                // one more than the loops: one shares a loop with two uploads
                cell.assertServedWithoutWaiting(ns, LOOPS + 1, "the slow uploads");
                for (int i = 0; i < uploads.size(); i++) {
                    byte[] b = bodies.get(i);
                    RawClient c = uploads.get(i);
                    if (chunked) {
                        c.send(chunk(b, SENT_FIRST, b.length) + "0\r\n\r\n");
                    } else {
                        c.send(Arrays.copyOfRange(b, SENT_FIRST, b.length));
                    }
                    assertEchoed(c.read(), b, i);
                }
            } finally {
                closeAll(uploads);
            }
            assertThat(cell.served("owner-0", "POST", "/api/v1/namespaces/" + ns + "/echo"))
                    .hasSize(2 * LOOPS + 1);
        }
    }

    /**
     * A chunked body that outgrows the buffer streams from there: the owner gets its head while the
     * body is unfinished, and then every byte in order, the chunk that crossed the buffer (and one
     * sent with it) after those read first. RFC 9112 §7.1: forwarded chunked, complete.
     */
    @Test
    void aChunkedBodyPastTheBuffer_streamsFromThere_inOrder() throws Exception {
        try (RecordingUpstream upstream = RecordingUpstream.start();
                Cell cell = recordingCell(upstream)) {
            String ns = cell.namespaceOwnedBy("rec-0");
            byte[] body = body(3 * BUFFER, 5);
            try (RawClient upload = startChunkedUpload(cell, ns, body)) {
                upload.send(chunk(body, SENT_FIRST, 600));
                upload.send(chunk(body, 600, BUFFER + 300) + chunk(body, BUFFER + 300, BUFFER + 700));

                assertThat(upstream.takeHead(WITHIN))
                        .as("past the buffer the request goes on while its body is unfinished")
                        .startsWith("POST /api/v1/namespaces/" + ns + "/echo ");

                upload.send(chunk(body, BUFFER + 700, body.length) + "0\r\n\r\n");
                RawClient.Response r = upload.read();
                assertThat(r.status()).isEqualTo(200);
                assertThat(new String(r.body(), StandardCharsets.US_ASCII))
                        .isEqualTo(body.length + " " + RecordingUpstream.sha256(body));
            }
            RecordingUpstream.Recorded post = upstream.takeRequest(WITHIN);
            assertThat(post.complete()).isTrue();
            assertThat(post.framing()).isEqualTo(RecordingUpstream.Framing.CHUNKED);
        }
    }

    /**
     * A chunked body whose first chunk already passes the buffer, sent whole with its head in one
     * write: nothing was read first, and the body goes on whole (its end may come before the owner
     * connection does).
     */
    @Test
    void aChunkedBodyWhoseFirstChunkPassesTheBuffer_arrivesWhole() throws Exception {
        try (Cell cell = cell();
                RawClient c = new RawClient(cell.gateway.port())) {
            String ns = cell.namespaceOwnedBy("owner-0");
            byte[] body = body(3 * BUFFER, 9);
            RawClient.Response r = c.send("POST /api/v1/namespaces/" + ns
                            + "/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                            + "\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(body, 0, body.length) + "0\r\n\r\n")
                    .read();

            assertEchoed(r, body, 0);
        }
    }

    /**
     * A small chunked body whose framing breaks is answered 400 and never reaches the owner: read
     * first, it is refused before any owner connection is taken (RFC 9112 §7.1, §8: an incomplete
     * message is never forwarded as complete; here not forwarded at all).
     */
    @Test
    void aSmallChunkedBodyThatBreaks_neverReachesTheOwner() throws Exception {
        try (RecordingUpstream upstream = RecordingUpstream.start();
                Cell cell = recordingCell(upstream);
                WireClient c = new WireClient(cell.gateway.port())) {
            String ns = cell.namespaceOwnedBy("rec-0");
            WireClient.Response r = c.send(WireClient.head(
                                    "PUT",
                                    "/api/v1/namespaces/" + ns + "/objects/k",
                                    Cell.token(Cell.TENANT),
                                    "Transfer-Encoding: chunked")
                            + "5\r\nhello\r\nzz\r\nworld\r\n0\r\n\r\n")
                    .read();

            assertThat(r.status()).isEqualTo(400);
            assertThat(cell.get("/api/v1/namespaces/" + ns + "/after").statusCode())
                    .isEqualTo(200);
            assertThat(upstream.takeHead(WITHIN))
                    .as("the first head the owner received: the GET after, not the broken upload")
                    .startsWith("GET /api/v1/namespaces/" + ns + "/after ");
        }
    }

    /**
     * One byte past the buffer the body streams as it arrives, as before: the slow uploads hold every
     * loop's one connection, and a request beside them waits for one and is refused.
     */
    @Test
    void slowUploadsOnePastTheBuffer_stream_andHoldTheirConnections() throws Exception {
        try (Cell cell = cell()) {
            String ns = cell.namespaceOwnedBy("owner-0");
            List<RawClient> uploads = startUploads(cell, ns, bodies(2 * LOOPS + 1, BUFFER + 1));
            try {
                HttpResponse<String> r = cell.get("/api/v1/namespaces/" + ns + "/echo");
                assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                assertThat(r.body()).contains("owner-pool-exhausted");
            } finally {
                closeAll(uploads);
            }
        }
    }

    /**
     * What the owner receives, on the wire: a small body's head only once the body is whole, after
     * a request sent later than it (here a GET), and then head and body together, the body intact
     * with its Content-Length (RFC 9112 §6.3). Before, the head went on at once.
     */
    @Test
    void aSmallBody_reachesTheOwnerOnlyWhole() throws Exception {
        try (RecordingUpstream upstream = RecordingUpstream.start();
                Cell cell = recordingCell(upstream)) {
            String ns = cell.namespaceOwnedBy("rec-0");
            assertThat(cell.get("/api/v1/namespaces/" + ns + "/first").statusCode())
                    .as("the route known and a connection to the owner open: a head would go on at once")
                    .isEqualTo(200);
            assertThat(upstream.takeHead(WITHIN)).startsWith("GET /api/v1/namespaces/" + ns + "/first ");
            upstream.takeRequest(WITHIN);
            byte[] body = body(BUFFER, 3);
            try (RawClient upload = startUpload(cell, ns, body)) {
                await("the gateway began the upload's exchange").atMost(WITHIN).until(() -> activeExchanges(cell) == 1);
                HttpResponse<String> get = cell.get("/api/v1/namespaces/" + ns + "/later");
                assertThat(get.statusCode()).as(get.body()).isEqualTo(200);
                assertThat(upstream.takeHead(WITHIN))
                        .as("the first head the owner received: the later GET, not the unfinished upload")
                        .startsWith("GET /api/v1/namespaces/" + ns + "/later ");

                upload.send(Arrays.copyOfRange(body, SENT_FIRST, body.length));
                RawClient.Response r = upload.read();
                assertThat(r.status()).isEqualTo(200);
                assertThat(new String(r.body(), StandardCharsets.US_ASCII))
                        .isEqualTo(body.length + " " + RecordingUpstream.sha256(body));
            }
            assertThat(upstream.takeHead(WITHIN)).startsWith("POST /api/v1/namespaces/" + ns + "/echo ");
            upstream.takeRequest(WITHIN); // the GET
            RecordingUpstream.Recorded post = upstream.takeRequest(WITHIN);
            assertThat(post.complete()).isTrue();
            assertThat(post.framing()).isEqualTo(RecordingUpstream.Framing.CONTENT_LENGTH);
            assertThat(post.headers("Content-Length")).containsExactly(String.valueOf(BUFFER));
        }
    }

    /**
     * An owner marked down is admitted before a small body is read: its request is answered 503
     * {@code OWNER_DOWN} at once, and a client that asked {@code Expect: 100-continue} gets no
     * {@code 100 Continue} first, so it sends no body for nothing (RFC 9110 §10.1.1).
     */
    @Test
    void aSmallBodyForAnOwnerMarkedDown_isRefusedBeforeItIsRead() throws Exception {
        try (SilentServer resetting = SilentServer.serving("resetting-owner", s -> {
                    try (s) {
                        s.setSoLinger(true, 0);
                    } catch (java.io.IOException e) {
                        // closed either way
                    }
                });
                Cell cell = Cell.builder()
                        .owners(1)
                        .member("flaky", URI.create("http://127.0.0.1:" + resetting.port()))
                        .set("spector.routing.gateway.owner-down-after", "1")
                        .set("spector.routing.gateway.owner-down-backoff", "10m")
                        .set("spector.routing.gateway.owner-down-backoff-max", "10m")
                        .start()) {
            String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("flaky") + "/x";
            String token = Cell.token(Cell.TENANT);
            try (WireClient c = new WireClient(cell.gateway.port())) {
                assertThat(c.send(WireClient.head("GET", path, token)).read().status())
                        .as("the failure that marks it down")
                        .isEqualTo(502);
            }
            try (WireClient c = new WireClient(cell.gateway.port())) {
                WireClient.Response r = c.send(
                                WireClient.head("PUT", path, token, "Content-Length: 100", "Expect: 100-continue"))
                        .read();

                assertThat(r.status()).as("no 100 Continue first: %s", r).isEqualTo(503);
                assertThat(r.code()).isEqualTo("OWNER_DOWN");
            }
        }
    }

    /** {@code request-buffer-bytes} 0: every body streams, the old behaviour. */
    @Test
    void withNoRequestBuffer_aSmallSlowUpload_holdsItsConnection() throws Exception {
        try (Cell cell = Cell.builder()
                .owners(1)
                .set("spector.routing.gateway.owner-connections", "1")
                .set("spector.routing.gateway.request-buffer-bytes", "0")
                .start()) {
            String ns = cell.namespaceOwnedBy("owner-0");
            List<RawClient> uploads = startUploads(cell, ns, bodies(2 * LOOPS + 1, 100));
            try {
                HttpResponse<String> r = cell.get("/api/v1/namespaces/" + ns + "/echo");
                assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
            } finally {
                closeAll(uploads);
            }
        }
    }

    private static double activeExchanges(Cell cell) throws Exception {
        Matcher m = Pattern.compile("(?m)^spector_forwarder_active (\\S+)$")
                .matcher(cell.get("/actuator/prometheus").body());
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }
}
