package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.owner.RecordedRequest;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * WebSocket upgrades through the gateway, as a browser's bytes would arrive (RFC 6455 §4, RFC 9110
 * §7.8): forwarded to the owner with the handshake headers, after auth, routing and the 421 rules,
 * then spliced both ways. Regression: {@code Upgrade: websocket} was answered 200 as a plain GET.
 */
final class EdgeUpgradeTest {
    private static final String KEY = RawWebSocket.KEY;

    private static final String ACCEPT = RawWebSocket.ACCEPT;

    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(2)
                .set("spector.routing.gateway.stream-idle-timeout", "5s")
                .start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static String handshake(String ns, boolean withToken) {
        return "GET /api/v1/namespaces/" + ns + "/ws HTTP/1.1\r\n"
                + "Host: gw.example\r\n"
                + "Upgrade: websocket\r\n"
                + "Connection: Upgrade\r\n"
                + "Sec-WebSocket-Key: " + KEY + "\r\n"
                + "Sec-WebSocket-Version: 13\r\n"
                + (withToken ? "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n" : "")
                + "\r\n";
    }

    /** RFC 6455 §4.2.2 and §5: the 101 comes from the owner, and frames cross both ways. */
    @Test
    void shouldForwardAWebSocketUpgradeAndSpliceBothWays() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.out.write(handshake(ns, true).getBytes(StandardCharsets.ISO_8859_1));
            ws.out.flush();
            RawWebSocket.Head head = ws.readHead();
            assertThat(head.status()).isEqualTo(101);
            assertThat(head.headers().get("upgrade")).isEqualToIgnoringCase("websocket");
            assertThat(head.headers().get("connection")).isEqualToIgnoringCase("upgrade");
            assertThat(head.headers().get("sec-websocket-accept")).isEqualTo(ACCEPT);
            assertThat(head.headers()).doesNotContainKey("transfer-encoding").doesNotContainKey("content-length");

            ws.sendText("ping-me");
            assertThat(ws.readText()).isEqualTo("ping-me");
            String big = "x".repeat(40_000); // beyond one read: the splice's backpressure path
            ws.sendText(big);
            assertThat(ws.readText()).isEqualTo(big);
        }
        RecordedRequest seen = cell.recorded(ns).get(0);
        assertThat(seen.status()).isEqualTo(101);
        assertThat(seen.header("Upgrade")).isEqualToIgnoringCase("websocket");
        assertThat(seen.header("Connection")).containsIgnoringCase("upgrade");
        assertThat(seen.header("Sec-WebSocket-Key")).isEqualTo(KEY);
    }

    /**
     * A client's first frame in the same write as its handshake reaches the owner after the 101:
     * the decoder stops at the handshake's end, as Node's and Envoy's HTTP/1 servers do, rather
     * than reading the frame as the start of another request (it was lost). RFC 6455 §4.1 asks
     * clients to wait for the 101, but an intermediary must not drop what it read either way.
     */
    @Test
    void shouldKeepTheBytesRightBehindTheHandshake() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            byte[] head = handshake(ns, true).getBytes(StandardCharsets.ISO_8859_1);
            byte[] early = RawWebSocket.frame(RawWebSocket.TEXT, "early".getBytes(StandardCharsets.UTF_8));
            byte[] both = Arrays.copyOf(head, head.length + early.length);
            System.arraycopy(early, 0, both, head.length, early.length);
            ws.out.write(both); // one write: one TCP segment on loopback
            ws.out.flush();
            assertThat(ws.readHead().status()).isEqualTo(101);
            assertThat(ws.readText()).as("the frame sent with the handshake").isEqualTo("early");
            ws.sendText("later");
            assertThat(ws.readText()).isEqualTo("later");
        }
        assertThat(cell.recorded(ns)).extracting(RecordedRequest::status).containsExactly(101);
    }

    /**
     * The same behind a pipelined request (RFC 9112 §9.3.2): a GET, the handshake and a first
     * frame in one write. The GET is answered first, the handshake waits its turn decoded, the
     * frame waits as bytes (the decoder paused, ClientCodec) and is the splice's first after the
     * 101.
     */
    @Test
    void shouldKeepTheBytesBehindAHandshakePipelinedBehindAnotherRequest() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        String get = "GET /api/v1/namespaces/" + ns + "/echo?first HTTP/1.1\r\nHost: gw.example\r\n"
                + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n";
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            byte[] heads = (get + handshake(ns, true)).getBytes(StandardCharsets.ISO_8859_1);
            byte[] early = RawWebSocket.frame(RawWebSocket.TEXT, "behind-a-get".getBytes(StandardCharsets.UTF_8));
            byte[] all = Arrays.copyOf(heads, heads.length + early.length);
            System.arraycopy(early, 0, all, heads.length, early.length);
            ws.out.write(all);
            ws.out.flush();
            RawWebSocket.Head first = ws.readHead();
            assertThat(first.status()).isEqualTo(200);
            ws.in.readNBytes(Integer.parseInt(first.headers().get("content-length")));
            assertThat(ws.readHead().status()).isEqualTo(101);
            assertThat(ws.readText())
                    .as("the frame sent behind the pipelined handshake")
                    .isEqualTo("behind-a-get");
        }
        assertThat(cell.recorded(ns)).extracting(RecordedRequest::status).containsExactly(200, 101);
    }

    /**
     * An upgrade the owner does not take (any answer but 101) ends the connection after that
     * answer (RFC 9112 §9.6 {@code Connection: close}): what the client sent behind its handshake
     * was meant for the new protocol and is never read as HTTP, even when it looks like a request.
     */
    @Test
    void shouldCloseAfterAnUpgradeTheOwnerRefused() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        String refused = handshake(ns, true).replace("/ws HTTP/1.1", "/echo HTTP/1.1"); // no WebSocket there
        String smuggled = "GET /api/v1/namespaces/" + ns + "/echo?smuggled HTTP/1.1\r\nHost: gw\r\n"
                + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n";
        try (RawClient c = new RawClient(cell.gateway.port())) {
            RawClient.Response r = c.send(refused + smuggled).read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.header("connection")).isEqualToIgnoringCase("close");
            assertThat(c.readToEnd())
                    .as("nothing after the refused upgrade's answer, then the close")
                    .isEmpty();
        }
        assertThat(cell.recorded(ns))
                .as("the request behind the handshake never reached the owner")
                .hasSize(1);
    }

    /** The handshake is a request like any other: no token, no upgrade (and nothing upstream). */
    @Test
    void shouldRefuseAnUpgradeWithoutAToken() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        RawClient.Response r = RawClient.exchange(cell.gateway.port(), handshake(ns, false));
        assertThat(r.status()).isEqualTo(401);
        assertThat(cell.recorded(ns)).isEmpty();
    }

    /** DESIGN section 4: a 421 on the handshake is followed to the reported owner, then upgraded. */
    @Test
    void shouldFollowA421OnTheHandshake() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        cell.moveNamespace(ns, "owner-0", "owner-1", 2, 5);
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.out.write(handshake(ns, true).getBytes(StandardCharsets.ISO_8859_1));
            ws.out.flush();
            assertThat(ws.readHead().status()).isEqualTo(101);
            ws.sendText("after-421");
            assertThat(ws.readText()).isEqualTo("after-421");
        }
        assertThat(cell.recorded(ns)).extracting(RecordedRequest::status).containsExactly(421, 101);
    }

    /**
     * An upgrade through the relay is relayed, never a silent GET: to a worker with no link it is
     * 503 WORKER_UNREACHABLE like any relay. (A worker whose link speaks v1 answers 501, and a v2
     * link switches: {@code RelayUpgradeTest}.)
     */
    @Test
    void shouldAnswer503ToAnUpgradeThroughTheRelayToAWorkerWithNoLink() throws Exception {
        RawClient.Response r = RawClient.exchange(
                cell.gateway.port(),
                "GET /relay/w1/app/ws HTTP/1.1\r\nHost: gw\r\n"
                        + "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: " + KEY + "\r\nSec-WebSocket-Version: 13\r\n"
                        + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n\r\n");
        assertThat(r.status()).isEqualTo(503);
        assertThat(r.text()).contains("\"code\":\"WORKER_UNREACHABLE\"");
    }

    /** RFC 9110 §7.8: an Upgrade token the gateway does not pass is ignored; the GET is served. */
    @Test
    void shouldIgnoreAnUpgradeItDoesNotPass() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        RawClient.Response r = cell.rawGet(
                "/api/v1/namespaces/" + ns + "/echo",
                "Host: gw\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n");
        assertThat(r.status()).isEqualTo(200);
        RecordedRequest seen = cell.recorded(ns).get(0);
        assertThat(seen.header("Upgrade")).isNull();
        assertThat(seen.header("HTTP2-Settings")).isNull();
    }

    /** The other side's bounds: the splice ends after the stream idle timeout with no byte. */
    @Test
    void shouldCloseAnIdleUpgradedConnection() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        try (RawWebSocket ws = new RawWebSocket(cell.gateway.port())) {
            ws.out.write(handshake(ns, true).getBytes(StandardCharsets.ISO_8859_1));
            ws.out.flush();
            assertThat(ws.readHead().status()).isEqualTo(101);
            long started = System.nanoTime();
            assertThat(ws.in.read()).as("closed by the gateway").isEqualTo(-1);
            assertThat((System.nanoTime() - started) / 1_000_000).isBetween(3_000L, 15_000L);
        }
    }
}
