package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a client sends right behind a WebSocket handshake, before the {@code 101} (RFC 6455 §4.1
 * asks it to wait; an intermediary must not drop what it read either way), reaches the owner after
 * the switch, in order, whatever the bytes' framing on the client's side. Found by a review, both
 * lost before:
 *
 * <ul>
 *   <li>a handshake carrying a body ({@code Content-Length}, RFC 9110 §8.6) and a frame in the same
 *       write: the decoder read the frame as the start of another request while the body's parts
 *       waited their turn in front of the connection;
 *   <li>over TLS with the JDK's provider, the handshake in one record and the frame in the next,
 *       both in one TCP write: the TLS handler hands records on one at a time, and the second came
 *       after the decoder was taken out, to a handler that reads HTTP messages only.
 * </ul>
 *
 * <p>Raw sockets both sides: the owner is scripted ({@link MockOwner}), answers the handshake
 * {@code 101} and goes on reading its connection, so the early bytes, shaped as a request, are
 * recorded as the owner received them, as the tunnel's first bytes.
 */
final class UpgradeEarlyBytesTest {
    private static final Duration BOUND = Duration.ofSeconds(10);

    @TempDir
    static Path dir;

    private static @Nullable MockOwner owner;
    private static @Nullable Cell cell;
    private static @Nullable SSLContext trusting;

    @BeforeAll
    static void start() throws Exception {
        owner = MockOwner.start(r -> r.target().contains("/ws")
                ? "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                : MockOwner.response(200, "OK", "plain"));
        TestPki ca = TestPki.authority("early-bytes");
        trusting = TestPki.clientTrusting(ca);
        cell = Cell.builder()
                .owners(1)
                .member("scripted-0", requireNonNull(owner).baseUri())
                .tls(ca, dir)
                .set("spector.server.tls.provider", "jdk") // hands decrypted records on one at a time
                .start();
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

    /** A handshake with a body, and the next bytes in the same write: the body, then the tunnel's bytes. */
    @Test
    void shouldTunnelTheBytesBehindAHandshakeThatCarriesABody() throws Exception {
        String ns = cell().namespaceOwnedBy("scripted-0");
        String early = early(ns, "after-a-body");
        try (Socket s =
                new Socket(InetAddress.getLoopbackAddress(), cell().gateway.port())) {
            s.setSoTimeout((int) BOUND.toMillis());
            OutputStream out = s.getOutputStream();
            out.write((handshake(ns, "Content-Length: 5\r\n") + "hello" + early).getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            assertThat(RawClient.line(s.getInputStream())).startsWith("HTTP/1.1 101 ");
            MockOwner.Request tunnelled = awaitTunnelled(ns, "after-a-body");
            assertThat(tunnelled.method()).isEqualTo("GET");
        }
        List<MockOwner.Request> seen = seen(ns);
        assertThat(seen).extracting(MockOwner.Request::target).hasSize(2);
        assertThat(new String(seen.get(0).body(), StandardCharsets.ISO_8859_1))
                .as("the handshake's own body")
                .isEqualTo("hello");
    }

    /** Over TLS (the JDK's provider), the handshake and the next bytes in two records of one TCP write. */
    @Test
    void shouldTunnelTheBytesOfTheTlsRecordBehindTheHandshakesRecord() throws Exception {
        String ns = cell().namespaceOwnedBy("scripted-0");
        Corked wire = Corked.connect(cell().tlsPort());
        try (SSLSocket s = (SSLSocket)
                requireNonNull(trusting).getSocketFactory().createSocket(wire, "127.0.0.1", cell().tlsPort(), true)) {
            s.setSoTimeout((int) BOUND.toMillis());
            s.startHandshake();
            OutputStream out = s.getOutputStream();
            wire.cork();
            out.write(handshake(ns, "").getBytes(StandardCharsets.ISO_8859_1)); // one record
            out.flush();
            out.write(early(ns, "next-record").getBytes(StandardCharsets.ISO_8859_1)); // the next record
            out.flush();
            assertThat(wire.uncork()).as("two TLS records in one write").isEqualTo(2);
            assertThat(RawClient.line(s.getInputStream())).startsWith("HTTP/1.1 101 ");
            awaitTunnelled(ns, "next-record");
        }
        assertThat(seen(ns)).extracting(MockOwner.Request::target).hasSize(2);
    }

    private static MockOwner.Request awaitTunnelled(String ns, String name) {
        await("the early bytes at the owner, behind the handshake")
                .atMost(BOUND)
                .until(() -> seen(ns).stream().anyMatch(r -> r.target().endsWith("/" + name)));
        List<MockOwner.Request> seen = seen(ns);
        assertThat(seen.get(0).target()).as("the handshake first").endsWith("/ws");
        return seen.get(seen.size() - 1);
    }

    /** The requests the owner read for {@code ns}: each test has a namespace of its own. */
    private static List<MockOwner.Request> seen(String ns) {
        return requireNonNull(owner).requests().stream()
                .filter(r -> r.target().contains("/namespaces/" + ns + "/"))
                .toList();
    }

    private static String handshake(String ns, String fields) {
        return "GET /api/v1/namespaces/" + ns + "/ws HTTP/1.1\r\n"
                + "Host: gw.example\r\n"
                + "Upgrade: websocket\r\n"
                + "Connection: Upgrade\r\n"
                + "Sec-WebSocket-Key: " + RawWebSocket.KEY + "\r\n"
                + "Sec-WebSocket-Version: 13\r\n"
                + "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n"
                + fields
                + "\r\n";
    }

    /** The bytes sent before the 101, shaped as a request so that the owner records them. */
    private static String early(String ns, String name) {
        return "GET /api/v1/namespaces/" + ns + "/" + name + " HTTP/1.1\r\nHost: tunnelled\r\n\r\n";
    }

    private static Cell cell() {
        return requireNonNull(cell);
    }

    /** A TCP socket whose writes can be held and then sent as one write ({@link #uncork}). */
    private static final class Corked extends Socket {
        private final ByteArrayOutputStream held = new ByteArrayOutputStream();
        private boolean corked;

        static Corked connect(int port) throws IOException {
            Corked c = new Corked();
            c.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) BOUND.toMillis());
            return c;
        }

        synchronized void cork() {
            corked = true;
        }

        /** Sends what was held in one write; returns how many TLS records it holds. */
        synchronized int uncork() throws IOException {
            corked = false;
            byte[] bytes = held.toByteArray();
            held.reset();
            super.getOutputStream().write(bytes);
            super.getOutputStream().flush();
            int records = 0;
            for (int i = 0; i + 5 <= bytes.length; i += 5 + ((bytes[i + 3] & 0xff) << 8 | (bytes[i + 4] & 0xff))) {
                records++;
            }
            return records;
        }

        @Override
        public OutputStream getOutputStream() throws IOException {
            OutputStream direct = super.getOutputStream();
            return new OutputStream() {
                @Override
                public void write(int b) throws IOException {
                    write(new byte[] {(byte) b}, 0, 1);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    synchronized (Corked.this) {
                        if (corked) {
                            held.write(b, off, len);
                            return;
                        }
                    }
                    direct.write(b, off, len);
                }

                @Override
                public void flush() throws IOException {
                    synchronized (Corked.this) {
                        if (corked) {
                            return;
                        }
                    }
                    direct.flush();
                }
            };
        }
    }
}
