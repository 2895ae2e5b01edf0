package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedResponse;
import java.net.SocketTimeoutException;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Slow relayed uploads do not lock a worker out: a relayed body declared at most {@code
 * request-buffer-bytes} long is read whole before the relay takes one of the worker's slots
 * ({@code spector.uplink.relay.max-per-worker}). Before, with one slot, a client that trickled a
 * small upload held it, and every other relay to that worker queued behind it. Raw sockets for the
 * uploads; the worker's target records what it received and when.
 */
final class RelayRequestBufferingTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String WORKER = "buffering-worker";
    private static final int BUFFER = 1000;
    private static final int SENT_FIRST = 10;
    private static final int UPLOADS = 3;

    private static byte[] body(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) ('A' + (i * 5 + seed) % 26);
        }
        return b;
    }

    private static RelayCell relayCell(RecordingTarget target) throws Exception {
        return RelayCell.start(
                Cell.builder()
                        .owners(1)
                        .set("spector.uplink.relay.max-per-worker", "1")
                        .set("spector.routing.gateway.request-buffer-bytes", String.valueOf(BUFFER)),
                WORKER,
                (c, httpForward) -> Map.of("record", target));
    }

    private static RawClient startUpload(Cell cell, String path, byte[] body) throws Exception {
        RawClient c = new RawClient(cell.gateway.port());
        c.send("PUT /relay/" + WORKER + "/record" + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                + Cell.token(Cell.TENANT) + "\r\nContent-Length: " + body.length + "\r\n\r\n");
        c.send(Arrays.copyOf(body, SENT_FIRST));
        return c;
    }

    private static RawClient.Response relayedGet(Cell cell, String path, int timeoutMillis) throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            c.setTimeoutMillis(timeoutMillis);
            return c.send("GET /relay/" + WORKER + "/record" + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                            + Cell.token(Cell.TENANT) + "\r\n\r\n")
                    .read();
        }
    }

    private static RawClient startChunkedUpload(Cell cell, String path, byte[] body) throws Exception {
        return new RawClient(cell.gateway.port())
                .send("PUT /relay/" + WORKER + "/record" + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                        + Cell.token(Cell.TENANT) + "\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + RequestBufferingTest.chunk(body, 0, SENT_FIRST));
    }

    /**
     * RFC 9112 §6.3 and §7.1: bodies at the buffer's size, their length declared or chunked,
     * trickled, hold no relay slot: a relay beside them is served at once, the target has heard of
     * none of them, and each arrives whole once sent.
     */
    @ParameterizedTest(name = "chunked: {0}")
    @ValueSource(booleans = {false, true})
    void slowRelayedUploadsAtTheBuffer_holdNoRelaySlot_andArriveWhole(boolean chunked) throws Exception {
        RecordingTarget target = new RecordingTarget();
        try (RelayCell rc = relayCell(target)) {
            List<byte[]> bodies = new ArrayList<>();
            List<RawClient> uploads = new ArrayList<>();
            try {
                for (int i = 0; i < UPLOADS; i++) {
                    byte[] b = body(BUFFER, i);
                    bodies.add(b);
                    uploads.add(
                            chunked ? startChunkedUpload(rc.cell, "/up-" + i, b) : startUpload(rc.cell, "/up-" + i, b));
                }
                long start = System.nanoTime();
                RawClient.Response beside = relayedGet(rc.cell, "/beside", 5_000);
                assertThat(beside.status()).isEqualTo(200);
                assertThat(Duration.ofNanos(System.nanoTime() - start))
                        .as("not queued behind a slow upload for the worker's one slot")
                        .isLessThan(Duration.ofSeconds(1));
                for (int i = 0; i < UPLOADS; i++) {
                    assertThat(target.call("/up-" + i))
                            .as("the worker has not heard of the unfinished upload %d", i)
                            .isNull();
                }
                for (int i = 0; i < UPLOADS; i++) {
                    byte[] b = bodies.get(i);
                    RawClient c = uploads.get(i);
                    if (chunked) {
                        c.send(RequestBufferingTest.chunk(b, SENT_FIRST, b.length) + "0\r\n\r\n");
                    } else {
                        c.send(Arrays.copyOfRange(b, SENT_FIRST, b.length));
                    }
                    assertRelayed(c.read(), b, i);
                }
            } finally {
                for (RawClient c : uploads) {
                    c.close();
                }
            }
        }
    }

    /** A chunked relayed body that outgrows the buffer starts its relay then, and arrives whole and in order. */
    @Test
    void aChunkedRelayedBodyPastTheBuffer_startsTheRelay_andArrivesWhole() throws Exception {
        RecordingTarget target = new RecordingTarget();
        try (RelayCell rc = relayCell(target)) {
            byte[] body = body(3 * BUFFER, 7);
            try (RawClient upload = startChunkedUpload(rc.cell, "/big", body)) {
                upload.send(RequestBufferingTest.chunk(body, SENT_FIRST, 600));
                upload.send(RequestBufferingTest.chunk(body, 600, BUFFER + 300)
                        + RequestBufferingTest.chunk(body, BUFFER + 300, BUFFER + 700));

                target.awaitCall("/big", Duration.ofSeconds(5)); // relayed while its body is unfinished

                RawClient.Response r = upload.send(
                                RequestBufferingTest.chunk(body, BUFFER + 700, body.length) + "0\r\n\r\n")
                        .read();
                assertRelayed(r, body, 0);
            }
        }
    }

    /** One byte past the buffer the body streams, as before: the slow upload holds the one slot. */
    @Test
    void aSlowRelayedUploadOnePastTheBuffer_holdsTheSlot() throws Exception {
        RecordingTarget target = new RecordingTarget();
        try (RelayCell rc = relayCell(target)) {
            RawClient upload = startUpload(rc.cell, "/big", body(BUFFER + 1, 0));
            try {
                target.awaitCall("/big", Duration.ofSeconds(5)); // relayed at once, its body streaming

                assertThatThrownBy(() -> relayedGet(rc.cell, "/beside", 1_500))
                        .as("the relay beside it waits for the slot")
                        .isInstanceOf(SocketTimeoutException.class);
            } finally {
                upload.close();
            }
        }
    }

    /**
     * A relay the caller may not make is refused before its small body is read: a token that names
     * no tenant gets 403 at once, with no {@code 100 Continue} first (RFC 9110 §10.1.1), and the
     * worker never hears of it.
     */
    @Test
    void aForbiddenRelay_isRefusedBeforeItsBodyIsRead() throws Exception {
        RecordingTarget target = new RecordingTarget();
        try (RelayCell rc = relayCell(target);
                WireClient c = new WireClient(rc.cell.gateway.port())) {
            WireClient.Response r = c.send(WireClient.head(
                            "PUT",
                            "/relay/" + WORKER + "/record/forbidden",
                            Cell.untenantedToken(),
                            "Content-Length: 100",
                            "Expect: 100-continue"))
                    .read();

            assertThat(r.status()).as("no 100 Continue first: %s", r).isEqualTo(403);
            assertThat(target.call("/forbidden")).isNull();
        }
    }

    /**
     * Bodies read whole ahead of their exchange hold at most half of the gateway's replay budget
     * (64 MiB) together, forwarded and relayed alike: clients that declare small bodies and send
     * none can take 32 MiB for as long as they last, never the copies that let streamed bodies
     * follow a 421. Here 31 forwarded uploads and one relayed (the 32nd MiB, at the share) are read
     * first, and the worker has not heard of the relayed one; one more relayed upload finds the
     * share full and streams, so the worker hears of it at once.
     */
    @Test
    void bodiesReadFirst_holdAtMostHalfTheReplayBudget_thenStream() throws Exception {
        RecordingTarget target = new RecordingTarget();
        int mib = 1024 * 1024;
        try (RelayCell rc = RelayCell.start(
                Cell.builder().owners(1).set("spector.routing.gateway.request-buffer-bytes", String.valueOf(mib)),
                WORKER,
                (c, httpForward) -> Map.of("record", target))) {
            Cell cell = rc.cell;
            String ns = cell.namespaceOwnedBy("owner-0");
            List<RawClient> clients = new ArrayList<>();
            try {
                for (int i = 0; i < 31; i++) {
                    clients.add(new RawClient(cell.gateway.port())
                            .send("POST /api/v1/namespaces/" + ns
                                    + "/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                                    + "\r\nContent-Length: " + mib + "\r\n\r\n"));
                }
                clients.add(startUpload(cell, "/at-the-share", new byte[mib]));
                await().atMost(Duration.ofSeconds(10)).until(() -> replayBudgetAvailable(cell) == 32.0 * mib);

                clients.add(startUpload(cell, "/past-the-share", new byte[mib]));

                assertThat(target.awaitCall("/past-the-share", Duration.ofSeconds(5)))
                        .as("one past the share, the body streams: the relay starts at once")
                        .isNotNull();
                assertThat(target.call("/at-the-share"))
                        .as("at the share, the body is read first")
                        .isNull();
            } finally {
                for (RawClient c : clients) {
                    c.close();
                }
            }
            await("every reserve given back as the clients went")
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> replayBudgetAvailable(cell) == 64.0 * mib);
        }
    }

    /**
     * Whatever way a relayed exchange read first ends, its reserve goes back to the replay budget,
     * and the bytes it read with it: an empty chunked body (it reserves the buffer) answered with
     * no body; a body answered with no body before the target read it; and a relay its head
     * refuses (no target in the path: 400) holds nothing. Before, the first kept its reserve for
     * good (a 64 KiB one per empty chunked request: after 512 of them, no small body was read first
     * again), and the refused one, refused after its body was read, its bytes too (a leak).
     */
    @Test
    void everyEnding_givesTheReserveAndTheBytesBack() throws Exception {
        try (RelayCell rc = RelayCell.start(
                Cell.builder().owners(1).set("spector.routing.gateway.request-buffer-bytes", String.valueOf(BUFFER)),
                WORKER,
                (c, httpForward) -> Map.of(
                        "nobody", r -> CompletableFuture.completedFuture(new RelayedResponse(204, List.of(), null))))) {
            Cell cell = rc.cell;
            double full = replayBudgetAvailable(cell);
            String auth = "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n";
            try (RawClient c = new RawClient(cell.gateway.port())) {
                for (int i = 0; i < 3; i++) {
                    assertThat(c.send("DELETE /relay/" + WORKER + "/nobody/x HTTP/1.1\r\nHost: x\r\n" + auth
                                            + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                                    .read()
                                    .status())
                            .as("an empty chunked body, answered with none")
                            .isEqualTo(204);
                }
                assertThat(c.send("PUT /relay/" + WORKER + "/nobody/y HTTP/1.1\r\nHost: x\r\n" + auth
                                        + "Content-Length: 500\r\n\r\n" + "b".repeat(500))
                                .read()
                                .status())
                        .as("a body answered with none")
                        .isEqualTo(204);
            }
            for (String framing : List.of("Content-Length: 500\r\n\r\n" + "a".repeat(500), chunkedBody(500))) {
                try (RawClient c = new RawClient(cell.gateway.port())) {
                    RawClient.Response r = c.send("PUT /relay/" + WORKER + "/ HTTP/1.1\r\nHost: x\r\n" + auth + framing)
                            .read();
                    assertThat(r.status())
                            .as("no target: refused as the relay starts")
                            .isEqualTo(400);
                }
            }
            await("every reserve given back")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> replayBudgetAvailable(cell) == full);
            assertThat(full).isEqualTo(64.0 * 1024 * 1024);
        }
    }

    /**
     * {@code request-buffer-bytes} past the relay's read-ahead (256 KiB): a body of 300 000 bytes is
     * read first whole and relayed. Before, reading paused at the read-ahead's bound while the
     * relay waited for the body's end, and the exchange hung with no timeout (the body timer stops
     * while the gateway pauses the client).
     */
    @ParameterizedTest(name = "chunked={0}")
    @ValueSource(booleans = {false, true})
    void aBufferPastTheReadAhead_readsItsBodyWholeFirst(boolean chunked) throws Exception {
        try (RelayCell rc = mebibyteBufferCell("record", new RecordingTarget())) {
            byte[] body = body(300_000, 3);
            try (RawClient c = new RawClient(rc.cell.gateway.port())) {
                c.setTimeoutMillis(10_000);
                c.send("PUT /relay/" + WORKER + "/record/big HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                        + Cell.token(Cell.TENANT) + "\r\n"
                        + (chunked ? "Transfer-Encoding: chunked" : "Content-Length: " + body.length) + "\r\n\r\n");
                for (int at = 0; at < body.length; at += 65_536) {
                    int to = Math.min(body.length, at + 65_536);
                    if (chunked) {
                        c.send(RequestBufferingTest.chunk(body, at, to));
                    } else {
                        c.send(Arrays.copyOfRange(body, at, to));
                    }
                }
                if (chunked) {
                    c.send("0\r\n\r\n");
                }
                assertRelayed(c.read(), body, 0);
            }
        }
    }

    /**
     * RFC 9110 §10.1.1: a server that will refuse the request from its head alone answers at once,
     * with no {@code 100 (Continue)} and without reading the body. A relay with no target in its
     * path is such a request; before, it was sent a 100 and its body was read first, then refused.
     */
    @Test
    void aRelayItsHeadRefuses_isAnsweredBeforeAny100() throws Exception {
        try (RelayCell rc = relayCell(new RecordingTarget());
                RawClient c = new RawClient(rc.cell.gateway.port())) {
            RawClient.Response first = c.send("PUT /relay/" + WORKER + "/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                            + Cell.token(Cell.TENANT) + "\r\nContent-Length: 500\r\nExpect: 100-continue\r\n\r\n")
                    .readAnyHead();
            assertThat(first.status()).as("refused at once, no 100 first").isEqualTo(400);
        }
    }

    /**
     * A relayed GET or HEAD with content (the uplink carries none on them; RFC 9110 §9.3.1 lets a
     * server refuse it) is refused from its head, naming the field that announced the content.
     * Before, its body was read first and the refusal quoted the wire protocol's own field
     * ({@code hasBody}, {@code endStream}), which the client never sent.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"GET", "HEAD"})
    void aRelayedGetWithContent_isRefusedFromItsHead(String method) throws Exception {
        try (RelayCell rc = relayCell(new RecordingTarget());
                RawClient c = new RawClient(rc.cell.gateway.port())) {
            RawClient.Response head = c.send(method + " /relay/" + WORKER + "/record/x HTTP/1.1\r\nHost: x\r\n"
                            + "Authorization: Bearer " + Cell.token(Cell.TENANT)
                            + "\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
                    .readAnyHead();
            assertThat(head.status()).as("refused at once, no 100 first").isEqualTo(400);
            if (method.equals("GET")) {
                JsonNode problem = JSON.readTree(c.readBody(head));
                assertThat(problem.at("/details/field").asText()).isEqualTo("content-length");
            }
        }
    }

    /**
     * A target that answers before it reads the body (a 202 for an upload it then takes): the
     * client's exchange ends at the answer while the relay may still hold part of the body read
     * first, which the exchange's end releases. What the target then reads is the whole body or a
     * failure, never a short body taken for whole (today the relay's end fails the read at once).
     */
    @Test
    void aTargetThatAnswersFirst_readsTheWholeBodyOrAFailure_neverAShortOne() throws Exception {
        CompletableFuture<Void> read = new CompletableFuture<>();
        RecordingTarget.Call call = new RecordingTarget.Call("PUT", "/first");
        RelayTarget answersFirst = request -> {
            BodySource source = java.util.Objects.requireNonNull(request.body());
            read.thenRun(() -> pullAll(source, call)); // reads once the client has its answer
            return CompletableFuture.completedFuture(new RelayedResponse(202, List.of(), null));
        };
        try (RelayCell rc = mebibyteBufferCell("first", answersFirst)) {
            byte[] body = body(900_000, 9);
            try (RawClient c = new RawClient(rc.cell.gateway.port())) {
                c.send("PUT /relay/" + WORKER + "/first/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                        + Cell.token(Cell.TENANT) + "\r\nContent-Length: " + body.length + "\r\n\r\n");
                c.send(body);
                assertThat(c.read().status()).isEqualTo(202);
            }
            read.complete(null);
            RecordingTarget.Outcome outcome = call.outcome(Duration.ofSeconds(10));
            if (outcome == RecordingTarget.Outcome.COMPLETED) {
                assertThat(call.bytes.get())
                        .as("a body read to its end is whole")
                        .isEqualTo(body.length);
                assertThat(call.sha256Hex()).isEqualTo(sha256(body));
            }
        }
    }

    /** A cell whose bodies up to 1 MiB are read first (past the relay's 256 KiB read-ahead), one target. */
    private static RelayCell mebibyteBufferCell(String name, RelayTarget target) throws Exception {
        return RelayCell.start(
                Cell.builder()
                        .owners(1)
                        .set("spector.routing.gateway.request-buffer-bytes", String.valueOf(1024 * 1024)),
                WORKER,
                (c, httpForward) -> Map.of(name, target));
    }

    private static void pullAll(BodySource source, RecordingTarget.Call call) {
        source.next().whenComplete((part, error) -> {
            if (error != null) {
                call.outcome.complete(RecordingTarget.Outcome.FAILED);
            } else if (part == null) {
                call.outcome.complete(RecordingTarget.Outcome.COMPLETED);
            } else {
                call.add(part);
                pullAll(source, call);
            }
        });
    }

    private static String chunkedBody(int length) {
        return "Transfer-Encoding: chunked\r\n\r\n" + Integer.toHexString(length) + "\r\n" + "c".repeat(length)
                + "\r\n0\r\n\r\n";
    }

    private static double replayBudgetAvailable(Cell cell) throws Exception {
        Matcher m = Pattern.compile("(?m)^spector_forwarder_replay_budget_available_bytes (\\S+)$")
                .matcher(cell.get("/actuator/prometheus").body());
        return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }

    /** Asserts the target's answer in {@code r}: a 200 whose relayed body was {@code body}, whole. */
    private static void assertRelayed(RawClient.Response r, byte[] body, int upload) throws Exception {
        assertThat(r.status()).as("upload %d", upload).isEqualTo(200);
        JsonNode answer = JSON.readTree(r.body());
        assertThat(answer.get("bytes").asLong()).isEqualTo(body.length);
        assertThat(answer.get("sha256").asText()).isEqualTo(sha256(body));
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }
}
