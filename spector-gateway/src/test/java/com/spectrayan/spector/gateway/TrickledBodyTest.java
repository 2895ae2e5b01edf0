package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * Small bodies sent a byte at a time arrive whole. The gateway holds a small body whole before it
 * forwards or relays it (request-buffer-bytes), and holds a chunk shorter than 4 KiB as a copy
 * gathered with the others ({@code BodyChunks}) rather than as the decoder's slice of its read
 * buffer: kept as slices, each held byte held its read buffer, about 157 bytes a byte of Netty's
 * direct memory ({@code bench/trickle-memory.sh} measures that on a gateway process; the
 * allocator's gauge counts chunks and caches, too coarse for a test). Here the copies' order and
 * content: raw sockets with Nagle off, so each byte is its own segment and, at this pace, its own
 * read; the owner's echo and the worker's target say what body they received.
 */
final class TrickledBodyTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String WORKER = "trickle-worker";
    private static final int CLIENTS = 20;
    private static final int TRICKLED = 300;
    /** At most the default request buffer (64 KiB): read whole before it goes on. */
    private static final int LENGTH = 60_000;

    private static byte[] body(int seed) {
        byte[] b = new byte[LENGTH];
        for (int i = 0; i < LENGTH; i++) {
            b[i] = (byte) ('a' + (i * 11 + seed) % 26);
        }
        return b;
    }

    /** Sends each client's next {@link #TRICKLED} bytes one at a time, a round of all every millisecond. */
    private static void trickle(List<RawClient> clients, List<byte[]> bodies) throws Exception {
        for (int at = 0; at < TRICKLED; at++) {
            for (int i = 0; i < clients.size(); i++) {
                clients.get(i).send(new byte[] {bodies.get(i)[at]});
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1)); // a slow client's pace, not a wait for the gateway
        }
    }

    /** Sends the rest of each body and returns each answer's body as JSON. */
    private static List<JsonNode> finish(List<RawClient> clients, List<byte[]> bodies) throws Exception {
        List<JsonNode> answers = new ArrayList<>();
        for (int i = 0; i < clients.size(); i++) {
            byte[] b = bodies.get(i);
            RawClient.Response r = clients.get(i)
                    .send(Arrays.copyOfRange(b, TRICKLED, b.length))
                    .read();
            assertThat(r.status()).as("client %d: %s", i, r.text()).isEqualTo(200);
            answers.add(JSON.readTree(r.body()));
        }
        return answers;
    }

    private static List<byte[]> bodies() {
        List<byte[]> bodies = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
            bodies.add(body(i));
        }
        return bodies;
    }

    private static void closeAll(List<RawClient> clients) throws Exception {
        for (RawClient c : clients) {
            c.close();
        }
    }

    /**
     * Opens {@link #CLIENTS} connections to {@code port}, each sending {@code requestLine.apply(i)}
     * with a head declaring {@link #LENGTH}, trickles their bodies, sends the rest, and returns
     * each answer's body as JSON.
     */
    private static List<JsonNode> trickleAll(int port, IntFunction<String> requestLine, List<byte[]> bodies)
            throws Exception {
        List<RawClient> clients = new ArrayList<>();
        try {
            for (int i = 0; i < CLIENTS; i++) {
                clients.add(new RawClient(port)
                        .noDelay()
                        .send(requestLine.apply(i) + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                                + Cell.token(Cell.TENANT) + "\r\nContent-Length: " + LENGTH + "\r\n\r\n"));
            }
            trickle(clients, bodies);
            return finish(clients, bodies);
        } finally {
            closeAll(clients);
        }
    }

    /** RFC 9112 §6.3: bodies read whole before they go to the owner, trickled a byte a read. */
    @Test
    void smallBodiesTrickledAByteARead_arriveWholeAtTheOwner() throws Exception {
        try (Cell cell = Cell.builder().owners(1).start()) {
            String ns = cell.namespaceOwnedBy("owner-0");
            List<byte[]> bodies = bodies();

            List<JsonNode> echoes =
                    trickleAll(cell.gateway.port(), i -> "POST /api/v1/namespaces/" + ns + "/echo", bodies);

            for (int i = 0; i < CLIENTS; i++) {
                assertThat(echoes.get(i).get("bodyBytes").asLong()).isEqualTo(LENGTH);
                assertThat(echoes.get(i).get("bodySha256").asText()).isEqualTo(sha256(bodies.get(i)));
            }
        }
    }

    /** The same for relays: a small relayed body is read whole ahead of the relay. */
    @Test
    void smallBodiesTrickledAByteARead_arriveWholeAtTheWorker() throws Exception {
        RecordingTarget target = new RecordingTarget();
        try (RelayCell rc = RelayCell.start(Cell.builder().owners(1), WORKER, (c, h) -> Map.of("record", target))) {
            List<byte[]> bodies = bodies();

            List<JsonNode> answers =
                    trickleAll(rc.cell.gateway.port(), i -> "PUT /relay/" + WORKER + "/record/up-" + i, bodies);

            for (int i = 0; i < CLIENTS; i++) {
                assertThat(answers.get(i).get("bytes").asLong()).isEqualTo(LENGTH);
                assertThat(answers.get(i).get("sha256").asText()).isEqualTo(sha256(bodies.get(i)));
            }
        }
    }

    private static String sha256(byte[] b) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
    }
}
