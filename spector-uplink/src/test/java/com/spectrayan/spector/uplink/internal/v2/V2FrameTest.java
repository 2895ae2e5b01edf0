package com.spectrayan.spector.uplink.internal.v2;

import static com.spectrayan.spector.uplink.internal.v2.V2Wire.connectionError;
import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The bounds each frame record checks in its constructor (docs/PROTOCOL.md section 9.2). */
final class V2FrameTest {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private static ByteBuf buffer(int length) {
        return ByteBufAllocator.DEFAULT.buffer(length).writeZero(length);
    }

    /** Returns a string of {@code n} chars, each {@code bytesPerChar} bytes in UTF-8 (1, 2 or 3). */
    private static String text(int n, int bytesPerChar) {
        char c = bytesPerChar == 1 ? 'a' : bytesPerChar == 2 ? 'é' : '€';
        return String.valueOf(c).repeat(n);
    }

    /** Returns an error object of exactly {@code bytes} bytes (at least 50), padded in its details. */
    private static byte[] errorObject(int bytes) {
        int empty = FrameCodec.encodeErrorObject(new Frame.ErrorFrame(
                        1, ErrorCode.INTERNAL, "", JSON.objectNode().put("p", "")))
                .length;
        byte[] object = FrameCodec.encodeErrorObject(new Frame.ErrorFrame(
                1, ErrorCode.INTERNAL, "", JSON.objectNode().put("p", text(bytes - empty, 1))));
        assertThat(object).hasSize(bytes);
        return object;
    }

    private static V2Frame.Reset relayError(int streamId, String errorObject) {
        return new V2Frame.Reset(streamId, V2ErrorCode.RELAY_ERROR, errorObject.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void data_payloadAtTheFrameLimit_isBuilt_andOnePast_isFrameSizeError() {
        ByteBuf atLimit = buffer(V2Limits.MAX_FRAME_PAYLOAD);
        V2Frame.Data data = new V2Frame.Data(1, atLimit, false);
        assertThat(data.length()).isEqualTo(1024 * 1024);
        data.release();

        ByteBuf past = buffer(V2Limits.MAX_FRAME_PAYLOAD + 1);
        try {
            connectionError(V2ErrorCode.FRAME_SIZE_ERROR, () -> new V2Frame.Data(1, past, false));
            assertThat(past.refCnt()).as("a refused payload stays the caller's").isEqualTo(1);
        } finally {
            past.release();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, -1, Integer.MIN_VALUE})
    void data_notAStream_isProtocolError(int streamId) {
        ByteBuf payload = buffer(1);
        try {
            V2ProtocolException e =
                    connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.Data(streamId, payload, true));
            assertThat(e.reason()).isEqualTo("DATA: stream " + streamId + " (expected: a stream, 1..2147483647)");
        } finally {
            payload.release();
        }
    }

    @Test
    void data_highestStreamId_isBuilt() {
        V2Frame.Data data = new V2Frame.Data(V2Limits.MAX_STREAM_ID, buffer(0), true);
        assertThat(data.streamId()).isEqualTo(Integer.MAX_VALUE);
        data.release();
    }

    @Test
    void data_referenceCount_isThePayloads() {
        ByteBuf payload = buffer(3);
        V2Frame.Data data = new V2Frame.Data(1, payload, false);

        assertThat(data.retain()).isSameAs(data);
        assertThat(payload.refCnt()).isEqualTo(2);
        assertThat(data.release()).isFalse();
        assertThat(ReferenceCountUtil.release(data))
                .as("released through the frame")
                .isTrue();
        assertThat(payload.refCnt()).isZero();
    }

    @Test
    void headers_atTheHeadersLimit_isBuilt_andOnePast_isFrameSizeError() {
        assertThat(new V2Frame.Headers(1, new byte[V2Limits.MAX_HEADERS_PAYLOAD], false).json())
                .hasSize(256 * 1024);
        V2ProtocolException e = connectionError(
                V2ErrorCode.FRAME_SIZE_ERROR,
                () -> new V2Frame.Headers(1, new byte[V2Limits.MAX_HEADERS_PAYLOAD + 1], false));
        assertThat(e.reason()).isEqualTo("HEADERS: payload 262145 bytes (expected: <= 262144)");
    }

    @Test
    void headers_onTheConnection_isProtocolError() {
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.Headers(0, new byte[2], true));
    }

    @Test
    void headers_equalContent_isEqual() {
        assertThat(new V2Frame.Headers(3, "{}".getBytes(StandardCharsets.UTF_8), true))
                .isEqualTo(new V2Frame.Headers(3, "{}".getBytes(StandardCharsets.UTF_8), true))
                .hasSameHashCodeAs(new V2Frame.Headers(3, "{}".getBytes(StandardCharsets.UTF_8), true))
                .isNotEqualTo(new V2Frame.Headers(3, "{}".getBytes(StandardCharsets.UTF_8), false))
                .hasToString("Headers[streamId=3, json=2 bytes, endStream=true]");
    }

    @Test
    void reset_payloadAtTheResetLimit_isBuilt_andOnePast_isFrameSizeError() {
        int room = V2Limits.MAX_RESET_PAYLOAD - 4;
        V2Frame.Reset atLimit = new V2Frame.Reset(1, V2ErrorCode.RELAY_ERROR, errorObject(room));
        assertThat(atLimit.errorObject().length + 4).isEqualTo(8 * 1024);

        V2ProtocolException e = connectionError(
                V2ErrorCode.FRAME_SIZE_ERROR,
                () -> new V2Frame.Reset(1, V2ErrorCode.RELAY_ERROR, errorObject(room + 1)));
        assertThat(e.reason()).isEqualTo("RESET: payload 8193 bytes (expected: 4..8192)");
    }

    @Test
    void reset_relayErrorWithoutAnObject_isProtocolError() {
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.Reset(1, V2ErrorCode.RELAY_ERROR));
        assertThat(new V2Frame.Reset(1, V2ErrorCode.CANCEL).error()).isNull();
    }

    @Test
    void reset_onTheConnection_isProtocolError() {
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.Reset(0, V2ErrorCode.CANCEL));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "[]",
                "{\"code\":\"INTERNAL\",\"message\":\"m\"}",
                "{\"code\":7,\"message\":\"m\",\"details\":{}}",
                "{\"code\":\"INTERNAL\",\"message\":\"m\",\"details\":{}} x",
                "{\"code\":\"INTERNAL\",\"code\":\"INTERNAL\",\"message\":\"m\",\"details\":{}}"
            })
    void reset_errorObjectNotV1s_isProtocolError(String object) {
        byte[] bytes = object.getBytes(StandardCharsets.UTF_8);
        if (bytes.length == 0) {
            bytes = new byte[] {(byte) 0xff};
        }
        byte[] given = bytes;
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.Reset(1, V2ErrorCode.RELAY_ERROR, given));
    }

    @Test
    void reset_errorObject_readsAsTheErrorFrameOfTheStream() {
        V2Frame.Reset reset = relayError(
                9,
                "{\"code\":\"RELAY_TARGET_MISSING\",\"message\":\"no relay target app\",\"details\":{\"target\":\"app\"}}");

        Frame.ErrorFrame error = requireNonNull(reset.error(), "error");
        assertThat(error.id()).isEqualTo(9);
        SpectorException failure = error.toException();
        assertThat(failure.code()).isEqualTo(ErrorCode.RELAY_TARGET_MISSING);
        assertThat(failure.getMessage()).isEqualTo("no relay target app");
        assertThat(failure.details()).isEqualTo(Map.of("target", "app"));
    }

    @Test
    void reset_errorObjectWithAnUnknownCode_readsAsInternal() {
        V2Frame.Reset reset = relayError(
                1, "{\"code\":\"FROM_THE_FUTURE\",\"message\":\"m\",\"details\":{},\"type\":\"x\",\"id\":-1}");

        assertThat(reset.error()).isEqualTo(new Frame.ErrorFrame(1, ErrorCode.INTERNAL, "m", JSON.objectNode()));
    }

    @Test
    void relayError_longMessageOfWideChars_isCutToFitTheResetLimit() {
        // 4096 chars of 3 bytes: 12 KiB of message, more than a RESET holds.
        SpectorException failure = SpectorException.of(ErrorCode.INTERNAL, text(Frame.MAX_MESSAGE_CHARS, 3));

        V2Frame.Reset reset = V2Frame.Reset.relayError(5, failure);

        assertThat(4 + reset.errorObject().length).isLessThanOrEqualTo(V2Limits.MAX_RESET_PAYLOAD);
        assertThat(4 + reset.errorObject().length).as("cut no more than needed").isGreaterThan(8 * 1024 - 3);
        Frame.ErrorFrame error = requireNonNull(reset.error(), "error");
        assertThat(error.message()).startsWith("€€€");
        assertThat(reset.code()).isEqualTo(V2ErrorCode.RELAY_ERROR);
    }

    @Test
    void relayError_shortMessage_isKeptWhole() {
        SpectorException failure =
                SpectorException.of(ErrorCode.RELAY_TARGET_MISSING, "no relay target app", Map.of("target", "app"));

        V2Frame.Reset reset = V2Frame.Reset.relayError(5, failure);

        assertThat(reset.error()).isEqualTo(Frame.ErrorFrame.of(5, failure));
    }

    @Test
    void windowUpdate_increments_oneToTwoToThe31MinusOne() {
        assertThat(new V2Frame.WindowUpdate(0, 1).increment()).isEqualTo(1);
        assertThat(new V2Frame.WindowUpdate(V2Limits.MAX_STREAM_ID, V2Limits.MAX_WINDOW).increment())
                .isEqualTo(Integer.MAX_VALUE);
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.WindowUpdate(1, 0));
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.WindowUpdate(0, Integer.MIN_VALUE));
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.WindowUpdate(-1, 1));
    }

    @Test
    void goAway_reasonAtTheLimitInBytes_isBuilt_andOnePast_isFrameSizeError() {
        assertThat(new V2Frame.GoAway(0, V2ErrorCode.NO_ERROR, text(V2Limits.MAX_GOAWAY_REASON, 1)).reason())
                .hasSize(1024);
        assertThat(new V2Frame.GoAway(0, V2ErrorCode.NO_ERROR, text(512, 2)).reason())
                .as("512 chars of 2 bytes: 1 KiB")
                .hasSize(512);

        V2ProtocolException e = connectionError(
                V2ErrorCode.FRAME_SIZE_ERROR, () -> new V2Frame.GoAway(0, V2ErrorCode.NO_ERROR, text(513, 2)));
        assertThat(e.reason()).isEqualTo("GOAWAY: payload 1034 bytes (expected: 8..1032)");
        connectionError(
                V2ErrorCode.FRAME_SIZE_ERROR,
                () -> new V2Frame.GoAway(0, V2ErrorCode.NO_ERROR, text(V2Limits.MAX_GOAWAY_REASON + 1, 1)));
    }

    @Test
    void goAway_lastStreamIds_zeroToTwoToThe31MinusOne() {
        assertThat(new V2Frame.GoAway(V2Limits.MAX_STREAM_ID, V2ErrorCode.NO_ERROR, "").lastStreamId())
                .isEqualTo(Integer.MAX_VALUE);
        assertThat(new V2Frame.GoAway(0, V2ErrorCode.NO_ERROR, "").streamId()).isZero();
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.GoAway(-1, V2ErrorCode.NO_ERROR, ""));
    }

    @Test
    void goAway_unpairedSurrogate_isProtocolError() {
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> new V2Frame.GoAway(0, V2ErrorCode.NO_ERROR, "a\ud800"));
    }

    @Test
    void call_atTheCallLimitInBytes_isBuilt_andOnePast_isFrameSizeError() {
        assertThat(new V2Frame.Call(text(V2Limits.MAX_CALL_PAYLOAD, 1)).json()).hasSize(64 * 1024);
        assertThat(new V2Frame.Call(text(V2Limits.MAX_CALL_PAYLOAD / 2, 2)).streamId())
                .isZero();
        connectionError(V2ErrorCode.FRAME_SIZE_ERROR, () -> new V2Frame.Call(text(V2Limits.MAX_CALL_PAYLOAD + 1, 1)));
        connectionError(
                V2ErrorCode.FRAME_SIZE_ERROR, () -> new V2Frame.Call(text(V2Limits.MAX_CALL_PAYLOAD / 2 + 1, 2)));
    }

    @Test
    void call_ofAV1Frame_readsItBack() {
        Frame call = new Frame.Call(1, "status.get", JSON.objectNode());

        V2Frame.Call frame = V2Frame.Call.of(call);

        assertThat(frame.json()).isEqualTo("{\"type\":\"call\",\"id\":1,\"op\":\"status.get\",\"input\":{}}");
        assertThat(frame.frame()).isEqualTo(call);
    }

    @Test
    void call_corruptV1Frame_isRefusedByV1sRules_withItsId() {
        V2Frame.Call frame = new V2Frame.Call("{\"type\":\"call\",\"id\":7,\"op\":\"BAD\",\"input\":{}}");

        assertThatThrownBy(frame::frame).isInstanceOfSatisfying(CorruptFrameException.class, e -> {
            assertThat(e.field()).isEqualTo("op");
            assertThat(e.frameId()).hasValue(7);
        });
    }

    @Test
    void call_push_isRefused() {
        Frame push = new Frame.Push(3, "relay-head", JSON.objectNode());

        assertThatThrownBy(() -> V2Frame.Call.of(push)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new V2Frame.Call(FrameCodec.encode(push)).frame())
                .isInstanceOfSatisfying(CorruptFrameException.class, e -> {
                    assertThat(e.field()).isEqualTo("type");
                    assertThat(e.frameId()).hasValue(3);
                });
    }

    @Test
    void ping_isOnTheConnection() {
        assertThat(new V2Frame.Ping(-1L, true).streamId()).isZero();
    }

    @Test
    void streamError_onTheConnection_isRefused() {
        assertThatThrownBy(() -> V2ProtocolException.streamError(0, V2ErrorCode.CANCEL, "x", null))
                .isInstanceOf(IllegalArgumentException.class);
        V2ProtocolException e = V2ProtocolException.streamError(3, V2ErrorCode.CANCEL, "gone", null);
        assertThat(e.isConnectionError()).isFalse();
        assertThat(e.streamId()).isEqualTo(3);
        assertThat(e).hasMessage("CANCEL (stream 3): gone");
        assertThat(e.getStackTrace())
                .as("an expected failure carries no stack trace")
                .isEmpty();
    }
}
