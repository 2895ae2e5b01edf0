package com.spectrayan.spector.uplink.internal.wire;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.nio.ByteBuffer;

/**
 * The input of {@code relay.body}: the next part of a relayed request's body ({@link Chunk}), or
 * its end ({@link End}). Output {@code {}}.
 *
 * <pre>
 * {"relayId":"r-1", "seq":0, "chunk":"aGVsbG8="}      a Chunk
 * {"relayId":"r-1", "end":true}                       the End
 *
 * relayId  [A-Za-z0-9._:-], 1..64 chars
 * seq      integer 0..2^31-1, 0 for the first chunk, then +1 each (the relay engine checks order)
 * chunk    standard base64 (RFC 4648 section 4, padded, canonical) of at most 262 144 bytes
 * end      true; exactly one of chunk and end, and no seq with end
 * </pre>
 *
 * <p>Refusals are BAD_REQUEST naming the field.
 */
public sealed interface RelayBody permits RelayBody.Chunk, RelayBody.End {
    /** The operation's name. */
    String OP = "relay.body";

    /** The largest {@code seq}. */
    long MAX_SEQ = Integer.MAX_VALUE;

    /** Returns the id of the relay whose request body this is part of. */
    String relayId();

    /** Returns the input as sent. */
    ObjectNode toJson();

    /**
     * Reads and bounds a {@code relay.body} input. The size of a chunk is checked from its length
     * before it is decoded.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    static RelayBody parse(JsonNode input) {
        ObjectNode in = Inputs.object(input, "input");
        String relayId = Inputs.text(in, "relayId");
        Boolean end = Inputs.optionalBool(in, "end");
        if (end != null) {
            if (!end) {
                throw SpectorException.badRequest("end", "false (expected: true, or no end with seq and chunk)");
            }
            if (Inputs.member(in, "chunk") != null) {
                throw SpectorException.badRequest("chunk", "given with end (expected: exactly one of chunk and end)");
            }
            if (Inputs.member(in, "seq") != null) {
                throw SpectorException.badRequest("seq", "given with end (expected: seq only with chunk)");
            }
            return new End(relayId);
        }
        if (Inputs.member(in, "chunk") == null) {
            throw SpectorException.badRequest("chunk", "missing (expected: exactly one of chunk and end)");
        }
        int seq = (int) Inputs.integer(in, "seq", 0, MAX_SEQ);
        ByteBuffer chunk = Chunks.read(in, "chunk");
        Checks.id("relayId", relayId, Limits.RELAY_ID_CHARS);
        return new Chunk(relayId, seq, chunk);
    }

    /**
     * One part of a relayed request's body.
     *
     * @param relayId the relay's id
     * @param seq the part's place in the body, from 0
     * @param chunk the part's bytes: a read-only view at position 0, at most {@link
     *     Limits#CHUNK_BYTES}; the accessor returns a fresh view each call
     */
    record Chunk(String relayId, int seq, ByteBuffer chunk) implements RelayBody {
        public Chunk {
            Checks.id("relayId", requireNonNull(relayId, "relayId"), Limits.RELAY_ID_CHARS);
            if (seq < 0) {
                throw SpectorException.badRequest("seq", seq + " (expected: 0.." + MAX_SEQ + ")");
            }
            chunk = Chunks.checked("chunk", requireNonNull(chunk, "chunk"));
        }

        /** Returns a part holding {@code bytes}, which are not copied: do not change them afterwards. */
        public static Chunk of(String relayId, int seq, byte[] bytes) {
            return new Chunk(relayId, seq, ByteBuffer.wrap(bytes));
        }

        @Override
        public ByteBuffer chunk() {
            return chunk.duplicate();
        }

        @Override
        public ObjectNode toJson() {
            return JsonNodeFactory.instance
                    .objectNode()
                    .put("relayId", relayId)
                    .put("seq", seq)
                    .set("chunk", Chunks.node(chunk));
        }
    }

    /**
     * The end of a relayed request's body.
     *
     * @param relayId the relay's id
     */
    record End(String relayId) implements RelayBody {
        public End {
            Checks.id("relayId", requireNonNull(relayId, "relayId"), Limits.RELAY_ID_CHARS);
        }

        @Override
        public ObjectNode toJson() {
            return JsonNodeFactory.instance.objectNode().put("relayId", relayId).put("end", true);
        }
    }
}
