package com.spectrayan.spector.uplink.transport;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import java.nio.file.Path;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;
import org.jspecify.annotations.Nullable;

/**
 * The worker's client TLS for a {@code wss://} uplink: TLS 1.3 and 1.2 only, the HTTPS host name
 * check (RFC 6125), and trust in the CA file's certificates only when one is given, else in the
 * JDK's trust store. Netty picks OpenSSL when netty-tcnative loads, else the JDK. Also says, of a
 * failed handshake, which check failed, for the worker's log line.
 */
final class UplinkTls {
    /** The TLS versions a {@code wss://} dial offers. */
    static final String[] PROTOCOLS = {"TLSv1.3", "TLSv1.2"};

    private final SslContext context;

    private UplinkTls(SslContext context) {
        this.context = context;
    }

    /**
     * Builds the client TLS, trusting only {@code caFile}'s certificates when given.
     *
     * @throws IllegalArgumentException naming the file when it holds no PEM certificate
     */
    static UplinkTls of(@Nullable Path caFile) {
        SslContextBuilder b =
                SslContextBuilder.forClient().protocols(PROTOCOLS).endpointIdentificationAlgorithm("HTTPS");
        if (caFile != null) {
            try {
                b.trustManager(caFile.toFile());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        "the CA file " + caFile + " holds no PEM certificate: " + e.getMessage(), e);
            }
        }
        try {
            return new UplinkTls(b.build());
        } catch (SSLException e) {
            throw new IllegalArgumentException(
                    "cannot build the uplink's TLS" + (caFile == null ? "" : " with the CA file " + caFile) + ": "
                            + e.getMessage(),
                    e);
        }
    }

    /** A handler for one dial: SNI and the host name check use {@code host}. */
    SslHandler newHandler(ByteBufAllocator alloc, String host, int port, Duration handshakeTimeout) {
        SslHandler handler = context.newHandler(alloc, host, port);
        handler.setHandshakeTimeout(handshakeTimeout.toMillis(), TimeUnit.MILLISECONDS);
        return handler;
    }

    /** Says which check a handshake failed: the CA, the validity period or the host name. */
    static String reason(SSLException failure, String host, @Nullable Path caFile) {
        for (Throwable c = failure; c != null; c = c.getCause()) {
            if (c instanceof CertificateExpiredException || c instanceof CertificateNotYetValidException) {
                return "the gateway's certificate is outside its validity period (" + c.getMessage() + ")";
            }
            if (c instanceof CertPathBuilderException) {
                return "the gateway's certificate is not signed by a trusted CA ("
                        + (caFile == null ? "the JDK's trust store" : "the CA file " + caFile) + ")";
            }
            if (c instanceof CertificateException
                    && String.valueOf(c.getMessage()).contains("No subject alternative")) {
                return "the gateway's certificate does not name " + host + " (" + c.getMessage() + ")";
            }
            if (c instanceof NotSslRecordException) {
                // the answer to the ClientHello is no TLS record: a plain HTTP port answers "HTTP/1.1 400"
                return "the port does not speak TLS: its answer is no TLS record (a plain HTTP port? dial ws://,"
                        + " or the gateway's TLS port)";
            }
        }
        return rootMessage(failure);
    }

    /** The deepest message of a failure. */
    private static String rootMessage(Throwable t) {
        String message = t.getMessage();
        for (Throwable c = t.getCause(); c != null; c = c.getCause()) {
            if (c.getMessage() != null) {
                message = c.getMessage();
            }
        }
        return message == null ? t.getClass().getSimpleName() : message;
    }
}
