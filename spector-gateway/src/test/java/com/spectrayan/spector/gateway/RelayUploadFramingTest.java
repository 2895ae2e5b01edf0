package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.RecordingUpstream;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A relayed upload keeps its framing end to end (issue 12; docs/PROTOCOL.md sections 3, 5, 9.3):
 * a client over a raw socket, the gateway, a real worker daemon over the real WebSocket uplink,
 * and its {@code http-forward} target to a {@link RecordingUpstream} that records the bytes on its
 * wire. A client's {@code Content-Length} crosses the uplink as the request's {@code length} and
 * reaches the upstream as exactly {@code Content-Length: N} and N body bytes, no chunk framing
 * (RFC 9112 §6.2, §6.3); a chunked upload stays chunked (§7.1); either way the upstream's SHA-256
 * of the body is the client's. A client that goes away mid-upload never completes a request
 * upstream: the upstream's connection closes short of its Content-Length and is not reused. The
 * largest length a relay carries ({@code Limits.RELAY_LENGTH_BYTES}, 2^53-1) crosses as it is; one
 * past it is refused 400. Each runs over uplink v1 and v2 (a worker for each, {@code
 * WorkerDaemon.Builder#v2}).
 */
final class RelayUploadFramingTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    /** Past a v1 chunk (256 KiB) and a v2 stream window (256 KiB): the body crosses in many parts. */
    private static final int LENGTH = 600 * 1024 + 7;

    private static final String V1_TOKEN = "uv1-token-0123456789-0123456789";
    private static final String V2_TOKEN = "uv2-token-0123456789-0123456789";

    private static Cell cell;
    private static RecordingUpstream upstreamV1;
    private static RecordingUpstream upstreamV2;
    private static WorkerDaemon v1;
    private static WorkerDaemon v2;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .set(
                        "spector.uplink.tokens",
                        "uv1=" + TokenHashes.sha256Hex(V1_TOKEN) + ",uv2=" + TokenHashes.sha256Hex(V2_TOKEN))
                .start();
        upstreamV1 = RecordingUpstream.start();
        upstreamV2 = RecordingUpstream.start();
        URI uplink = URI.create("ws://127.0.0.1:" + cell.gateway.port() + "/uplink");
        v1 = WorkerDaemon.builder(uplink, "uv1", V1_TOKEN, Map.of("up", upstreamV1.uri()))
                .uplinks(1)
                .v2(false)
                .start();
        v2 = WorkerDaemon.builder(uplink, "uv2", V2_TOKEN, Map.of("up", upstreamV2.uri()))
                .uplinks(1)
                .start();
        Waits.until(
                "both workers' links are live",
                WAIT,
                () -> v1.isConnected()
                        && v2.isConnected()
                        && cell.gateway.workerDirectory().live("uv1") != null
                        && cell.gateway.workerDirectory().live("uv2") != null);
    }

    @AfterAll
    static void stop() {
        v1.close();
        v2.close();
        upstreamV1.close();
        upstreamV2.close();
        cell.close();
    }

    private static RecordingUpstream upstream(String worker) {
        return worker.equals("uv1") ? upstreamV1 : upstreamV2;
    }

    /** Takes the next request the worker's upstream recorded, and its head (each test takes both). */
    private static RecordingUpstream.Recorded take(String worker) {
        String head = upstream(worker).takeHead(WAIT);
        RecordingUpstream.Recorded r = upstream(worker).takeRequest(WAIT);
        assertThat(r.requestLine()).isEqualTo(head);
        return r;
    }

    private static byte[] data(int seed) {
        byte[] bytes = new byte[LENGTH];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static String head(String worker, String path, String framing) {
        return WireClient.head("PUT", "/relay/" + worker + "/up" + path, Cell.token(Cell.TENANT), framing);
    }

    /** Asserts the client's 200 carries what the upstream read: the body's length and SHA-256. */
    private static void assertUpstreamRead(WireClient.Response r, byte[] data) {
        assertThat(r.status()).as("%s", r).isEqualTo(200);
        assertThat(r.text()).isEqualTo(data.length + " " + RecordingUpstream.sha256(data));
    }

    /**
     * Uploads {@code data} to {@code path} with its Content-Length, asserts the upstream read it
     * whole, and returns the request as the upstream recorded it.
     */
    private static RecordingUpstream.Recorded upload(String worker, String path, byte[] data) {
        try (WireClient client = new WireClient(cell.gateway.port())) {
            client.send(head(worker, path, "Content-Length: " + data.length)).send(data);
            assertUpstreamRead(client.read(), data);
        }
        RecordingUpstream.Recorded r = take(worker);
        assertThat(r.requestLine()).isEqualTo("PUT " + path + " HTTP/1.1");
        return r;
    }

    /** RFC 9112 §6.2, §6.3: the client's Content-Length is the upstream's; the bytes are as they came. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"uv1", "uv2"})
    void shouldSendTheClientsContentLengthUpstream_andExactlyItsBytes(String worker) {
        byte[] data = data(1);

        RecordingUpstream.Recorded put = upload(worker, "/cl", data);

        assertThat(put.headers("Content-Length")).containsExactly(Integer.toString(LENGTH));
        assertThat(put.headers("Transfer-Encoding")).as("no chunked upload").isEmpty();
        assertThat(put.framing()).isEqualTo(RecordingUpstream.Framing.CONTENT_LENGTH);
        assertThat(put.wire())
                .as("exactly the body's bytes on the upstream's wire")
                .isEqualTo(data);
        assertThat(put.sha256()).isEqualTo(RecordingUpstream.sha256(data));
    }

    /** RFC 9112 §7.1: a chunked upload has no length to carry; it reaches the upstream chunked, every byte. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"uv1", "uv2"})
    void shouldSendAChunkedClientUploadChunked(String worker) {
        byte[] data = data(2);
        ByteArrayOutputStream chunked = new ByteArrayOutputStream();
        for (int off = 0; off < data.length; off += 100_000) {
            int n = Math.min(100_000, data.length - off);
            chunked.writeBytes((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.US_ASCII));
            chunked.write(data, off, n);
            chunked.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        chunked.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));

        try (WireClient client = new WireClient(cell.gateway.port())) {
            client.send(head(worker, "/chunked", "Transfer-Encoding: chunked")).send(chunked.toByteArray());
            assertUpstreamRead(client.read(), data);
        }

        RecordingUpstream.Recorded put = take(worker);
        assertThat(put.headers("Transfer-Encoding")).containsExactly("chunked");
        assertThat(put.headers("Content-Length")).isEmpty();
        assertThat(put.framing()).isEqualTo(RecordingUpstream.Framing.CHUNKED);
        assertThat(put.body()).isEqualTo(data);
    }

    /**
     * A client that sends half its declared body and goes away: the relay is cancelled, the
     * worker aborts the upstream request, and the upstream's connection closes with fewer bytes
     * than its Content-Length (never a complete request), and is not pooled: the next upload opens
     * another.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"uv1", "uv2"})
    void shouldNeverCompleteTheUpstreamRequest_whenTheClientGoesAwayMidUpload(String worker) {
        byte[] data = data(3);
        RecordingUpstream up = upstream(worker);

        try (WireClient client = new WireClient(cell.gateway.port())) {
            client.send(head(worker, "/gone", "Content-Length: " + LENGTH)).send(Arrays.copyOf(data, LENGTH / 2));
            assertThat(up.takeHead(WAIT)).isEqualTo("PUT /gone HTTP/1.1");
        }

        RecordingUpstream.Recorded cut = up.takeRequest(WAIT);
        assertThat(cut.requestLine()).isEqualTo("PUT /gone HTTP/1.1");
        assertThat(cut.headers("Content-Length")).containsExactly(Integer.toString(LENGTH));
        assertThat(cut.complete())
                .as("the upstream's connection closed before the request was whole")
                .isFalse();
        assertThat(cut.wire().length).isLessThanOrEqualTo(LENGTH / 2);
        assertThat(cut.wire()).isEqualTo(Arrays.copyOf(data, cut.wire().length));

        RecordingUpstream.Recorded after = upload(worker, "/next", data(4));
        assertThat(after.connection())
                .as("a new upstream connection: the cut one was closed, not pooled")
                .isNotEqualTo(cut.connection());
    }

    /**
     * {@code Limits.RELAY_LENGTH_BYTES} at the edge: a Content-Length of 2^53-1 crosses to the
     * upstream as it is (which, here, refuses a body that large and closes), and 2^53 is refused
     * 400 naming Content-Length before anything is relayed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"uv1", "uv2"})
    void shouldCarryALengthOf2Pow53Minus1_andRefuse2Pow53(String worker) {
        try (WireClient client = new WireClient(cell.gateway.port())) {
            client.send(head(worker, "/max", "Content-Length: 9007199254740991"))
                    .send(data(5));
            RecordingUpstream.Recorded max = take(worker);
            assertThat(max.headers("Content-Length")).containsExactly("9007199254740991");
            assertThat(max.complete()).isFalse();
        }

        try (WireClient client = new WireClient(cell.gateway.port())) {
            WireClient.Response r = client.send(head(worker, "/past", "Content-Length: 9007199254740992"))
                    .read();
            assertThat(r.status()).as("%s", r).isEqualTo(400);
            assertThat(r.json().get("details").get("field").asText()).isEqualTo("Content-Length");
            assertThat(r.json().get("code").asText()).isEqualTo("BAD_REQUEST");
        }
    }
}
