package com.spectrayan.spector.uplink.transport;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A WebSocket upgrade to a gateway's {@code /uplink} written by hand on a raw socket (RFC 6455
 * §4.1), for what a dialer would never send. Reads are bounded by {@link TestGateway#WAIT}.
 */
final class RawUpgrade {
    private RawUpgrade() {}

    /**
     * Sends an upgrade of worker w1 with {@code headerLines} (say {@code "Authorization: Bearer
     * x"}) after the handshake's own, and returns what the gateway answered: up to the end of a 101
     * head (the socket is then closed), else all it sent until it closed.
     */
    static String send(int port, String... headerLines) throws IOException {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            socket.setSoTimeout((int) TestGateway.WAIT.toMillis());
            StringBuilder request = new StringBuilder("""
                    GET /uplink HTTP/1.1\r
                    Host: 127.0.0.1\r
                    Upgrade: websocket\r
                    Connection: Upgrade\r
                    Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r
                    Sec-WebSocket-Version: 13\r
                    X-Spector-Worker: w1\r
                    """);
            for (String line : headerLines) {
                request.append(line).append("\r\n");
            }
            request.append("\r\n");
            return exchange(socket, request.toString());
        }
    }

    /**
     * Sends {@code request}, bytes as written, and returns what the gateway answered: up to the end
     * of a 101 head (the socket is then closed), else all it sent until it closed.
     */
    static String sendRaw(int port, String request) throws IOException {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), port)) {
            socket.setSoTimeout((int) TestGateway.WAIT.toMillis());
            return exchange(socket, request);
        }
    }

    private static String exchange(Socket socket, String request) throws IOException {
        OutputStream out = socket.getOutputStream();
        out.write(request.getBytes(StandardCharsets.US_ASCII));
        out.flush();
        InputStream in = socket.getInputStream();
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        for (int n; (n = in.read(buf)) != -1; ) {
            all.write(buf, 0, n);
            String text = all.toString(StandardCharsets.UTF_8);
            if (text.startsWith("HTTP/1.1 101") && text.contains("\r\n\r\n")) {
                return text; // Upgraded: the socket would stay open.
            }
        }
        return all.toString(StandardCharsets.UTF_8);
    }
}
