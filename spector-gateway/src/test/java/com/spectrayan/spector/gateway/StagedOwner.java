package com.spectrayan.spector.gateway;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An owner on a raw server socket that answers a large body in two stages, for the tests of a body
 * the gateway splices ({@code EdgeSpliceTest}): the head and the first {@code first} bytes of the
 * body, then, once the test {@link #release releases} it (bounded by {@link #STAGE_WAIT_SECONDS}), the
 * rest, whole or cut off. So the gateway's first read of the answer always ends with the body
 * incomplete, whatever the socket buffers do.
 *
 * <p>The request target says what to send: {@code ...?len=N&first=F&cut=C&chunked=1}: a body of
 * {@code N} bytes ({@link #body}), the first {@code F} before the stage, and the connection
 * closed after {@code C} bytes in all ({@code cut}, optional); {@code chunked=1} frames it chunked
 * instead of by its length; {@code close=1} says {@code Connection: close} and closes after the
 * body; {@code hold=1} waits for the release before the head, then sends head and body at once;
 * {@code quit=1} says nothing and closes after the body all the same (a server that shuts
 * down gracefully, or whose keep-alive timeout ends, closes an idle connection at once: RFC 9112
 * §9.6 lets it). Connections are kept alive otherwise; each runs on a daemon thread of its own.
 */
final class StagedOwner implements AutoCloseable {
    /** The longest an answer waits at its stage for the test. */
    static final long STAGE_WAIT_SECONDS = 10;

    private final SilentServer server;
    private final Semaphore stages = new Semaphore(0);
    private final List<MockOwner.Request> requests = new CopyOnWriteArrayList<>();
    private final AtomicLong written = new AtomicLong();
    private final AtomicInteger connectionsEnded = new AtomicInteger();

    private StagedOwner() throws IOException {
        this.server = SilentServer.serving("staged-owner", this::serve);
    }

    static StagedOwner start() throws IOException {
        return new StagedOwner();
    }

    /** Returns {@code n} bytes, the same for the same {@code n}: the body this owner sends for {@code len=n}. */
    static byte[] body(int n) {
        byte[] b = new byte[n];
        new Random(n).nextBytes(b);
        return b;
    }

    URI baseUri() {
        return URI.create("http://127.0.0.1:" + server.port());
    }

    /** Lets one answer waiting at its stage send the rest. */
    void release() {
        stages.release();
    }

    /** Returns the requests read so far, oldest first. */
    List<MockOwner.Request> requests() {
        return List.copyOf(requests);
    }

    /** Returns the connections the gateway opened to this owner so far. */
    int connections() {
        return server.acceptedConnections();
    }

    /** Returns the connections that ended (closed or reset by the gateway, or cut by a script). */
    int connectionsEnded() {
        return connectionsEnded.get();
    }

    /** Returns the body bytes written so far, over every answer. */
    long written() {
        return written.get();
    }

    private void serve(Socket s) {
        try (s) {
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            for (MockOwner.Request r = MockOwner.readRequest(in); r != null; r = MockOwner.readRequest(in)) {
                requests.add(r);
                if (!answer(r, out)) {
                    return;
                }
            }
        } catch (IOException | InterruptedException e) {
            // the gateway closed or reset the connection
        } finally {
            connectionsEnded.incrementAndGet();
        }
    }

    /** Writes the answer; false when the script cut the connection. */
    private boolean answer(MockOwner.Request r, OutputStream out) throws IOException, InterruptedException {
        int len = param(r.target(), "len", 0);
        int first = Math.min(param(r.target(), "first", len), len);
        int cut = param(r.target(), "cut", -1);
        boolean chunked = param(r.target(), "chunked", 0) == 1;
        boolean close = param(r.target(), "close", 0) == 1;
        boolean quit = param(r.target(), "quit", 0) == 1;
        byte[] body = body(len);
        String head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                + (chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: " + len + "\r\n")
                + (close ? "Connection: close\r\n" : "") + "\r\n";
        if (param(r.target(), "hold", 0) == 1) {
            stage(); // the head and body go out together, once the test releases them
        }
        out.write(head.getBytes(StandardCharsets.ISO_8859_1));
        if ("HEAD".equals(r.method())) {
            out.flush();
            return true;
        }
        int end = cut >= 0 ? Math.min(cut, len) : len;
        write(out, body, 0, Math.min(first, end), chunked);
        out.flush();
        if (first < end) {
            stage();
            for (int at = first; at < end; at += 64 * 1024) {
                write(out, body, at, Math.min(end, at + 64 * 1024), chunked);
            }
        }
        if (end < len) {
            out.flush();
            return false; // cut: the connection closes with the body incomplete
        }
        if (chunked) {
            out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
        }
        out.flush();
        return !close && !quit;
    }

    /** Waits, at most {@link #STAGE_WAIT_SECONDS}, until the test releases one answer. */
    private void stage() throws IOException, InterruptedException {
        if (!stages.tryAcquire(STAGE_WAIT_SECONDS, TimeUnit.SECONDS)) {
            throw new IOException("the test did not release the stage in " + STAGE_WAIT_SECONDS + " s");
        }
    }

    private void write(OutputStream out, byte[] body, int from, int to, boolean chunked) throws IOException {
        if (to <= from) {
            return;
        }
        if (chunked) {
            out.write((Integer.toHexString(to - from) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        }
        out.write(body, from, to - from);
        if (chunked) {
            out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
        }
        written.addAndGet(to - from);
    }

    private static int param(String target, String name, int otherwise) {
        int q = target.indexOf('?');
        if (q < 0) {
            return otherwise;
        }
        String key = name + "=";
        for (int at = q + 1; at < target.length(); ) {
            int amp = target.indexOf('&', at);
            int end = amp < 0 ? target.length() : amp;
            if (target.startsWith(key, at)) {
                return Integer.parseInt(target.substring(at + key.length(), end));
            }
            at = end + 1;
        }
        return otherwise;
    }

    @Override
    public void close() {
        server.close();
    }
}
