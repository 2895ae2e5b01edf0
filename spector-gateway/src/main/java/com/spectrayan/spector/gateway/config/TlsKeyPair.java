package com.spectrayan.spector.gateway.config;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.gateway.config.TlsFileException.Part;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A server certificate chain and its private key, read from the PEM files of {@code
 * spector.server.tls.certificate} and {@code spector.server.tls.private-key}, checked as a pair.
 * JDK only, no Bouncy Castle.
 *
 * <ul>
 *   <li>The certificate file holds one or more {@code CERTIFICATE} blocks: the server's first,
 *       then each one's issuer (intermediates; the root may follow or not). Other blocks and text
 *       around them are ignored.
 *   <li>The key file holds one unencrypted PKCS#8 {@code PRIVATE KEY} block; a PKCS#1 {@code RSA
 *       PRIVATE KEY} or SEC1 {@code EC PRIVATE KEY} is refused with the command that converts it.
 *   <li>The server's key is RSA of at least {@value PemKeys#MIN_RSA_BITS} bits or EC on P-256,
 *       P-384 or P-521: what both TLS providers (JDK and OpenSSL) serve.
 *   <li>The private key must be the certificate's: a signature made with it must verify with the
 *       certificate's public key.
 * </ul>
 *
 * <p>Keeps the bytes it was read from, so that a reload can tell whether the files changed ({@link
 * #readFrom}). {@link #toString()} shows the certificate, never the key. Thread-safe: immutable.
 */
public final class TlsKeyPair {
    /** Bytes of one TLS PEM file read at most: a chain of a few certificates is a few KiB. */
    public static final int MAX_FILE_BYTES = 256 * 1024;

    /** Certificates in one chain at most: a server chain is the leaf, one or two intermediates, perhaps a root. */
    static final int MAX_CHAIN_CERTIFICATES = 10;

    private static final Pattern BEGIN = Pattern.compile("-----BEGIN ([A-Z0-9 ]{1,64})-----");
    private static final String CERTIFICATE = "CERTIFICATE";
    private static final String PRIVATE_KEY = "PRIVATE KEY";
    private static final String CONVERT = "openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8";
    private static final SecureRandom RANDOM = new SecureRandom();

    private final List<X509Certificate> chain;
    private final PrivateKey privateKey;
    private final byte[] certificatePem;
    private final byte[] privateKeyPem;

    private TlsKeyPair(
            List<X509Certificate> chain, PrivateKey privateKey, byte[] certificatePem, byte[] privateKeyPem) {
        this.chain = List.copyOf(chain);
        this.privateKey = privateKey;
        this.certificatePem = certificatePem;
        this.privateKeyPem = privateKeyPem;
    }

    /**
     * Reads both files and checks the pair.
     *
     * @throws TlsFileException naming the file refused and what it should hold
     */
    public static TlsKeyPair read(Path certificate, Path privateKey) throws TlsFileException {
        byte[] cert = readFile(certificate, Part.CERTIFICATE);
        byte[] key = readFile(privateKey, Part.PRIVATE_KEY);
        return parse(cert, key);
    }

    /**
     * Reads one file whole, at most {@link #MAX_FILE_BYTES}.
     *
     * @throws TlsFileException when it cannot be read or is larger
     */
    public static byte[] readFile(Path file, Part part) throws TlsFileException {
        requireNonNull(file, "file");
        requireNonNull(part, "part");
        if (Files.exists(file) && !Files.isRegularFile(file)) {
            // A FIFO's open blocks until a writer comes, and the reload thread with it, for good
            // (the third review); a directory or a device is no PEM file either.
            throw TlsFileException.of(part, "a regular PEM file (not a directory, FIFO or device)");
        }
        try (InputStream in = Files.newInputStream(file)) {
            byte[] bytes = in.readNBytes(MAX_FILE_BYTES + 1);
            if (bytes.length > MAX_FILE_BYTES) {
                throw TlsFileException.of(part, "a PEM file of at most " + MAX_FILE_BYTES + " bytes");
            }
            return bytes;
        } catch (IOException e) {
            throw TlsFileException.of(
                    part, "a readable PEM file (" + e.getClass().getSimpleName() + ")");
        }
    }

    /**
     * Parses the two files' bytes and checks the pair.
     *
     * @throws TlsFileException naming the file refused and what it should hold
     */
    public static TlsKeyPair parse(byte[] certificatePem, byte[] privateKeyPem) throws TlsFileException {
        requireNonNull(certificatePem, "certificatePem");
        requireNonNull(privateKeyPem, "privateKeyPem");
        List<X509Certificate> chain = chain(new String(certificatePem, StandardCharsets.US_ASCII));
        X509Certificate leaf = chain.get(0);
        try {
            PemKeys.check(leaf.getPublicKey());
        } catch (IllegalArgumentException e) {
            throw TlsFileException.certificate("a server certificate with " + e.getMessage());
        }
        PrivateKey key = privateKey(new String(privateKeyPem, StandardCharsets.US_ASCII), leaf);
        if (!signsFor(key, leaf.getPublicKey())) {
            throw TlsFileException.privateKey("the private key of the certificate " + describe(leaf)
                    + "; this key belongs to another certificate");
        }
        return new TlsKeyPair(chain, key, certificatePem.clone(), privateKeyPem.clone());
    }

    /** Returns the chain, the server's certificate first. */
    public List<X509Certificate> chain() {
        return chain;
    }

    /** Returns the server's certificate. */
    public X509Certificate leaf() {
        return chain.get(0);
    }

    /** Returns the private key of {@link #leaf()}; a secret, never log it. */
    public PrivateKey privateKey() {
        return privateKey;
    }

    /** Answers whether this pair was parsed from exactly these bytes: the files did not change. */
    public boolean readFrom(byte[] certificatePem, byte[] privateKeyPem) {
        return Arrays.equals(this.certificatePem, certificatePem) && Arrays.equals(this.privateKeyPem, privateKeyPem);
    }

    /**
     * Answers whether every certificate of the chain is valid at {@code now}, by its notBefore and
     * notAfter: a client refuses an expired intermediate as it refuses an expired leaf.
     */
    public boolean validAt(Instant now) {
        for (X509Certificate c : chain) {
            if (now.isBefore(c.getNotBefore().toInstant())
                    || now.isAfter(c.getNotAfter().toInstant())) {
                return false;
            }
        }
        return true;
    }

    /** Returns when the chain stops being valid: the earliest notAfter of its certificates. */
    public Instant notAfter() {
        Instant first = leaf().getNotAfter().toInstant();
        for (X509Certificate c : chain) {
            Instant t = c.getNotAfter().toInstant();
            if (t.isBefore(first)) {
                first = t;
            }
        }
        return first;
    }

    /** Describes the server's certificate: subject, serial and validity, for a log line. */
    public String describe() {
        return describe(leaf());
    }

    @Override
    public String toString() {
        return "TlsKeyPair[" + describe() + ", " + chain.size() + " certificates]";
    }

    static String describe(X509Certificate c) {
        return "'" + c.getSubjectX500Principal().getName() + "' (serial "
                + c.getSerialNumber().toString(16) + ", valid "
                + c.getNotBefore().toInstant() + " to " + c.getNotAfter().toInstant() + ")";
    }

    private static List<X509Certificate> chain(String pem) throws TlsFileException {
        List<byte[]> ders = blocks(pem, CERTIFICATE, Part.CERTIFICATE);
        if (ders.isEmpty()) {
            throw TlsFileException.certificate(
                    "one or more PEM '-----BEGIN CERTIFICATE-----' blocks, the server's first; found " + found(pem));
        }
        if (ders.size() > MAX_CHAIN_CERTIFICATES) {
            throw TlsFileException.certificate(
                    "at most " + MAX_CHAIN_CERTIFICATES + " certificates, found " + ders.size());
        }
        List<X509Certificate> chain = new ArrayList<>();
        try {
            CertificateFactory factory = CertificateFactory.getInstance("X.509");
            for (byte[] der : ders) {
                chain.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(der)));
            }
        } catch (GeneralSecurityException | ClassCastException e) {
            throw TlsFileException.certificate("X.509 certificates in the CERTIFICATE blocks ("
                    + e.getClass().getSimpleName() + ")");
        }
        for (int i = 0; i + 1 < chain.size(); i++) {
            if (!chain.get(i).getIssuerX500Principal().equals(chain.get(i + 1).getSubjectX500Principal())) {
                throw TlsFileException.certificate("the chain in order, the server's certificate first and each "
                        + "followed by its issuer; certificate " + (i + 1) + " of " + chain.size()
                        + " was issued by '"
                        + chain.get(i).getIssuerX500Principal().getName()
                        + "', not by the next one's subject");
            }
        }
        return chain;
    }

    private static PrivateKey privateKey(String pem, X509Certificate leaf) throws TlsFileException {
        List<byte[]> ders = blocks(pem, PRIVATE_KEY, Part.PRIVATE_KEY);
        if (ders.size() != 1) {
            String found = found(pem);
            String hint = found.contains("'RSA PRIVATE KEY'") || found.contains("'EC PRIVATE KEY'")
                    ? " (a PKCS#1 or SEC1 key: convert it with '" + CONVERT + "')"
                    : found.contains("'ENCRYPTED PRIVATE KEY'")
                            ? " (an encrypted key: the gateway takes no password)"
                            : "";
            throw TlsFileException.privateKey(
                    "one unencrypted PKCS#8 '-----BEGIN PRIVATE KEY-----' block; found " + found + hint);
        }
        String algorithm = leaf.getPublicKey().getAlgorithm();
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(ders.get(0));
        try {
            return KeyFactory.getInstance(algorithm).generatePrivate(spec);
        } catch (GeneralSecurityException e) {
            String other = algorithm.equals("RSA") ? "EC" : "RSA";
            try {
                KeyFactory.getInstance(other).generatePrivate(spec);
                throw TlsFileException.privateKey("an " + algorithm + " key like the certificate's, found an " + other
                        + " key: it belongs to another certificate");
            } catch (GeneralSecurityException neither) {
                throw TlsFileException.privateKey("a PKCS#8 " + algorithm + " key in the PRIVATE KEY block ("
                        + e.getClass().getSimpleName() + ")");
            }
        }
    }

    /** Signs a random challenge with the key and verifies it with the certificate's public key. */
    private static boolean signsFor(PrivateKey key, PublicKey certificateKey) throws TlsFileException {
        String algorithm = certificateKey.getAlgorithm().equals("RSA") ? "SHA256withRSA" : "SHA256withECDSA";
        byte[] challenge = new byte[32];
        RANDOM.nextBytes(challenge);
        try {
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(challenge);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(certificateKey);
            verifier.update(challenge);
            return verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            throw TlsFileException.privateKey(
                    "a key that can sign for the certificate (" + e.getClass().getSimpleName() + ")");
        }
    }

    /** Returns the DER of every block of {@code label}; a block with no end is refused (a half-written file). */
    private static List<byte[]> blocks(String pem, String label, Part part) throws TlsFileException {
        List<byte[]> ders = new ArrayList<>();
        Matcher m = BEGIN.matcher(pem);
        int from = 0;
        while (m.find(from)) {
            String end = "-----END " + m.group(1) + "-----";
            int to = pem.indexOf(end, m.end());
            if (to < 0) {
                throw TlsFileException.of(
                        part, "a PEM block closed by '" + end + "', found none (a file still being written?)");
            }
            if (m.group(1).equals(label)) {
                try {
                    ders.add(Base64.getMimeDecoder().decode(pem.substring(m.end(), to)));
                } catch (IllegalArgumentException e) {
                    throw TlsFileException.of(part, "base64 inside the PEM " + label + " block: " + e.getMessage());
                }
            }
            from = to + end.length();
        }
        return ders;
    }

    /** Names the PEM blocks of a file, for an expectation: {@code 'RSA PRIVATE KEY'}, or {@code no PEM block}. */
    private static String found(String pem) {
        List<String> labels = new ArrayList<>();
        Matcher m = BEGIN.matcher(pem);
        while (m.find() && labels.size() < 4) {
            labels.add("'" + m.group(1) + "'");
        }
        return labels.isEmpty() ? "no PEM block" : String.join(", ", labels);
    }
}
