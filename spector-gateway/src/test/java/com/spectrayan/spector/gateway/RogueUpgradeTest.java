package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.OwnerOverrunTest.ScriptedOwner;
import com.spectrayan.spector.gateway.OwnerOverrunTest.Served;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An owner that answers a WebSocket handshake with a {@code 101} that switches to nothing, or to
 * another protocol (RFC 9110 §7.8: "a server MUST NOT switch to a protocol that was not indicated
 * by the client"; §15.2.2: a 101 names what it switches to). The gateway must not make the
 * client's connection a tunnel then: the owner's endpoint did not switch, and what the client
 * sends next would reach the owner's HTTP server unchecked, with routing headers the owner trusts
 * ("WebSocket smuggling" through a backend's 101, found by a review). Raw sockets both sides: a
 * scripted owner that reads every request its connection carries, and a client that sends an HTTP
 * request right behind its handshake, as the attacker does.
 */
final class RogueUpgradeTest {
    private static final Duration BOUND = Duration.ofSeconds(10);

    private static @Nullable ScriptedOwner owner;
    private static @Nullable Cell cell;

    @BeforeAll
    static void start() throws Exception {
        owner = new ScriptedOwner(RogueUpgradeTest::answer);
        cell = Cell.builder().owners(1).member("scripted-0", owner().uri()).start();
    }

    @AfterAll
    static void stop() {
        if (cell != null) {
            cell.close();
        }
        if (owner != null) {
            owner.close();
        }
    }

    private static String answer(String target) {
        if (target.contains("/ws-none")) {
            return "HTTP/1.1 101 Switching Protocols\r\n\r\n";
        }
        if (target.contains("/ws-h2c")) {
            return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n";
        }
        if (target.contains("/ws-more")) {
            return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket, h2c\r\nConnection: Upgrade\r\n\r\n";
        }
        if (target.contains("/ws-ok")) {
            return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n\r\n";
        }
        return "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nplain";
    }

    /**
     * A 101 naming no protocol, another one, or one more than asked: the client gets 502 and a
     * close, and the request it sent behind its handshake never reaches the owner.
     */
    @ParameterizedTest
    @ValueSource(strings = {"ws-none", "ws-h2c", "ws-more"})
    void a101NotSwitchingToWebSocket_is502_andNothingIsTunnelled(String endpoint) throws Exception {
        String ns = requireNonNull(cell).namespaceOwnedBy("scripted-0");
        int ended = owner().ended.get();
        int seen = owner().requests.size();

        String answer = exchange(handshake(ns, endpoint) + smuggled(ns));

        assertThat(answer).startsWith("HTTP/1.1 502 ").doesNotContain("101");
        await().atMost(BOUND).until(() -> owner().ended.get() > ended); // its connection closed: nothing more on it
        List<Served> served = owner().requests.subList(seen, owner().requests.size());
        assertThat(served)
                .extracting(Served::target)
                .as("the handshake reached the owner, the request behind it never did")
                .hasSize(1)
                .allSatisfy(t -> assertThat(t).contains(endpoint).doesNotContain("smuggled"));
    }

    /** A 101 naming websocket in another case is the switch asked for: the bytes behind it are tunnelled. */
    @Test
    void a101SwitchingToWebSocketInAnyCase_isTunnelled() throws Exception {
        String ns = requireNonNull(cell).namespaceOwnedBy("scripted-0");
        int seen = owner().requests.size();

        try (Socket s = new Socket(
                InetAddress.getLoopbackAddress(), requireNonNull(cell).gateway.port())) {
            s.setSoTimeout((int) BOUND.toMillis());
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            out.write((handshake(ns, "ws-ok") + smuggled(ns)).getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            assertThat(RawClient.line(in)).startsWith("HTTP/1.1 101 ");
            await().atMost(BOUND).until(() -> owner().requests.size() >= seen + 2);
        }
        assertThat(owner().requests.subList(seen, seen + 2))
                .extracting(Served::target)
                .as("the handshake, then the tunnelled bytes (here shaped as a request) on the same connection")
                .satisfiesExactly(
                        t -> assertThat(t).contains("ws-ok"), t -> assertThat(t).contains("smuggled"));
    }

    private static String exchange(String bytes) throws Exception {
        try (Socket s = new Socket(
                InetAddress.getLoopbackAddress(), requireNonNull(cell).gateway.port())) {
            s.setSoTimeout((int) BOUND.toMillis());
            s.getOutputStream().write(bytes.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            return new String(RawClient.readToEnd(s.getInputStream()), StandardCharsets.ISO_8859_1);
        }
    }

    private static String handshake(String ns, String endpoint) {
        return "GET /api/v1/namespaces/" + ns + "/" + endpoint + " HTTP/1.1\r\n"
                + "Host: gw.example\r\n"
                + "Upgrade: websocket\r\n"
                + "Connection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "Sec-WebSocket-Version: 13\r\n"
                + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n"
                + "\r\n";
    }

    /** What an attacker sends behind the handshake: a request to another tenant's namespace, forged headers. */
    private static String smuggled(String ns) {
        return "GET /api/v1/namespaces/" + ns + "/smuggled HTTP/1.1\r\nHost: owner\r\nX-Spector-Tenant: victim\r\n\r\n";
    }

    private static ScriptedOwner owner() {
        return requireNonNull(owner);
    }
}
