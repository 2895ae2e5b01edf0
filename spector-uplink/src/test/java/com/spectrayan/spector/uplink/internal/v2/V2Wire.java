package com.spectrayan.spector.uplink.internal.v2;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

/** Bytes, messages and refusals the v2 codec tests share. Every buffer comes from the leak-tracked allocator. */
final class V2Wire {
    private V2Wire() {}

    /** Returns the bytes of hex text; spaces are ignored. */
    static byte[] hex(String hex) {
        return HexFormat.of().parseHex(hex.replace(" ", ""));
    }

    /** Returns a message buffer (tracked by the leak detector) holding {@code bytes}. */
    static ByteBuf message(byte[] bytes) {
        return ByteBufAllocator.DEFAULT.buffer(bytes.length).writeBytes(bytes);
    }

    /** Returns the readable bytes of a buffer, its indices unmoved. */
    static byte[] bytes(ByteBuf buf) {
        return ByteBufUtil.getBytes(buf);
    }

    /** Returns the bytes of a frame (taking a DATA frame's reference), releasing the buffer. */
    static byte[] encode(V2Frame frame) {
        ByteBuf out = V2FrameCodec.encode(frame, ByteBufAllocator.DEFAULT);
        try {
            return bytes(out);
        } finally {
            out.release();
        }
    }

    /** Returns the bytes of frames back to back, as one message. */
    static byte[] concat(byte[]... parts) {
        int length = 0;
        for (byte[] p : parts) {
            length += p.length;
        }
        byte[] all = new byte[length];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, all, at, p.length);
            at += p.length;
        }
        return all;
    }

    /** Decodes a message's bytes; the caller releases the frames ({@link #release}). */
    static List<V2Frame> decode(byte[] bytes) {
        ByteBuf message = message(bytes);
        try {
            return decode(message);
        } finally {
            message.release();
        }
    }

    /**
     * Decodes a message; the caller releases the frames. Frames delivered before a refusal are
     * released here, then the refusal is rethrown.
     */
    static List<V2Frame> decode(ByteBuf message) {
        List<V2Frame> frames = new ArrayList<>();
        try {
            V2FrameCodec.decodeAll(message, frames::add);
        } catch (RuntimeException e) {
            release(frames);
            throw e;
        }
        return frames;
    }

    /** Decodes a message that holds exactly one frame; the caller releases it. */
    static V2Frame decodeOne(byte[] bytes) {
        List<V2Frame> frames = decode(bytes);
        assertThat(frames).hasSize(1);
        return frames.get(0);
    }

    /** Releases every frame (a no-op but for DATA). */
    static void release(List<V2Frame> frames) {
        frames.forEach(ReferenceCountUtil::release);
    }

    /** Returns the protocol error {@code call} throws, failing when it throws none or another. */
    static V2ProtocolException refusal(ThrowingCallable call) {
        V2ProtocolException e = catchThrowableOfType(V2ProtocolException.class, call);
        assertThat(e).as("a V2ProtocolException").isNotNull();
        return e;
    }

    /** Asserts that {@code call} is a connection error with {@code code}; returns it. */
    static V2ProtocolException connectionError(V2ErrorCode code, ThrowingCallable call) {
        V2ProtocolException e = refusal(call);
        assertThat(e.code()).as("code of %s", e.getMessage()).isEqualTo(code);
        assertThat(e.isConnectionError())
                .as("a connection error: %s", e.getMessage())
                .isTrue();
        return e;
    }

    /** Returns the header of a frame: length (24), type, flags, stream id (R bit as given). */
    static byte[] header(int length, int type, int flags, int streamId) {
        return new byte[] {
            (byte) (length >>> 16),
            (byte) (length >>> 8),
            (byte) length,
            (byte) type,
            (byte) flags,
            (byte) (streamId >>> 24),
            (byte) (streamId >>> 16),
            (byte) (streamId >>> 8),
            (byte) streamId
        };
    }

    /** Returns a frame's bytes: its header, then {@code payload}. */
    static byte[] frame(int type, int flags, int streamId, byte[] payload) {
        return concat(header(payload.length, type, flags, streamId), payload);
    }
}
