package com.spectrayan.spector.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A raw-socket HTTP/1.1 client that reads responses as strictly as a conformance suite must, so a
 * test sees the bytes on the wire and nothing a client library would forgive:
 *
 * <ul>
 *   <li>every line of a head or of chunked framing ends in CRLF (a bare LF fails);
 *   <li>the body is framed by exactly one rule of RFC 9112 §6.3: none for a response to HEAD and
 *       for 1xx, 204 and 304; a {@code Content-Length} read exactly; {@code Transfer-Encoding:
 *       chunked} with well-formed hex sizes, CRLF after each chunk and a last chunk; otherwise the
 *       body runs to the server's close (close-delimited);
 *   <li>{@code Content-Length} and {@code Transfer-Encoding} together fail (§6.1: a server must
 *       not send both), as do two different lengths or a coding other than chunked;
 *   <li>a response that says {@code Connection: close} must be followed by the server's close,
 *       with no byte after it, within the read timeout.
 * </ul>
 *
 * <p>Every read is bounded by the socket timeout ({@link #DEFAULT_TIMEOUT} unless {@link
 * #timeout(Duration)} sets another); a violation fails with an {@link AssertionError} naming it.
 * Not thread-safe, except that {@link #trickle} writes from its own thread while the test reads.
 */
final class WireClient implements AutoCloseable {
    /** The default bound of every read, and of the connect. */
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);

    /** The longest line accepted in a head or chunked framing. */
    static final int MAX_LINE_BYTES = 64 * 1024;

    private static final Pattern STATUS_LINE = Pattern.compile("(HTTP/1\\.[01]) ([1-5][0-9]{2}) ?(.*)");
    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
    private static final Pattern HEX = Pattern.compile("[0-9A-Fa-f]{1,15}");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final AtomicInteger TRICKLERS = new AtomicInteger();

    /** How a response's body was delimited on the wire. */
    enum Framing {
        /** No body: a response to HEAD, or 1xx, 204, 304. */
        NONE,
        /** {@code Content-Length}. */
        LENGTH,
        /** {@code Transfer-Encoding: chunked}. */
        CHUNKED,
        /** The server's close ended the body (RFC 9112 §6.3 rule 8). */
        CLOSE
    }

    /**
     * One response as it came off the wire.
     *
     * @param version the status line's version
     * @param status the status code
     * @param fields the header fields in order, names as sent
     * @param body the body's bytes
     * @param framing how the body was delimited
     * @param closed whether the server closed the connection after it
     */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Response(
            String version,
            int status,
            List<Map.Entry<String, String>> fields,
            byte[] body,
            Framing framing,
            boolean closed) {

        /** Returns the first value of a field, by name in any case, or null. */
        @Nullable
        String header(String name) {
            for (Map.Entry<String, String> f : fields) {
                if (f.getKey().equalsIgnoreCase(name)) {
                    return f.getValue();
                }
            }
            return null;
        }

        /** Returns every value of a field, by name in any case, each field line split at its commas. */
        List<String> headerValues(String name) {
            List<String> out = new ArrayList<>();
            for (Map.Entry<String, String> f : fields) {
                if (f.getKey().equalsIgnoreCase(name)) {
                    for (String v : f.getValue().split(",", -1)) {
                        if (!v.isBlank()) {
                            out.add(v.strip());
                        }
                    }
                }
            }
            return out;
        }

        /** Answers whether a field is present. */
        boolean has(String name) {
            return header(name) != null;
        }

        /** Answers whether the response's {@code Connection} field lists {@code token}. */
        boolean connectionHas(String token) {
            return headerValues("Connection").stream().anyMatch(v -> v.equalsIgnoreCase(token));
        }

        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        /** Returns the body as JSON; fails when it is not JSON. */
        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (IOException e) {
                throw new AssertionError("the body is not JSON: " + text(), e);
            }
        }

        /** Returns the problem's {@code code} member (a problem+json body). */
        String code() {
            return json().path("code").asText();
        }

        @Override
        public String toString() {
            return version + " " + status + " " + fields + " (" + framing + ", " + body.length + " bytes"
                    + (closed ? ", closed" : "") + "): " + (body.length > 400 ? text().substring(0, 400) : text());
        }
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private @Nullable ScheduledExecutorService trickler;

    WireClient(int port) {
        this(connect(port));
    }

    private static Socket connect(int port) {
        try {
            Socket socket = new Socket();
            socket.connect(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) DEFAULT_TIMEOUT.toMillis());
            return socket;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Takes a socket the test connected itself (a TLS socket, its handshake done or not), and bounds
     * its reads by {@link #DEFAULT_TIMEOUT}.
     */
    WireClient(Socket connected) {
        try {
            socket = connected;
            socket.setSoTimeout((int) DEFAULT_TIMEOUT.toMillis());
            socket.setTcpNoDelay(true);
            in = socket.getInputStream();
            out = socket.getOutputStream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Sets the bound of each later read. */
    WireClient timeout(Duration timeout) {
        try {
            socket.setSoTimeout((int) timeout.toMillis());
        } catch (SocketException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /** Writes text as ISO-8859-1 bytes (a head, pipelined heads, chunked framing). */
    WireClient send(String text) {
        return send(text.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** Writes bytes. */
    WireClient send(byte[] bytes) {
        try {
            out.write(bytes);
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /**
     * Writes {@code body} in {@code pieces} equal parts, one every {@code period}, from another
     * thread (the test keeps reading); the future completes after the last part was written.
     */
    CompletableFuture<Void> trickle(byte[] body, int pieces, Duration period) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        ScheduledExecutorService s = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "trickle-" + TRICKLERS.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        trickler = s;
        int[] next = {0};
        var unused = s.scheduleAtFixedRate(
                () -> {
                    int i = next[0]++;
                    int from = (int) ((long) body.length * i / pieces);
                    int to = (int) ((long) body.length * (i + 1) / pieces);
                    try {
                        out.write(body, from, to - from);
                        out.flush();
                    } catch (IOException e) {
                        done.completeExceptionally(e);
                        throw new UncheckedIOException(e); // stops the schedule
                    }
                    if (i + 1 == pieces) {
                        done.complete(null);
                        throw new IllegalStateException("done"); // stops the schedule
                    }
                },
                0,
                period.toNanos(),
                TimeUnit.NANOSECONDS);
        return done;
    }

    /** Reads the next response to a request other than HEAD (1xx included). */
    Response read() {
        return read(false);
    }

    /** Reads the next response to a HEAD request: it never has a body, whatever its fields say. */
    Response readForHead() {
        return read(true);
    }

    /** Reads responses until a final one (2xx to 5xx) and returns it; interim ones are skipped. */
    Response readFinal() {
        for (Response r = read(); ; r = read()) {
            if (r.status() >= 200) {
                return r;
            }
        }
    }

    private Response read(boolean headRequest) {
        try {
            String statusLine = line("status line");
            Matcher m = STATUS_LINE.matcher(statusLine);
            if (!m.matches()) {
                throw new AssertionError("not a status line: '" + statusLine + "'");
            }
            String version = m.group(1);
            int status = Integer.parseInt(m.group(2));
            List<Map.Entry<String, String>> fields = new ArrayList<>();
            for (String f = line("header field"); !f.isEmpty(); f = line("header field")) {
                if (f.charAt(0) == ' ' || f.charAt(0) == '\t') {
                    throw new AssertionError("obs-fold in a response head (RFC 9112 §5.2): '" + f + "'");
                }
                int colon = f.indexOf(':');
                if (colon <= 0 || !TOKEN.matcher(f.substring(0, colon)).matches()) {
                    throw new AssertionError("not a header field: '" + f + "'");
                }
                fields.add(new AbstractMap.SimpleImmutableEntry<>(
                        f.substring(0, colon), f.substring(colon + 1).strip()));
            }
            Response head = new Response(version, status, List.copyOf(fields), new byte[0], Framing.NONE, false);
            if (status < 200) {
                if (head.has("Content-Length") || head.has("Transfer-Encoding")) {
                    throw new AssertionError("a 1xx carries framing (RFC 9110 §15.2): " + head);
                }
                return head;
            }
            List<String> te = head.headerValues("Transfer-Encoding");
            List<String> lengths = head.headerValues("Content-Length");
            if (!te.isEmpty() && !lengths.isEmpty()) {
                throw new AssertionError("both Transfer-Encoding and Content-Length (RFC 9112 §6.1): " + head);
            }
            if (status == 204 && (!te.isEmpty() || !lengths.isEmpty())) {
                throw new AssertionError("a 204 carries framing (RFC 9110 §8.6, RFC 9112 §6.1): " + head);
            }
            if (lengths.stream().distinct().count() > 1) {
                throw new AssertionError("different Content-Length values (RFC 9110 §8.6): " + head);
            }
            if (!te.isEmpty() && !(te.size() == 1 && te.get(0).equalsIgnoreCase("chunked"))) {
                throw new AssertionError("a transfer coding other than chunked: " + head);
            }
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            Framing framing;
            boolean closed = false;
            if (headRequest || status == 204 || status == 304) {
                framing = Framing.NONE;
            } else if (!te.isEmpty()) {
                framing = Framing.CHUNKED;
                readChunked(body);
            } else if (!lengths.isEmpty()) {
                framing = Framing.LENGTH;
                long n = Long.parseLong(lengths.get(0));
                byte[] b = in.readNBytes((int) n);
                if (b.length < n) {
                    throw new AssertionError(
                            "the server closed after " + b.length + " of Content-Length " + n + " bytes: " + head);
                }
                body.write(b);
            } else {
                framing = Framing.CLOSE;
                body.write(in.readAllBytes()); // RFC 9112 §6.3 rule 8: the close ends the body
                closed = true;
            }
            Response r = new Response(version, status, head.fields(), body.toByteArray(), framing, closed);
            if (!closed && r.connectionHas("close")) {
                awaitCloseAfter(r);
                closed = true;
                r = new Response(version, status, r.fields(), r.body(), framing, true);
            }
            return r;
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no whole response within " + soTimeout() + " ms", e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void readChunked(ByteArrayOutputStream body) throws IOException {
        while (true) {
            String sizeLine = line("chunk size");
            if (!HEX.matcher(sizeLine).matches()) {
                throw new AssertionError("a malformed chunk size line (RFC 9112 §7.1): '" + sizeLine + "'");
            }
            long size = Long.parseLong(sizeLine, 16);
            if (size == 0) {
                while (!line("trailer field").isEmpty()) {
                    // trailers: read and dropped
                }
                return;
            }
            byte[] data = in.readNBytes((int) size);
            if (data.length < size) {
                throw new AssertionError("the server closed inside a chunk of " + size + " bytes");
            }
            body.write(data);
            String end = line("chunk end");
            if (!end.isEmpty()) {
                throw new AssertionError("a chunk not followed by CRLF (RFC 9112 §7.1): '" + end + "'");
            }
        }
    }

    private void awaitCloseAfter(Response r) throws IOException {
        int b;
        try {
            b = in.read();
        } catch (SocketTimeoutException e) {
            throw new AssertionError(
                    "said Connection: close but the connection was still open " + soTimeout() + " ms later: " + r, e);
        } catch (SocketException e) {
            return; // a reset after the response: closed
        }
        if (b != -1) {
            throw new AssertionError("said Connection: close, then sent more bytes ('" + (char) b + "'...): " + r);
        }
    }

    /**
     * Waits (bounded by the read timeout) for the server to close the connection and answers
     * whether it did without sending a byte; a byte fails with what arrived.
     */
    boolean closesSilently() {
        try {
            int b = in.read();
            if (b == -1) {
                return true;
            }
            byte[] more = new byte[Math.min(in.available(), 200)];
            int n = in.read(more);
            throw new AssertionError("expected a silent close, got bytes: '" + (char) b
                    + new String(more, 0, Math.max(n, 0), StandardCharsets.ISO_8859_1) + "'");
        } catch (SocketTimeoutException e) {
            return false;
        } catch (SocketException e) {
            return true; // reset
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Waits (bounded by the read timeout) and answers whether the server closed the connection. */
    boolean closedByServer() {
        try {
            return in.read() == -1;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (SocketException e) {
            return true;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private String line(String what) throws IOException {
        StringBuilder sb = new StringBuilder();
        while (true) {
            int b = in.read();
            if (b == -1) {
                throw new AssertionError("the server closed the connection inside a " + what
                        + (sb.length() == 0 ? "" : " ('" + sb + "')"));
            }
            if (b == '\n') {
                if (sb.length() == 0 || sb.charAt(sb.length() - 1) != '\r') {
                    throw new AssertionError("a bare LF ends a " + what + " (RFC 9112 §2.2): '" + sb + "'");
                }
                sb.setLength(sb.length() - 1);
                return sb.toString();
            }
            sb.append((char) b);
            if (sb.length() > MAX_LINE_BYTES) {
                throw new AssertionError("a " + what + " longer than " + MAX_LINE_BYTES + " bytes");
            }
        }
    }

    private int soTimeout() {
        try {
            return socket.getSoTimeout();
        } catch (SocketException e) {
            return -1;
        }
    }

    /** Half-closes: the server reads the end of the client's bytes (a FIN), and may still answer. */
    WireClient shutdownOutput() {
        try {
            socket.shutdownOutput();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /** Closes the socket (a client's early close: unread bytes make it a reset). */
    @Override
    public void close() {
        ScheduledExecutorService s = trickler;
        if (s != null) {
            s.shutdownNow();
        }
        try {
            socket.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** An HTTP/1.1 request head with a Host and, unless {@code token} is null, a bearer token. */
    static String head(String method, String target, @Nullable String token, String... fields) {
        StringBuilder sb = new StringBuilder()
                .append(method)
                .append(' ')
                .append(target)
                .append(" HTTP/1.1\r\nHost: gateway.test\r\n");
        if (token != null) {
            sb.append("Authorization: Bearer ").append(token).append("\r\n");
        }
        for (String f : fields) {
            sb.append(f).append("\r\n");
        }
        return sb.append("\r\n").toString();
    }
}
