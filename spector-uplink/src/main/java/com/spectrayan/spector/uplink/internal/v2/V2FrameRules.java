package com.spectrayan.spector.uplink.internal.v2;

import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The checks the frame records (building a frame) and {@link V2FrameCodec} (reading one) share, so
 * both sides apply the same bounds (docs/PROTOCOL.md section 9.2). Each throws a connection error:
 * {@code PROTOCOL_ERROR} for the wrong kind of stream or a bad value, {@code FRAME_SIZE_ERROR} for
 * a length. Messages name the frame type, the value and what was expected.
 */
final class V2FrameRules {
    private V2FrameRules() {}

    /** Refuses a stream id that is not a stream (1..2^31-1): DATA, HEADERS and RESET. */
    static int stream(String type, int streamId) {
        if (streamId <= 0) {
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.PROTOCOL_ERROR,
                    0,
                    type + ": stream " + streamId + " (expected: a stream, 1.." + V2Limits.MAX_STREAM_ID + ")");
        }
        return streamId;
    }

    /** Refuses a stream id other than 0, the connection: PING, GOAWAY and CALL. */
    static void connection(String type, int streamId) {
        if (streamId != 0) {
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.PROTOCOL_ERROR, streamId, type + ": stream " + streamId + " (expected: 0)");
        }
    }

    /** Refuses a stream id outside 0..2^31-1 (a stream, or 0 for the connection): WINDOW_UPDATE. */
    static int anyStream(String type, String field, int streamId) {
        if (streamId < 0) {
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.PROTOCOL_ERROR,
                    0,
                    type + ": " + field + " " + streamId + " (expected: 0.." + V2Limits.MAX_STREAM_ID + ")");
        }
        return streamId;
    }

    /** Refuses a payload length outside {@code min..max} bytes with {@code FRAME_SIZE_ERROR}. */
    static void payload(String type, int streamId, long length, int min, int max) {
        if (length < min || length > max) {
            String expected = min == max ? String.valueOf(min) : min == 0 ? "<= " + max : min + ".." + max;
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.FRAME_SIZE_ERROR,
                    streamId,
                    type + ": payload " + length + " bytes (expected: " + expected + ")");
        }
    }

    /**
     * Returns text as UTF-8, refusing what UTF-8 cannot carry (an unpaired surrogate) rather than
     * writing a replacement the peer would read as different text.
     */
    static byte[] utf8(String type, int streamId, String text) {
        try {
            ByteBuffer out = StandardCharsets.UTF_8
                    .newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(text));
            byte[] bytes = new byte[out.remaining()];
            out.get(bytes);
            return bytes;
        } catch (CharacterCodingException e) {
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.PROTOCOL_ERROR,
                    streamId,
                    type + ": text with an unpaired surrogate (expected: UTF-16)",
                    e);
        }
    }

    /** Returns {@code length} bytes at {@code index} read as UTF-8, refusing bytes that are not UTF-8. */
    static String text(String type, int streamId, ByteBuf buf, int index, int length) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(buf.nioBuffer(index, length))
                    .toString();
        } catch (CharacterCodingException e) {
            throw V2ProtocolException.connectionError(
                    V2ErrorCode.PROTOCOL_ERROR, streamId, type + ": payload is not UTF-8", e);
        }
    }
}
