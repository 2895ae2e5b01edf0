package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.ServerTls.Failure;
import com.spectrayan.spector.gateway.TlsWire.TlsRecord;
import com.spectrayan.spector.gateway.WireClient.Response;
import com.spectrayan.spector.gateway.config.ServerSettings.TlsProvider;
import com.spectrayan.spector.owner.RecordedRequest;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.SslProvider;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The gateway's TLS listener (issue 11, "TLS"), once per provider (the JDK's, and OpenSSL where it
 * loads): the same pipeline as the plain port behind a TLS 1.3/1.2 handshake with ALPN {@code
 * http/1.1}, TLS 1.0 and 1.1 refused on the wire, and handshake failures counted, never logged
 * above DEBUG. Real sockets: a JDK {@link SSLSocket} that verifies the chain and the host name
 * against a CA made for this class, or raw bytes.
 */
final class TlsListenerTest {
    private static final String WORKER = "tls-worker";
    private static final String WORKER_TOKEN = "tls-worker-token-0123456789-0123456789";
    private static final Map<TlsProvider, Cell> cells = new EnumMap<>(TlsProvider.class);

    @TempDir
    static Path dir;

    private static TestPki ca;
    private static TestPki.Issued issued;
    private static SSLContext trusting;

    @BeforeAll
    static void pki() {
        ca = TestPki.authority("listener");
        issued = ca.server("gateway.test");
        trusting = TestPki.clientTrusting(ca);
        issued.writeTo(dir.resolve("tls.crt"), dir.resolve("tls.key"));
    }

    @AfterAll
    static void stop() {
        cells.values().forEach(Cell::close);
    }

    static Stream<TlsProvider> providers() {
        return Stream.of(TlsProvider.JDK, TlsProvider.OPENSSL);
    }

    /** The cell of a provider, started on first use; OpenSSL's is skipped where OpenSSL does not load. */
    private static synchronized Cell cell(TlsProvider provider) throws IOException {
        if (provider == TlsProvider.OPENSSL) {
            assumeThat(OpenSsl.isAvailable()).as("OpenSSL loads here").isTrue();
        }
        Cell c = cells.get(provider);
        if (c == null) {
            c = builder(provider).start();
            cells.put(provider, c);
        }
        return c;
    }

    private static Cell.Builder builder(TlsProvider provider) {
        return Cell.builder()
                .owners(1)
                .tls(dir.resolve("tls.crt"), dir.resolve("tls.key"))
                .set("spector.server.tls.provider", provider.name().toLowerCase(java.util.Locale.ROOT))
                .set("spector.uplink.tokens", WORKER + "=" + TokenHashes.sha256Hex(WORKER_TOKEN))
                .set("spector.server.access-log", accessLog(provider).toString());
    }

    private static Path accessLog(TlsProvider provider) {
        return dir.resolve("access-" + provider + ".log");
    }

    private static ServerTls tls(Cell cell) {
        return Objects.requireNonNull(cell.gateway.tls(), "the cell's TLS listener");
    }

    private static String echo(Cell cell) {
        return "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo";
    }

    /** An HTTPS GET reaches the owner like a plain one; the owner is told the client spoke https. */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldForwardAnHttpsGetToTheOwnerAndKeepThePlainPortWorking(TlsProvider provider) throws Exception {
        Cell cell = cell(provider);
        String path = echo(cell);
        assertThat(tls(cell).provider()).isEqualTo(provider == TlsProvider.JDK ? SslProvider.JDK : SslProvider.OPENSSL);

        try (SSLSocket socket = TlsWire.handshake(cell.tlsPort(), trusting);
                WireClient https = new WireClient(socket)) {
            assertThat(TlsWire.peer(socket)).isEqualTo(issued.certificate());
            assertThat(socket.getSession().getPeerCertificates())
                    .as("the chain of the file: the server's certificate, then the intermediate")
                    .hasSize(2);
            for (int i = 0; i < 2; i++) { // keep-alive: the same TLS connection serves the next request
                Response r = https.send(WireClient.head("GET", path + "?n=" + i, Cell.token(Cell.TENANT)))
                        .read();
                assertThat(r.status()).as("%s", r).isEqualTo(200);
                assertThat(r.header("X-Spector-Node")).isEqualTo("owner-0");
                assertThat(r.closed()).isFalse();
            }
        }
        try (WireClient plain = new WireClient(cell.gateway.port())) {
            Response r = plain.send(WireClient.head("GET", path + "?n=plain", Cell.token(Cell.TENANT)))
                    .read();
            assertThat(r.status()).as("the plain port keeps working: %s", r).isEqualTo(200);
        }
        List<RecordedRequest> seen = cell.owner("owner-0").requests().stream()
                .filter(q -> q.path().equals(path))
                .toList();
        assertThat(seen).extracting(q -> q.header("X-Forwarded-Proto")).containsExactly("https", "https", "http");
    }

    /**
     * RFC 8446 §6.1: each party sends close_notify before it closes its write side. A refusal the
     * gateway answers with its body unread (here a coding other than chunked: 501, then the
     * lingering close) half-closed the TCP socket under the TLS layer, and a strict client read a
     * truncation (the third review). Java's client refuses an end without close_notify in TLS 1.2
     * ("closing inbound before receiving peer's close_notify").
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldSendCloseNotifyBeforeTheFinOfALingeringClose(TlsProvider provider) throws Exception {
        Cell cell = cell(provider);
        TlsWire.Tapped tapped = TlsWire.Tapped.connect(cell.tlsPort());
        try (SSLSocket socket =
                (SSLSocket) trusting.getSocketFactory().createSocket(tapped, "127.0.0.1", cell.tlsPort(), true)) {
            socket.setSoTimeout(10_000);
            SSLParameters p = socket.getSSLParameters();
            p.setProtocols(new String[] {"TLSv1.2"}); // its alert records show their type on the wire
            socket.setSSLParameters(p);
            socket.getOutputStream()
                    .write(("POST " + echo(cell) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                    + "Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n")
                            .getBytes(StandardCharsets.US_ASCII));
            socket.getOutputStream().flush();
            byte[] answer;
            try {
                answer = socket.getInputStream().readAllBytes();
            } catch (SSLException endedWithoutCloseNotify) {
                answer = new byte[0];
            }
            assertThat(new String(answer, StandardCharsets.US_ASCII)).startsWith("HTTP/1.1 501 ");
        }
        assertThat(tapped.lastRecordType())
                .as("the last TLS record before the end: an alert (close_notify), not data")
                .isEqualTo(TlsWire.ALERT);
    }

    /** RFC 8996 §5: TLS 1.0 and 1.1 are refused with a protocol_version alert; 1.2 gets its ServerHello. */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldRefuseTls10AndTls11ClientHellosOnTheWire(TlsProvider provider) throws Exception {
        Cell cell = cell(provider);
        long refusedBefore = tls(cell).failures(Failure.REFUSED);

        for (int version : new int[] {TlsWire.TLS_1_0, TlsWire.TLS_1_1}) {
            try (Socket s = TlsWire.connect(cell.tlsPort())) {
                s.getOutputStream().write(TlsWire.clientHello(version));
                TlsRecord reply = TlsWire.readRecord(s);

                assertThat(reply)
                        .as("a reply to a ClientHello of 0x%04x", version)
                        .isNotNull();
                assertThat(reply.type()).as("an alert").isEqualTo(TlsWire.ALERT);
                assertThat(reply.fragment()).containsExactly(TlsWire.FATAL, TlsWire.PROTOCOL_VERSION);
                assertThat(TlsWire.closedByServer(s)).isTrue();
            }
        }
        try (Socket s = TlsWire.connect(cell.tlsPort())) {
            s.getOutputStream().write(TlsWire.clientHello(TlsWire.TLS_1_2));
            TlsRecord reply = TlsWire.readRecord(s);

            assertThat(reply.type())
                    .as("the same hello at TLS 1.2: a handshake record")
                    .isEqualTo(TlsWire.HANDSHAKE);
            assertThat(reply.fragment()[0]).as("a ServerHello").isEqualTo((byte) TlsWire.SERVER_HELLO);
            assertThat((reply.fragment()[4] & 0xff) << 8 | (reply.fragment()[5] & 0xff))
                    .as("its server_version")
                    .isEqualTo(TlsWire.TLS_1_2);
        }
        assertThat(tls(cell).failures(Failure.REFUSED) - refusedBefore)
                .as("both refusals counted")
                .isEqualTo(2);
    }

    /** TLS 1.3 by default; a client that offers only 1.2 gets 1.2. */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldNegotiateTls13OrTls12(TlsProvider provider) throws Exception {
        Cell cell = cell(provider);
        long tls12 = tls(cell).handshakes("TLSv1.2");

        try (SSLSocket s = TlsWire.handshake(cell.tlsPort(), trusting)) {
            assertThat(s.getSession().getProtocol()).isEqualTo("TLSv1.3");
        }
        try (SSLSocket s = TlsWire.handshake(cell.tlsPort(), trusting, List.of("TLSv1.2"), List.of("http/1.1"))) {
            assertThat(s.getSession().getProtocol()).isEqualTo("TLSv1.2");
        }
        assertThat(tls(cell).handshakes("TLSv1.2") - tls12).isEqualTo(1);
    }

    /** RFC 7301 §3.2: of {@code h2, http/1.1} the server selects {@code http/1.1}, the only one it speaks. */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldSelectHttp11ByAlpn(TlsProvider provider) throws Exception {
        Cell cell = cell(provider);

        try (SSLSocket s =
                TlsWire.handshake(cell.tlsPort(), trusting, List.of("TLSv1.3", "TLSv1.2"), List.of("h2", "http/1.1"))) {
            assertThat(s.getApplicationProtocol()).isEqualTo("http/1.1");
        }
        try (SSLSocket s = TlsWire.handshake(cell.tlsPort(), trusting, List.of("TLSv1.2"), List.of("h2", "http/1.1"))) {
            assertThat(s.getApplicationProtocol()).as("over TLS 1.2 too").isEqualTo("http/1.1");
        }
    }

    /**
     * RFC 7301 §3.2: a client that offers only {@code h2} gets no ALPN answer (no alert) and may
     * still speak HTTP/1.1; one that offers no ALPN at all is served as ever.
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldServeHttp11WhenAlpnFindsNoCommonProtocol(TlsProvider provider) throws Exception {
        Cell cell = cell(provider);
        String path = echo(cell);

        for (List<String> alpn : List.of(List.of("h2"), List.<String>of())) {
            try (SSLSocket s = TlsWire.handshake(cell.tlsPort(), trusting, List.of("TLSv1.3"), alpn);
                    WireClient https = new WireClient(s)) {
                assertThat(s.getApplicationProtocol())
                        .as("ALPN offered %s: none selected", alpn)
                        .isEmpty();
                Response r = https.send(WireClient.head("GET", path, Cell.token(Cell.TENANT)))
                        .read();
                assertThat(r.status()).as("%s", r).isEqualTo(200);
            }
        }
    }

    /**
     * The worker uplink's WebSocket (RFC 6455 §4) upgrades over TLS as over the plain port, and its
     * access log line counts the bytes inside TLS, as the worker sent and got them.
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldAcceptAWorkerUplinkOverTls(TlsProvider provider) throws Exception {
        Cell cell = cell(provider);
        // RFC 6455 section 5.5.1: close, FIN, masked (key 0), code 1000
        byte[] close = {(byte) 0x88, (byte) 0x82, 0, 0, 0, 0, 0x03, (byte) 0xe8};
        String id;
        int down;
        try (SSLSocket s = TlsWire.handshake(cell.tlsPort(), trusting)) {
            OutputStream out = s.getOutputStream();
            out.write(("GET /uplink HTTP/1.1\r\nHost: gateway.test\r\nUpgrade: websocket\r\n"
                            + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + FrameCodec.SUBPROTOCOL
                            + "\r\nX-Spector-Worker: " + WORKER + "\r\nAuthorization: Bearer " + WORKER_TOKEN
                            + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            String head = AccessLogTest.readHead(s.getInputStream());

            assertThat(head).startsWith("HTTP/1.1 101");
            id = AccessLogTest.requestId(head);
            await("the uplink registered")
                    .atMost(TlsWire.TIMEOUT)
                    .until(() -> cell.gateway.workerDirectory().live(WORKER) != null);
            out.write(close);
            out.flush();
            down = s.getInputStream().readAllBytes().length; // until the gateway closes
        }
        await("the uplink gone with its TLS connection")
                .atMost(TlsWire.TIMEOUT)
                .until(() -> cell.gateway.workerDirectory().live(WORKER) == null);
        var line = AccessLogTest.lineOf(accessLog(provider), id);
        assertThat(line.get("status").asInt()).isEqualTo(101);
        assertThat(line.get("upstream").asText()).isEqualTo(WORKER);
        assertThat(line.get("bytesIn").asLong())
                .as("the close frame, inside TLS")
                .isEqualTo(close.length);
        assertThat(line.get("bytesOut").asLong()).as("what the worker read").isEqualTo(down);
    }

    /**
     * Failed handshakes are counted by cause and exported, but logged at DEBUG only: plain HTTP on
     * the TLS port, a client that does not trust the certificate, a TCP connect that closes.
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldCountFailedHandshakesByCauseWithoutLoggingThem(TlsProvider provider) throws Exception {
        Cell cell = cell(provider);
        ServerTls tls = tls(cell);
        long notTls = tls.failures(Failure.NOT_TLS);
        long refused = tls.failures(Failure.REFUSED);
        long closed = tls.failures(Failure.CLOSED);
        int rounds = 10;

        try (RecordingLog log = RecordingLog.start()) {
            for (int i = 0; i < rounds; i++) {
                try (Socket plainHttp = TlsWire.connect(cell.tlsPort())) {
                    plainHttp
                            .getOutputStream()
                            .write(WireClient.head("GET", "/actuator/health/readiness", null)
                                    .getBytes(StandardCharsets.ISO_8859_1));
                    assertThat(TlsWire.closedByServer(plainHttp))
                            .as("plain HTTP on the TLS port: closed")
                            .isTrue();
                }
                SSLContext stranger = TestPki.clientTrusting(TestPki.authority("stranger-" + i));
                assertThat(catchThrowableOfType(
                                SSLHandshakeException.class, () -> TlsWire.handshake(cell.tlsPort(), stranger)))
                        .as("a client that trusts another CA refuses the certificate")
                        .isNotNull();
                try (Socket probe = TlsWire.connect(cell.tlsPort())) {
                    probe.shutdownOutput(); // a TCP health check: connect, then FIN
                    assertThat(TlsWire.closedByServer(probe)).isTrue();
                }
            }
            await("every failure counted")
                    .atMost(TlsWire.TIMEOUT)
                    .until(() -> tls.failures(Failure.NOT_TLS) - notTls == rounds
                            && tls.failures(Failure.REFUSED) - refused == rounds
                            && tls.failures(Failure.CLOSED) - closed == rounds);
            assertThat(log.lines())
                    .as("a scanner must not fill the log: nothing above DEBUG about handshakes")
                    .noneMatch(l -> l.contains("handshake") || l.contains("SSL") || l.contains("TLS"));
        }
        try (WireClient scrape = new WireClient(cell.gateway.port())) {
            String metrics = scrape.send(WireClient.head("GET", "/actuator/prometheus", null))
                    .read()
                    .text();
            assertThat(metrics)
                    .contains("spector_tls_handshake_failures_total{cause=\"not-tls\"} "
                            + (double) tls.failures(Failure.NOT_TLS))
                    .contains("spector_tls_handshake_failures_total{cause=\"closed\"} ")
                    .contains("spector_tls_handshakes_total{protocol=\"TLSv1.3\"} ")
                    .contains("spector_tls_reloads_total{outcome=\"refused\"} 0.0")
                    .contains("spector_tls_certificate_expiry_seconds ");
        }
    }

    /**
     * A handshake that does not complete within {@code spector.server.header-timeout} is closed,
     * whether the client sent nothing or stopped inside its ClientHello (a slowloris on TLS).
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldCloseAHandshakeThatOutlivesTheHeaderTimeout(TlsProvider provider) throws Exception {
        cell(provider); // skips OpenSSL where it does not load
        Duration headerTimeout = Duration.ofSeconds(1);
        try (Cell cell = builder(provider)
                .set("spector.server.header-timeout", headerTimeout.toSeconds() + "s")
                .start()) {
            byte[] hello = TlsWire.clientHello(TlsWire.TLS_1_2);
            for (int sent : new int[] {0, 5}) {
                try (Socket s = TlsWire.connect(cell.tlsPort())) {
                    long start = System.nanoTime();
                    s.getOutputStream().write(hello, 0, sent);

                    assertThat(TlsWire.closedByServer(s)).isTrue();
                    Duration open = Duration.ofNanos(System.nanoTime() - start);
                    assertThat(open)
                            .as("closed by the timeout (%d hello bytes sent), not before", sent)
                            .isGreaterThanOrEqualTo(headerTimeout.minusMillis(50))
                            .isLessThan(headerTimeout.plusSeconds(3));
                }
            }
            await("both timeouts counted")
                    .atMost(TlsWire.TIMEOUT)
                    .until(() -> tls(cell).failures(Failure.TIMEOUT) == 2);
        }
    }
}
