package com.spectrayan.spector.gateway.config;

import static java.util.Objects.requireNonNull;

/**
 * A TLS certificate or private-key file was refused: unreadable, too large, not the PEM expected,
 * or a key that is not the certificate's. {@link #part()} says which of the two files, {@link
 * #expected()} what it should have held, in the words of a settings problem ({@code key: value
 * (expected: ...)}).
 *
 * <p>At start it becomes a problem of {@code spector.server.tls.certificate} or {@code
 * spector.server.tls.private-key}; on a reload, a WARN naming the file, the pair in use kept.
 * Expected on a reload that meets a file being rewritten, so it carries no stack trace.
 */
public final class TlsFileException extends Exception {
    private static final long serialVersionUID = 1L;

    /** Which of the two files was refused. */
    public enum Part {
        /** {@code spector.server.tls.certificate}: the certificate chain, the server's first. */
        CERTIFICATE,
        /** {@code spector.server.tls.private-key}: the certificate's PKCS#8 private key. */
        PRIVATE_KEY
    }

    private final Part part;
    private final String expected;

    private TlsFileException(Part part, String expected) {
        super(part + ": expected " + expected, null, false, false);
        this.part = part;
        this.expected = expected;
    }

    static TlsFileException certificate(String expected) {
        return new TlsFileException(Part.CERTIFICATE, requireNonNull(expected, "expected"));
    }

    static TlsFileException privateKey(String expected) {
        return new TlsFileException(Part.PRIVATE_KEY, requireNonNull(expected, "expected"));
    }

    static TlsFileException of(Part part, String expected) {
        return new TlsFileException(requireNonNull(part, "part"), requireNonNull(expected, "expected"));
    }

    /** Returns which file was refused. */
    public Part part() {
        return part;
    }

    /** Returns what the file should have held, e.g. {@code a PEM block closed by '-----END CERTIFICATE-----'}. */
    public String expected() {
        return expected;
    }
}
