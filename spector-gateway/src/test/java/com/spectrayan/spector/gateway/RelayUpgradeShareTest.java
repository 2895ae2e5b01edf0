package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Relayed WebSockets have a share of their own per worker ({@code
 * spector.uplink.relay.max-upgrades-per-worker}, docs/PROTOCOL.md section 9.7 "Limits"): a
 * switched connection holds none of the worker's relay slots, so idle WebSockets never make an
 * ordinary relay to that worker wait, and one past the share is answered 503 at once with {@code
 * Retry-After}. Regression: each switched connection kept a slot for its whole life, so as many
 * idle WebSockets as slots made every other relay to the worker wait until its deadline. Raw
 * clients, the real gateway, a worker daemon's v2 uplink, the reference owner's WebSocket echo;
 * the slots are as few as the share, so that the WebSockets alone could fill them.
 */
final class RelayUpgradeShareTest {
    private static final String TOKEN = "upgrade-share-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(15);
    private static final int SHARE = 2;
    private static final int SLOTS = 2;
    private static final Duration PROMPTLY = Duration.ofSeconds(1);

    private static Cell cell;
    private static WorkerDaemon worker;
    private static String ns;

    private final List<RawWebSocket> open = new ArrayList<>();

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .set("spector.uplink.tokens", "wv2=" + TokenHashes.sha256Hex(TOKEN))
                .set("spector.uplink.relay.max-per-worker", Integer.toString(SLOTS))
                .set("spector.uplink.relay.max-upgrades-per-worker", Integer.toString(SHARE))
                .start();
        URI uplink = URI.create("ws://127.0.0.1:" + cell.gateway.port() + "/uplink");
        worker = WorkerDaemon.builder(
                        uplink,
                        "wv2",
                        TOKEN,
                        Map.of("owner", cell.owner("owner-0").baseUri()))
                .start();
        await("the worker registered")
                .atMost(WAIT)
                .until(() -> cell.gateway.workerDirectory().live("wv2") != null);
        ns = cell.namespaceOwnedBy("owner-0");
    }

    @AfterAll
    static void stop() throws IOException {
        worker.close();
        cell.close();
    }

    @AfterEach
    void closeEverySocket() throws IOException {
        for (RawWebSocket ws : open) {
            ws.close();
        }
        open.clear();
        await("no upgrade permit held")
                .atMost(WAIT)
                .until(() -> cell.gateway.relay().upgrades("wv2") == 0);
        await("no relay slot held")
                .atMost(WAIT)
                .until(() -> cell.gateway.relay().running("wv2") == 0);
    }

    private static String path() {
        return "/relay/wv2/owner/api/v1/namespaces/" + ns + "/ws";
    }

    private static String handshake() {
        return "GET " + path() + " HTTP/1.1\r\n"
                + "Host: gw.example\r\n"
                + "Upgrade: websocket\r\n"
                + "Connection: Upgrade\r\n"
                + "Sec-WebSocket-Key: " + RawWebSocket.KEY + "\r\n"
                + "Sec-WebSocket-Version: 13\r\n"
                + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n"
                + "\r\n";
    }

    /** Opens a WebSocket through the relay; returns it with the gateway's answer to its handshake. */
    private RawWebSocket.Head openWebSocket() throws IOException {
        RawWebSocket ws = new RawWebSocket(cell.gateway.port());
        open.add(ws);
        ws.send(handshake());
        return ws.readHead();
    }

    /** Fills the share with idle switched WebSockets, each echoing once to show it is open. */
    private void fillTheShare() throws IOException {
        for (int i = 0; i < SHARE; i++) {
            assertThat(openWebSocket().status())
                    .as("WebSocket %s, within the share", i)
                    .isEqualTo(101);
            RawWebSocket ws = open.get(open.size() - 1);
            ws.sendText("hello-" + i);
            assertThat(ws.readText()).isEqualTo("hello-" + i);
        }
    }

    @Test
    void shouldAnswerAnOrdinaryRelayPromptly_whileTheShareIsFullOfIdleWebSockets() throws IOException {
        fillTheShare();
        for (int i = 0; i < SLOTS + 1; i++) {
            long started = System.nanoTime();
            RawClient.Response r;
            try (RawClient c = new RawClient(cell.gateway.port())) {
                r = c.send("GET " + path() + " HTTP/1.1\r\nHost: gw.example\r\nAuthorization: Bearer "
                                + Cell.token(Cell.TENANT) + "\r\n\r\n")
                        .read();
            }
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            assertThat(r.status())
                    .as("an ordinary relay to the worker, answered by the owner: %s", r.text())
                    .isNotEqualTo(503)
                    .isLessThan(500);
            assertThat(took).as("answered promptly").isLessThan(PROMPTLY);
        }
        assertThat(cell.gateway.relay().upgrades("wv2")).isEqualTo(SHARE);
    }

    @Test
    void shouldRefuseAWebSocketPastTheShareAtOnce_503WithRetryAfter() throws IOException {
        fillTheShare();
        long started = System.nanoTime();
        RawClient.Response r = RawClient.exchange(cell.gateway.port(), handshake());
        assertThat(Duration.ofNanos(System.nanoTime() - started))
                .as("refused at once, never queued")
                .isLessThan(PROMPTLY);
        assertThat(r.status()).as(r.text()).isEqualTo(503);
        assertThat(r.header("Retry-After")).isEqualTo("1");
        assertThat(r.header("Content-Type")).startsWith("application/problem+json");
        assertThat(r.text()).contains("\"code\":\"GATEWAY_ROUTING_FAILURE\"").contains("relay-upgrades-full");
        assertThat(cell.gateway.relay().upgrades("wv2")).isEqualTo(SHARE);
    }

    @Test
    void shouldAcceptTheNextWebSocketOnceASwitchedOneCloses() throws IOException {
        fillTheShare();
        RawWebSocket first = open.remove(0);
        first.sendClose(1000);
        assertThat(first.readFrame().opcode()).isEqualTo(RawWebSocket.CLOSE);
        assertThat(first.in.read())
                .as("the connection ends after the close handshake")
                .isEqualTo(-1);
        first.close();
        await("the closed WebSocket's permit is back")
                .atMost(WAIT)
                .until(() -> cell.gateway.relay().upgrades("wv2") == SHARE - 1);

        assertThat(openWebSocket().status())
                .as("the next WebSocket takes the freed permit")
                .isEqualTo(101);
        assertThat(cell.gateway.relay().upgrades("wv2")).isEqualTo(SHARE);
        assertThat(RawClient.exchange(cell.gateway.port(), handshake()).status())
                .as("the share is full again")
                .isEqualTo(503);
    }
}
