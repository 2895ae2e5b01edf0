package com.spectrayan.spector.uplink.internal.wire;

import static com.spectrayan.spector.uplink.internal.wire.BadRequests.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.FrameTooLargeException;
import com.spectrayan.spector.uplink.wire.UplinkException;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class FrameCodecTest {
    private static final long MAX_ID = (1L << 53) - 1;

    private static ObjectNode object(String singleQuoted) {
        return (ObjectNode) json(singleQuoted);
    }

    private static CorruptFrameException corrupt(String text) {
        try {
            FrameCodec.decode(text);
        } catch (CorruptFrameException e) {
            return e;
        }
        throw new AssertionError("decoded without a CorruptFrameException: " + text);
    }

    @Test
    void frameCodec_constants_areThoseOfProtocolV1() {
        assertThat(FrameCodec.SUBPROTOCOL).isEqualTo("spector-uplink.v1");
        assertThat(FrameCodec.PROTOCOL_VERSION).isEqualTo(1);
        assertThat(Frame.MAX_ID).as("2^53-1, exact in JavaScript").isEqualTo(9_007_199_254_740_991L);
        assertThat(FrameCodec.MAX_FRAME_CHARS).as("360 KiB").isEqualTo(368_640);
    }

    @Test
    void encode_call_writesTheDocumentedLayout() {
        Frame call = new Frame.Call(7, "relay.cancel", object("{'relayId':'r-1'}"));

        assertThat(FrameCodec.encode(call))
                .isEqualTo("{\"type\":\"call\",\"id\":7,\"op\":\"relay.cancel\",\"input\":{\"relayId\":\"r-1\"}}");
    }

    @Test
    void decode_encodedFrameOfEachType_roundTrips() {
        List<Frame> frames = List.of(
                new Frame.Call(1, "status.get", object("{}")),
                new Frame.Result(2, object("{'cancelled':true}")),
                new Frame.ErrorFrame(3, ErrorCode.RELAY_TARGET_MISSING, "no target app", object("{'target':'app'}")),
                new Frame.Push(MAX_ID, "relay-head", object("{'status':200,'headers':[['a','b']]}")));

        for (Frame frame : frames) {
            assertThat(FrameCodec.decode(FrameCodec.encode(frame)))
                    .as("%s survives a round trip", frame.getClass().getSimpleName())
                    .isEqualTo(frame);
        }
    }

    @Test
    void decode_unknownMembers_areIgnored() {
        Frame frame = FrameCodec.decode(
                "{\"type\":\"result\",\"id\":5,\"output\":{\"later\":1},\"v2\":{\"x\":[1,2]},\"trace\":\"t\"}");

        assertThat(frame).isEqualTo(new Frame.Result(5, object("{'later':1}")));
    }

    @Test
    void decode_frameId_atOneAndAtTwoToThe53MinusOne_isAccepted() {
        assertThat(FrameCodec.decode("{\"type\":\"result\",\"id\":1,\"output\":{}}")
                        .id())
                .as("id at its minimum 1")
                .isEqualTo(1);
        assertThat(FrameCodec.decode("{\"type\":\"result\",\"id\":" + MAX_ID + ",\"output\":{}}")
                        .id())
                .as("id at its maximum 2^53-1")
                .isEqualTo(MAX_ID);
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "-1", "9007199254740992", "99999999999999999999999", "1.5", "1e3", "\"7\"", "null"})
    void decode_frameIdOutsideOneToTwoToThe53MinusOne_isCorrupt(String id) {
        CorruptFrameException e = corrupt("{\"type\":\"result\",\"id\":" + id + ",\"output\":{}}");

        assertThat(e.field()).as("id %s is refused naming id", id).isEqualTo("id");
        assertThat(e.frameId()).as("no id was read").isEmpty();
    }

    @Test
    void decode_frameIdOnePastTheMax_saysTheBound() {
        assertThat(corrupt("{\"type\":\"result\",\"id\":9007199254740992,\"output\":{}}"))
                .hasMessage("id: 9007199254740992 (expected: 1..9007199254740991)");
    }

    @Test
    void newFrame_idOutsideItsBound_isAProgrammingError() {
        assertThatThrownBy(() -> new Frame.Result(0, object("{}")))
                .as("id 0")
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("id: 0");
        assertThatThrownBy(() -> new Frame.Result(MAX_ID + 1, object("{}")))
                .as("id 2^53")
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(new Frame.Result(MAX_ID, object("{}")).id()).isEqualTo(MAX_ID);
    }

    @ParameterizedTest
    @ValueSource(strings = {"{", "", "   ", "not json", "{\"type\":\"call\",}", "{\"type\":'call'}", "[1,2"})
    void decode_malformedJson_isCorruptNamingTheFrame(String text) {
        CorruptFrameException e = corrupt(text);

        assertThat(e.field()).as("malformed %s names the frame", text).isEqualTo("frame");
        assertThat(e.frameId()).isEmpty();
    }

    @Test
    void decode_malformedJson_saysWhere() {
        assertThat(corrupt("{\"type\":\"call\",}").reason()).startsWith("malformed JSON at line 1, column");
    }

    @ParameterizedTest
    @ValueSource(strings = {"[]", "\"call\"", "42", "null", "true"})
    void decode_jsonThatIsNotAnObject_isCorrupt(String text) {
        assertThat(corrupt(text).field()).as("%s is not a frame", text).isEqualTo("frame");
    }

    @Test
    void decode_trailingContentAfterTheObject_isCorrupt() {
        assertThat(corrupt("{\"type\":\"result\",\"id\":1,\"output\":{}} {}").field())
                .as("a second value after the frame")
                .isEqualTo("frame");
    }

    @Test
    void decode_duplicateMember_isCorrupt() {
        assertThat(corrupt("{\"type\":\"result\",\"id\":1,\"id\":2,\"output\":{}}")
                        .field())
                .as("two ids in one frame are ambiguous")
                .isEqualTo("frame");
    }

    @Test
    void decode_nestingDeeperThanThirtyTwo_isCorrupt() {
        String deep = "[".repeat(40) + "]".repeat(40);

        assertThat(corrupt("{\"type\":\"result\",\"id\":1,\"output\":{\"x\":" + deep + "}}")
                        .field())
                .as("nesting depth past %d", FrameCodec.MAX_NESTING_DEPTH)
                .isEqualTo("frame");
    }

    @Test
    void decode_unknownType_isCorruptNamingTypeAndKeepingTheId() {
        CorruptFrameException e = corrupt("{\"type\":\"event\",\"id\":9,\"data\":{}}");

        assertThat(e.field()).isEqualTo("type");
        assertThat(e.frameId())
                .as("the id was read before the type was refused")
                .hasValue(9);
        assertThat(e).hasMessage("type: unknown (expected: call, result, error or push)");
    }

    @Test
    void decode_missingType_isCorrupt() {
        assertThat(corrupt("{\"id\":1,\"output\":{}}")).hasMessage("type: missing (expected: a string)");
        assertThat(corrupt("{\"type\":1,\"id\":1,\"output\":{}}")).hasMessage("type: an integer (expected: a string)");
    }

    @Test
    void decode_memberMissingOrOfTheWrongType_isCorruptNamingTheMember() {
        assertThat(corrupt("{\"type\":\"call\",\"id\":4,\"input\":{}}").field()).isEqualTo("op");
        assertThat(corrupt("{\"type\":\"call\",\"id\":4,\"op\":\"status.get\"}"))
                .as("a call without input")
                .hasMessage("input: missing (expected: an object)")
                .satisfies(e -> assertThat(e.frameId()).hasValue(4));
        assertThat(corrupt("{\"type\":\"call\",\"id\":4,\"op\":\"status.get\",\"input\":[]}"))
                .hasMessage("input: an array (expected: an object)");
        assertThat(corrupt("{\"type\":\"result\",\"id\":4,\"output\":null}").field())
                .isEqualTo("output");
        assertThat(corrupt("{\"type\":\"push\",\"id\":4,\"push\":\"relay-head\",\"data\":\"x\"}")
                        .field())
                .isEqualTo("data");
        assertThat(corrupt("{\"type\":\"push\",\"id\":4,\"data\":{}}").field()).isEqualTo("push");
        assertThat(corrupt("{\"type\":\"error\",\"id\":4,\"message\":\"m\",\"details\":{}}")
                        .field())
                .isEqualTo("code");
        assertThat(corrupt("{\"type\":\"error\",\"id\":4,\"code\":\"INTERNAL\",\"details\":{}}")
                        .field())
                .isEqualTo("message");
        assertThat(corrupt("{\"type\":\"error\",\"id\":4,\"code\":\"INTERNAL\",\"message\":\"m\"}")
                        .field())
                .isEqualTo("details");
    }

    @Test
    void decode_opName_atSixtyFourChars_isAccepted_andSixtyFive_isCorrupt() {
        String max = "a" + "b.c-9".repeat(12) + "xyz";
        assertThat(max).hasSize(64);

        Frame frame = FrameCodec.decode("{\"type\":\"call\",\"id\":1,\"op\":\"" + max + "\",\"input\":{}}");
        assertThat(((Frame.Call) frame).op()).as("op of 64 chars").isEqualTo(max);

        assertThat(corrupt("{\"type\":\"call\",\"id\":1,\"op\":\"" + max + "a\",\"input\":{}}"))
                .as("op of 65 chars")
                .hasMessage("op: 65 chars (expected: 1..64)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "Relay.request", "1op", ".op", "relay_request", "relay request", "relay/head"})
    void decode_nameOutsideThePattern_isCorrupt(String name) {
        assertThat(corrupt("{\"type\":\"push\",\"id\":1,\"push\":\"" + name + "\",\"data\":{}}")
                        .field())
                .as("push name '%s'", name)
                .isEqualTo("push");
        assertThatThrownBy(() -> new Frame.Call(1, name, object("{}")))
                .as("building a call named '%s'", name)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("op: ");
    }

    @Test
    void decode_unknownErrorCode_readsAsInternal() {
        Frame frame = FrameCodec.decode(
                "{\"type\":\"error\",\"id\":3,\"code\":\"LEASE_EXPIRED\",\"message\":\"gone\",\"details\":{\"x\":1}}");

        assertThat(frame).isInstanceOfSatisfying(Frame.ErrorFrame.class, e -> {
            assertThat(e.code()).as("a code this side does not know").isEqualTo(ErrorCode.INTERNAL);
            assertThat(e.message()).isEqualTo("gone");
        });
    }

    @Test
    void decode_errorMessage_atFourThousandNinetySixChars_isAccepted_andOnePast_isCorrupt() {
        String max = "m".repeat(Frame.MAX_MESSAGE_CHARS);
        String frame = "{\"type\":\"error\",\"id\":3,\"code\":\"INTERNAL\",\"message\":\"%s\",\"details\":{}}";

        assertThat(((Frame.ErrorFrame) FrameCodec.decode(String.format(frame, max))).message())
                .as("message of 4096 chars")
                .hasSize(4096);
        assertThat(corrupt(String.format(frame, max + "m")))
                .as("message of 4097 chars")
                .hasMessage("message: 4097 chars (expected: <= 4096)");
        assertThatThrownBy(() -> new Frame.ErrorFrame(3, ErrorCode.INTERNAL, max + "m", object("{}")))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /** A valid result frame padded to exactly {@code chars} chars. */
    private static String resultOfLength(int chars) {
        String head = "{\"type\":\"result\",\"id\":1,\"output\":{\"pad\":\"";
        String tail = "\"}}";
        return head + "p".repeat(chars - head.length() - tail.length()) + tail;
    }

    @Test
    void decode_frameAtTheCharLimit_isAccepted() {
        String text = resultOfLength(FrameCodec.MAX_FRAME_CHARS);
        assertThat(text).hasSize(FrameCodec.MAX_FRAME_CHARS);

        assertThat(FrameCodec.decode(text))
                .as("a frame of exactly MAX_FRAME_CHARS")
                .isInstanceOf(Frame.Result.class);
    }

    @Test
    void decode_frameOneCharPastTheLimit_isTooLarge() {
        assertThatThrownBy(() -> FrameCodec.decode(resultOfLength(FrameCodec.MAX_FRAME_CHARS + 1)))
                .as("a frame of MAX_FRAME_CHARS + 1")
                .isInstanceOfSatisfying(FrameTooLargeException.class, e -> {
                    assertThat(e.size()).isEqualTo(FrameCodec.MAX_FRAME_CHARS + 1);
                    assertThat(e.limit()).isEqualTo(FrameCodec.MAX_FRAME_CHARS);
                })
                .hasMessage("frame: 368641 chars (expected: <= 368640)");
    }

    @Test
    void decode_oversizedText_isRefusedBeforeParsing() {
        char[] garbage = new char[FrameCodec.MAX_FRAME_CHARS + 1];
        Arrays.fill(garbage, '{');

        assertThatThrownBy(() -> FrameCodec.decode(new String(garbage)))
                .as("too long: refused by size, not by the parser")
                .isInstanceOf(FrameTooLargeException.class);
    }

    @Test
    void encode_frameOnePastTheLimit_isTooLarge_andAtTheLimitIsWritten() {
        Frame.Result atLimit = (Frame.Result) FrameCodec.decode(resultOfLength(FrameCodec.MAX_FRAME_CHARS));
        assertThat(FrameCodec.encode(atLimit)).hasSize(FrameCodec.MAX_FRAME_CHARS);

        ObjectNode bigger = atLimit.output().deepCopy();
        bigger.put("pad", bigger.get("pad").textValue() + "p");
        assertThatThrownBy(() -> FrameCodec.encode(new Frame.Result(1, bigger)))
                .as("the sender refuses a frame its peer would refuse")
                .isInstanceOf(FrameTooLargeException.class);
    }

    @Test
    void encode_largestRelayBody_fitsInOneFrame() {
        RelayBody body =
                RelayBody.Chunk.of("r".repeat(64), Integer.MAX_VALUE, new byte[(int) Limits.CHUNK_BYTES.max()]);

        String text = FrameCodec.encode(new Frame.Call(MAX_ID, RelayBody.OP, body.toJson()));

        assertThat(text.length()).as("a 256 KiB relay.body frame").isLessThanOrEqualTo(FrameCodec.MAX_FRAME_CHARS);
        assertThat(RelayBody.parse(((Frame.Call) FrameCodec.decode(text)).input()))
                .isEqualTo(body);
    }

    @Test
    void encode_largestRelayChunk_fitsInOneFrame() {
        RelayChunk chunk = RelayChunk.of(new byte[(int) Limits.CHUNK_BYTES.max()]);

        String text = FrameCodec.encode(new Frame.Push(MAX_ID, RelayChunk.PUSH, chunk.toJson()));

        assertThat(text.length()).as("a 256 KiB relay-chunk frame").isLessThanOrEqualTo(FrameCodec.MAX_FRAME_CHARS);
        assertThat(RelayChunk.parse(((Frame.Push) FrameCodec.decode(text)).data()))
                .isEqualTo(chunk);
    }

    @Test
    void toSpectorException_corruptFrame_isBadRequestNamingTheMember() {
        SpectorException e = corrupt("{\"type\":\"call\",\"id\":4,\"op\":\"Bad\",\"input\":{}}")
                .toSpectorException();

        assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
        assertThat(e.details()).containsEntry("field", "op");
        assertThat(e).hasMessage("op: char 1 is 'B' (expected: [a-z][a-z0-9.-]*)");
    }

    @Test
    void toSpectorException_tooLargeFrame_isBadRequestNamingTheFrame() {
        UplinkException failure = FrameTooLargeException.of(400_000, FrameCodec.MAX_FRAME_CHARS);

        SpectorException e = failure.toSpectorException();

        assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
        assertThat(e.details())
                .containsEntry("field", "frame")
                .containsEntry("reason", "400000 chars (expected: <= 368640)");
        assertThat(e.getCause()).isSameAs(failure);
    }

    @Test
    void uplinkException_expectedFailure_carriesNoStackTrace() {
        assertThat(corrupt("{").getStackTrace()).as("a corrupt frame").isEmpty();
        assertThat(FrameTooLargeException.of(2, 1).getStackTrace())
                .as("a frame too large")
                .isEmpty();
        assertThat(corrupt("{").getCause())
                .as("the parser's failure is kept as the cause")
                .isNotNull();
    }

    @Test
    void frame_jsonMembers_areHeldAsGiven() {
        ObjectNode input = JsonNodeFactory.instance.objectNode();

        assertThat(new Frame.Call(1, "status.get", input).input()).isSameAs(input);
    }
}
