package com.spectrayan.spector.gateway.config;

import com.nimbusds.jose.jwk.Curve;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.cert.CertificateFactory;
import java.security.interfaces.ECPublicKey;
import java.security.interfaces.RSAPublicKey;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Reads the public key of {@code spector.security.jwt.public-key-location}: a PEM {@code PUBLIC
 * KEY} block (X.509 SubjectPublicKeyInfo) or a {@code CERTIFICATE} block, holding an RSA key of at
 * least {@link #MIN_RSA_BITS} bits or an EC key on P-256, P-384 or P-521. JDK only, no Bouncy
 * Castle.
 */
final class PemKeys {
    /** Bytes of a PEM file read at most; a public key or a certificate is far smaller. */
    static final long MAX_PEM_BYTES = 64 * 1024;

    /** The smallest RSA modulus accepted, in bits (RFC 7518 section 3.3). */
    static final int MIN_RSA_BITS = 2048;

    /** The EC curves of ES256, ES384 and ES512. */
    static final Set<Curve> EC_CURVES = Set.of(Curve.P_256, Curve.P_384, Curve.P_521);

    private static final String PUBLIC_KEY = "PUBLIC KEY";
    private static final String CERTIFICATE = "CERTIFICATE";

    private PemKeys() {}

    /**
     * Reads the key.
     *
     * @throws IOException when the file cannot be read
     * @throws IllegalArgumentException naming what was expected when the content is not such a key
     */
    static PublicKey read(Path file) throws IOException {
        long size = Files.size(file);
        if (size > MAX_PEM_BYTES) {
            throw new IllegalArgumentException("a PEM file of at most " + MAX_PEM_BYTES + " bytes, found " + size);
        }
        String pem = Files.readString(file, StandardCharsets.US_ASCII);
        PublicKey key;
        try {
            byte[] der = block(pem, PUBLIC_KEY);
            if (der != null) {
                key = fromSubjectPublicKeyInfo(der);
            } else {
                byte[] cert = block(pem, CERTIFICATE);
                if (cert == null) {
                    throw new IllegalArgumentException("a PEM '-----BEGIN PUBLIC KEY-----' or "
                            + "'-----BEGIN CERTIFICATE-----' block, found neither");
                }
                key = CertificateFactory.getInstance("X.509")
                        .generateCertificate(new ByteArrayInputStream(cert))
                        .getPublicKey();
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("a PEM RSA or EC public key or certificate: " + e.getMessage(), e);
        }
        return check(key);
    }

    private static byte @Nullable [] block(String pem, String label) {
        String begin = "-----BEGIN " + label + "-----";
        String end = "-----END " + label + "-----";
        int from = pem.indexOf(begin);
        if (from < 0) {
            return null;
        }
        int to = pem.indexOf(end, from + begin.length());
        if (to < 0) {
            throw new IllegalArgumentException("a PEM block closed by '" + end + "', found none");
        }
        try {
            return Base64.getMimeDecoder().decode(pem.substring(from + begin.length(), to));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("base64 inside the PEM " + label + " block: " + e.getMessage(), e);
        }
    }

    private static PublicKey fromSubjectPublicKeyInfo(byte[] der) throws GeneralSecurityException {
        X509EncodedKeySpec spec = new X509EncodedKeySpec(der);
        try {
            return KeyFactory.getInstance("RSA").generatePublic(spec);
        } catch (GeneralSecurityException notRsa) {
            return KeyFactory.getInstance("EC").generatePublic(spec);
        }
    }

    /** Returns the key when it is RSA of at least {@link #MIN_RSA_BITS} bits or EC on a JWS curve; else names what was expected. */
    static PublicKey check(PublicKey key) {
        if (key instanceof RSAPublicKey rsa) {
            int bits = rsa.getModulus().bitLength();
            if (bits < MIN_RSA_BITS) {
                throw new IllegalArgumentException(
                        "an RSA key of at least " + MIN_RSA_BITS + " bits, found " + bits + " bits");
            }
            return key;
        }
        if (key instanceof ECPublicKey ec) {
            Curve curve = Curve.forECParameterSpec(ec.getParams());
            if (curve == null || !EC_CURVES.contains(curve)) {
                throw new IllegalArgumentException("an EC key on P-256, P-384 or P-521, found "
                        + (curve == null ? "another curve" : curve.getName()));
            }
            return key;
        }
        throw new IllegalArgumentException("an RSA or EC key, found " + key.getAlgorithm());
    }
}
