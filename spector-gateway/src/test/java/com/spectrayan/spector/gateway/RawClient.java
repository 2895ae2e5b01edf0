package com.spectrayan.spector.gateway;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A raw HTTP/1.1 client over a socket, for what {@code java.net.http} will not send (hop-by-hop
 * headers, a lying Content-Length, an abort mid-body). Every read is bounded by {@link #TIMEOUT_MS}.
 */
final class RawClient implements AutoCloseable {
    static final int TIMEOUT_MS = 20_000;

    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Response(int status, Map<String, String> headers, byte[] body) {
        String header(String name) {
            return headers.getOrDefault(name.toLowerCase(Locale.ROOT), "");
        }

        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    RawClient(int port) throws IOException {
        this(InetAddress.getLoopbackAddress(), port);
    }

    /** A connection to {@code host} (e.g. {@code ::1} for a gateway listening there). */
    RawClient(InetAddress host, int port) throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress(host, port), TIMEOUT_MS);
        socket.setSoTimeout(TIMEOUT_MS);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    /** Sends {@code head} on a connection of its own to {@code port} and returns the one answer. */
    static Response exchange(int port, String head) throws IOException {
        try (RawClient c = new RawClient(port)) {
            return c.send(head).read();
        }
    }

    /** Returns the connection's local port: the gateway's remote port for it. */
    int localPort() {
        return socket.getLocalPort();
    }

    /** Bounds each later read by {@code millis} instead of {@link #TIMEOUT_MS}. */
    void setTimeoutMillis(int millis) throws IOException {
        socket.setSoTimeout(millis);
    }

    /** Sends each write at once (no Nagle's coalescing): a client that trickles its bytes. */
    RawClient noDelay() throws IOException {
        socket.setTcpNoDelay(true);
        return this;
    }

    RawClient send(String head) throws IOException {
        out.write(head.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        return this;
    }

    RawClient send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
        return this;
    }

    /** Reads a whole response: head, then a Content-Length or chunked body (no body otherwise). */
    Response read() throws IOException {
        Response head = readHead();
        return new Response(head.status(), head.headers(), readBody(head));
    }

    /** Reads a final response's head (any 1xx before it skipped): its body stays unread and empty here. */
    Response readHead() throws IOException {
        Response head;
        do {
            head = readAnyHead();
        } while (head.status() < 200);
        return head;
    }

    /** Reads the next response head, a 1xx too: its body stays unread and empty here. */
    Response readAnyHead() throws IOException {
        String line = readLine();
        int status = Integer.parseInt(line.split(" ", 3)[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (String h = readLine(); !h.isEmpty(); h = readLine()) {
            int c = h.indexOf(':');
            headers.put(
                    h.substring(0, c).strip().toLowerCase(Locale.ROOT),
                    h.substring(c + 1).strip());
        }
        return new Response(status, headers, new byte[0]);
    }

    /** Reads the body behind {@code head}: its Content-Length, or chunked; nothing otherwise. */
    byte[] readBody(Response head) throws IOException {
        Map<String, String> headers = head.headers();
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        String length = headers.get("content-length");
        if (length != null) {
            body.write(in.readNBytes(Integer.parseInt(length)));
        } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            for (int size = Integer.parseInt(readLine().strip(), 16);
                    size > 0;
                    size = Integer.parseInt(readLine().strip(), 16)) {
                body.write(in.readNBytes(size));
                readLine();
            }
            readLine();
        }
        return body.toByteArray();
    }

    /** Reads a response head only and returns its status (the body is left unread). */
    int read200HeadOnly() throws IOException {
        String line = readLine();
        while (!readLine().isEmpty()) {
            // skip headers
        }
        return Integer.parseInt(line.split(" ", 3)[1]);
    }

    /**
     * Reads and drops everything up to the server's close; answers true at its end of stream or a
     * reset. Each read is bounded by the read timeout (a server that never closes fails the test).
     */
    boolean drainToClose() throws IOException {
        byte[] buf = new byte[64 * 1024];
        try {
            while (in.read(buf) >= 0) {
                // dropped
            }
            return true;
        } catch (java.net.SocketException e) {
            return true; // reset: closed with our bytes unread
        }
    }

    /** Reads until the server closes (end of stream) or resets the connection; returns what came. */
    byte[] readToEnd() throws IOException {
        return readToEnd(in);
    }

    /** Reads {@code in} to its end of stream or a reset; returns what came before. Each read bounded by the socket's timeout. */
    static byte[] readToEnd(InputStream in) throws IOException {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        byte[] buf = new byte[64 * 1024];
        try {
            for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                got.write(buf, 0, n);
            }
        } catch (java.net.SocketException e) {
            // reset: what arrived before it counts
        }
        return got.toByteArray();
    }

    /** Answers whether the server closed the connection (end of stream or a reset); bounded by the read timeout. */
    boolean closedByServer() throws IOException {
        try {
            return in.read() == -1;
        } catch (java.net.SocketException e) {
            return true; // reset: closed with our bytes unread
        }
    }

    private String readLine() throws IOException {
        return line(in);
    }

    /** Reads one line up to its LF (or the end of stream), without the CR and LF. */
    static String line(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int b; (b = in.read()) != -1 && b != '\n'; ) {
            if (b != '\r') {
                sb.append((char) b);
            }
        }
        return sb.toString();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
