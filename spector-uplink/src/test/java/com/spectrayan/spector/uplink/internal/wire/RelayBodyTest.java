package com.spectrayan.spector.uplink.internal.wire;

import static com.spectrayan.spector.uplink.internal.wire.BadRequests.assertRefused;
import static com.spectrayan.spector.uplink.internal.wire.BadRequests.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.uplink.wire.Frame;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class RelayBodyTest {
    private static final int MAX_CHUNK = 262_144;

    private static ObjectNode chunkInput(String chunk) {
        return JsonNodeFactory.instance
                .objectNode()
                .put("relayId", "r-1")
                .put("seq", 0)
                .put("chunk", chunk);
    }

    private static byte[] bytes(int size) {
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) (i * 31 + 7);
        }
        return bytes;
    }

    private static byte[] content(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.get(out);
        return out;
    }

    @Test
    void parse_chunk_decodesItsBytes() {
        RelayBody body = RelayBody.parse(json("{'relayId':'r-1','seq':3,'chunk':'aGVsbG8='}"));

        assertThat(body).isInstanceOfSatisfying(RelayBody.Chunk.class, c -> {
            assertThat(c.relayId()).isEqualTo("r-1");
            assertThat(c.seq()).isEqualTo(3);
            assertThat(new String(content(c.chunk()), StandardCharsets.US_ASCII))
                    .isEqualTo("hello");
        });
    }

    @Test
    void toJson_chunk_roundTripsByteForByte() {
        RelayBody.Chunk chunk = RelayBody.Chunk.of("r-1", 5, bytes(1000));

        RelayBody parsed = RelayBody.parse(chunk.toJson());

        assertThat(parsed).isEqualTo(chunk);
        assertThat(content(((RelayBody.Chunk) parsed).chunk())).isEqualTo(bytes(1000));
        assertThat(FrameCodec.encode(new Frame.Call(1, RelayBody.OP, chunk.toJson())))
                .as("the chunk is written as standard padded base64")
                .contains("\"chunk\":\"" + Base64.getEncoder().encodeToString(bytes(1000)) + "\"");
    }

    @Test
    void parse_end_isTheEnd() {
        RelayBody body = RelayBody.parse(json("{'relayId':'r-1','end':true}"));

        assertThat(body).isEqualTo(new RelayBody.End("r-1"));
        assertThat(body.toJson()).isEqualTo(json("{'relayId':'r-1','end':true}"));
    }

    @Test
    void relayBody_chunkDecodingTo262144Bytes_isAccepted() {
        String max = Base64.getEncoder().encodeToString(bytes(MAX_CHUNK));

        RelayBody body = RelayBody.parse(chunkInput(max));

        assertThat(((RelayBody.Chunk) body).chunk().remaining())
                .as("a chunk of 256 KiB")
                .isEqualTo(MAX_CHUNK);
    }

    @Test
    void relayBody_chunkDecodingTo262145Bytes_isBadRequest() {
        String past = Base64.getEncoder().encodeToString(bytes(MAX_CHUNK + 1));

        assertRefused(() -> RelayBody.parse(chunkInput(past)), "chunk", "a chunk of 262 145 bytes")
                .hasMessage("chunk: 262145 bytes (expected: <= 262144)");
    }

    @Test
    void relayBody_oversizedChunk_isRefusedFromItsLengthBeforeDecoding() {
        // Not base64 at all, but long enough to decode past the bound: the size is what is reported.
        String past = "*".repeat(349_528 + 4);

        assertRefused(() -> RelayBody.parse(chunkInput(past)), "chunk", "a chunk too long to decode")
                .hasMessage("chunk: 262149 bytes (expected: <= 262144)");
    }

    @Test
    void newChunk_senderSide_boundsTheBytes() {
        assertThat(RelayBody.Chunk.of("r-1", 0, new byte[MAX_CHUNK]).chunk().remaining())
                .as("256 KiB on the sender side")
                .isEqualTo(MAX_CHUNK);
        assertRefused(() -> RelayBody.Chunk.of("r-1", 0, new byte[MAX_CHUNK + 1]), "chunk", "262 145 bytes to send")
                .hasMessage("chunk: 262145 bytes (expected: <= 262144)");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "aGVsbG8", // unpadded
                "aGVsbG8==", // wrong padding
                "aGVs bG8=", // a space
                "aGVs\nbG8=", // a line break, as MIME writes
                "-_-_", // the URL-safe alphabet
                "ab+_", // mixed alphabets
                "AA==AAAA", // padding in the middle
                "QR==", // non-zero bits after the last byte
                "QUJ=", // non-zero bits after the last two bytes
                "\u00e9\u00e9\u00e9\u00e9",
                "===="
            })
    void relayBody_chunkNotStandardBase64_isBadRequest(String chunk) {
        assertRefused(() -> RelayBody.parse(chunkInput(chunk)), "chunk", "chunk '" + chunk + "'")
                .hasMessageContaining("(expected: standard base64, RFC 4648 section 4, padded)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "QQ==", "QUI=", "QUJD", "+/+/"})
    void relayBody_chunkInStandardBase64_isAccepted(String chunk) {
        assertThat(RelayBody.parse(chunkInput(chunk))).as("chunk '%s'", chunk).isInstanceOf(RelayBody.Chunk.class);
    }

    @Test
    void relayBody_chunkNotAString_isBadRequest() {
        assertRefused(() -> RelayBody.parse(chunkInput("x").put("chunk", 5)), "chunk", "a numeric chunk")
                .hasMessage("chunk: an integer (expected: a string)");
    }

    @Test
    void relayBody_seqAtZeroAndAtTwoToThe31MinusOne_isAccepted() {
        assertThat(((RelayBody.Chunk) RelayBody.parse(chunkInput("").put("seq", 0))).seq())
                .as("seq at 0")
                .isZero();
        assertThat(((RelayBody.Chunk) RelayBody.parse(chunkInput("").put("seq", Integer.MAX_VALUE))).seq())
                .as("seq at 2^31-1")
                .isEqualTo(Integer.MAX_VALUE);
    }

    @Test
    void relayBody_seqOnePastEitherEnd_isBadRequest() {
        assertRefused(() -> RelayBody.parse(chunkInput("").put("seq", -1)), "seq", "seq -1")
                .hasMessage("seq: -1 (expected: 0..2147483647)");
        assertRefused(() -> RelayBody.parse(chunkInput("").put("seq", 2_147_483_648L)), "seq", "seq 2^31")
                .hasMessage("seq: 2147483648 (expected: 0..2147483647)");
        assertRefused(() -> new RelayBody.Chunk("r-1", -1, ByteBuffer.allocate(0)), "seq", "building seq -1");
    }

    @Test
    void relayBody_seqNotAnInteger_isBadRequest() {
        assertRefused(() -> RelayBody.parse(chunkInput("").put("seq", 1.5)), "seq", "seq 1.5");
        assertRefused(() -> RelayBody.parse(chunkInput("").put("seq", "1")), "seq", "seq '1'");
        ObjectNode noSeq = chunkInput("");
        noSeq.remove("seq");
        assertRefused(() -> RelayBody.parse(noSeq), "seq", "a chunk without seq")
                .hasMessage("seq: missing (expected: an integer 0..2147483647)");
    }

    @Test
    void relayBody_chunkAndEndTogether_isBadRequest() {
        assertRefused(() -> RelayBody.parse(chunkInput("").put("end", true)), "chunk", "chunk with end")
                .hasMessage("chunk: given with end (expected: exactly one of chunk and end)");
        assertRefused(() -> RelayBody.parse(json("{'relayId':'r-1','seq':2,'end':true}")), "seq", "seq with end");
    }

    @Test
    void relayBody_neitherChunkNorEnd_isBadRequest() {
        assertRefused(() -> RelayBody.parse(json("{'relayId':'r-1','seq':0}")), "chunk", "neither chunk nor end")
                .hasMessage("chunk: missing (expected: exactly one of chunk and end)");
    }

    @Test
    void relayBody_endNotTrue_isBadRequest() {
        assertRefused(() -> RelayBody.parse(json("{'relayId':'r-1','end':false}")), "end", "end false");
        assertRefused(() -> RelayBody.parse(json("{'relayId':'r-1','end':'true'}")), "end", "end a string");
    }

    @Test
    void relayBody_relayIdOf64Chars_isAccepted_and65_isBadRequest() {
        String max = "r".repeat(64);

        assertThat(RelayBody.parse(json("{'relayId':'" + max + "','end':true}")).relayId())
                .as("relayId at 64 chars")
                .isEqualTo(max);
        assertRefused(
                        () -> RelayBody.parse(json("{'relayId':'" + max + "r','end':true}")),
                        "relayId",
                        "relayId of 65 chars with end")
                .hasMessage("relayId: 65 chars (expected: 1..64)");
        assertRefused(
                () -> RelayBody.parse(chunkInput("").put("relayId", max + "r")), "relayId", "relayId of 65 chars");
    }

    @Test
    void chunk_accessor_isAReadOnlyFreshViewEachCall() {
        RelayBody.Chunk chunk = RelayBody.Chunk.of("r-1", 0, bytes(10));

        ByteBuffer first = chunk.chunk();
        first.get(new byte[10]);

        assertThat(chunk.chunk().remaining())
                .as("reading one view leaves the next whole")
                .isEqualTo(10);
        assertThatThrownBy(() -> chunk.chunk().put((byte) 1)).isInstanceOf(ReadOnlyBufferException.class);
    }

    @Test
    void newChunk_fromABufferWithAPosition_keepsOnlyTheRemainingBytes() {
        ByteBuffer buffer = ByteBuffer.wrap(bytes(10));
        buffer.position(4);

        RelayBody.Chunk chunk = new RelayBody.Chunk("r-1", 0, buffer);

        assertThat(chunk.chunk().position()).isZero();
        assertThat(content(chunk.chunk())).hasSize(6).startsWith(bytes(10)[4]);
    }
}
