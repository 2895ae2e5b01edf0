package com.spectrayan.spector.owner;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A raw socket HTTP/1.1 client, for what {@code java.net.http} will not send (over-long lines,
 * huge headers) or for disconnecting mid-body. Reads are bounded by {@link #READ_TIMEOUT_MS}.
 */
final class RawHttp implements AutoCloseable {
    /** Longest wait for any one read. */
    static final int READ_TIMEOUT_MS = 15_000;

    /** A response head. */
    record Head(int status, Map<String, String> headers) {
        String header(String name) {
            return headers.getOrDefault(name.toLowerCase(Locale.ROOT), "");
        }
    }

    private final Socket socket;
    private final InputStream in;

    RawHttp(InetAddress host, int port) throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress(host, port), READ_TIMEOUT_MS);
        socket.setSoTimeout(READ_TIMEOUT_MS);
        in = socket.getInputStream();
    }

    /**
     * Answers whether this socket connected to itself: a connect to a loopback port nobody listens
     * on can pick that very port as its source and open (TCP's simultaneous open). Linux picks
     * even source ports for connects and odd ones for {@code bind(0)}, so it happens only once the
     * even ones are used up, as on a busy CI run: then a dial to a closed owner's port "succeeds".
     */
    boolean connectsToItself() {
        return socket.getLocalPort() == socket.getPort()
                && socket.getLocalAddress().equals(socket.getInetAddress());
    }

    RawHttp(ReferenceOwner owner) throws IOException {
        this(InetAddress.getLoopbackAddress(), owner.port());
    }

    void write(String text) throws IOException {
        write(text.getBytes(StandardCharsets.ISO_8859_1));
    }

    void write(byte[] bytes) throws IOException {
        socket.getOutputStream().write(bytes);
        socket.getOutputStream().flush();
    }

    /** Reads a response head (status line and headers). */
    Head readHead() throws IOException {
        String status = readLine();
        String[] parts = status.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/")) {
            throw new IOException("not a status line: '" + status + "'");
        }
        Map<String, String> headers = new LinkedHashMap<>();
        for (String line = readLine(); !line.isEmpty(); line = readLine()) {
            int colon = line.indexOf(':');
            headers.put(
                    line.substring(0, colon).strip().toLowerCase(Locale.ROOT),
                    line.substring(colon + 1).strip());
        }
        return new Head(Integer.parseInt(parts[1]), headers);
    }

    /** Reads a response head, skipping interim (1xx) responses. */
    Head readFinalHead() throws IOException {
        Head head = readHead();
        while (head.status() < 200) {
            head = readHead();
        }
        return head;
    }

    /** Reads exactly {@code n} bytes. */
    byte[] readBytes(int n) throws IOException {
        return in.readNBytes(n);
    }

    /** Reads a Content-Length body after a head. */
    byte[] readBody(Head head) throws IOException {
        return readBytes(Integer.parseInt(head.header("content-length")));
    }

    /** Reads one chunk of a chunked body: its data, empty for the last chunk. */
    byte[] readChunk() throws IOException {
        int size = Integer.parseInt(readLine().strip(), 16);
        byte[] data = in.readNBytes(size);
        readLine();
        return data;
    }

    /** Answers whether the server has closed the connection: EOF or a reset, within the read timeout. */
    boolean readsEof() throws IOException {
        try {
            return in.read() < 0;
        } catch (java.net.SocketException e) {
            return true; // closed with our unread bytes in its buffer: a reset
        }
    }

    /** Reads and drops whatever the server still sends; answers whether the connection then ends. */
    boolean drainsToEof() throws IOException {
        byte[] buffer = new byte[8192];
        try {
            while (in.read(buffer) >= 0) {
                // dropped
            }
            return true;
        } catch (java.net.SocketException e) {
            return true; // a reset also ends it
        }
    }

    private String readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) >= 0) {
            if (b == '\n') {
                break;
            }
            if (b != '\r') {
                line.write(b);
            }
        }
        if (b < 0 && line.size() == 0) {
            throw new IOException("connection closed");
        }
        return line.toString(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
