package com.spectrayan.spector.uplink.internal.wire;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.nio.ByteBuffer;

/**
 * The data of the {@code relay-chunk} push: the next part of the relayed response's body, after
 * the {@link RelayHead}. Keyed by the {@code relay.request} call's frame id.
 *
 * <pre>
 * {"chunk":"aGVsbG8="}
 *
 * chunk  standard base64 (RFC 4648 section 4, padded, canonical) of at most 262 144 bytes
 * </pre>
 *
 * @param chunk the part's bytes: a read-only view at position 0, at most {@link
 *     Limits#CHUNK_BYTES}; the accessor returns a fresh view each call
 */
public record RelayChunk(ByteBuffer chunk) {
    /** The push's name. */
    public static final String PUSH = "relay-chunk";

    public RelayChunk {
        chunk = Chunks.checked("chunk", requireNonNull(chunk, "chunk"));
    }

    /** Returns a part holding {@code bytes}, which are not copied: do not change them afterwards. */
    public static RelayChunk of(byte[] bytes) {
        return new RelayChunk(ByteBuffer.wrap(bytes));
    }

    /**
     * Reads and bounds a {@code relay-chunk} push's data. The size is checked from the text's
     * length before it is decoded.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static RelayChunk parse(JsonNode data) {
        return new RelayChunk(Chunks.read(Inputs.object(data, "data"), "chunk"));
    }

    @Override
    public ByteBuffer chunk() {
        return chunk.duplicate();
    }

    /** Returns the data as sent. */
    public ObjectNode toJson() {
        return JsonNodeFactory.instance.objectNode().set("chunk", Chunks.node(chunk));
    }
}
