package com.spectrayan.spector.gateway;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Reads a bulk-string reply from a real Redis (RESP 2), which the testkit's {@code RedisCommands}
 * does not: it returns only a reply's first line, the length of a bulk string.
 */
final class RedisReply {
    /** The bound on the connect and on each read. */
    static final int TIMEOUT_MS = 5000;

    private RedisReply() {}

    /** Sends one inline command and returns its bulk-string reply, null for a nil reply. */
    static @Nullable String bulk(int port, String inlineCommand) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), TIMEOUT_MS);
            socket.setSoTimeout(TIMEOUT_MS);
            socket.getOutputStream().write((inlineCommand + "\r\n").getBytes(StandardCharsets.UTF_8));
            InputStream in = socket.getInputStream();
            String head = line(in);
            if (!head.startsWith("$")) {
                throw new IllegalStateException(inlineCommand + " answered " + head);
            }
            int length = Integer.parseInt(head.substring(1));
            if (length < 0) {
                return null;
            }
            byte[] value = in.readNBytes(length);
            return new String(value, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Redis on port " + port + " did not answer " + inlineCommand, e);
        }
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        for (int b; (b = in.read()) != -1 && b != '\n'; ) {
            if (b != '\r') {
                line.append((char) b);
            }
        }
        return line.toString();
    }
}
