package com.spectrayan.spector.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * An HTTP/1.1 server on a loopback port that answers an upload before reading it (RFC 9112 §9.6)
 * and closes: for each connection, it reads the request head and the first {@link #READS} bytes of
 * the body, writes its answer (or nothing), and closes with the rest of the body unread, so the
 * kernel resets the connection while the client still sends. What an owner or an upstream with a
 * smaller body limit than the caller's does (a 413), or one that refuses the request's credentials
 * (a 401). Serves connections one at a time on a daemon thread until {@link #close}.
 */
public final class EarlyAnswerUpstream implements AutoCloseable {
    /** The body bytes read before the answer. */
    public static final int READS = 1000;

    /** A 413 with a five-byte body, and {@code Connection: close}. */
    public static final String TOO_LARGE =
            "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 5\r\nConnection: close\r\n\r\nlarge";

    private final ServerSocket socket;

    private EarlyAnswerUpstream(ServerSocket socket) {
        this.socket = socket;
    }

    /** Starts one that writes {@code answer} to each connection, or nothing when it is null. */
    public static EarlyAnswerUpstream start(@Nullable String answer) throws IOException {
        EarlyAnswerUpstream u = new EarlyAnswerUpstream(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
        Thread t = new Thread(() -> u.serve(answer), "early-answer-upstream");
        t.setDaemon(true);
        t.start();
        return u;
    }

    /** Returns its port on the loopback. */
    public int port() {
        return socket.getLocalPort();
    }

    private void serve(@Nullable String answer) {
        while (!socket.isClosed()) {
            try (Socket c = socket.accept()) {
                InputStream in = c.getInputStream();
                if (!skipHead(in)) {
                    continue;
                }
                in.readNBytes(READS); // some of the body; the rest stays unread, and the close resets
                if (answer != null) {
                    c.getOutputStream().write(answer.getBytes(StandardCharsets.US_ASCII));
                    c.getOutputStream().flush();
                }
            } catch (IOException e) {
                // closed, or the client went first
            }
        }
    }

    /** Reads up to the head's blank line; false at an end of stream before it. */
    private static boolean skipHead(InputStream in) throws IOException {
        int matched = 0;
        byte[] end = {'\r', '\n', '\r', '\n'};
        while (matched < end.length) {
            int b = in.read();
            if (b < 0) {
                return false;
            }
            matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        return true;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
