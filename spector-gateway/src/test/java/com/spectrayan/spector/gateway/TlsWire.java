package com.spectrayan.spector.gateway;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSocket;
import org.jspecify.annotations.Nullable;

/**
 * TLS from the client's side for the listener tests: JDK {@link SSLSocket}s that verify the
 * gateway's certificate and host name ({@code 127.0.0.1}, RFC 6125) against a test CA, and raw
 * ClientHello bytes for what the JDK client refuses to send (TLS 1.0 and 1.1, RFC 8996).
 *
 * <pre>
 *  record (RFC 8446 §5.1):    type(1) legacy_version(2) length(2) fragment
 *  ClientHello (RFC 5246 §7.4.1.2): 0x01 length(3) client_version(2) random(32)
 *                             session_id(1+0) cipher_suites(2+n) compression(1+1: null)
 *                             extensions(2+n): supported_groups, ec_point_formats,
 *                             signature_algorithms, renegotiation_info
 *  reply: ServerHello  = record 0x16, fragment[0] 0x02, fragment[4..5] server_version
 *         alert        = record 0x15, fragment [level, description]; protocol_version is 70
 * </pre>
 */
final class TlsWire {
    /** The bound of every connect, handshake and read. */
    static final Duration TIMEOUT = Duration.ofSeconds(10);

    static final int HANDSHAKE = 0x16;
    static final int ALERT = 0x15;
    static final int SERVER_HELLO = 0x02;
    static final int FATAL = 2;
    static final int PROTOCOL_VERSION = 70;

    static final int TLS_1_0 = 0x0301;
    static final int TLS_1_1 = 0x0302;
    static final int TLS_1_2 = 0x0303;

    private static final SecureRandom RANDOM = new SecureRandom();

    /** One TLS record as read off the wire. */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record TlsRecord(int type, int version, byte[] fragment) {}

    private TlsWire() {}

    /**
     * Connects to {@code 127.0.0.1:port} and completes a handshake that verifies the certificate
     * and the host name, offering {@code protocols} and ALPN {@code alpn} (none when empty).
     *
     * @throws IOException when the handshake fails
     */
    static SSLSocket handshake(int port, SSLContext client, List<String> protocols, List<String> alpn)
            throws IOException {
        Socket plain = connect(port);
        SSLSocket tls = (SSLSocket) client.getSocketFactory().createSocket(plain, "127.0.0.1", port, true);
        tls.setSoTimeout((int) TIMEOUT.toMillis());
        SSLParameters p = tls.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS"); // the host name is checked, as curl and browsers do
        p.setProtocols(protocols.toArray(String[]::new));
        if (!alpn.isEmpty()) {
            p.setApplicationProtocols(alpn.toArray(String[]::new));
        }
        tls.setSSLParameters(p);
        try {
            tls.startHandshake();
        } catch (IOException e) {
            tls.close();
            throw e;
        }
        return tls;
    }

    /** Completes a TLS 1.3-or-1.2 handshake offering ALPN {@code http/1.1}. */
    static SSLSocket handshake(int port, SSLContext client) throws IOException {
        return handshake(port, client, List.of("TLSv1.3", "TLSv1.2"), List.of("http/1.1"));
    }

    /** Returns the server certificate a handshake presented. */
    static X509Certificate peer(SSLSocket socket) {
        try {
            return (X509Certificate) socket.getSession().getPeerCertificates()[0];
        } catch (SSLPeerUnverifiedException e) {
            throw new AssertionError("no peer certificate", e);
        }
    }

    /** Returns the server certificate a new handshake presents, or null when the handshake fails. */
    static @Nullable X509Certificate presented(int port, SSLContext client) {
        try (SSLSocket s = handshake(port, client)) {
            return peer(s);
        } catch (IOException e) {
            return null;
        }
    }

    /** Connects a plain TCP socket to {@code 127.0.0.1:port}, reads bounded by {@link #TIMEOUT}. */
    static Socket connect(int port) {
        try {
            Socket s = new Socket();
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) TIMEOUT.toMillis());
            s.setSoTimeout((int) TIMEOUT.toMillis());
            return s;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns a ClientHello record offering only {@code version} (no supported_versions extension). */
    static byte[] clientHello(int version) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        u16(body, version);
        byte[] random = new byte[32];
        RANDOM.nextBytes(random);
        body.writeBytes(random);
        body.write(0); // no session id
        int[] suites = {0xc02b, 0xc02f, 0xc02c, 0xc030, 0xc009, 0xc013, 0xc00a, 0xc014, 0x009c, 0x002f, 0x0035};
        u16(body, suites.length * 2);
        for (int s : suites) {
            u16(body, s);
        }
        body.write(1);
        body.write(0); // the null compression method
        ByteArrayOutputStream ext = new ByteArrayOutputStream();
        extension(ext, 0x000a, 0x001d, 0x0017, 0x0018); // supported_groups: x25519, P-256, P-384
        u16(ext, 0x000b);
        u16(ext, 2);
        ext.write(1);
        ext.write(0); // ec_point_formats: uncompressed
        extension(ext, 0x000d, 0x0403, 0x0503, 0x0804, 0x0805, 0x0401, 0x0501, 0x0201, 0x0203);
        u16(ext, 0xff01);
        u16(ext, 1);
        ext.write(0); // renegotiation_info, empty (RFC 5746)
        u16(body, ext.size());
        body.writeBytes(ext.toByteArray());
        ByteArrayOutputStream record = new ByteArrayOutputStream();
        record.write(HANDSHAKE);
        u16(record, TLS_1_0); // the record version a client sends first
        u16(record, body.size() + 4);
        record.write(0x01); // client_hello
        record.write(0);
        u16(record, body.size());
        record.writeBytes(body.toByteArray());
        return record.toByteArray();
    }

    /** Reads one record; fails when the server closed (or reset) before a whole one. */
    static TlsRecord readRecord(Socket s) throws IOException {
        DataInputStream in = new DataInputStream(s.getInputStream());
        try {
            int type = in.readUnsignedByte();
            int version = in.readUnsignedShort();
            byte[] fragment = new byte[in.readUnsignedShort()];
            in.readFully(fragment);
            return new TlsRecord(type, version, fragment);
        } catch (EOFException | SocketException e) {
            throw new AssertionError("the server closed before a whole TLS record", e);
        }
    }

    /** Waits (bounded by the read timeout) for the server to close, skipping what it still sends. */
    static boolean closedByServer(Socket s) throws IOException {
        byte[] skip = new byte[4096];
        try {
            while (s.getInputStream().read(skip) >= 0) {
                // an alert, or a close_notify: skipped
            }
            return true;
        } catch (SocketException e) {
            return true; // reset
        }
    }

    private static void extension(ByteArrayOutputStream out, int type, int... values) {
        u16(out, type);
        u16(out, values.length * 2 + 2);
        u16(out, values.length * 2);
        for (int v : values) {
            u16(out, v);
        }
    }

    private static void u16(ByteArrayOutputStream out, int v) {
        out.write((v >>> 8) & 0xff);
        out.write(v & 0xff);
    }

    /**
     * A TCP socket that records the bytes its reader takes, as they came: under an {@link
     * SSLSocket} layered on it, the server's TLS records on the wire ({@link #lastRecordType}).
     */
    static final class Tapped extends Socket {
        private final ByteArrayOutputStream wire = new ByteArrayOutputStream();

        /** Connects to {@code 127.0.0.1:port}, bounded by {@link #TIMEOUT}. */
        static Tapped connect(int port) throws IOException {
            Tapped t = new Tapped();
            t.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) TIMEOUT.toMillis());
            return t;
        }

        @Override
        public java.io.InputStream getInputStream() throws IOException {
            java.io.InputStream in = super.getInputStream();
            return new java.io.FilterInputStream(in) {
                @Override
                public int read() throws IOException {
                    int b = super.read();
                    if (b >= 0) {
                        record(new byte[] {(byte) b}, 0, 1);
                    }
                    return b;
                }

                @Override
                public int read(byte[] buf, int off, int len) throws IOException {
                    int n = super.read(buf, off, len);
                    if (n > 0) {
                        record(buf, off, n);
                    }
                    return n;
                }
            };
        }

        private synchronized void record(byte[] buf, int off, int len) {
            wire.write(buf, off, len);
        }

        /** The content type of the last whole record read ({@link #ALERT} for a close_notify in TLS 1.2), or -1. */
        synchronized int lastRecordType() {
            byte[] raw = wire.toByteArray();
            int last = -1;
            for (int i = 0; i + 5 <= raw.length; i += 5 + ((raw[i + 3] & 0xff) << 8 | (raw[i + 4] & 0xff))) {
                last = raw[i] & 0xff;
            }
            return last;
        }
    }
}
