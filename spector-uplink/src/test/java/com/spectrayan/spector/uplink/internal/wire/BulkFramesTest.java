package com.spectrayan.spector.uplink.internal.wire;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.Frame;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The body frames' fast path writes what Jackson writes and reads what the tree parser reads. */
final class BulkFramesTest {
    private static byte[] bytes(int n) {
        byte[] b = new byte[n];
        new Random(n).nextBytes(b);
        return b;
    }

    private static ByteBuffer utf8(String text) {
        return ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
    }

    private static Frame.Push chunkPush(long id, byte[] chunk) {
        return new Frame.Push(id, RelayChunk.PUSH, RelayChunk.of(chunk).toJson());
    }

    private static Frame.Call bodyCall(long id, String relayId, int seq, byte[] chunk) {
        return new Frame.Call(
                id, RelayBody.OP, RelayBody.Chunk.of(relayId, seq, chunk).toJson());
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3, 4, 1000, 262_143, 262_144})
    void encode_relayChunkAndRelayBody_areByteForByteWhatJacksonWrites(int size) {
        byte[] chunk = bytes(size);
        for (Frame frame :
                new Frame[] {chunkPush(9_007_199_254_740_991L, chunk), bodyCall(1, "r-1.a_B", 4095, chunk)}) {
            byte[] fast = BulkFrames.encode(frame);
            assertThat(fast)
                    .as("the fast path takes %s", frame.getClass().getSimpleName())
                    .isNotNull();
            assertThat(new String(fast, StandardCharsets.UTF_8))
                    .as("fast and tree encodings of a %d-byte chunk", size)
                    .isEqualTo(new String(FrameCodec.jsonBytes(frame), StandardCharsets.UTF_8));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3, 1000, 262_144})
    void decode_fastPath_readsTheSameFrameAsTheTreeParser(int size) {
        byte[] chunk = bytes(size);
        Frame.Push push = chunkPush(42, chunk);
        Frame.Call call = bodyCall(43, "relay-7", 12, chunk);

        Frame fastPush = requireNonNull(
                BulkFrames.decode(ByteBuffer.wrap(FrameCodec.encodeUtf8(push))),
                "the fast path reads its own relay-chunk");
        Frame fastCall = requireNonNull(
                BulkFrames.decode(ByteBuffer.wrap(FrameCodec.encodeUtf8(call))),
                "the fast path reads its own relay.body");

        Frame.Push treePush = (Frame.Push) FrameCodec.decode(FrameCodec.encode(push));
        Frame.Call treeCall = (Frame.Call) FrameCodec.decode(FrameCodec.encode(call));
        assertThat(((Frame.Push) fastPush).id()).isEqualTo(42);
        assertThat(RelayChunk.parse(((Frame.Push) fastPush).data()))
                .as("the relay-chunk read both ways")
                .isEqualTo(RelayChunk.parse(treePush.data()));
        assertThat(((Frame.Call) fastCall).id()).isEqualTo(43);
        assertThat(RelayBody.parse(((Frame.Call) fastCall).input()))
                .as("the relay.body read both ways")
                .isEqualTo(RelayBody.parse(treeCall.input()));
    }

    @Test
    void decode_otherLayoutsAndNonCanonicalChunks_goToTheTreeParser() {
        String[] others = {
            "{\"id\":1,\"type\":\"push\",\"push\":\"relay-chunk\",\"data\":{\"chunk\":\"AAEC\"}}", // member order
            "{\"type\":\"push\",\"id\":01,\"push\":\"relay-chunk\",\"data\":{\"chunk\":\"AAEC\"}}", // leading zero
            "{\"type\":\"push\",\"id\":1,\"push\":\"relay-chunk\",\"data\":{\"chunk\":\"AAEC/x==\"}}", // bits after
            "{\"type\":\"push\",\"id\":1,\"push\":\"relay-chunk\",\"data\":{\"chunk\":\"AA EC\"}}", // not base64
            "{\"type\":\"push\",\"id\":1,\"push\":\"relay-chunk\",\"data\":{\"chunk\":\"AAE\"}}", // length
            "{\"type\":\"push\",\"id\":1,\"push\":\"relay-chunk\",\"data\":{\"chunk\":\"AAEC\",\"x\":1}}", // more
            "{\"type\":\"call\",\"id\":1,\"op\":\"relay.body\",\"input\":{\"relayId\":\"r 1\",\"seq\":0,\"chunk\":\"AAEC\"}}",
            "{\"type\":\"call\",\"id\":1,\"op\":\"relay.body\",\"input\":{\"relayId\":\"r-1\",\"seq\":-1,\"chunk\":\"AAEC\"}}",
            "{\"type\":\"call\",\"id\":1,\"op\":\"relay.body\",\"input\":{\"relayId\":\"r-1\",\"seq\":0,\"chunk\":\"AAEC\"}} ",
        };
        for (String text : others) {
            assertThat(BulkFrames.decode(utf8(text)))
                    .as("the fast path leaves %s", text)
                    .isNull();
        }
    }

    @Test
    void decode_aChunkOnePastTheBound_isLeftToTheTreeParser_whichRefusesIt() {
        String base64 = java.util.Base64.getEncoder().encodeToString(bytes((int) Limits.CHUNK_BYTES.max() + 1));
        String text = "{\"type\":\"push\",\"id\":1,\"push\":\"relay-chunk\",\"data\":{\"chunk\":\"" + base64 + "\"}}";

        assertThat(BulkFrames.decode(utf8(text)))
                .as("262 145 bytes: not the fast path")
                .isNull();
        Frame frame = FrameCodec.decode(utf8(text));
        assertThatThrownBy(() -> RelayChunk.parse(((Frame.Push) frame).data()))
                .as("the tree path refuses it as before")
                .isInstanceOf(SpectorException.class)
                .hasMessageContaining("262145 bytes");
    }

    @Test
    void encode_framesWithoutABinaryChunk_areLeftToJackson() {
        byte[] other = BulkFrames.encode(new Frame.Call(1, "relay.cancel", new RelayCancel("r-1").toJson()));
        assertThat(other).isNull();
    }
}
