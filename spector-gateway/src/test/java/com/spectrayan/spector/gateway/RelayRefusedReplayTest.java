package com.spectrayan.spector.gateway;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.testkit.RecordingUpstream;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2StreamHandler;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.worker.WorkerDaemon;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * A relayed upload whose v2 stream a worker's link refuses after its body went out ({@code
 * REFUSED_STREAM}: nothing of it was processed; docs/PROTOCOL.md section 9.4) is sent again, body
 * and all, on the worker's other link when the gateway read the body whole before the relay
 * started ({@code spector.routing.gateway.request-buffer-bytes}): the client gets the upstream's
 * answer, and the upstream the body once, whole. It failed {@code 503 WORKER_UNREACHABLE} before,
 * as a worker sends such refusals at a drain's start. Raw bytes at the edge; a real worker with two
 * links, its one link made full behind the gateway's count (16 streams opened on it directly, to an
 * upstream that never answers).
 */
final class RelayRefusedReplayTest {
    private static final String WORKER = "refused";
    private static final String TOKEN = "refused-worker-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(15);

    /** A stream that only waits: its data is released. */
    private static final class Waiting implements V2StreamHandler {
        @Override
        public void onData(ByteBuf data, boolean endStream) {
            data.release();
        }

        @Override
        public void onReset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {}

        @Override
        public void onLinkClosed(@Nullable Throwable cause) {}
    }

    /** An upstream that accepts and never answers: the requests to it stay open. */
    private static final class Hole implements AutoCloseable {
        final ServerSocket server = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
        final List<Socket> held = new CopyOnWriteArrayList<>();

        Hole() throws IOException {
            Thread t = new Thread(
                    () -> {
                        while (!server.isClosed()) {
                            try {
                                held.add(server.accept());
                            } catch (IOException e) {
                                return;
                            }
                        }
                    },
                    "hole-accept");
            t.setDaemon(true);
            t.start();
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.getLocalPort());
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : held) {
                s.close();
            }
        }
    }

    @Test
    void anUploadRefusedOnAFullLink_readFirst_isSentAgainOnTheOtherLink() throws Exception {
        byte[] body = new byte[20_000];
        new Random(9).nextBytes(body);
        try (Cell cell = Cell.builder()
                        .owners(1)
                        .set("spector.uplink.tokens", WORKER + "=" + TokenHashes.sha256Hex(TOKEN))
                        .start();
                Hole hole = new Hole();
                RecordingUpstream upstream = RecordingUpstream.start();
                WorkerDaemon worker = WorkerDaemon.builder(
                                URI.create("ws://127.0.0.1:" + cell.gateway.port() + "/uplink"),
                                WORKER,
                                TOKEN,
                                Map.of("hole", hole.uri(), "rec", upstream.uri()))
                        .uplinks(2)
                        .start();
                RawClient held = new RawClient(cell.gateway.port());
                RawClient client = new RawClient(cell.gateway.port())) {
            await("two links")
                    .atMost(WAIT)
                    .until(() -> cell.gateway.workerDirectory().links(WORKER).size() == 2);
            assertThat(worker.activeRelays()).as("the worker runs no relay yet").isZero();
            String auth = "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n";
            // One relay held through the gateway, so the next goes to the other link (the fewest running) ...
            held.send("GET /relay/" + WORKER + "/hole/held HTTP/1.1\r\nHost: gw\r\n" + auth + "\r\n");
            await("the held relay runs on a link")
                    .atMost(WAIT)
                    .until(() -> cell.gateway.workerDirectory().links(WORKER).stream()
                            .anyMatch(l -> l.activeRelays() == 1));
            List<WorkerLink> links = cell.gateway.workerDirectory().links(WORKER);
            WorkerLink full = links.get(0).activeRelays() == 0 ? links.get(0) : links.get(1);
            // ... which is made full behind the gateway's count: the worker refuses its 17th stream.
            V2Connection v2 = Objects.requireNonNull(((RealGatewayWorkerClient) full.client()).v2(), "a v2 link");
            for (int i = 0; i < 16; i++) {
                v2.openStream(
                        new RequestHead("hole", "GET", "http://hole/fill-" + i, List.of(), "acme", null, null, -1),
                        true,
                        new Waiting());
            }
            await("16 requests held at the upstream").atMost(WAIT).until(() -> hole.held.size() >= 17);

            client.send("POST /relay/" + WORKER + "/rec/upload HTTP/1.1\r\nHost: gw\r\n" + auth + "Content-Length: "
                    + body.length + "\r\n\r\n");
            client.send(body);
            RawClient.Response r = client.read();

            assertThat(r.status()).as("%s", r).isEqualTo(200); // before: 503 WORKER_UNREACHABLE
            assertThat(new String(r.body(), ISO_8859_1)).isEqualTo(body.length + " " + RecordingUpstream.sha256(body));
            RecordingUpstream.Recorded seen = upstream.takeRequest(WAIT);
            assertThat(seen.body()).as("the upstream got the body, whole").isEqualTo(body);
            assertThat(upstream.connections()).as("once").isEqualTo(1);
            await("the refused relay left the full link's count").atMost(WAIT).until(() -> full.activeRelays() == 0);
        }
    }
}
