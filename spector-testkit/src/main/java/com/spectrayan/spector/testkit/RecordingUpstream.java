package com.spectrayan.spector.testkit;

import static java.util.Objects.requireNonNull;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * An HTTP/1.1 upstream on a raw loopback socket that records each request as its bytes came
 * (RFC 9112): the request line, the header lines as sent, and the body framed as the head said
 * (RFC 9112 §6.3: {@code Transfer-Encoding: chunked}, else {@code Content-Length}, else none),
 * both as on the wire and decoded. It answers each complete request {@code 200} with the text
 * {@code "<body bytes> <SHA-256 hex>"} and a Content-Length, and keeps the connection for the next
 * one; a connection that ends (EOF) before its request is complete is recorded as incomplete, and
 * answered nothing. A test reads what arrived with {@link #takeRequest} (and, to act while a body
 * is on its way, each head as it arrives with {@link #takeHead}), and {@link #connections()} tells
 * whether a client reused a connection or opened another.
 *
 * <p>Bounds: a head of at most {@link #MAX_HEAD_BYTES}, a body of at most {@link #MAX_BODY_BYTES}
 * (past either the connection is closed and the request recorded incomplete). Threading: one
 * thread accepts, one per connection reads; the records are read from any thread. {@link #close}
 * closes every socket.
 */
public final class RecordingUpstream implements AutoCloseable {
    /** Bytes of a request head it reads at most. */
    public static final int MAX_HEAD_BYTES = 64 * 1024;

    /** Bytes of a request body it records at most. */
    public static final int MAX_BODY_BYTES = 64 * 1024 * 1024;

    /** How a request's body was framed on the wire (RFC 9112 §6.3). */
    public enum Framing {
        /** {@code Transfer-Encoding: chunked}. */
        CHUNKED,
        /** {@code Content-Length}, and no Transfer-Encoding. */
        CONTENT_LENGTH,
        /** Neither: no body. */
        NONE
    }

    /** One request as it arrived. Immutable. */
    public static final class Recorded {
        private final int connection;
        private final String requestLine;
        private final List<String> headerLines;
        private final Framing framing;
        private final byte[] wire;
        private final byte[] body;
        private final boolean complete;

        Recorded(
                int connection,
                String requestLine,
                List<String> headerLines,
                Framing framing,
                byte[] wire,
                byte[] body,
                boolean complete) {
            this.connection = connection;
            this.requestLine = requestLine;
            this.headerLines = List.copyOf(headerLines);
            this.framing = framing;
            this.wire = wire.clone();
            this.body = body.clone();
            this.complete = complete;
        }

        /** Returns the connection it came on, numbered from 1 in the order they were accepted. */
        public int connection() {
            return connection;
        }

        /** Returns the request line, e.g. {@code PUT /up HTTP/1.1}. */
        public String requestLine() {
            return requestLine;
        }

        /** Returns the header field lines as sent, in order. */
        public List<String> headerLines() {
            return headerLines;
        }

        /** Returns how the head framed the body. */
        public Framing framing() {
            return framing;
        }

        /** Returns the body's bytes as on the wire (chunk framing included): a copy. */
        public byte[] wire() {
            return wire.clone();
        }

        /** Returns the body's bytes, decoded: a copy. */
        public byte[] body() {
            return body.clone();
        }

        /** Answers whether the whole request arrived; false when the connection ended first. */
        public boolean complete() {
            return complete;
        }

        /** Returns the values of every field line named {@code name} (any case), in order. */
        public List<String> headers(String name) {
            List<String> values = new ArrayList<>();
            for (String line : headerLines) {
                int colon = line.indexOf(':');
                if (colon > 0 && line.substring(0, colon).strip().equalsIgnoreCase(name)) {
                    values.add(line.substring(colon + 1).strip());
                }
            }
            return values;
        }

        /** Returns the value of the first field line named {@code name} (any case), or null. */
        public @Nullable String header(String name) {
            List<String> values = headers(name);
            return values.isEmpty() ? null : values.get(0);
        }

        /** Returns the SHA-256 of the decoded body, in hex. */
        public String sha256() {
            return RecordingUpstream.sha256(body);
        }

        @Override
        public String toString() {
            return requestLine + " on connection " + connection + ", " + framing + ", " + wire.length
                    + " bytes on the wire" + (complete ? "" : ", incomplete");
        }
    }

    private final ServerSocket server;
    private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "recording-upstream");
        t.setDaemon(true);
        return t;
    });
    private final BlockingQueue<Recorded> recorded = new LinkedBlockingQueue<>();
    private final BlockingQueue<String> heads = new LinkedBlockingQueue<>();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicBoolean dropNext = new AtomicBoolean();

    private RecordingUpstream(ServerSocket server) {
        this.server = server;
        threads.execute(this::accept);
    }

    /** Starts an upstream on a free loopback port. */
    public static RecordingUpstream start() throws IOException {
        return new RecordingUpstream(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
    }

    /** Returns {@code http://127.0.0.1:<port>}. */
    public URI uri() {
        return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    /** Returns how many connections were accepted so far. */
    public int connections() {
        return connections.get();
    }

    /** Returns the next request that arrived (complete or not), waiting at most {@code within}. */
    public Recorded takeRequest(Duration within) {
        return Waits.take(recorded, "the upstream receives a request", requireNonNull(within, "within"));
    }

    /**
     * Returns the request line of the next head that arrived, as soon as it did (before its body),
     * waiting at most {@code within}.
     */
    public String takeHead(Duration within) {
        return Waits.take(heads, "the upstream receives a request head", requireNonNull(within, "within"));
    }

    /**
     * The next complete request is recorded and then its connection closed with no answer, as an
     * owner whose keep-alive timeout crosses a request on a reused connection does (or one that
     * stops after reading it); the requests after it are answered again.
     */
    public void dropNextAnswer() {
        dropNext.set(true);
    }

    /** Returns the SHA-256 of {@code bytes} in hex, as the answers carry it. */
    public static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is always available", e);
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            // closing: nothing to do
        }
        for (Socket s : sockets) {
            try {
                s.close();
            } catch (IOException e) {
                // closing: nothing to do
            }
        }
        threads.shutdownNow();
    }

    private void accept() {
        while (!server.isClosed()) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException closed) {
                return;
            }
            sockets.add(s);
            int number = connections.incrementAndGet();
            threads.execute(() -> serve(s, number));
        }
    }

    private void serve(Socket socket, int connection) {
        try (socket) {
            InputStream in = new BufferedInputStream(socket.getInputStream());
            OutputStream out = socket.getOutputStream();
            while (true) {
                Recorded r = readRequest(in, connection);
                if (r == null) {
                    return; // the client closed between requests
                }
                recorded.add(r);
                if (!r.complete() || dropNext.compareAndSet(true, false)) {
                    return; // closed: incomplete, or no answer asked for
                }
                byte[] answer = (r.body.length + " " + r.sha256()).getBytes(StandardCharsets.US_ASCII);
                out.write(
                        ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + answer.length + "\r\n\r\n")
                                .getBytes(StandardCharsets.US_ASCII));
                out.write(answer);
                out.flush();
            }
        } catch (IOException gone) {
            // the client or close() ended the connection
        }
    }

    /** Reads one request; null at an EOF before its first byte. */
    private @Nullable Recorded readRequest(InputStream in, int connection) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        int matched = 0;
        byte[] end = {'\r', '\n', '\r', '\n'};
        while (matched < end.length) {
            int b = in.read();
            if (b < 0) {
                return head.size() == 0 ? null : incomplete(connection, head.toString(StandardCharsets.ISO_8859_1));
            }
            head.write(b);
            if (head.size() > MAX_HEAD_BYTES) {
                return incomplete(connection, head.toString(StandardCharsets.ISO_8859_1));
            }
            matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
        heads.add(lines[0]);
        List<String> headerLines = List.of(lines).subList(1, lines.length);
        Recorded shell = new Recorded(connection, lines[0], headerLines, Framing.NONE, new byte[0], new byte[0], true);
        ByteArrayOutputStream wire = new ByteArrayOutputStream();
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        Framing framing;
        boolean complete;
        String te = shell.header("Transfer-Encoding");
        String cl = shell.header("Content-Length");
        if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            framing = Framing.CHUNKED;
            complete = readChunked(in, wire, body);
        } else if (cl != null) {
            framing = Framing.CONTENT_LENGTH;
            long length = Long.parseLong(cl);
            complete = length <= MAX_BODY_BYTES && copy(in, length, wire, body);
        } else {
            framing = Framing.NONE;
            complete = true;
        }
        return new Recorded(
                connection, lines[0], headerLines, framing, wire.toByteArray(), body.toByteArray(), complete);
    }

    private static Recorded incomplete(int connection, String head) {
        String[] lines = head.split("\r\n", -1);
        List<String> headerLines = lines.length > 1 ? List.of(lines).subList(1, lines.length) : List.of();
        return new Recorded(connection, lines[0], headerLines, Framing.NONE, new byte[0], new byte[0], false);
    }

    /** Copies {@code n} bytes to both streams; false at an EOF before them. */
    private static boolean copy(InputStream in, long n, ByteArrayOutputStream wire, ByteArrayOutputStream body)
            throws IOException {
        byte[] buf = new byte[8192];
        long left = n;
        while (left > 0) {
            int r = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (r < 0) {
                return false;
            }
            wire.write(buf, 0, r);
            body.write(buf, 0, r);
            left -= r;
        }
        return true;
    }

    /** Reads a chunked body (RFC 9112 §7.1) to its last chunk and trailer section; false at an EOF before. */
    private static boolean readChunked(InputStream in, ByteArrayOutputStream wire, ByteArrayOutputStream body)
            throws IOException {
        while (true) {
            String sizeLine = readLine(in, wire);
            if (sizeLine == null) {
                return false;
            }
            int semicolon = sizeLine.indexOf(';');
            long size = Long.parseLong((semicolon < 0 ? sizeLine : sizeLine.substring(0, semicolon)).strip(), 16);
            if (size == 0) {
                while (true) {
                    String trailer = readLine(in, wire);
                    if (trailer == null) {
                        return false;
                    }
                    if (trailer.isEmpty()) {
                        return true;
                    }
                }
            }
            if (body.size() + size > MAX_BODY_BYTES || !copy(in, size, wire, body)) {
                return false;
            }
            String crlf = readLine(in, wire);
            if (crlf == null || !crlf.isEmpty()) {
                return false;
            }
        }
    }

    /** Reads a CRLF-terminated line (recorded on the wire), without its CRLF; null at an EOF before it ends. */
    private static @Nullable String readLine(InputStream in, ByteArrayOutputStream wire) throws IOException {
        StringBuilder line = new StringBuilder();
        while (line.length() <= MAX_HEAD_BYTES) {
            int b = in.read();
            if (b < 0) {
                return null;
            }
            wire.write(b);
            if (b == '\n' && line.length() > 0 && line.charAt(line.length() - 1) == '\r') {
                return line.substring(0, line.length() - 1);
            }
            line.append((char) b);
        }
        return null;
    }
}
