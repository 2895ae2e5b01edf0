package com.spectrayan.spector.owner;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * WebSocket bytes written and read by hand (RFC 6455 §5.2), over a {@link RawHttp} socket, so the
 * tests see exactly what the owner sends and owe nothing to a WebSocket library.
 *
 * <pre>
 *   0               1               2               3
 *  +-+-+-+-+-------+-+-------------+-------------------------------+
 *  |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
 *  |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
 *  |N|V|V|V|       |S|             |   (if payload len==126/127)   |
 *  +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
 *  |     Masking-key (client to server only), then the payload     |
 *  +---------------------------------------------------------------+
 * </pre>
 */
final class RawWebSocket {
    static final int CONTINUATION = 0x0;
    static final int TEXT = 0x1;
    static final int BINARY = 0x2;
    static final int CLOSE = 0x8;
    static final int PING = 0x9;
    static final int PONG = 0xA;

    /** The sample nonce of RFC 6455 §4.2.2 (and §1.3). */
    static final String SAMPLE_KEY = "dGhlIHNhbXBsZSBub25jZQ==";

    /** The accept value the RFC gives for {@link #SAMPLE_KEY}. */
    static final String SAMPLE_ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

    /** The masking key of the RFC's examples (§5.7). */
    static final byte[] SAMPLE_MASK = {0x37, (byte) 0xfa, 0x21, 0x3d};

    /** A frame as read from the owner. */
    static final class Frame {
        private final boolean fin;
        private final int opcode;
        private final byte[] payload;

        Frame(boolean fin, int opcode, byte[] payload) {
            this.fin = fin;
            this.opcode = opcode;
            this.payload = payload;
        }

        boolean fin() {
            return fin;
        }

        int opcode() {
            return opcode;
        }

        byte[] payload() {
            return payload.clone();
        }

        String text() {
            return new String(payload, StandardCharsets.UTF_8);
        }

        /** Returns the status code of a close frame, or 1005 (none) when its payload is empty. */
        int closeCode() {
            return payload.length < 2 ? 1005 : ((payload[0] & 0xff) << 8) | (payload[1] & 0xff);
        }
    }

    private RawWebSocket() {}

    /** Returns an opening handshake for a path, with the sample key, plus extra header lines. */
    static String handshake(String path, String... extraHeaderLines) {
        StringBuilder b = new StringBuilder()
                .append("GET ")
                .append(path)
                .append(" HTTP/1.1\r\n")
                .append("Host: 127.0.0.1\r\n")
                .append("Upgrade: websocket\r\n")
                .append("Connection: Upgrade\r\n")
                .append("Sec-WebSocket-Key: ")
                .append(SAMPLE_KEY)
                .append("\r\n")
                .append("Sec-WebSocket-Version: 13\r\n");
        for (String line : extraHeaderLines) {
            b.append(line).append("\r\n");
        }
        return b.append("\r\n").toString();
    }

    /** Returns a client frame, masked with {@link #SAMPLE_MASK}. */
    static byte[] clientFrame(boolean fin, int opcode, byte[] payload) {
        return frame(fin, opcode, payload, SAMPLE_MASK, payload.length);
    }

    /** Returns a client frame with a text payload, final, masked. */
    static byte[] clientText(String text) {
        return clientFrame(true, TEXT, text.getBytes(StandardCharsets.UTF_8));
    }

    /** Returns a client close frame with a status code, masked. */
    static byte[] clientClose(int code) {
        return clientFrame(true, CLOSE, new byte[] {(byte) (code >> 8), (byte) code});
    }

    /** Returns only the header of a masked frame that declares {@code length} payload bytes. */
    static byte[] clientHeaderOnly(int opcode, long length) {
        return frame(true, opcode, new byte[0], SAMPLE_MASK, length);
    }

    /** Returns a frame without a mask, as only a server may send (RFC 6455 §5.1). */
    static byte[] unmaskedFrame(int opcode, byte[] payload) {
        return frame(true, opcode, payload, null, payload.length);
    }

    private static byte[] frame(boolean fin, int opcode, byte[] payload, byte @Nullable [] mask, long length) {
        ByteBuffer out = ByteBuffer.allocate(14 + payload.length);
        out.put((byte) ((fin ? 0x80 : 0) | opcode));
        int maskBit = mask == null ? 0 : 0x80;
        if (length < 126) {
            out.put((byte) (maskBit | length));
        } else if (length <= 0xffff) {
            out.put((byte) (maskBit | 126)).putShort((short) length);
        } else {
            out.put((byte) (maskBit | 127)).putLong(length);
        }
        if (mask != null) {
            out.put(mask);
        }
        for (int i = 0; i < payload.length; i++) {
            out.put(mask == null ? payload[i] : (byte) (payload[i] ^ mask[i % 4]));
        }
        byte[] bytes = new byte[out.position()];
        out.flip().get(bytes);
        return bytes;
    }

    /** Reads one frame the owner sent; a server frame is never masked. */
    static Frame readFrame(RawHttp raw) throws IOException {
        byte[] head = exactly(raw, 2);
        boolean fin = (head[0] & 0x80) != 0;
        int opcode = head[0] & 0x0f;
        if ((head[1] & 0x80) != 0) {
            throw new IOException("the owner masked a frame (RFC 6455 §5.1: a server MUST NOT)");
        }
        long length = head[1] & 0x7f;
        if (length == 126) {
            length = ByteBuffer.wrap(exactly(raw, 2)).getShort() & 0xffff;
        } else if (length == 127) {
            length = ByteBuffer.wrap(exactly(raw, 8)).getLong();
        }
        return new Frame(fin, opcode, exactly(raw, Math.toIntExact(length)));
    }

    private static byte[] exactly(RawHttp raw, int n) throws IOException {
        byte[] bytes = raw.readBytes(n);
        if (bytes.length != n) {
            throw new IOException("connection closed after " + bytes.length + " of " + n + " bytes");
        }
        return bytes;
    }
}
