package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.WireClient.Response;
import com.spectrayan.spector.gateway.config.ServerSettings.TlsProvider;
import io.netty.handler.ssl.OpenSsl;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Rotation of the TLS listener's certificate and key while the gateway runs (issue 11, "TLS"),
 * once per provider: a new pair is served to new handshakes within a bounded wait while a
 * connection opened before keeps working; a bad new pair (half-written, mismatched, unparsable,
 * unreadable) is logged at WARN with the file and why, and the pair in use is kept. The files are
 * checked every {@value #RELOAD_MS} ms here ({@code spector.server.tls.reload-interval}).
 */
final class TlsRotationTest {
    private static final long RELOAD_MS = 100;

    /** How long a change may take to be seen: many reload intervals, for a loaded machine. */
    private static final Duration WITHIN = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    private static TestPki first;
    private static TestPki second;
    private static SSLContext trustingBoth;
    private static SSLContext trustingFirst;
    private static SSLContext trustingSecond;

    @BeforeAll
    static void pki() {
        first = TestPki.authority("first");
        second = TestPki.authority("second");
        trustingBoth = TestPki.clientTrusting(first, second);
        trustingFirst = TestPki.clientTrusting(first);
        trustingSecond = TestPki.clientTrusting(second);
    }

    static Stream<TlsProvider> providers() {
        return Stream.of(TlsProvider.JDK, TlsProvider.OPENSSL);
    }

    private static Cell start(TlsProvider provider, Path cert, Path key) throws IOException {
        if (provider == TlsProvider.OPENSSL) {
            assumeThat(OpenSsl.isAvailable()).as("OpenSSL loads here").isTrue();
        }
        return Cell.builder()
                .owners(1)
                .tls(cert, key)
                .set("spector.server.tls.provider", provider.name().toLowerCase(Locale.ROOT))
                .set("spector.server.tls.reload-interval", RELOAD_MS + "ms")
                .start();
    }

    private static ServerTls tls(Cell cell) {
        return Objects.requireNonNull(cell.gateway.tls(), "the cell's TLS listener");
    }

    private static Response get(WireClient client, Cell cell) {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo";
        return client.send(WireClient.head("GET", path, Cell.token(Cell.TENANT)))
                .read();
    }

    /** Writes the pair to {@code tls.crt} and {@code tls.key} in the test's directory; returns the first. */
    private Path written(TestPki.Issued pair) {
        Path cert = dir.resolve("tls.crt");
        pair.writeTo(cert, dir.resolve("tls.key"));
        return cert;
    }

    /**
     * Replaces a file's content in one rename, as an atomic writer does: the reload thread never
     * reads it half-truncated (what the content itself says is up to the test).
     */
    private static void replace(Path file, String content) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, content, StandardCharsets.US_ASCII);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static void awaitPresented(Cell cell, X509Certificate expected) {
        await("new handshakes present " + expected.getSubjectX500Principal())
                .atMost(WITHIN)
                .until(() -> expected.equals(TlsWire.presented(cell.tlsPort(), trustingBoth)));
    }

    /** Waits until the files were checked a few more times, so that a change had its chance to apply. */
    private static void awaitChecks(Cell cell, int more) {
        long target = tls(cell).checks() + more;
        await(more + " more checks of the files")
                .atMost(WITHIN)
                .until(() -> tls(cell).checks() >= target);
    }

    /**
     * The files as Kubernetes mounts a Secret (and cert-manager renews it): {@code tls.crt} and
     * {@code tls.key} are symlinks through {@code ..data}, a symlink to a versioned directory that
     * a renewal swaps in one rename, so both files change at once.
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldPresentANewPairToNewHandshakesAndKeepOpenConnections(TlsProvider provider) throws Exception {
        TestPki.Issued before = first.server("before.test");
        TestPki.Issued after = second.server("after.test");
        Path v1 = Files.createDirectory(dir.resolve("..2026_v1"));
        before.writeTo(v1.resolve("tls.crt"), v1.resolve("tls.key"));
        Path data = Files.createSymbolicLink(dir.resolve("..data"), v1.getFileName());
        Path cert = Files.createSymbolicLink(
                dir.resolve("tls.crt"), data.getFileName().resolve("tls.crt"));
        Path key = Files.createSymbolicLink(
                dir.resolve("tls.key"), data.getFileName().resolve("tls.key"));

        try (RecordingLog log = RecordingLog.start();
                Cell cell = start(provider, cert, key);
                SSLSocket open = TlsWire.handshake(cell.tlsPort(), trustingBoth);
                WireClient openClient = new WireClient(open)) {
            assertThat(TlsWire.peer(open)).isEqualTo(before.certificate());
            assertThat(get(openClient, cell).status()).isEqualTo(200);

            Path v2 = Files.createDirectory(dir.resolve("..2026_v2"));
            after.writeTo(v2.resolve("tls.crt"), v2.resolve("tls.key"));
            Path swap = Files.createSymbolicLink(dir.resolve("..data_tmp"), v2.getFileName());
            Files.move(swap, data, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);

            awaitPresented(cell, after.certificate());
            assertThat(TlsWire.presented(cell.tlsPort(), trustingSecond))
                    .as("a client that trusts only the new CA is served")
                    .isEqualTo(after.certificate());
            assertThat(TlsWire.presented(cell.tlsPort(), trustingFirst))
                    .as("a client that trusts only the old CA is refused: no handshake gets the old pair")
                    .isNull();
            for (int i = 0; i < 2; i++) {
                Response r = get(openClient, cell);
                assertThat(r.status())
                        .as("the connection opened before the rotation keeps serving: %s", r)
                        .isEqualTo(200);
                assertThat(r.closed()).isFalse();
            }
            assertThat(TlsWire.peer(open)).as("with the pair it began with").isEqualTo(before.certificate());
            assertThat(tls(cell).reloadsApplied()).isEqualTo(1);
            assertThat(tls(cell).reloadsRefused())
                    .as("one rename: never half a pair")
                    .isZero();
            assertThat(log.lines())
                    .anyMatch(l -> l.contains("INFO")
                            && l.contains("TLS certificate reloaded: new handshakes present 'CN=after.test"))
                    .noneMatch(l -> l.contains("WARN") && l.contains("TLS"));
        }
    }

    /**
     * A pair rewritten in place, badly then well: a half-written certificate, then a whole one
     * with the old key (mismatched), then a key that is not PEM, each logged at WARN naming the
     * file and why while the old pair is kept; the whole new pair is then applied.
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldKeepTheOldPairAndLogWhyWhileTheNewOneIsBroken(TlsProvider provider) throws Exception {
        TestPki.Issued before = first.server("before.test");
        TestPki.Issued after = second.server("after.test");
        Path cert = written(before);
        Path key = dir.resolve("tls.key");

        try (RecordingLog log = RecordingLog.start();
                Cell cell = start(provider, cert, key)) {
            String chain = after.chainPem();
            replace(cert, chain.substring(0, chain.length() / 3));
            log.awaitLine(
                    "a WARN for the half-written certificate",
                    WITHIN,
                    l -> l.contains("WARN")
                            && l.contains("TLS reload refused: " + cert + " (expected: a PEM block closed by "
                                    + "'-----END CERTIFICATE-----', found none (a file still being written?))"));
            assertThat(TlsWire.presented(cell.tlsPort(), trustingBoth)).isEqualTo(before.certificate());

            replace(cert, chain);
            log.awaitLine(
                    "a WARN for the key of another certificate",
                    WITHIN,
                    l -> l.contains("WARN")
                            && l.contains(
                                    "TLS reload refused: " + key + " (expected: the private key of the certificate "
                                            + "'CN=after.test,O=Spector Tests'")
                            && l.contains("this key belongs to another certificate"));
            assertThat(TlsWire.presented(cell.tlsPort(), trustingBoth)).isEqualTo(before.certificate());

            replace(key, "not a key\n");
            String line = log.awaitLine(
                    "a WARN for a key that is not PEM",
                    WITHIN,
                    l -> l.contains("WARN")
                            && l.contains("TLS reload refused: " + key
                                    + " (expected: one unencrypted PKCS#8 '-----BEGIN PRIVATE KEY-----' block; found no"
                                    + " PEM block)"));
            assertThat(line).as("says what is still served").contains("keep presenting 'CN=before.test");
            assertThat(TlsWire.presented(cell.tlsPort(), trustingBoth)).isEqualTo(before.certificate());
            assertThat(tls(cell).lastRefusal()).isEqualTo(line.substring(line.indexOf("TLS reload refused")));

            replace(key, after.keyPem());
            awaitPresented(cell, after.certificate());
            assertThat(tls(cell).reloadsRefused())
                    .as("each bad state reported once")
                    .isEqualTo(3);
            assertThat(tls(cell).reloadsApplied()).isEqualTo(1);
        }
    }

    /** A file that vanishes (a rotation that deletes first) is one WARN, however long it stays away. */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldReportAnUnreadableFileOnceAndKeepServing(TlsProvider provider) throws Exception {
        TestPki.Issued before = first.server("before.test");
        Path cert = written(before);
        Path key = dir.resolve("tls.key");

        try (RecordingLog log = RecordingLog.start();
                Cell cell = start(provider, cert, key)) {
            Files.delete(key);
            log.awaitLine(
                    "a WARN for the missing key",
                    WITHIN,
                    l -> l.contains("WARN")
                            && l.contains("TLS reload refused: " + key
                                    + " (expected: a readable PEM file (NoSuchFileException))"));
            awaitChecks(cell, 5);
            assertThat(tls(cell).reloadsRefused())
                    .as("one WARN for the whole absence")
                    .isEqualTo(1);
            assertThat(TlsWire.presented(cell.tlsPort(), trustingFirst)).isEqualTo(before.certificate());

            replace(key, before.keyPem());
            awaitChecks(cell, 5);
            assertThat(tls(cell).reloadsApplied())
                    .as("the same pair back: nothing to apply")
                    .isZero();
            assertThat(tls(cell).reloadsRefused()).isEqualTo(1);
            assertThat(TlsWire.presented(cell.tlsPort(), trustingFirst)).isEqualTo(before.certificate());
        }
    }

    /**
     * The third review: a pair whose certificate has expired replaced a valid one and every client
     * that verifies failed; a FIFO in place of the key hung the reload thread for good. Now the
     * expired pair is refused (the valid pair in use stays, the expiry gauge with it), the FIFO is
     * refused without being opened, and a good pair after them is applied.
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldKeepAValidPairOverAnExpiredOne_andNeverHangOnAFifo(TlsProvider provider) throws Exception {
        TestPki.Issued before = first.server("before.test");
        TestPki.Issued expired = second.expiredServer("expired.test");
        TestPki.Issued after = second.server("after.test");
        Path cert = written(before);
        Path key = dir.resolve("tls.key");

        try (RecordingLog log = RecordingLog.start();
                Cell cell = start(provider, cert, key)) {
            replace(key, expired.keyPem());
            replace(cert, expired.chainPem());
            log.awaitLine(
                    "a WARN for the expired pair",
                    WITHIN,
                    l -> l.contains("WARN")
                            && l.contains("TLS reload refused: " + cert + " (expected: a chain valid now;")
                            && l.contains("CN=expired.test"));
            assertThat(TlsWire.presented(cell.tlsPort(), trustingBoth)).isEqualTo(before.certificate());
            assertThat(tls(cell).secondsToExpiry())
                    .as("the gauge reads the pair in use")
                    .isPositive();

            Files.delete(key);
            Process mkfifo = new ProcessBuilder("mkfifo", key.toString()).start();
            assertThat(mkfifo.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(mkfifo.exitValue()).isZero();
            log.awaitLine(
                    "a WARN for the FIFO",
                    WITHIN,
                    l -> l.contains("WARN")
                            && l.contains("TLS reload refused: " + key
                                    + " (expected: a regular PEM file (not a directory, FIFO or device))"));

            Files.delete(key);
            replace(cert, after.chainPem());
            replace(key, after.keyPem());
            awaitPresented(cell, after.certificate());
        }
    }

    /**
     * A pair valid from a few seconds ahead (put in place early, or issued by a CA whose clock runs
     * ahead of this host's, as cert-manager's CA issuer may) is refused while not valid, reported
     * once, and applied as soon as it is valid. It was remembered as tried and never looked at
     * again: the old pair was served past the new one's start, and past its own expiry (found by
     * a review).
     */
    @ParameterizedTest
    @MethodSource("providers")
    void shouldApplyAPairThatWasNotValidYet_onceItIs(TlsProvider provider) throws Exception {
        TestPki.Issued before = first.server("before.test");
        // whole seconds: a certificate's validity is written in them
        java.time.Instant from = java.time.Instant.now().plusSeconds(3).truncatedTo(ChronoUnit.SECONDS);
        TestPki.Issued early = second.serverValidFrom("early.test", from);
        Path cert = written(before);
        Path key = dir.resolve("tls.key");

        try (RecordingLog log = RecordingLog.start();
                Cell cell = start(provider, cert, key)) {
            replace(key, early.keyPem());
            replace(cert, early.chainPem());
            log.awaitLine(
                    "a WARN for the pair not valid yet",
                    WITHIN,
                    l -> l.contains("WARN") && l.contains("TLS reload refused") && l.contains("CN=early.test"));
            assertThat(TlsWire.presented(cell.tlsPort(), trustingBoth)).isEqualTo(before.certificate());

            awaitPresented(cell, early.certificate());
            assertThat(java.time.Instant.now())
                    .as("applied once valid, not before")
                    .isAfterOrEqualTo(from);
            assertThat(tls(cell).reloadsRefused())
                    .as("refused once, not at every check while it was not valid")
                    .isEqualTo(1);
        }
    }
}
