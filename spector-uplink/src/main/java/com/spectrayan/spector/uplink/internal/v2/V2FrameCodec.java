package com.spectrayan.spector.uplink.internal.v2;

import static java.util.Objects.requireNonNull;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.CompositeByteBuf;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Reads and writes the binary frames of uplink protocol v2 (docs/PROTOCOL.md section 9.2). Every
 * frame is a 9-byte header and a payload, integers big-endian, as RFC 9113 section 4.1:
 *
 * <pre>
 *  0                   1                   2                   3
 *  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 * +-----------------------------------------------+---------------+
 * |                 Length (24)                   |   Type (8)    |
 * +---------------+-----------------------------------------------+
 * |   Flags (8)   |R|             Stream Id (31)                  |
 * +---------------+-----------------------------------------------+
 * |                      Stream Id (cont.)        |  Payload ... (Length bytes)
 * +-----------------------------------------------+
 *
 * type           code  stream  payload                                          flags
 * DATA           0x0   > 0     body bytes, 0..1 MiB                             END_STREAM 0x1
 * HEADERS        0x1   > 0     UTF-8 JSON head, 0..256 KiB                      END_STREAM 0x1
 * RESET          0x3   > 0     code (32), then an optional JSON error object;
 *                              4..8 KiB
 * PING           0x6   0       opaque (64)                                      ACK 0x1
 * GOAWAY         0x7   0       R, last stream id (31), code (32), UTF-8 reason
 *                              of 0..1 KiB
 * WINDOW_UPDATE  0x8   any     R, increment (31), 1..2^31-1
 * CALL           0xA   0       one v1 frame as UTF-8 JSON, 0..64 KiB
 * </pre>
 *
 * <p>Reading (section 9.2): a type this side does not know is skipped, payload and all; a flag a
 * type does not define and every reserved bit (R) are ignored; an error code this side does not
 * know reads as {@code INTERNAL_ERROR}. Everything else that breaks a rule is a {@link
 * V2ProtocolException} connection error: {@code FRAME_SIZE_ERROR} for a length (over 1 MiB, over
 * the type's bound, not the type's fixed size, or cut short at the end of the message), {@code
 * PROTOCOL_ERROR} otherwise (the wrong kind of stream, an increment of 0, text that is not UTF-8, a
 * RESET's error object that is not v1's). No other exception leaves the decoder, whatever the
 * bytes.
 *
 * <p>Buffers: the decoder copies no large DATA payload (it is a retained slice of the message;
 * only one small beside its message is copied, {@link #decodeAll}) and the encoder never copies one (the header is a small buffer composed with it). Thread-safe and
 * stateless.
 */
public final class V2FrameCodec {
    /** The type of DATA. */
    public static final int TYPE_DATA = 0x0;

    /** The type of HEADERS. */
    public static final int TYPE_HEADERS = 0x1;

    /** The type of RESET. */
    public static final int TYPE_RESET = 0x3;

    /** The type of PING. */
    public static final int TYPE_PING = 0x6;

    /** The type of GOAWAY. */
    public static final int TYPE_GOAWAY = 0x7;

    /** The type of WINDOW_UPDATE. */
    public static final int TYPE_WINDOW_UPDATE = 0x8;

    /** The type of CALL. */
    public static final int TYPE_CALL = 0xA;

    /** The flag of DATA and HEADERS: the last frame of the stream in its direction. */
    public static final int FLAG_END_STREAM = 0x1;

    /** The flag of PING: an answer. */
    public static final int FLAG_ACK = 0x1;

    /** The 31 bits of a stream id, an increment or a last stream id; the high bit is reserved. */
    static final int VALUE_31_BITS = 0x7fff_ffff;

    /** Bytes of a PING payload. */
    static final int PING_BYTES = 8;

    /** Bytes of a WINDOW_UPDATE payload. */
    static final int WINDOW_UPDATE_BYTES = 4;

    /**
     * The most message bytes a DATA payload may keep alive per byte of its own: 8. A payload at
     * least an eighth of its message is a slice of it (a full 16 KiB slice in a packed 64 KiB
     * message is); a smaller one is copied, so what a peer makes this side hold is at most eight
     * times the window it was granted (the windows count DATA bytes only).
     */
    static final int MAX_MESSAGE_BYTES_PER_SLICED_BYTE = 8;

    private V2FrameCodec() {}

    /**
     * Returns a frame's bytes, header and payload. A {@link V2Frame.Data} is not copied: the result
     * composes a 9-byte header with the payload and takes the frame's reference over (do not
     * release the frame after; on failure it is released here).
     *
     * @param frame a frame, already checked by its constructor
     * @param alloc where the header (and a payload other than DATA's) is allocated
     * @return a buffer the caller owns (a WebSocket binary frame's content, usually)
     */
    public static ByteBuf encode(V2Frame frame, ByteBufAllocator alloc) {
        requireNonNull(frame, "frame");
        requireNonNull(alloc, "alloc");
        if (frame instanceof V2Frame.Data data) {
            return encodeData(data, alloc);
        }
        byte[] body;
        int type;
        int flags = 0;
        if (frame instanceof V2Frame.Headers headers) {
            type = TYPE_HEADERS;
            flags = headers.endStream() ? FLAG_END_STREAM : 0;
            body = headers.json();
        } else if (frame instanceof V2Frame.Reset reset) {
            type = TYPE_RESET;
            byte[] object = reset.errorObject();
            body = new byte[V2Frame.Reset.CODE_BYTES + object.length];
            putInt(body, 0, reset.code().code());
            System.arraycopy(object, 0, body, V2Frame.Reset.CODE_BYTES, object.length);
        } else if (frame instanceof V2Frame.WindowUpdate update) {
            type = TYPE_WINDOW_UPDATE;
            body = new byte[WINDOW_UPDATE_BYTES];
            putInt(body, 0, update.increment());
        } else if (frame instanceof V2Frame.Ping ping) {
            type = TYPE_PING;
            flags = ping.ack() ? FLAG_ACK : 0;
            body = new byte[PING_BYTES];
            putInt(body, 0, (int) (ping.opaque() >>> 32));
            putInt(body, 4, (int) ping.opaque());
        } else if (frame instanceof V2Frame.GoAway goAway) {
            type = TYPE_GOAWAY;
            byte[] reason = goAway.reason().getBytes(StandardCharsets.UTF_8);
            body = new byte[V2Frame.GoAway.FIXED_BYTES + reason.length];
            putInt(body, 0, goAway.lastStreamId());
            putInt(body, 4, goAway.code().code());
            System.arraycopy(reason, 0, body, V2Frame.GoAway.FIXED_BYTES, reason.length);
        } else if (frame instanceof V2Frame.Call call) {
            type = TYPE_CALL;
            body = call.json().getBytes(StandardCharsets.UTF_8);
        } else {
            throw new IllegalStateException("a v2 frame of no known type: " + frame);
        }
        ByteBuf out = alloc.buffer(V2Limits.HEADER_BYTES + body.length);
        writeHeader(out, body.length, type, flags, frame.streamId());
        return out.writeBytes(body);
    }

    private static ByteBuf encodeData(V2Frame.Data data, ByteBufAllocator alloc) {
        boolean done = false;
        try {
            ByteBuf header = alloc.buffer(V2Limits.HEADER_BYTES, V2Limits.HEADER_BYTES);
            writeHeader(header, data.length(), TYPE_DATA, data.endStream() ? FLAG_END_STREAM : 0, data.streamId());
            CompositeByteBuf out = alloc.compositeBuffer(2);
            // addComponents takes both references, and releases them should it fail.
            out.addComponents(true, header, data.payload());
            done = true;
            return out;
        } finally {
            if (!done) {
                data.release();
            }
        }
    }

    private static void writeHeader(ByteBuf out, int length, int type, int flags, int streamId) {
        out.writeMedium(length);
        out.writeByte(type);
        out.writeByte(flags);
        out.writeInt(streamId);
    }

    private static void putInt(byte[] b, int at, int value) {
        b[at] = (byte) (value >>> 24);
        b[at + 1] = (byte) (value >>> 16);
        b[at + 2] = (byte) (value >>> 8);
        b[at + 3] = (byte) value;
    }

    /**
     * Reads the frames of one WebSocket binary message, one or more whole frames back to back
     * (section 9.1), and hands each to {@code out} in order, as soon as it is read.
     *
     * <p>Buffers: {@code message} stays the caller's (read from its reader index to its writer
     * index; neither index moves, nothing is released). A {@link V2Frame.Data} delivered holds a
     * retained slice of it, which the consumer releases, only when its own payload is at least
     * {@code 1/}{@link #MAX_MESSAGE_BYTES_PER_SLICED_BYTE} of the message; a smaller one is copied
     * into a buffer of its own (an empty one too). A slice keeps its whole
     * message alive and the windows count only DATA bytes, so the decision is the frame's own: a
     * peer packing one DATA byte with a megabyte of frames of an unknown type (ignored, section
     * 9.2), or of empty DATA frames, which cost no window, would otherwise have this side hold a
     * megabyte per window byte (found by two reviews). So at most {@value
     * #MAX_MESSAGE_BYTES_PER_SLICED_BYTE} bytes are held per byte of window, and what is copied is
     * small beside its message. When a frame breaks a rule, the frames
     * before it have been delivered (and are the consumer's) and nothing of the broken one or
     * those after it was made, so nothing leaks. An exception {@code out} throws goes to the
     * caller as it is; the frame it was handed is the consumer's all the same.
     *
     * @throws V2ProtocolException a connection error, for the first frame that breaks a rule
     */
    public static void decodeAll(ByteBuf message, Consumer<? super V2Frame> out) {
        requireNonNull(message, "message");
        requireNonNull(out, "out");
        int at = message.readerIndex();
        int end = message.writerIndex();
        if (end - at > V2Limits.MAX_MESSAGE_BYTES) {
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.FRAME_SIZE_ERROR,
                    0,
                    "message: " + (end - at) + " bytes (expected: <= " + V2Limits.MAX_MESSAGE_BYTES + ")");
        }
        int messageBytes = end - at;
        do {
            if (end - at < V2Limits.HEADER_BYTES) {
                throw V2ProtocolException.connectionError(
                        V2ErrorCode.FRAME_SIZE_ERROR,
                        0,
                        "frame header: " + (end - at) + " bytes left in the message (expected: " + V2Limits.HEADER_BYTES
                                + ")");
            }
            int length = message.getUnsignedMedium(at);
            int type = message.getUnsignedByte(at + 3);
            int flags = message.getUnsignedByte(at + 4);
            int streamId = message.getInt(at + 5) & VALUE_31_BITS;
            V2FrameRules.payload("frame", streamId, length, 0, V2Limits.MAX_FRAME_PAYLOAD);
            int payload = at + V2Limits.HEADER_BYTES;
            if (end - payload < length) {
                throw V2ProtocolException.connectionError(
                        V2ErrorCode.FRAME_SIZE_ERROR,
                        streamId,
                        "frame of type 0x" + Integer.toHexString(type) + ": payload " + length + " bytes, "
                                + (end - payload) + " left in the message (expected: a whole frame)");
            }
            V2Frame frame = frame(message, type, flags, streamId, payload, length, messageBytes);
            at = payload + length;
            if (frame != null) {
                out.accept(frame);
            }
        } while (at < end);
    }

    /** Returns the frame of a header and its whole payload, or null for a type this side does not know. */
    private static @Nullable V2Frame frame(
            ByteBuf message, int type, int flags, int streamId, int at, int length, int messageBytes) {
        switch (type) {
            case TYPE_DATA -> {
                // Checked before the buffer is made, so a refusal leaves nothing to release.
                V2FrameRules.stream("DATA", streamId);
                ByteBuf payload = (long) MAX_MESSAGE_BYTES_PER_SLICED_BYTE * length >= messageBytes
                        ? message.retainedSlice(at, length)
                        : message.alloc().buffer(length).writeBytes(message, at, length);
                return new V2Frame.Data(streamId, payload, (flags & FLAG_END_STREAM) != 0);
            }
            case TYPE_HEADERS -> {
                V2FrameRules.stream("HEADERS", streamId);
                V2FrameRules.payload("HEADERS", streamId, length, 0, V2Limits.MAX_HEADERS_PAYLOAD);
                byte[] json = ByteBufUtil.getBytes(message, at, length);
                return new V2Frame.Headers(streamId, json, (flags & FLAG_END_STREAM) != 0);
            }
            case TYPE_RESET -> {
                return reset(message, streamId, at, length);
            }
            case TYPE_WINDOW_UPDATE -> {
                V2FrameRules.anyStream("WINDOW_UPDATE", "stream", streamId);
                V2FrameRules.payload("WINDOW_UPDATE", streamId, length, WINDOW_UPDATE_BYTES, WINDOW_UPDATE_BYTES);
                return new V2Frame.WindowUpdate(streamId, message.getInt(at) & VALUE_31_BITS);
            }
            case TYPE_PING -> {
                V2FrameRules.connection("PING", streamId);
                V2FrameRules.payload("PING", streamId, length, PING_BYTES, PING_BYTES);
                return new V2Frame.Ping(message.getLong(at), (flags & FLAG_ACK) != 0);
            }
            case TYPE_GOAWAY -> {
                V2FrameRules.connection("GOAWAY", streamId);
                int fixed = V2Frame.GoAway.FIXED_BYTES;
                V2FrameRules.payload("GOAWAY", streamId, length, fixed, fixed + V2Limits.MAX_GOAWAY_REASON);
                return new V2Frame.GoAway(
                        message.getInt(at) & VALUE_31_BITS,
                        V2ErrorCode.fromWire(message.getInt(at + 4)),
                        V2FrameRules.text("GOAWAY", streamId, message, at + fixed, length - fixed));
            }
            case TYPE_CALL -> {
                V2FrameRules.connection("CALL", streamId);
                V2FrameRules.payload("CALL", streamId, length, 0, V2Limits.MAX_CALL_PAYLOAD);
                return new V2Frame.Call(V2FrameRules.text("CALL", streamId, message, at, length));
            }
            default -> {
                return null; // section 9.2: a type the reader does not know is ignored
            }
        }
    }

    private static V2Frame.Reset reset(ByteBuf message, int streamId, int at, int length) {
        V2FrameRules.stream("RESET", streamId);
        int fixed = V2Frame.Reset.CODE_BYTES;
        V2FrameRules.payload("RESET", streamId, length, fixed, V2Limits.MAX_RESET_PAYLOAD);
        V2ErrorCode code = V2ErrorCode.fromWire(message.getInt(at));
        return new V2Frame.Reset(streamId, code, ByteBufUtil.getBytes(message, at + fixed, length - fixed));
    }
}
