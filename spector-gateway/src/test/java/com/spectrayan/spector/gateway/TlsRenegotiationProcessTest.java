package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client's TLS renegotiation is refused on the JDK's provider as on BoringSSL, in a gateway
 * process started as {@code bin/spector gateway} starts it ({@code GatewayMain}: the process's
 * defaults set before any TLS class loads). Each renegotiation is a full handshake the server pays
 * for (the THC-SSL-DoS attack); nginx and Envoy refuse them. The JDK's provider serves where the
 * shipped BoringSSL does not load (off linux-x86_64) or when chosen. Regression: ten
 * renegotiations on one connection all completed.
 */
final class TlsRenegotiationProcessTest {
    @Test
    void clientRenegotiation_onTheJdkProvider_isRefused(@TempDir Path dir) throws Exception {
        TestPki ca = TestPki.authority("renegotiation");
        ca.server("gateway.test").writeTo(dir.resolve("tls.crt"), dir.resolve("tls.key"));
        Map<String, String> settings = new HashMap<>(Map.of(
                "spector.cell.role", "gateway",
                "spector.cell.ring-members", "owner-0=http://127.0.0.1:9",
                "spector.server.host", "127.0.0.1",
                "spector.routing.redis.enabled", "false",
                "spector.security.jwt.hmac-secret", Cell.SECRET));
        settings.put("spector.server.tls.certificate", dir.resolve("tls.crt").toString());
        settings.put("spector.server.tls.private-key", dir.resolve("tls.key").toString());
        settings.put("spector.server.tls.provider", "jdk");
        try (GatewayProcess g = GatewayProcess.startReplicas(1, settings, dir).get(0);
                SSLSocket s = (SSLSocket)
                        TestPki.clientTrusting(ca).getSocketFactory().createSocket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), g.tlsPort), RawClient.TIMEOUT_MS);
            s.setSoTimeout(RawClient.TIMEOUT_MS);
            s.setEnabledProtocols(new String[] {"TLSv1.2"}); // TLS 1.3 has no renegotiation at all
            s.startHandshake();
            assertThat(health(s)).as("the first handshake serves").startsWith("HTTP/1.1 200 ");

            s.getSession().invalidate();
            Throwable refused = catchThrowable(() -> {
                s.startHandshake(); // a new ClientHello on the established connection
                health(s);
            });
            assertThat(refused)
                    .as("the renegotiation, or the connection after it")
                    .isInstanceOf(IOException.class);
        }
    }

    /** Sends a health check and returns the status line, or throws when the connection failed. */
    private static String health(SSLSocket s) throws IOException {
        s.getOutputStream()
                .write("GET /actuator/health HTTP/1.1\r\nHost: gateway.test\r\n\r\n"
                        .getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
        InputStream in = s.getInputStream();
        String status = RawClient.line(in);
        int length = 0;
        for (String f = RawClient.line(in); !f.isEmpty(); f = RawClient.line(in)) {
            if (f.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                length =
                        Integer.parseInt(f.substring("content-length:".length()).strip());
            }
        }
        if (in.readNBytes(length).length != length) {
            throw new IOException("the body ended early");
        }
        return status;
    }
}
