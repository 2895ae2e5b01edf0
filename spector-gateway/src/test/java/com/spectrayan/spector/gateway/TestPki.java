package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.pkitesting.CertificateBuilder;
import io.netty.pkitesting.X509Bundle;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A private certificate authority made at test time (Netty's {@code netty-pkitesting}): a root, an
 * intermediate, and server certificates for {@code 127.0.0.1} and {@code localhost} issued by the
 * intermediate. No key is ever committed: each run makes its own.
 *
 * <p>Public because the settings tests in {@code ...gateway.config} use it too.
 */
public final class TestPki {
    /** What server certificates are valid for, from an hour ago. */
    private static final long VALID_DAYS = 30;

    private final String name;
    private final X509Bundle root;
    private final X509Bundle intermediate;

    private TestPki(String name, X509Bundle root, X509Bundle intermediate) {
        this.name = name;
        this.root = root;
        this.intermediate = intermediate;
    }

    /** Makes a new authority: a self-signed root and an intermediate it signed. */
    public static TestPki authority(String name) {
        requireNonNull(name, "name");
        try {
            Instant from = Instant.now().minus(1, ChronoUnit.HOURS);
            X509Bundle root = authority(name + " Root CA", from, 365).buildSelfSigned();
            X509Bundle intermediate =
                    authority(name + " Intermediate CA", from, 180).buildIssuedBy(root);
            return new TestPki(name, root, intermediate);
        } catch (Exception e) {
            throw new IllegalStateException("test CA " + name, e);
        }
    }

    private static CertificateBuilder authority(String commonName, Instant from, long days) {
        return new CertificateBuilder()
                .subject("CN=" + commonName + ", O=Spector Tests")
                .notBefore(from)
                .notAfter(from.plus(days, ChronoUnit.DAYS))
                .setIsCertificateAuthority(true)
                .ecp256();
    }

    /** A server certificate with its key, as the gateway's two files hold them. */
    public record Issued(X509Certificate certificate, String chainPem, String keyPem) {
        /** Writes the chain (server first, then the intermediate) and the PKCS#8 key. */
        public void writeTo(Path certificateFile, Path keyFile) {
            try {
                Files.writeString(certificateFile, chainPem, StandardCharsets.US_ASCII);
                Files.writeString(keyFile, keyPem, StandardCharsets.US_ASCII);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** Issues an EC P-256 server certificate for {@code 127.0.0.1} and {@code localhost}. */
    public Issued server(String commonName) {
        return server(commonName, false, Instant.now().minus(1, ChronoUnit.HOURS));
    }

    /** Issues an RSA 2048 server certificate for {@code 127.0.0.1} and {@code localhost}. */
    public Issued rsaServer(String commonName) {
        return server(commonName, true, Instant.now().minus(1, ChronoUnit.HOURS));
    }

    /** Issues a server certificate valid from {@code from} (one not valid yet, when ahead of now). */
    public Issued serverValidFrom(String commonName, Instant from) {
        return server(commonName, false, from);
    }

    /** Issues a server certificate that expired a day ago. */
    public Issued expiredServer(String commonName) {
        return server(commonName, false, Instant.now().minus(VALID_DAYS + 1, ChronoUnit.DAYS));
    }

    private Issued server(String commonName, boolean rsa, Instant from) {
        try {
            CertificateBuilder b = new CertificateBuilder()
                    .subject("CN=" + commonName + ", O=Spector Tests")
                    .notBefore(from)
                    .notAfter(from.plus(VALID_DAYS, ChronoUnit.DAYS))
                    .addSanIpAddress("127.0.0.1")
                    .addSanDnsName("localhost")
                    .addExtendedKeyUsageServerAuth();
            X509Bundle leaf = (rsa ? b.rsa2048() : b.ecp256()).buildIssuedBy(intermediate);
            String chain = pem(leaf.getCertificate()) + pem(intermediate.getCertificate());
            return new Issued(leaf.getCertificate(), chain, leaf.getPrivateKeyPEM());
        } catch (Exception e) {
            throw new IllegalStateException("server certificate " + commonName + " of " + name, e);
        }
    }

    /** Returns the root's certificate in PEM, for a client's trust store ({@code curl --cacert}). */
    public String rootPem() {
        return root.getRootCertificatePEM();
    }

    /** Returns the root certificate. */
    public X509Certificate root() {
        return root.getCertificate();
    }

    /** Returns the intermediate's certificate in PEM. */
    public String intermediatePem() {
        try {
            return pem(intermediate.getCertificate());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Returns a client TLS context that trusts the roots of {@code authorities} and nothing else. */
    public static SSLContext clientTrusting(TestPki... authorities) {
        try {
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            for (TestPki a : authorities) {
                store.setCertificateEntry(a.name, a.root());
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String pem(X509Certificate c) throws GeneralSecurityException {
        String base64 = java.util.Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(c.getEncoded());
        return "-----BEGIN CERTIFICATE-----\n" + base64 + "\n-----END CERTIFICATE-----\n";
    }
}
