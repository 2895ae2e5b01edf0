package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.take;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The worker dials its uplink over TLS ({@code wss://}): the gateway's certificate is checked
 * against the CA file given (or the JDK's trust store), its validity period and its names (RFC
 * 6125 / RFC 9110 §4.3.4); a certificate that fails any check is a failed attempt with a reason
 * that says which, retried with backoff, and the worker's token never leaves it (the gateway sees
 * no upgrade request). Certificates are made at test time with Netty's pkitesting.
 */
final class UplinkTlsTest {
    private static X509Bundle ca;
    private static X509Bundle good;
    private static X509Bundle otherCaLeaf;
    private static X509Bundle expired;
    private static X509Bundle wrongName;

    @TempDir
    static Path dir;

    private static Path caFile;

    @RegisterExtension
    final Closing closing = new Closing();

    private final EventLoopGroup group = closing.group;
    private final BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
    private final BlockingQueue<Throwable> failures = new LinkedBlockingQueue<>();

    @BeforeAll
    static void certificates() throws Exception {
        ca = new CertificateBuilder()
                .subject("CN=Spector test CA")
                .setIsCertificateAuthority(true)
                .ecp256()
                .buildSelfSigned();
        X509Bundle otherCa = new CertificateBuilder()
                .subject("CN=Another CA")
                .setIsCertificateAuthority(true)
                .ecp256()
                .buildSelfSigned();
        good = leaf("localhost").buildIssuedBy(ca);
        otherCaLeaf = leaf("localhost").buildIssuedBy(otherCa);
        Instant now = Instant.now();
        expired = leaf("localhost")
                .notBefore(now.minus(Duration.ofDays(2)))
                .notAfter(now.minus(Duration.ofDays(1)))
                .buildIssuedBy(ca);
        wrongName = new CertificateBuilder()
                .subject("CN=other.example")
                .addSanDnsName("other.example")
                .ecp256()
                .addExtendedKeyUsageServerAuth()
                .buildIssuedBy(ca);
        caFile = Files.writeString(dir.resolve("ca.pem"), ca.getCertificatePEM());
    }

    /** A server certificate for {@code host} and 127.0.0.1. */
    private static CertificateBuilder leaf(String host) {
        return new CertificateBuilder()
                .subject("CN=" + host)
                .addSanDnsName(host)
                .addSanIpAddress("127.0.0.1")
                .ecp256()
                .addExtendedKeyUsageServerAuth();
    }

    private TestGateway gateway(X509Bundle certificate) throws Exception {
        SslContext tls = SslContextBuilder.forServer(
                        certificate.getKeyPair().getPrivate(), certificate.getCertificatePath())
                .protocols(UplinkTls.PROTOCOLS)
                .build();
        TestGateway g = new TestGateway(group, 0, null, UplinkAcceptor.DEFAULT_IDLE_TIMEOUT, tls, (id, slot) -> null);
        closing.add(g);
        return g;
    }

    private UplinkDialer dial(URI uri) {
        return dial(uri, false);
    }

    /**
     * A dialer of {@code uri}; with {@code offerV2} one that offers v2, as {@code spector worker}
     * does, whose pipeline picks the version at the handshake's end (nothing connects through it here).
     */
    private UplinkDialer dial(URI uri, boolean offerV2) {
        UplinkDialer.Builder b = UplinkDialer.builder(uri, "w1", TestGateway.TOKEN, group)
                .caFile(caFile)
                .reconnect(Duration.ofMillis(50), Duration.ofMillis(200))
                .onAttemptFailed(failures::add);
        UplinkDialer d = (offerV2
                        ? b.onUplink(link -> new FrameChannel.Receiver() {
                            @Override
                            public void onFrame(Frame frame) {}

                            @Override
                            public void onClose(@Nullable Throwable cause) {}
                        })
                        : b.onConnected(channel -> {
                            RecordingReceiver end = RecordingReceiver.of(channel);
                            connected.add(end);
                            return end;
                        }))
                .build();
        closing.add(d);
        d.start();
        return d;
    }

    private static URI at(TestGateway g, String host) {
        return URI.create("wss://" + host + ":" + g.port() + UplinkAcceptor.PATH);
    }

    @Test
    void wss_withThePrivateCa_connectsByNameAndByAddress_andFramesCrossBothWays() throws Exception {
        TestGateway g = gateway(good);
        for (String host : List.of("localhost", "127.0.0.1")) {
            UplinkDialer d = dial(at(g, host));
            RecordingReceiver worker = take(connected, "the worker connects over TLS to " + host);
            TestGateway.Uplink uplink = g.nextUplink("the gateway accepts the uplink");
            assertThat(uplink.workerId()).isEqualTo("w1");
            assertThat(worker.webSocket().channel().pipeline().get("tls"))
                    .as("the worker's pipeline speaks TLS")
                    .isNotNull();

            worker.channel.send(new Frame.Push(7, "test.up", JsonNodeFactory.instance.objectNode()));
            uplink.channel().send(new Frame.Push(8, "test.down", JsonNodeFactory.instance.objectNode()));
            assertThat(take(uplink.received().frames, "a frame crosses up").id())
                    .isEqualTo(7);
            assertThat(take(worker.frames, "a frame crosses down").id()).isEqualTo(8);
            d.close();
        }
    }

    /** Waits for two failed attempts (the retry is part of the rule) and returns the first. */
    private Throwable twoFailures(UplinkDialer d) {
        Throwable first = take(failures, "the first attempt fails");
        take(failures, "the worker retries, and fails again");
        assertThat(d.attempts()).as("retried with backoff").isGreaterThanOrEqualTo(2);
        assertThat(d.isConnected()).as("never connected").isFalse();
        return first;
    }

    /**
     * Also for a worker that offers v2 (as {@code spector worker} does): its negotiating pipeline
     * let the TLS failure reach no handler, and the dialer said "closed before the handshake
     * completed".
     */
    @ParameterizedTest(name = "offers v2 {0}")
    @ValueSource(booleans = {false, true})
    void certificateOfAnotherCa_isRefused_withTheReason_andTheTokenIsNeverSent(boolean offerV2) throws Exception {
        TestGateway g = gateway(otherCaLeaf);
        Throwable failure = twoFailures(dial(at(g, "localhost"), offerV2));
        assertThat(failure.getMessage())
                .contains("TLS with localhost:" + g.port() + " failed, nothing was sent")
                .contains("not signed by a trusted CA")
                .contains(caFile.toString());
        assertThat(g.uplinks)
                .as("no upgrade request (and so no token) reached the gateway")
                .isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"expired", "wrong host name"})
    void certificateThatFailsItsChecks_isRefused_withTheReason(String kind) throws Exception {
        boolean isExpired = kind.equals("expired");
        TestGateway g = gateway(isExpired ? expired : wrongName);
        Throwable failure = twoFailures(dial(at(g, "localhost")));
        assertThat(failure.getMessage())
                .contains(isExpired ? "outside its validity period" : "does not name localhost");
        assertThat(g.uplinks)
                .as("no upgrade request (and so no token) reached the gateway")
                .isEmpty();
    }

    /**
     * A {@code wss://} dial to a gateway's plain port (which answers the ClientHello in HTTP) fails
     * as TLS, saying the port does not speak TLS: not as a handshake the gateway closed, which a
     * worker said before (for a worker that offers v2, as {@code spector worker} does, or not).
     */
    @ParameterizedTest(name = "offers v2 {0}")
    @ValueSource(booleans = {false, true})
    void tlsDial_toAPlainGateway_failsAsTls(boolean offerV2) throws Exception {
        TestGateway g = new TestGateway(group, 0, null);
        closing.add(g);
        Throwable failure = twoFailures(dial(at(g, "localhost"), offerV2));
        assertThat(failure.getMessage())
                .contains("TLS with localhost:" + g.port() + " failed, nothing was sent")
                .contains("the port does not speak TLS");
    }

    @Test
    void clearTextDial_toATlsOnlyGateway_failsAndRetries_neverConnects() throws Exception {
        TestGateway g = gateway(good);
        UplinkDialer d = dial(URI.create("ws://127.0.0.1:" + g.port() + UplinkAcceptor.PATH));
        twoFailures(d);
        assertThat(g.uplinks).as("the TLS gateway never decoded an upgrade").isEmpty();
    }

    @Test
    void clearTextDial_toAnAddressThatIsNotLoopback_warnsOnce_loopbackDoesNot() {
        try (LogCapture log = new LogCapture()) {
            UplinkDialer loopback = UplinkDialer.builder(
                            URI.create("ws://127.0.0.1:9" + UplinkAcceptor.PATH), "w1", "t", group)
                    .build();
            closing.add(loopback);
            loopback.start();
            assertThat(log.text()).doesNotContain("is not encrypted");

            UplinkDialer remote = UplinkDialer.builder(
                            URI.create("ws://192.0.2.1:9" + UplinkAcceptor.PATH), "w1", "t", group)
                    .connectTimeout(Duration.ofMillis(100))
                    .build();
            closing.add(remote);
            remote.start(); // 192.0.2.1: TEST-NET-1, never routed
            assertThat(log.text())
                    .contains("uplink of worker w1 to ws://192.0.2.1:9/uplink is not encrypted")
                    .contains("dial wss:// instead");
        }
    }

    @Test
    void caFileWithoutACertificate_failsTheBuild_namingTheFile() throws Exception {
        Path empty = Files.writeString(dir.resolve("empty.pem"), "not a certificate\n");
        assertThatThrownBy(() -> UplinkDialer.builder(
                                URI.create("wss://localhost:7443" + UplinkAcceptor.PATH), "w1", "t", group)
                        .caFile(empty)
                        .build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(empty.toString());
    }

    @Test
    void otherSchemes_areRefused() {
        assertThatThrownBy(() -> UplinkDialer.builder(URI.create("https://gw/uplink"), "w1", "t", group))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("wss://");
    }
}
