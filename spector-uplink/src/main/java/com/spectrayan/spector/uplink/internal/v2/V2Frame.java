package com.spectrayan.spector.uplink.internal.v2;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.UplinkException;
import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCounted;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;

/**
 * One frame of uplink protocol v2 (docs/PROTOCOL.md section 9.2), one record per type; {@link
 * V2FrameCodec} reads and writes them. A type the reader does not know is skipped by the codec, so
 * it has no record.
 *
 * <p>Each record checks its bounds in its constructor, so a sender building one and the codec
 * reading one apply the same rules: the kind of stream (DATA, HEADERS and RESET on a stream,
 * 1..2^31-1; PING, GOAWAY and CALL on 0, so they have no stream id of their own; WINDOW_UPDATE on
 * either), each value's range and each payload's length. A refusal is a {@link
 * V2ProtocolException} connection error ({@code FRAME_SIZE_ERROR} for a length, else {@code
 * PROTOCOL_ERROR}).
 *
 * <p>Only {@link Data} holds a buffer: it is {@link ReferenceCounted}, and whoever holds a {@code
 * Data} owns one reference, released once ({@code ReferenceCountUtil.release(frame)} is safe on
 * every frame). The other records hold plain values, not copied: do not change the bytes of a
 * {@link Headers} after building one.
 */
public sealed interface V2Frame
        permits V2Frame.Data,
                V2Frame.Headers,
                V2Frame.Reset,
                V2Frame.WindowUpdate,
                V2Frame.Ping,
                V2Frame.GoAway,
                V2Frame.Call {
    /** Returns the frame's stream id: 0 for a frame of the connection. */
    int streamId();

    /**
     * DATA ({@code 0x0}): body bytes of a stream, 0..1 MiB ({@link V2Limits#MAX_FRAME_PAYLOAD}); a
     * sender slices at {@link V2Limits#DATA_SLICE}. Counted against both flow-control windows.
     *
     * <p>Owns one reference to {@code payload}: the holder releases the frame (or its payload)
     * once. The codec's decoder delivers the payload as a retained slice of the WebSocket message
     * (no copy); its encoder takes the frame's reference over. A constructor that throws leaves
     * the payload to the caller.
     *
     * @param streamId the stream, 1..2^31-1
     * @param payload the bytes, from its reader index to its writer index
     * @param endStream whether this is the last frame of the stream in its direction (END_STREAM)
     */
    record Data(int streamId, ByteBuf payload, boolean endStream) implements V2Frame, ReferenceCounted {
        public Data {
            V2FrameRules.stream("DATA", streamId);
            requireNonNull(payload, "payload");
            V2FrameRules.payload("DATA", streamId, payload.readableBytes(), 0, V2Limits.MAX_FRAME_PAYLOAD);
        }

        /** Returns the payload's length in bytes: what the frame takes from the windows. */
        public int length() {
            return payload.readableBytes();
        }

        @Override
        public int refCnt() {
            return payload.refCnt();
        }

        @Override
        public Data retain() {
            payload.retain();
            return this;
        }

        @Override
        public Data retain(int increment) {
            payload.retain(increment);
            return this;
        }

        @Override
        public Data touch() {
            payload.touch();
            return this;
        }

        @Override
        public Data touch(Object hint) {
            payload.touch(hint);
            return this;
        }

        @Override
        public boolean release() {
            return payload.release();
        }

        @Override
        public boolean release(int decrement) {
            return payload.release(decrement);
        }
    }

    /**
     * HEADERS ({@code 0x1}): a request head (gateway to worker, opening the stream) or a response
     * head (worker to gateway) as one UTF-8 JSON object of at most 256 KiB ({@link
     * V2Limits#MAX_HEADERS_PAYLOAD}). The codec does not read the JSON: {@link RequestHead#parse}
     * and {@link ResponseHead#parse} do, and a head that breaks its schema is a stream error.
     *
     * @param streamId the stream, 1..2^31-1
     * @param json the head's UTF-8 JSON bytes, held as given (not copied)
     * @param endStream whether no DATA follows in this direction (END_STREAM)
     */
    // The bytes are the head as it crossed; equals and hashCode below compare their content.
    @SuppressWarnings("ArrayRecordComponent")
    record Headers(int streamId, byte[] json, boolean endStream) implements V2Frame {
        public Headers {
            V2FrameRules.stream("HEADERS", streamId);
            requireNonNull(json, "json");
            V2FrameRules.payload("HEADERS", streamId, json.length, 0, V2Limits.MAX_HEADERS_PAYLOAD);
        }

        @Override
        public boolean equals(@Nullable Object o) {
            return o instanceof Headers h
                    && h.streamId == streamId
                    && h.endStream == endStream
                    && Arrays.equals(h.json, json);
        }

        @Override
        public int hashCode() {
            return (31 * Integer.hashCode(streamId) + Arrays.hashCode(json)) * 31 + Boolean.hashCode(endStream);
        }

        @Override
        public String toString() {
            return "Headers[streamId=" + streamId + ", json=" + json.length + " bytes, endStream=" + endStream + "]";
        }
    }

    /**
     * RESET ({@code 0x3}): the stream ends at once, both ways. A 4-byte code, then optionally v1's
     * error object without {@code type} and {@code id} ({@code {"code":..., "message":...,
     * "details":{...}}}), at most 8 KiB in all ({@link V2Limits#MAX_RESET_PAYLOAD}).
     *
     * <p>The error object is held as it crossed, so the bound applies to the very bytes on the
     * wire (a peer's object need not be written as this side would write it). The constructor
     * reads it by v1's rules for an error frame's members (a code this side does not know reads
     * as INTERNAL) and refuses one that is not such an object; {@link #error()} reads it again.
     *
     * @param streamId the stream, 1..2^31-1
     * @param code why; {@link V2ErrorCode#RELAY_ERROR} requires an error object
     * @param errorObject the error object's UTF-8 JSON, or no bytes for none; held as given
     */
    // The bytes are the object as it crossed; equals and hashCode below compare their content.
    @SuppressWarnings("ArrayRecordComponent")
    record Reset(int streamId, V2ErrorCode code, byte[] errorObject) implements V2Frame {
        /** Bytes of the code before the optional error object. */
        static final int CODE_BYTES = 4;

        public Reset {
            V2FrameRules.stream("RESET", streamId);
            requireNonNull(code, "code");
            requireNonNull(errorObject, "errorObject");
            V2FrameRules.payload(
                    "RESET", streamId, CODE_BYTES + (long) errorObject.length, CODE_BYTES, V2Limits.MAX_RESET_PAYLOAD);
            if (errorObject.length == 0 && code == V2ErrorCode.RELAY_ERROR) {
                throw V2ProtocolException.connectionError(
                        V2ErrorCode.PROTOCOL_ERROR, streamId, "RESET: RELAY_ERROR without an error object");
            }
            if (errorObject.length > 0) {
                read(streamId, errorObject);
            }
        }

        /** A RESET without an error object. */
        public Reset(int streamId, V2ErrorCode code) {
            this(streamId, code, new byte[0]);
        }

        /**
         * Returns the RESET carrying {@code error} (its id is ignored: the stream id stands for it).
         *
         * @throws V2ProtocolException {@code FRAME_SIZE_ERROR} when the object does not fit
         */
        public static Reset of(int streamId, V2ErrorCode code, Frame.ErrorFrame error) {
            return new Reset(streamId, code, FrameCodec.encodeErrorObject(error));
        }

        /**
         * Returns the RELAY_ERROR reset of a relay that failed, its message cut (as {@link
         * Frame.ErrorFrame#of} cuts at 4096 chars) until the payload fits in {@link
         * V2Limits#MAX_RESET_PAYLOAD}, its details dropped when even an empty message does not.
         */
        public static Reset relayError(int streamId, SpectorException failure) {
            V2FrameRules.stream("RESET", streamId);
            Frame.ErrorFrame error = Frame.ErrorFrame.of(streamId, failure);
            int room = V2Limits.MAX_RESET_PAYLOAD - CODE_BYTES;
            byte[] object = FrameCodec.encodeErrorObject(error);
            while (object.length > room && !error.message().isEmpty()) {
                String message = error.message();
                // Drop chars from the end worth the bytes over (as UTF-8; an escaped char is more, and
                // the loop goes round again), never half a surrogate pair.
                int end = message.length();
                for (int dropped = 0; end > 0 && dropped < object.length - room; end--) {
                    char c = message.charAt(end - 1);
                    dropped += c < 0x80 ? 1 : c < 0x800 || Character.isSurrogate(c) ? 2 : 3;
                }
                if (end > 0 && Character.isHighSurrogate(message.charAt(end - 1))) {
                    end--;
                }
                error = new Frame.ErrorFrame(streamId, error.code(), message.substring(0, end), error.details());
                object = FrameCodec.encodeErrorObject(error);
            }
            if (object.length > room) {
                error = new Frame.ErrorFrame(streamId, error.code(), "", JsonNodeFactory.instance.objectNode());
                object = FrameCodec.encodeErrorObject(error);
            }
            return new Reset(streamId, V2ErrorCode.RELAY_ERROR, object);
        }

        /**
         * Returns the error object as the v1 error frame of id {@code streamId} ({@link
         * Frame.ErrorFrame#toException()} gives the relay's failure), or null when there is none.
         */
        public Frame.@Nullable ErrorFrame error() {
            return errorObject.length == 0 ? null : read(streamId, errorObject);
        }

        private static Frame.ErrorFrame read(int streamId, byte[] errorObject) {
            try {
                return FrameCodec.decodeErrorObject(errorObject, 0, errorObject.length, streamId);
            } catch (UplinkException e) {
                throw V2ProtocolException.connectionError(
                        V2ErrorCode.PROTOCOL_ERROR, streamId, "RESET: error object: " + e.getMessage(), e);
            }
        }

        @Override
        public boolean equals(@Nullable Object o) {
            return o instanceof Reset r
                    && r.streamId == streamId
                    && r.code == code
                    && Arrays.equals(r.errorObject, errorObject);
        }

        @Override
        public int hashCode() {
            return (31 * Integer.hashCode(streamId) + code.hashCode()) * 31 + Arrays.hashCode(errorObject);
        }

        @Override
        public String toString() {
            return "Reset[streamId=" + streamId + ", code=" + code + ", errorObject="
                    + new String(errorObject, StandardCharsets.UTF_8) + "]";
        }
    }

    /**
     * WINDOW_UPDATE ({@code 0x8}): the receiver grants {@code increment} more bytes of DATA, on a
     * stream or (0) the connection. On the wire 4 bytes whose high bit is reserved.
     *
     * @param streamId the stream, or 0 for the connection's window
     * @param increment the credit in bytes, 1..2^31-1 ({@link V2Limits#MAX_WINDOW}); 0 is refused
     */
    record WindowUpdate(int streamId, int increment) implements V2Frame {
        public WindowUpdate {
            V2FrameRules.anyStream("WINDOW_UPDATE", "stream", streamId);
            if (increment < 1) {
                throw V2ProtocolException.connectionError(
                        V2ErrorCode.PROTOCOL_ERROR,
                        streamId,
                        "WINDOW_UPDATE: increment " + increment + " (expected: 1.." + V2Limits.MAX_WINDOW + ")");
            }
        }
    }

    /**
     * PING ({@code 0x6}), on the connection: 8 opaque bytes, answered by a PING with ACK and the
     * same bytes (the round trip that sizes the windows, section 9.5).
     *
     * @param opaque the 8 bytes, big-endian
     * @param ack whether this answers a PING (ACK)
     */
    record Ping(long opaque, boolean ack) implements V2Frame {
        @Override
        public int streamId() {
            return 0;
        }
    }

    /**
     * GOAWAY ({@code 0x7}), on the connection: no stream above {@code lastStreamId} will be
     * processed (a draining gateway: {@code NO_ERROR}, the highest id it opened), or a connection
     * error's code. On the wire a 4-byte last stream id (high bit reserved), a 4-byte code, then
     * the reason, at most 1 KiB of UTF-8 ({@link V2Limits#MAX_GOAWAY_REASON}).
     *
     * @param lastStreamId the last stream processed, 0..2^31-1 (0: none)
     * @param code why
     * @param reason for humans, e.g. {@code gateway draining: reconnect}
     */
    record GoAway(int lastStreamId, V2ErrorCode code, String reason) implements V2Frame {
        /** Bytes of the last stream id and the code before the reason. */
        static final int FIXED_BYTES = 8;

        public GoAway {
            V2FrameRules.anyStream("GOAWAY", "last stream id", lastStreamId);
            requireNonNull(code, "code");
            int reasonBytes = V2FrameRules.utf8("GOAWAY", 0, requireNonNull(reason, "reason")).length;
            V2FrameRules.payload(
                    "GOAWAY", 0, FIXED_BYTES + reasonBytes, FIXED_BYTES, FIXED_BYTES + V2Limits.MAX_GOAWAY_REASON);
        }

        @Override
        public int streamId() {
            return 0;
        }
    }

    /**
     * CALL ({@code 0xA}), on the connection: one v1 frame ({@code call}, {@code result} or {@code
     * error}, section 2) as UTF-8 JSON, at most 64 KiB ({@link V2Limits#MAX_CALL_PAYLOAD}). The
     * codec checks only the length and that the bytes are UTF-8: {@link #frame()} reads the v1
     * frame, so a corrupt call with a readable id is answered BAD_REQUEST as in v1, not a
     * connection error.
     *
     * @param json the v1 frame's text
     */
    record Call(String json) implements V2Frame {
        public Call {
            V2FrameRules.payload(
                    "CALL",
                    0,
                    V2FrameRules.utf8("CALL", 0, requireNonNull(json, "json")).length,
                    0,
                    V2Limits.MAX_CALL_PAYLOAD);
        }

        /**
         * Returns the CALL carrying a v1 frame.
         *
         * @throws IllegalArgumentException for a push (pushes are not used on a v2 link)
         * @throws V2ProtocolException {@code FRAME_SIZE_ERROR} when its text is over 64 KiB
         */
        public static Call of(Frame frame) {
            if (frame instanceof Frame.Push) {
                throw new IllegalArgumentException("frame: a push (expected: a call, result or error)");
            }
            return new Call(FrameCodec.encode(frame));
        }

        /**
         * Reads the v1 frame, by v1's rules (section 2).
         *
         * @throws CorruptFrameException when the text is not a v1 frame, or is a push (naming {@code
         *     type}), with the frame's id when it was read
         */
        public Frame frame() {
            Frame frame = FrameCodec.decode(json);
            if (frame instanceof Frame.Push) {
                throw CorruptFrameException.of(
                        "type", "push (expected: call, result or error on a v2 link)", frame.id());
            }
            return frame;
        }

        @Override
        public int streamId() {
            return 0;
        }
    }
}
