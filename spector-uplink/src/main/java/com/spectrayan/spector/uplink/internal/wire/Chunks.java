package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.databind.node.BinaryNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.nio.ByteBuffer;
import java.util.Base64;

/**
 * The base64 form of body chunks, each way: standard base64 (RFC 4648 section 4: alphabet
 * {@code A-Z a-z 0-9 + /}, padded with {@code =} to a multiple of 4 chars, no line breaks), in its
 * canonical form (the unused bits of the last quantum are zero), decoding to at most {@link
 * Limits#CHUNK_BYTES} bytes. The size is checked from the length before anything is decoded.
 */
final class Chunks {
    /** Chars of the base64 form of the largest chunk: 349 528 for 256 KiB. */
    static final int MAX_ENCODED_CHARS = (int) (4 * ((Limits.CHUNK_BYTES.max() + 2) / 3));

    private static final String EXPECTED = "(expected: standard base64, RFC 4648 section 4, padded)";

    private Chunks() {}

    /**
     * Reads the chunk member {@code field} of {@code object}: base64 text as it arrives over the
     * wire, or the binary node {@link #node} makes (a frame read back before it was encoded).
     */
    static ByteBuffer read(ObjectNode object, String field) {
        if (Inputs.member(object, field) instanceof BinaryNode binary) {
            return checked(field, ByteBuffer.wrap(binary.binaryValue()));
        }
        return decode(field, Inputs.text(object, field));
    }

    /** Decodes a chunk into a read-only buffer, or refuses it naming {@code field}. */
    static ByteBuffer decode(String field, String text) {
        int length = text.length();
        if (length % 4 != 0) {
            throw SpectorException.badRequest(
                    field, "not base64: " + length + " chars is not a multiple of 4 " + EXPECTED);
        }
        int padding = 0;
        if (length > 0 && text.charAt(length - 1) == '=') {
            padding = text.charAt(length - 2) == '=' ? 2 : 1;
        }
        long bytes = (long) length / 4 * 3 - padding;
        if (bytes > Limits.CHUNK_BYTES.max()) {
            throw SpectorException.badRequest(field, bytes + " bytes " + Checks.expected(Limits.CHUNK_BYTES));
        }
        byte[] decoded;
        try {
            decoded = Base64.getDecoder().decode(text);
        } catch (IllegalArgumentException e) {
            throw SpectorException.badRequest(field, "not base64 " + EXPECTED);
        }
        // Java's decoder accepts non-zero bits after the last byte; the canonical form has none.
        if (padding > 0) {
            if (!canonicalTail(padding, text.charAt(length - padding - 1))) {
                throw SpectorException.badRequest(
                        field, "not canonical base64: non-zero bits after the last byte " + EXPECTED);
            }
        }
        return ByteBuffer.wrap(decoded).asReadOnlyBuffer();
    }

    /**
     * Returns a chunk as a JSON binary node: Jackson writes it as standard padded base64 (its
     * default variant, what {@link #decode} reads) straight into the frame's bytes, with no
     * base64 string in between.
     */
    static BinaryNode node(ByteBuffer chunk) {
        ByteBuffer b = chunk.duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return BinaryNode.valueOf(bytes);
    }

    /** Returns a read-only view of a chunk's remaining bytes at position 0, refusing one too large. */
    static ByteBuffer checked(String field, ByteBuffer chunk) {
        if (chunk.remaining() > Limits.CHUNK_BYTES.max()) {
            throw SpectorException.badRequest(
                    field, chunk.remaining() + " bytes " + Checks.expected(Limits.CHUNK_BYTES));
        }
        return chunk.slice().asReadOnlyBuffer();
    }

    /**
     * Answers whether padded base64 has no bits set after its last byte: {@code last} is the char
     * before the {@code padding} (1 or 2) {@code =}, one the decoder already accepted.
     */
    static boolean canonicalTail(int padding, char last) {
        return (value(last) & (padding == 2 ? 0x0f : 0x03)) == 0;
    }

    private static int value(char c) {
        if (c >= 'A' && c <= 'Z') {
            return c - 'A';
        }
        if (c >= 'a' && c <= 'z') {
            return c - 'a' + 26;
        }
        if (c >= '0' && c <= '9') {
            return c - '0' + 52;
        }
        return c == '+' ? 62 : 63; // '/': the decoder refused any other char already
    }
}
