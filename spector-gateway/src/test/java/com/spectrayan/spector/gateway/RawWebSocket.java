package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

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
 * A raw WebSocket client over a socket, as a browser's bytes would arrive: the handshake is sent
 * as text, frames go out masked (RFC 6455 §5.3) and are read unmasked. Every read is bounded by
 * {@link RawClient#TIMEOUT_MS}.
 */
final class RawWebSocket implements AutoCloseable {
    /** RFC 6455 §1.3's sample key. */
    static final String KEY = "dGhlIHNhbXBsZSBub25jZQ==";

    /** The accept value RFC 6455 §1.3's sample key must produce (§4.2.2). */
    static final String ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

    /** The opcode of a text frame (RFC 6455 §5.6). */
    static final int TEXT = 0x1;

    /** The opcode of a close frame (RFC 6455 §5.5.1). */
    static final int CLOSE = 0x8;

    /** A response head: its status and headers, names in lower case. */
    record Head(int status, Map<String, String> headers) {}

    /** One frame as read: its opcode and payload. */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record WsFrame(int opcode, byte[] payload) {
        String text() {
            return new String(payload, StandardCharsets.UTF_8);
        }
    }

    final Socket socket = new Socket();
    final InputStream in;
    final OutputStream out;

    RawWebSocket(int port) throws IOException {
        socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), RawClient.TIMEOUT_MS);
        socket.setSoTimeout(RawClient.TIMEOUT_MS);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    /** Sends a request head as it is (CRLF line ends, the empty line included). */
    void send(String head) throws IOException {
        out.write(head.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    Head readHead() throws IOException {
        String status = RawClient.line(in);
        Map<String, String> headers = new LinkedHashMap<>();
        for (String h = RawClient.line(in); !h.isEmpty(); h = RawClient.line(in)) {
            int c = h.indexOf(':');
            headers.put(
                    h.substring(0, c).strip().toLowerCase(Locale.ROOT),
                    h.substring(c + 1).strip());
        }
        return new Head(Integer.parseInt(status.split(" ", 3)[1]), headers);
    }

    void sendText(String text) throws IOException {
        out.write(frame(TEXT, text.getBytes(StandardCharsets.UTF_8)));
        out.flush();
    }

    /** Returns one masked frame's bytes (FIN set) with a fixed mask. */
    static byte[] frame(int opcode, byte[] payload) {
        ByteArrayOutputStream f = new ByteArrayOutputStream();
        f.write(0x80 | opcode);
        if (payload.length < 126) {
            f.write(0x80 | payload.length);
        } else {
            f.write(0x80 | 126);
            f.write(payload.length >>> 8);
            f.write(payload.length & 0xff);
        }
        byte[] mask = {0x12, 0x34, 0x56, 0x78};
        f.write(mask, 0, 4);
        for (int i = 0; i < payload.length; i++) {
            f.write(payload[i] ^ mask[i % 4]);
        }
        return f.toByteArray();
    }

    /** Sends a close frame with {@code code} (RFC 6455 §5.5.1). */
    void sendClose(int code) throws IOException {
        out.write(frame(CLOSE, new byte[] {(byte) (code >>> 8), (byte) code}));
        out.flush();
    }

    /** Reads one unmasked frame (payloads up to 64 KiB). */
    WsFrame readFrame() throws IOException {
        int b0 = in.read();
        int b1 = in.read();
        assertThat(b0).as("a frame, not the end of the stream").isNotNegative();
        assertThat(b1 & 0x80).as("server frames are not masked").isZero();
        int len = b1 & 0x7f;
        if (len == 126) {
            len = (in.read() << 8) | in.read();
        }
        return new WsFrame(b0 & 0x0f, in.readNBytes(len));
    }

    String readText() throws IOException {
        WsFrame f = readFrame();
        assertThat(f.opcode()).as("a text frame").isEqualTo(TEXT);
        return f.text();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
