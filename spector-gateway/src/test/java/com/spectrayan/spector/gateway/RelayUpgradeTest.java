package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.owner.RecordedRequest;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * WebSocket upgrades through {@code /relay/...} (docs/PROTOCOL.md section 9.7; RFC 9110 §7.8
 * Upgrade and §15.2.2 101; RFC 6455 §4 the opening handshake): a raw client's handshake and
 * masked frames, through the real gateway, over a worker daemon's v2 uplink, to its {@code
 * http-forward} target and a real upstream: the reference owner's WebSocket echo, or {@link
 * RawUpstream} where the test must see the upstream's connection itself. A worker on a v1 link
 * still answers 501.
 */
final class RelayUpgradeTest {
    private static final String TOKEN = "upgrade-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(15);

    /** The switched connection's idle bound in this cell (spector.routing.gateway.stream-idle-timeout). */
    private static final Duration IDLE = Duration.ofSeconds(3);

    /** Messages each way through one switched connection. */
    private static final int MESSAGES = 1000;

    @TempDir
    static Path dir;

    /** A client that trusts the cell's TLS listener (a CA made for this class). */
    private static SSLContext trusting;

    private static Cell cell;
    private static RawUpstream raw;
    private static WorkerDaemon v2;
    private static WorkerDaemon v1;
    private static String ns;

    @BeforeAll
    static void start() throws Exception {
        TestPki ca = TestPki.authority("relay-upgrade");
        ca.server("gateway.test").writeTo(dir.resolve("tls.crt"), dir.resolve("tls.key"));
        trusting = TestPki.clientTrusting(ca);
        cell = Cell.builder()
                .owners(1)
                .tls(dir.resolve("tls.crt"), dir.resolve("tls.key"))
                .set(
                        "spector.uplink.tokens",
                        "wv2=" + TokenHashes.sha256Hex(TOKEN) + ",wv1=" + TokenHashes.sha256Hex(TOKEN))
                .set("spector.routing.gateway.stream-idle-timeout", IDLE.toSeconds() + "s")
                .start();
        raw = new RawUpstream();
        URI uplink = URI.create("ws://127.0.0.1:" + cell.gateway.port() + "/uplink");
        Map<String, URI> targets =
                Map.of("owner", cell.owner("owner-0").baseUri(), "raw", URI.create("http://127.0.0.1:" + raw.port()));
        v2 = WorkerDaemon.builder(uplink, "wv2", TOKEN, targets).start();
        v1 = WorkerDaemon.builder(uplink, "wv1", TOKEN, targets).v2(false).start();
        await("both workers registered")
                .atMost(WAIT)
                .until(() -> cell.gateway.workerDirectory().live("wv2") != null
                        && cell.gateway.workerDirectory().live("wv1") != null);
        ns = cell.namespaceOwnedBy("owner-0");
    }

    @AfterAll
    static void stop() throws IOException {
        v2.close();
        v1.close();
        raw.close();
        cell.close();
    }

    private static String handshake(String worker, String target, String path, int version) {
        return "GET /relay/" + worker + "/" + target + path + " HTTP/1.1\r\n"
                + "Host: gw.example\r\n"
                + "Upgrade: websocket\r\n"
                + "Connection: Upgrade\r\n"
                + "Sec-WebSocket-Key: " + RawWebSocket.KEY + "\r\n"
                + "Sec-WebSocket-Version: " + version + "\r\n"
                + "Sec-WebSocket-Protocol: chat\r\n"
                + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n"
                + "\r\n";
    }

    private static String echoPath() {
        return "/api/v1/namespaces/" + ns + "/ws";
    }

    /** Waits until no relay runs any more on either side: the stream ended on both. */
    private static void awaitNoRelays() {
        await("no relay on the gateway")
                .atMost(WAIT)
                .until(() -> cell.gateway.relay().running("wv2") == 0);
        await("no upgrade permit on the gateway")
                .atMost(WAIT)
                .until(() -> cell.gateway.relay().upgrades("wv2") == 0);
        await("no relay on the worker").atMost(WAIT).until(() -> v2.activeRelays() == 0);
    }

    /**
     * RFC 6455 §4.2.2 through the relay: the 101 is the upstream's (its accept for the client's
     * key), the gateway writes Upgrade and Connection itself (RFC 9110 §7.8, hop-by-hop), and
     * 1000 messages each way arrive in order while both directions flow at once; the close
     * handshake (§5.5.1) then ends the connection.
     */
    @Test
    void shouldSwitchAndEchoAThousandMessagesEachWayInOrder() throws Exception {
        ExecutorService sender = Executors.newSingleThreadExecutor();
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.send(handshake("wv2", "owner", echoPath(), 13));
            RawWebSocket.Head head = ws.readHead();
            assertThat(head.status()).isEqualTo(101);
            assertThat(head.headers().get("upgrade")).isEqualToIgnoringCase("websocket");
            assertThat(head.headers().get("connection")).isEqualToIgnoringCase("upgrade");
            assertThat(head.headers().get("sec-websocket-accept")).isEqualTo(RawWebSocket.ACCEPT);
            assertThat(head.headers()).containsKey("x-request-id");
            assertThat(head.headers()).doesNotContainKey("transfer-encoding").doesNotContainKey("content-length");

            CompletableFuture<Void> sent = CompletableFuture.runAsync(
                    () -> {
                        try {
                            for (int i = 0; i < MESSAGES; i++) {
                                ws.sendText("message-" + i + "-" + "x".repeat(i % 200));
                            }
                        } catch (IOException e) {
                            throw new IllegalStateException(e);
                        }
                    },
                    sender);
            for (int i = 0; i < MESSAGES; i++) {
                assertThat(ws.readText()).isEqualTo("message-" + i + "-" + "x".repeat(i % 200));
            }
            sent.get(WAIT.toSeconds(), TimeUnit.SECONDS);
            String big = "y".repeat(60_000); // beyond one socket read and one DATA slice (16 KiB)
            ws.sendText(big);
            assertThat(ws.readText()).isEqualTo(big);

            ws.sendClose(1000);
            RawWebSocket.WsFrame close = ws.readFrame();
            assertThat(close.opcode()).isEqualTo(RawWebSocket.CLOSE);
            assertThat(ws.in.read())
                    .as("the connection ends after the close handshake")
                    .isEqualTo(-1);
        } finally {
            sender.shutdownNow();
        }
        awaitNoRelays();
        RecordedRequest seen = cell.recorded(ns).stream()
                .filter(r -> r.status() == 101)
                .findFirst()
                .orElseThrow();
        assertThat(seen.header("Upgrade")).isEqualToIgnoringCase("websocket");
        assertThat(seen.header("Connection")).containsIgnoringCase("upgrade");
        assertThat(seen.header("Sec-WebSocket-Key")).isEqualTo(RawWebSocket.KEY);
        assertThat(seen.header("Authorization"))
                .as("a worker never holds a gateway credential")
                .isNull();
    }

    /**
     * END_STREAM is a half close (section 9.7, as RFC 8441's streams): after the client's FIN the
     * upstream's direction stays open, so every echo of what the client sent before it still
     * arrives, and the connection ends once the upstream ended its side too.
     */
    @Test
    void shouldKeepTheUpstreamsDirectionOpenAfterTheClientsHalfClose() throws Exception {
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.send(handshake("wv2", "owner", echoPath(), 13));
            assertThat(ws.readHead().status()).isEqualTo(101);
            for (int i = 0; i < 10; i++) {
                ws.sendText("before-fin-" + i);
            }
            ws.socket.shutdownOutput();
            for (int i = 0; i < 10; i++) {
                assertThat(ws.readText()).isEqualTo("before-fin-" + i);
            }
            assertThat(ws.in.read()).as("the upstream's side ended too").isEqualTo(-1);
        }
        awaitNoRelays();
    }

    /** RFC 9110 §7.8: an upstream may refuse the upgrade; its answer (426, RFC 6455 §4.4) passes as any response. */
    /**
     * A frame sent in the same write as the handshake crosses the uplink after the 101, ahead of
     * anything later (it was lost: the client codec read it as the start of another request).
     */
    @Test
    void shouldRelayTheBytesRightBehindTheHandshake() throws Exception {
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            byte[] head = handshake("wv2", "owner", echoPath(), 13).getBytes(StandardCharsets.ISO_8859_1);
            byte[] early = RawWebSocket.frame(RawWebSocket.TEXT, "early".getBytes(StandardCharsets.UTF_8));
            byte[] both = Arrays.copyOf(head, head.length + early.length);
            System.arraycopy(early, 0, both, head.length, early.length);
            ws.out.write(both);
            ws.out.flush();
            assertThat(ws.readHead().status()).isEqualTo(101);
            assertThat(ws.readText()).as("the frame sent with the handshake").isEqualTo("early");
            ws.sendText("later");
            assertThat(ws.readText()).isEqualTo("later");
        }
    }

    @Test
    void shouldPassAnOrdinaryResponseWhenTheUpstreamRefusesTheUpgrade() throws Exception {
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.send(handshake("wv2", "owner", echoPath(), 8));
            RawWebSocket.Head head = ws.readHead();
            assertThat(head.status()).isEqualTo(426);
            assertThat(head.headers().get("sec-websocket-version")).isEqualTo("13");
            assertThat(head.headers()).doesNotContainKey("upgrade");
            assertThat(head.headers().get("connection"))
                    .as("a refused upgrade ends its connection: what follows it is never read as HTTP")
                    .isEqualToIgnoringCase("close");
            int length = Integer.parseInt(head.headers().get("content-length"));
            assertThat(new String(ws.in.readNBytes(length), StandardCharsets.UTF_8))
                    .contains("13");
        }
        awaitNoRelays();
    }

    /**
     * The client going away mid-stream (an RST) resets the stream CANCEL: the worker closes its
     * upstream connection, and no relay, buffer or connection is left on either side.
     */
    @Test
    void shouldCloseTheUpstreamConnectionWhenTheClientGoesAwayMidStream() throws Exception {
        int before = raw.closed.size();
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.send(handshake("wv2", "raw", "/ws", 13));
            RawWebSocket.Head head = ws.readHead();
            assertThat(head.status()).isEqualTo(101);
            assertThat(head.headers().get("sec-websocket-accept")).isEqualTo(RawWebSocket.ACCEPT);
            assertThat(head.headers().get("sec-websocket-protocol")).isEqualTo("chat");
            ws.out.write("raw bytes both ways".getBytes(StandardCharsets.US_ASCII));
            ws.out.flush();
            assertThat(new String(ws.in.readNBytes(19), StandardCharsets.US_ASCII))
                    .isEqualTo("raw bytes both ways");
            ws.socket.setSoLinger(true, 0); // an RST, not a FIN
        }
        await("the worker closed its upstream connection").atMost(WAIT).until(() -> raw.closed.size() > before);
        awaitNoRelays();
    }

    /** The upstream closing its connection ends the client's: the bytes before it first, then the FIN. */
    @Test
    void shouldEndTheClientConnectionWhenTheUpstreamCloses() throws Exception {
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.send(handshake("wv2", "raw", "/ws", 13));
            assertThat(ws.readHead().status()).isEqualTo(101);
            ws.out.write(RawUpstream.BYE);
            ws.out.flush();
            assertThat(ws.in.readNBytes(RawUpstream.BYE.length)).isEqualTo(RawUpstream.BYE);
            assertThat(ws.in.read()).as("the upstream closed").isEqualTo(-1);
        }
        awaitNoRelays();
    }

    /**
     * Over TLS the upstream's end reaches the client as a close_notify and then the FIN (RFC 8446
     * §6.1), not as a bare FIN under the TLS layer, which a strict client reads as a truncation
     * (Java's does, in TLS 1.2: "closing inbound before receiving peer's close_notify"). TLS 1.2,
     * whose alert records show their type on the wire.
     */
    @Test
    void shouldEndTheClientsTlsConnectionWithACloseNotify_whenTheUpstreamCloses() throws Exception {
        TlsWire.Tapped tapped = TlsWire.Tapped.connect(cell.tlsPort());
        byte[] echoed;
        int end;
        try (SSLSocket socket =
                (SSLSocket) trusting.getSocketFactory().createSocket(tapped, "127.0.0.1", cell.tlsPort(), true)) {
            socket.setSoTimeout((int) WAIT.toMillis());
            SSLParameters p = socket.getSSLParameters();
            p.setProtocols(new String[] {"TLSv1.2"});
            socket.setSSLParameters(p);
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            out.write(handshake("wv2", "raw", "/ws", 13).getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            assertThat(RawClient.line(in)).startsWith("HTTP/1.1 101 ");
            while (!RawClient.line(in).isEmpty()) {
                // the rest of the 101's head
            }
            out.write(RawUpstream.BYE);
            out.flush();
            echoed = in.readNBytes(RawUpstream.BYE.length);
            try {
                end = in.read();
            } catch (SSLException truncated) {
                end = -2;
            }
        }
        assertThat(echoed).isEqualTo(RawUpstream.BYE);
        assertThat(end).as("the end of the stream, not a truncation").isEqualTo(-1);
        assertThat(tapped.lastRecordType())
                .as("the last TLS record before the FIN: an alert (close_notify), not data")
                .isEqualTo(TlsWire.ALERT);
        awaitNoRelays();
    }

    /** The switched connection is bounded as the forwarded splice: no byte either way for the idle timeout closes it. */
    @Test
    void shouldCloseAnIdleSwitchedConnection() throws Exception {
        int before = raw.closed.size();
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.send(handshake("wv2", "raw", "/ws", 13));
            assertThat(ws.readHead().status()).isEqualTo(101);
            long started = System.nanoTime();
            assertThat(ws.in.read()).as("closed by the gateway").isEqualTo(-1);
            assertThat(Duration.ofNanos(System.nanoTime() - started))
                    .isBetween(IDLE.minusMillis(500), IDLE.multipliedBy(4));
        }
        await("the worker closed its upstream connection").atMost(WAIT).until(() -> raw.closed.size() > before);
        awaitNoRelays();
    }

    /** Uplink v1 has no two-way streams: an upgrade to a worker on a v1 link is 501, never a silent GET. */
    @Test
    void shouldAnswer501ToAnUpgradeOverAV1Link() throws Exception {
        int seen = raw.accepted.size();
        RawClient.Response r = RawClient.exchange(cell.gateway.port(), handshake("wv1", "raw", "/ws", 13));
        assertThat(r.status()).isEqualTo(501);
        assertThat(r.text()).contains("\"code\":\"NOT_IMPLEMENTED\"").contains("relay-upgrade");
        assertThat(raw.accepted).as("nothing reached the upstream").hasSize(seen);
    }

    /**
     * An upstream that answers a WebSocket handshake with 101 (its accept computed from the key,
     * RFC 6455 §4.2.2, and the first subprotocol offered), then echoes raw bytes back, and closes
     * after echoing {@link #BYE}. It records each connection it accepted and each that ended.
     */
    private static final class RawUpstream implements AutoCloseable {
        static final byte[] BYE = "bye".getBytes(StandardCharsets.US_ASCII);

        final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final List<Socket> accepted = new CopyOnWriteArrayList<>();
        final List<Socket> closed = new CopyOnWriteArrayList<>();
        private final ExecutorService pool = Executors.newCachedThreadPool();

        RawUpstream() throws IOException {
            pool.execute(this::acceptLoop);
        }

        int port() {
            return server.getLocalPort();
        }

        private void acceptLoop() {
            while (!server.isClosed()) {
                try {
                    Socket s = server.accept();
                    accepted.add(s);
                    pool.execute(() -> serve(s));
                } catch (IOException e) {
                    return; // closed
                }
            }
        }

        private void serve(Socket s) {
            try (s) {
                s.setSoTimeout(RawClient.TIMEOUT_MS * 2);
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                String key = null;
                String protocol = null;
                for (String line = RawClient.line(in); !line.isEmpty(); line = RawClient.line(in)) {
                    String lower = line.toLowerCase(Locale.ROOT);
                    if (lower.startsWith("sec-websocket-key:")) {
                        key = line.substring(line.indexOf(':') + 1).strip();
                    } else if (lower.startsWith("sec-websocket-protocol:")) {
                        String offered = line.substring(line.indexOf(':') + 1);
                        int comma = offered.indexOf(',');
                        protocol = (comma < 0 ? offered : offered.substring(0, comma)).strip();
                    }
                }
                out.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                + "Sec-WebSocket-Accept: " + accept(String.valueOf(key)) + "\r\n"
                                + (protocol == null ? "" : "Sec-WebSocket-Protocol: " + protocol + "\r\n") + "\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
                byte[] buf = new byte[16 * 1024];
                List<Byte> tail = new ArrayList<>();
                for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                    out.write(buf, 0, n);
                    out.flush();
                    for (int i = 0; i < n; i++) {
                        tail.add(buf[i]);
                    }
                    while (tail.size() > BYE.length) {
                        tail.remove(0);
                    }
                    if (tail.size() == BYE.length
                            && new String(toArray(tail), StandardCharsets.US_ASCII).equals("bye")) {
                        return;
                    }
                }
            } catch (SocketException e) {
                // reset by the worker: ended all the same
            } catch (IOException e) {
                throw new IllegalStateException(e);
            } finally {
                closed.add(s);
            }
        }

        private static byte[] toArray(List<Byte> bytes) {
            byte[] out = new byte[bytes.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = bytes.get(i);
            }
            return out;
        }

        private static String accept(String key) {
            try {
                byte[] sha1 = MessageDigest.getInstance("SHA-1")
                        .digest((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").getBytes(StandardCharsets.US_ASCII));
                return Base64.getEncoder().encodeToString(sha1);
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            pool.shutdownNow();
        }
    }
}
