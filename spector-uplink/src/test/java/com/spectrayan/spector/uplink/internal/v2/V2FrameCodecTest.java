package com.spectrayan.spector.uplink.internal.v2;

import static com.spectrayan.spector.uplink.internal.v2.V2Wire.bytes;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.concat;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.connectionError;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.decode;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.decodeOne;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.encode;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.frame;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.header;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.hex;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.message;
import static com.spectrayan.spector.uplink.internal.v2.V2Wire.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.uplink.internal.v2.V2Frame.Call;
import com.spectrayan.spector.uplink.internal.v2.V2Frame.Data;
import com.spectrayan.spector.uplink.internal.v2.V2Frame.GoAway;
import com.spectrayan.spector.uplink.internal.v2.V2Frame.Headers;
import com.spectrayan.spector.uplink.internal.v2.V2Frame.Ping;
import com.spectrayan.spector.uplink.internal.v2.V2Frame.Reset;
import com.spectrayan.spector.uplink.internal.v2.V2Frame.WindowUpdate;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The frame layout of docs/PROTOCOL.md section 9.2 (after RFC 9113 section 4.1): golden bytes,
 * round trips, several frames to a message, the rules a reader applies and the buffers it shares.
 */
final class V2FrameCodecTest {
    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** Returns the frame, a DATA retained once more (the encoder takes a reference). */
    private static V2Frame retained(V2Frame frame) {
        return frame instanceof Data d ? d.retain() : frame;
    }

    private static ByteBuf buffer(byte[] bytes) {
        return ByteBufAllocator.DEFAULT.buffer(bytes.length).writeBytes(bytes);
    }

    private static final String RESPONSE_HEAD = "{\"status\":204,\"headers\":[]}";
    private static final String ERROR_OBJECT =
            "{\"code\":\"RELAY_TARGET_MISSING\",\"message\":\"no relay target app\",\"details\":{\"target\":\"app\"}}";
    private static final String STATUS_CALL = "{\"type\":\"call\",\"id\":1,\"op\":\"status.get\",\"input\":{}}";

    /**
     * The golden vectors, the same as the Examples table of PROTOCOL.md section 9.2: what a peer's
     * codec must write and read. The JSON parts are the UTF-8 bytes of the text shown.
     */
    static Stream<Arguments> goldenVectors() {
        return Stream.of(
                Arguments.of(
                        "DATA stream 1, END_STREAM, \"hello\"",
                        (Supplier<V2Frame>) () -> new Data(1, buffer(utf8("hello")), true),
                        hex("000005 00 01 00000001 68656c6c6f")),
                Arguments.of(
                        "HEADERS stream 3, END_STREAM, a 204 response head",
                        (Supplier<V2Frame>) () -> new Headers(3, utf8(RESPONSE_HEAD), true),
                        concat(hex("00001b 01 01 00000003"), utf8(RESPONSE_HEAD))),
                Arguments.of(
                        "RESET stream 5, CANCEL",
                        (Supplier<V2Frame>) () -> new Reset(5, V2ErrorCode.CANCEL),
                        hex("000004 03 00 00000005 00000008")),
                Arguments.of(
                        "RESET stream 7, RELAY_ERROR and its error object",
                        (Supplier<V2Frame>) () -> new Reset(7, V2ErrorCode.RELAY_ERROR, utf8(ERROR_OBJECT)),
                        concat(hex("00005e 03 00 00000007 00000100"), utf8(ERROR_OBJECT))),
                Arguments.of(
                        "WINDOW_UPDATE connection, +65536",
                        (Supplier<V2Frame>) () -> new WindowUpdate(0, 65_536),
                        hex("000004 08 00 00000000 00010000")),
                Arguments.of(
                        "PING ACK, opaque 0x0102030405060708",
                        (Supplier<V2Frame>) () -> new Ping(0x0102030405060708L, true),
                        hex("000008 06 01 00000000 0102030405060708")),
                Arguments.of(
                        "GOAWAY last stream 5, NO_ERROR, \"gateway draining: reconnect\"",
                        (Supplier<V2Frame>) () -> new GoAway(5, V2ErrorCode.NO_ERROR, "gateway draining: reconnect"),
                        concat(hex("000023 07 00 00000000 00000005 00000000"), utf8("gateway draining: reconnect"))),
                Arguments.of(
                        "CALL status.get",
                        (Supplier<V2Frame>) () -> new Call(STATUS_CALL),
                        concat(hex("000033 0a 00 00000000"), utf8(STATUS_CALL))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("goldenVectors")
    void encode_goldenFrame_writesItsBytes(String name, Supplier<V2Frame> frame, byte[] bytes) {
        assertThat(encode(frame.get())).as(name).isEqualTo(bytes);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("goldenVectors")
    void decode_goldenBytes_readsItsFrame(String name, Supplier<V2Frame> frame, byte[] bytes) {
        V2Frame expected = frame.get();
        V2Frame read = decodeOne(bytes);
        try {
            assertThat(read).as(name).isEqualTo(expected);
        } finally {
            release(List.of(read, expected));
        }
    }

    @Test
    void goldenVectors_areTheExamplesOfProtocolMd() throws IOException {
        // Surefire runs in the module's directory.
        String doc = Files.readString(Path.of("..", "docs", "PROTOCOL.md"), StandardCharsets.UTF_8);
        String examples = doc.substring(doc.indexOf("**Examples** (golden vectors"), doc.indexOf("### 9.3 Heads"));
        List<byte[]> documented = new ArrayList<>();
        for (String row : examples.lines().toList()) {
            if (!row.startsWith("| ") || row.startsWith("| frame ")) {
                continue;
            }
            String bytesCell = row.substring(row.lastIndexOf('|', row.length() - 2) + 1);
            List<byte[]> parts = new ArrayList<>();
            Matcher part = Pattern.compile("`([^`]*)`").matcher(bytesCell);
            while (part.find()) {
                String text = part.group(1);
                parts.add(text.matches("[0-9a-f ]+") ? hex(text) : utf8(text));
            }
            documented.add(concat(parts.toArray(new byte[0][])));
        }

        assertThat(documented)
                .as("the Examples table of section 9.2, row by row")
                .containsExactlyElementsOf(
                        goldenVectors().map(a -> (byte[]) a.get()[2]).toList());
    }

    @Test
    void decode_severalFramesInOneMessage_readsThemInOrder() {
        byte[] message = concat(
                encode(new Headers(1, utf8("{}"), false)),
                encode(new Data(1, buffer(utf8("ab")), false)),
                encode(new WindowUpdate(0, 7)),
                encode(new Data(1, buffer(new byte[0]), true)),
                encode(new Ping(1, false)));

        List<V2Frame> frames = decode(message);
        try {
            assertThat(frames)
                    .extracting(f -> f.getClass().getSimpleName())
                    .containsExactly("Headers", "Data", "WindowUpdate", "Data", "Ping");
            assertThat(bytes(((Data) frames.get(1)).payload())).isEqualTo(utf8("ab"));
            assertThat(((Data) frames.get(3)).endStream()).isTrue();
            assertThat(((Data) frames.get(3)).length()).isZero();
        } finally {
            release(frames);
        }
    }

    @Test
    void decode_dataPayload_isASliceOfTheMessage_notACopy() {
        byte[] bytes = frame(V2FrameCodec.TYPE_DATA, 0, 1, utf8("abcd"));
        for (ByteBuf message : List.of(
                ByteBufAllocator.DEFAULT.heapBuffer().writeBytes(bytes),
                ByteBufAllocator.DEFAULT.directBuffer().writeBytes(bytes))) {
            List<V2Frame> frames = decode(message);
            Data data = (Data) frames.get(0);
            try {
                if (message.hasMemoryAddress()) {
                    assertThat(data.payload().memoryAddress())
                            .as("the payload's memory is the message's, 9 bytes in")
                            .isEqualTo(message.memoryAddress() + V2Limits.HEADER_BYTES);
                }
                if (message.hasArray()) {
                    assertThat(data.payload().array()).isSameAs(message.array());
                }
                message.setByte(V2Limits.HEADER_BYTES, 'X');
                assertThat(data.payload().toString(StandardCharsets.US_ASCII))
                        .as("a byte changed in the message shows in the payload")
                        .isEqualTo("Xbcd");
                assertThat(message.refCnt())
                        .as("the slice holds a reference to the message")
                        .isEqualTo(2);
            } finally {
                data.release();
                message.release();
            }
            assertThat(message.refCnt()).isZero();
        }
    }

    /**
     * A DATA frame packed with frames of a type this side ignores (section 9.2), which make most of
     * its message, gets a buffer of its own: the message is not held by it, so the windows, which
     * count DATA bytes, bound what a peer can make this side hold. Regression (a review): the
     * payload was a slice, and one DATA byte beside 1 MiB of ignored frames held the MiB, per byte
     * of window. A message mostly of DATA (several streams' frames packed) still slices.
     */
    @Test
    void decode_dataPaddedWithIgnoredFrames_isCopied_andHoldsNotItsMessage() {
        byte[] padded = concat(frame(V2FrameCodec.TYPE_DATA, 0, 1, utf8("a")), frame(0x0f, 0, 0, new byte[64 * 1024]));
        ByteBuf message = ByteBufAllocator.DEFAULT.directBuffer().writeBytes(padded);
        List<V2Frame> frames = decode(message);
        assertThat(frames).hasSize(1);
        Data data = (Data) frames.get(0);
        try {
            assertThat(message.refCnt())
                    .as("the message is not held by the copy")
                    .isEqualTo(1);
            assertThat(data.payload().capacity())
                    .as("a buffer of the DATA's size")
                    .isLessThan(1024);
            assertThat(data.payload().toString(StandardCharsets.US_ASCII)).isEqualTo("a");
        } finally {
            data.release();
            message.release();
        }

        byte[] packed = concat(
                frame(V2FrameCodec.TYPE_DATA, 0, 1, new byte[1000]),
                frame(V2FrameCodec.TYPE_DATA, 0, 3, new byte[1000]),
                frame(0x0f, 0, 0, new byte[100]));
        ByteBuf mostlyData = ByteBufAllocator.DEFAULT.directBuffer().writeBytes(packed);
        List<V2Frame> two = decode(mostlyData);
        try {
            assertThat(mostlyData.refCnt()).as("two slices hold the message").isEqualTo(3);
        } finally {
            release(two);
            mostlyData.release();
        }
    }

    /**
     * A DATA payload is a slice of its message only when it is at least an eighth of it ({@link
     * V2FrameCodec#MAX_MESSAGE_BYTES_PER_SLICED_BYTE}), whatever the rest of the message is: at
     * the bound a slice, one message byte past it a copy.
     */
    @ParameterizedTest
    @ValueSource(ints = {0, 1})
    void decode_dataAnEighthOfItsMessage_slices_oneBytePastIsCopied(int past) {
        int length = 100;
        int messageBytes = V2FrameCodec.MAX_MESSAGE_BYTES_PER_SLICED_BYTE * length + past;
        byte[] padding = new byte[messageBytes - 2 * V2Limits.HEADER_BYTES - length];
        ByteBuf message = ByteBufAllocator.DEFAULT
                .directBuffer()
                .writeBytes(concat(frame(V2FrameCodec.TYPE_DATA, 0, 1, new byte[length]), frame(0x0f, 0, 0, padding)));
        assertThat(message.readableBytes()).isEqualTo(messageBytes);
        List<V2Frame> frames = decode(message);
        try {
            assertThat(((Data) frames.get(0)).length()).isEqualTo(length);
            assertThat(message.refCnt())
                    .as(past == 0 ? "at the bound: a slice holds the message" : "past it: a copy, the message not held")
                    .isEqualTo(past == 0 ? 2 : 1);
        } finally {
            release(frames);
            message.release();
        }
    }

    /**
     * One DATA byte followed by a message's worth of empty DATA frames (the review's sequence:
     * 116 508 of them, 1 MiB in all): neither the byte nor the empty frames hold the message.
     * Regression (a review): the message-wide rule counted every empty frame's header as DATA,
     * so the byte was a slice and held 1 MiB per byte of window.
     */
    @Test
    void decode_oneDataBytePaddedWithEmptyDataFrames_holdsNotItsMessage() {
        int empties = (V2Limits.MAX_MESSAGE_BYTES - V2Limits.HEADER_BYTES - 1) / V2Limits.HEADER_BYTES;
        assertThat(empties).isEqualTo(116_508);
        ByteBuf message =
                ByteBufAllocator.DEFAULT.directBuffer().writeBytes(frame(V2FrameCodec.TYPE_DATA, 0, 1, utf8("A")));
        byte[] empty = header(0, V2FrameCodec.TYPE_DATA, 0, 1);
        for (int i = 0; i < empties; i++) {
            message.writeBytes(empty);
        }
        List<V2Frame> frames = decode(message);
        try {
            assertThat(frames).hasSize(1 + empties);
            Data one = (Data) frames.get(0);
            assertThat(one.payload().toString(StandardCharsets.US_ASCII)).isEqualTo("A");
            assertThat(message.refCnt()).as("no frame holds the 1 MiB message").isEqualTo(1);
        } finally {
            release(frames);
            message.release();
        }
    }

    @Test
    void encode_data_composesTheHeaderWithThePayload_notACopy() {
        ByteBuf payload = buffer(utf8("abcd"));
        ByteBuf out = V2FrameCodec.encode(new Data(3, payload, false), ByteBufAllocator.DEFAULT);
        try {
            assertThat(out).isInstanceOf(CompositeByteBuf.class);
            payload.setByte(0, 'X');
            assertThat(bytes(out)).isEqualTo(concat(hex("000004 00 00 00000003"), utf8("Xbcd")));
            assertThat(payload.refCnt())
                    .as("the output took the frame's reference")
                    .isEqualTo(1);
        } finally {
            out.release();
        }
        assertThat(payload.refCnt()).as("released with the output").isZero();
    }

    @Test
    void decode_message_leavesItsIndicesAndReferenceAlone() {
        ByteBuf message = message(concat(hex("ffff"), encode(new Ping(9, false))));
        message.readerIndex(2);
        try {
            release(decode(message));
            assertThat(message.readerIndex()).isEqualTo(2);
            assertThat(message.refCnt()).isEqualTo(1);
        } finally {
            message.release();
        }
    }

    @Test
    void roundTrip_everyTypeAtItsBounds_readsBackEqual() {
        List<V2Frame> frames = List.of(
                new Data(V2Limits.MAX_STREAM_ID, buffer(new byte[V2Limits.MAX_FRAME_PAYLOAD]), true),
                new Headers(1, new byte[V2Limits.MAX_HEADERS_PAYLOAD], false),
                new Reset(V2Limits.MAX_STREAM_ID, V2ErrorCode.REFUSED_STREAM),
                new WindowUpdate(V2Limits.MAX_STREAM_ID, V2Limits.MAX_WINDOW),
                new WindowUpdate(0, 1),
                new Ping(Long.MIN_VALUE, false),
                new GoAway(V2Limits.MAX_STREAM_ID, V2ErrorCode.FLOW_CONTROL_ERROR, "é".repeat(512)),
                new GoAway(0, V2ErrorCode.PROTOCOL_ERROR, ""),
                new Call("x".repeat(V2Limits.MAX_CALL_PAYLOAD)),
                new Call(""));
        for (V2Frame frame : frames) {
            byte[] bytes = encode(retained(frame));
            V2Frame read = decodeOne(bytes);
            try {
                assertThat(read).isEqualTo(frame);
                assertThat(encode(retained(read)))
                        .as("read back, it writes the same bytes")
                        .isEqualTo(bytes);
            } finally {
                release(List.of(read));
            }
        }
        release(frames);
    }

    @Test
    void decode_frameOverMaxFramePayload_isFrameSizeError_beforeItsPayloadArrives() {
        V2ProtocolException e = connectionError(
                V2ErrorCode.FRAME_SIZE_ERROR,
                () -> decode(header(V2Limits.MAX_FRAME_PAYLOAD + 1, V2FrameCodec.TYPE_DATA, 0, 1)));
        assertThat(e.reason()).isEqualTo("frame: payload 1048577 bytes (expected: <= 1048576)");
        connectionError(V2ErrorCode.FRAME_SIZE_ERROR, () -> decode(header(0xffffff, 0x42, 0, 0)));
    }

    @Test
    void decode_dataAtMaxFramePayload_isRead() {
        V2Frame read = decodeOne(frame(V2FrameCodec.TYPE_DATA, 0, 1, new byte[V2Limits.MAX_FRAME_PAYLOAD]));
        assertThat(((Data) read).length()).isEqualTo(V2Limits.MAX_FRAME_PAYLOAD);
        release(List.of(read));
    }

    @Test
    void decode_messageOverMaxMessageBytes_isFrameSizeError() {
        byte[] bytes = concat(frame(V2FrameCodec.TYPE_DATA, 0, 1, new byte[V2Limits.MAX_FRAME_PAYLOAD]), new byte[1]);
        assertThat(bytes).hasSize(V2Limits.MAX_MESSAGE_BYTES + 1);
        connectionError(V2ErrorCode.FRAME_SIZE_ERROR, () -> decode(bytes));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 8})
    void decode_headerCutShort_isFrameSizeError(int bytes) {
        byte[] cut = new byte[bytes];
        System.arraycopy(encode(new Ping(1, false)), 0, cut, 0, bytes);
        connectionError(V2ErrorCode.FRAME_SIZE_ERROR, () -> decode(cut));
    }

    @Test
    void decode_payloadCutAtTheMessageEnd_isFrameSizeError_andLeaksNothing() {
        byte[] whole = encode(new Data(1, buffer(utf8("abc")), false));
        byte[] cut = concat(whole, hex("000005 00 00 00000001 6162"));

        ByteBuf message = message(cut);
        List<V2Frame> delivered = new ArrayList<>();
        try {
            connectionError(V2ErrorCode.FRAME_SIZE_ERROR, () -> V2FrameCodec.decodeAll(message, delivered::add));
            assertThat(delivered)
                    .as("the whole frame before the cut one is delivered")
                    .hasSize(1);
            assertThat(message.refCnt())
                    .as("only the delivered frame holds the message")
                    .isEqualTo(2);
        } finally {
            release(delivered);
            message.release();
        }
    }

    /** A frame on the wrong kind of stream (section 9.2): PROTOCOL_ERROR, whatever its payload. */
    static Stream<Arguments> wrongStreams() {
        return Stream.of(
                Arguments.of(V2FrameCodec.TYPE_DATA, 0, new byte[1]),
                Arguments.of(V2FrameCodec.TYPE_HEADERS, 0, utf8("{}")),
                Arguments.of(V2FrameCodec.TYPE_RESET, 0, hex("00000008")),
                Arguments.of(V2FrameCodec.TYPE_PING, 1, new byte[8]),
                Arguments.of(V2FrameCodec.TYPE_GOAWAY, 3, new byte[8]),
                Arguments.of(V2FrameCodec.TYPE_CALL, 5, utf8(STATUS_CALL)),
                Arguments.of(V2FrameCodec.TYPE_PING, V2Limits.MAX_STREAM_ID, new byte[8]));
    }

    @ParameterizedTest
    @MethodSource("wrongStreams")
    void decode_frameOnTheWrongKindOfStream_isProtocolError(int type, int streamId, byte[] payload) {
        V2ProtocolException e =
                connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> decode(frame(type, 0, streamId, payload)));
        assertThat(e.streamId()).isEqualTo(streamId);
    }

    /** A payload that breaks its type's bound in length (section 9.2): FRAME_SIZE_ERROR. */
    static Stream<Arguments> wrongLengths() {
        return Stream.of(
                Arguments.of(V2FrameCodec.TYPE_HEADERS, 1, V2Limits.MAX_HEADERS_PAYLOAD + 1),
                Arguments.of(V2FrameCodec.TYPE_RESET, 1, 3),
                Arguments.of(V2FrameCodec.TYPE_RESET, 1, V2Limits.MAX_RESET_PAYLOAD + 1),
                Arguments.of(V2FrameCodec.TYPE_WINDOW_UPDATE, 1, 3),
                Arguments.of(V2FrameCodec.TYPE_WINDOW_UPDATE, 0, 5),
                Arguments.of(V2FrameCodec.TYPE_PING, 0, 7),
                Arguments.of(V2FrameCodec.TYPE_PING, 0, 9),
                Arguments.of(V2FrameCodec.TYPE_GOAWAY, 0, 7),
                Arguments.of(V2FrameCodec.TYPE_GOAWAY, 0, 8 + V2Limits.MAX_GOAWAY_REASON + 1),
                Arguments.of(V2FrameCodec.TYPE_CALL, 0, V2Limits.MAX_CALL_PAYLOAD + 1));
    }

    @ParameterizedTest
    @MethodSource("wrongLengths")
    void decode_payloadBreakingItsTypesLength_isFrameSizeError(int type, int streamId, int length) {
        connectionError(V2ErrorCode.FRAME_SIZE_ERROR, () -> decode(frame(type, 0, streamId, new byte[length])));
    }

    @Test
    void decode_payloadsAtTheirTypesBounds_areRead() {
        byte[] reason = utf8("r".repeat(V2Limits.MAX_GOAWAY_REASON));
        List<V2Frame> frames = decode(concat(
                frame(V2FrameCodec.TYPE_HEADERS, 0, 1, new byte[V2Limits.MAX_HEADERS_PAYLOAD]),
                frame(V2FrameCodec.TYPE_RESET, 0, 1, hex("00000000")),
                frame(V2FrameCodec.TYPE_GOAWAY, 0, 0, concat(new byte[8], reason)),
                frame(V2FrameCodec.TYPE_CALL, 0, 0, new byte[V2Limits.MAX_CALL_PAYLOAD])));
        assertThat(frames).hasSize(4);
        assertThat(((GoAway) frames.get(2)).reason()).hasSize(1024);
    }

    @Test
    void decode_windowUpdateOfZero_isProtocolError() {
        connectionError(
                V2ErrorCode.PROTOCOL_ERROR,
                () -> decode(frame(V2FrameCodec.TYPE_WINDOW_UPDATE, 0, 1, hex("00000000"))));
    }

    @Test
    void decode_windowUpdateWithTheHighBit_readsItAsReserved() {
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_WINDOW_UPDATE, 0, 0, hex("7fffffff"))))
                .as("2^31-1")
                .isEqualTo(new WindowUpdate(0, V2Limits.MAX_WINDOW));
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_WINDOW_UPDATE, 0, 0, hex("80000001"))))
                .as("2^31 + 1: the reserved bit ignored")
                .isEqualTo(new WindowUpdate(0, 1));
        connectionError(
                V2ErrorCode.PROTOCOL_ERROR,
                () -> decode(frame(V2FrameCodec.TYPE_WINDOW_UPDATE, 0, 0, hex("80000000"))));
    }

    @Test
    void decode_reservedBitOfTheStreamId_isIgnored() {
        V2Frame read = decodeOne(frame(V2FrameCodec.TYPE_DATA, 0, 0x8000_0005, utf8("z")));
        assertThat(read.streamId()).isEqualTo(5);
        release(List.of(read));
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_PING, 0, 0x8000_0000, new byte[8])))
                .as("R set on stream 0 is still the connection")
                .isEqualTo(new Ping(0, false));
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_GOAWAY, 0, 0, hex("ffffffff 00000000"))))
                .as("the last stream id's high bit, reserved as in RFC 9113 section 6.8")
                .isEqualTo(new GoAway(V2Limits.MAX_STREAM_ID, V2ErrorCode.NO_ERROR, ""));
    }

    @Test
    void decode_flagsATypeDoesNotDefine_areIgnored() {
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_PING, 0xfe, 0, new byte[8])))
                .isEqualTo(new Ping(0, false));
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_HEADERS, 0xff, 1, utf8("{}"))))
                .isEqualTo(new Headers(1, utf8("{}"), true));
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_WINDOW_UPDATE, 0xff, 0, hex("00000001"))))
                .isEqualTo(new WindowUpdate(0, 1));
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_RESET, 0x01, 1, hex("00000008"))))
                .isEqualTo(new Reset(1, V2ErrorCode.CANCEL));
    }

    @ParameterizedTest
    @ValueSource(ints = {0x2, 0x4, 0x5, 0x9, 0xb, 0xff})
    void decode_unknownType_isSkipped_onAnyStream(int type) {
        List<V2Frame> frames = decode(concat(
                frame(type, 0xff, 0, utf8("anything")),
                frame(type, 0, 0x7fff_ffff, new byte[0]),
                encode(new Ping(4, true))));
        assertThat(frames).containsExactly(new Ping(4, true));
    }

    @Test
    void decode_unknownErrorCodes_readAsInternalError() {
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_RESET, 0, 1, hex("0000000d"))))
                .isEqualTo(new Reset(1, V2ErrorCode.INTERNAL_ERROR));
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_GOAWAY, 0, 0, hex("00000000 ffffffff"))))
                .isEqualTo(new GoAway(0, V2ErrorCode.INTERNAL_ERROR, ""));
    }

    @Test
    void decode_resetWithAnUnreadableErrorObject_isProtocolError() {
        connectionError(
                V2ErrorCode.PROTOCOL_ERROR,
                () -> decode(frame(V2FrameCodec.TYPE_RESET, 0, 1, concat(hex("00000100"), utf8("{\"code\":")))));
        connectionError(
                V2ErrorCode.PROTOCOL_ERROR, () -> decode(frame(V2FrameCodec.TYPE_RESET, 0, 1, hex("00000100"))));
    }

    @Test
    void decode_textThatIsNotUtf8_isProtocolError() {
        byte[] bad = hex("c328"); // a two-byte lead followed by no continuation
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> decode(frame(V2FrameCodec.TYPE_CALL, 0, 0, bad)));
        connectionError(
                V2ErrorCode.PROTOCOL_ERROR,
                () -> decode(frame(V2FrameCodec.TYPE_GOAWAY, 0, 0, concat(new byte[8], bad))));
        connectionError(V2ErrorCode.PROTOCOL_ERROR, () -> decode(frame(V2FrameCodec.TYPE_CALL, 0, 0, hex("eda080"))));
    }

    @Test
    void decode_headersWithAnyBytes_isRead_theHeadIsTheStreamsToCheck() {
        assertThat(decodeOne(frame(V2FrameCodec.TYPE_HEADERS, 0, 2, hex("ff00"))))
                .isEqualTo(new Headers(2, hex("ff00"), false));
    }

    @Test
    void decode_consumerThrows_itsExceptionGoesToTheCaller() {
        ByteBuf message = message(concat(encode(new Ping(1, false)), encode(new Ping(2, false))));
        List<V2Frame> seen = new ArrayList<>();
        try {
            assertThatThrownBy(() -> V2FrameCodec.decodeAll(message, f -> {
                        seen.add(f);
                        throw new IllegalStateException("consumer");
                    }))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("consumer");
            assertThat(seen).containsExactly(new Ping(1, false));
        } finally {
            message.release();
        }
    }
}
