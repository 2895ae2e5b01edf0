package com.spectrayan.spector.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * One-shot administrative commands to a test's Redis over a plain socket, so the kit needs no
 * Redis client. Each call is bounded by {@link #TIMEOUT}.
 */
public final class RedisCommands {
    /** Longest connect or read of one command. */
    public static final Duration TIMEOUT = Duration.ofSeconds(5);

    private RedisCommands() {}

    /** Deletes every key of every database. */
    public static void flushAll(int port) {
        String reply = send(port, "FLUSHALL");
        if (!reply.startsWith("+OK")) {
            throw new IllegalStateException("FLUSHALL answered " + reply);
        }
    }

    /** Sends one inline command and returns the first line of its reply. */
    public static String send(int port, String inlineCommand) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) TIMEOUT.toMillis());
            socket.setSoTimeout((int) TIMEOUT.toMillis());
            OutputStream out = socket.getOutputStream();
            out.write((inlineCommand + "\r\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = socket.getInputStream();
            StringBuilder line = new StringBuilder();
            for (int b; (b = in.read()) != -1 && b != '\n'; ) {
                if (b != '\r') {
                    line.append((char) b);
                }
            }
            return line.toString();
        } catch (IOException e) {
            throw new UncheckedIOException("Redis on port " + port + " did not answer " + inlineCommand, e);
        }
    }
}
