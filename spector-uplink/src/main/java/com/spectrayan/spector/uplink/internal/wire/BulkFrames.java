package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.databind.node.BinaryNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.wire.Frame;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.jspecify.annotations.Nullable;

/**
 * The two frames that carry bodies, {@code relay.body} calls and {@code relay-chunk} pushes,
 * written and read without a JSON tree around their chunk. They are the same text {@link
 * FrameCodec} would write (a test holds the two byte for byte); this is only a faster way to it.
 *
 * <pre>
 * {"type":"push","id":ID,"push":"relay-chunk","data":{"chunk":"BASE64"}}
 * {"type":"call","id":ID,"op":"relay.body","input":{"relayId":"RELAY","seq":SEQ,"chunk":"BASE64"}}
 * </pre>
 *
 * Writing: the frame without its chunk goes through Jackson (a few dozen bytes), and the JDK's
 * base64 encoder writes the chunk into the gap. Reading takes only frames of exactly these
 * layouts whose chunk is canonical base64 of at most 256 KiB; anything else, valid or not, goes
 * to the tree parser, which owns every refusal and its message. A frame read here becomes the same
 * {@link Frame} the tree parser makes, with the chunk already decoded (a binary node), and is then
 * checked by the same code.
 */
final class BulkFrames {
    private static final byte[] PUSH_HEAD = ascii("{\"type\":\"push\",\"id\":");
    private static final byte[] PUSH_MIDDLE = ascii(",\"push\":\"relay-chunk\",\"data\":{\"chunk\":\"");
    private static final byte[] CALL_HEAD = ascii("{\"type\":\"call\",\"id\":");
    private static final byte[] CALL_OP = ascii(",\"op\":\"relay.body\",\"input\":{\"relayId\":\"");
    private static final byte[] CALL_SEQ = ascii("\",\"seq\":");
    private static final byte[] CALL_CHUNK = ascii(",\"chunk\":\"");
    private static final byte[] TAIL = ascii("\"}}");
    private static final byte[] GAP = ascii("\"chunk\":\"\"");

    /** Digits of the largest id (2^53 - 1) and of the largest seq. */
    private static final int MAX_DIGITS = 16;

    private BulkFrames() {}

    /**
     * Writes a frame whose payload ends with a binary {@code chunk}, or returns null for any other
     * frame.
     */
    static byte @Nullable [] encode(Frame frame) {
        ObjectNode payload;
        if (frame instanceof Frame.Push push && push.push().equals(RelayChunk.PUSH)) {
            payload = push.data();
        } else if (frame instanceof Frame.Call call && call.op().equals(RelayBody.OP)) {
            payload = call.input();
        } else {
            return null;
        }
        if (!(payload.get("chunk") instanceof BinaryNode chunk) || !lastMemberIsChunk(payload)) {
            return null;
        }
        ObjectNode gapped = payload.deepCopy().put("chunk", "");
        Frame shell = frame instanceof Frame.Push p
                ? new Frame.Push(p.id(), p.push(), gapped)
                : new Frame.Call(((Frame.Call) frame).id(), RelayBody.OP, gapped);
        byte[] around = FrameCodec.jsonBytes(shell);
        int gap = lastIndexOf(around, GAP) + GAP.length - 1; // the closing quote of the empty chunk
        byte[] encoded = Base64.getEncoder().encode(chunk.binaryValue());
        byte[] out = new byte[around.length + encoded.length];
        System.arraycopy(around, 0, out, 0, gap);
        System.arraycopy(encoded, 0, out, gap, encoded.length);
        System.arraycopy(around, gap, out, gap + encoded.length, around.length - gap);
        return out;
    }

    /**
     * Reads a {@code relay-chunk} push or a {@code relay.body} chunk call of the exact layouts above,
     * or returns null: the caller then parses it as any frame.
     */
    static @Nullable Frame decode(ByteBuffer utf8) {
        ByteBuffer in = utf8.duplicate();
        int end = in.limit();
        if (!endsWith(in, end, TAIL)) {
            return null;
        }
        if (startsWith(in, in.position(), PUSH_HEAD)) {
            int at = in.position() + PUSH_HEAD.length;
            long id = digits(in, at, end);
            at = skipDigits(in, at, end);
            if (id < 0 || !startsWith(in, at, PUSH_MIDDLE)) {
                return null;
            }
            BinaryNode chunk = chunk(in, at + PUSH_MIDDLE.length, end - TAIL.length);
            if (chunk == null) {
                return null;
            }
            ObjectNode data = JsonNodeFactory.instance.objectNode().set("chunk", chunk);
            return FrameCodec.frame(
                    root("push", id).put("push", RelayChunk.PUSH).set("data", data));
        }
        if (startsWith(in, in.position(), CALL_HEAD)) {
            int at = in.position() + CALL_HEAD.length;
            long id = digits(in, at, end);
            at = skipDigits(in, at, end);
            if (id < 0 || !startsWith(in, at, CALL_OP)) {
                return null;
            }
            at += CALL_OP.length;
            int relayStart = at;
            while (at < end && Checks.isIdChar((char) in.get(at))) {
                at++;
            }
            if (at == relayStart || at - relayStart > Limits.RELAY_ID_CHARS.max() || !startsWith(in, at, CALL_SEQ)) {
                return null;
            }
            String relayId = ascii(in, relayStart, at);
            at += CALL_SEQ.length;
            long seq = digits(in, at, end);
            at = skipDigits(in, at, end);
            if (seq < 0 || !startsWith(in, at, CALL_CHUNK)) {
                return null;
            }
            BinaryNode chunk = chunk(in, at + CALL_CHUNK.length, end - TAIL.length);
            if (chunk == null) {
                return null;
            }
            ObjectNode input = JsonNodeFactory.instance.objectNode();
            input.put("relayId", relayId).put("seq", seq).set("chunk", chunk);
            return FrameCodec.frame(root("call", id).put("op", RelayBody.OP).set("input", input));
        }
        return null;
    }

    private static ObjectNode root(String type, long id) {
        return JsonNodeFactory.instance.objectNode().put("type", type).put("id", id);
    }

    /** Decodes canonical base64 of at most 256 KiB between {@code from} and {@code to}, else null. */
    private static @Nullable BinaryNode chunk(ByteBuffer in, int from, int to) {
        int length = to - from;
        if (length < 0 || length % 4 != 0 || length > Chunks.MAX_ENCODED_CHARS) {
            return null;
        }
        ByteBuffer text = in.duplicate().limit(to).position(from);
        byte[] bytes;
        try {
            ByteBuffer decoded = Base64.getDecoder().decode(text);
            bytes = new byte[decoded.remaining()];
            decoded.get(bytes);
        } catch (IllegalArgumentException e) {
            return null; // not base64: the tree parser says so
        }
        if (bytes.length > Limits.CHUNK_BYTES.max() || (length > 0 && !canonicalEnd(in, to))) {
            return null;
        }
        return BinaryNode.valueOf(bytes);
    }

    /** Answers whether padded base64 ending at {@code to} has no bits set after its last byte. */
    private static boolean canonicalEnd(ByteBuffer in, int to) {
        int padding = in.get(to - 1) != '=' ? 0 : in.get(to - 2) == '=' ? 2 : 1;
        return padding == 0 || Chunks.canonicalTail(padding, (char) in.get(to - padding - 1));
    }

    /** Reads 1 to {@link #MAX_DIGITS} ASCII digits with no leading zero, or returns -1. */
    private static long digits(ByteBuffer in, int at, int end) {
        long value = 0;
        int n = 0;
        while (at + n < end && n <= MAX_DIGITS) {
            byte b = in.get(at + n);
            if (b < '0' || b > '9') {
                break;
            }
            value = value * 10 + (b - '0');
            n++;
        }
        if (n == 0 || n > MAX_DIGITS || (n > 1 && in.get(at) == '0')) {
            return -1;
        }
        return value;
    }

    private static int skipDigits(ByteBuffer in, int at, int end) {
        while (at < end && in.get(at) >= '0' && in.get(at) <= '9') {
            at++;
        }
        return at;
    }

    private static boolean lastMemberIsChunk(ObjectNode payload) {
        String last = null;
        for (var names = payload.fieldNames(); names.hasNext(); ) {
            last = names.next();
        }
        return "chunk".equals(last);
    }

    private static boolean startsWith(ByteBuffer in, int at, byte[] prefix) {
        if (at < 0 || at + prefix.length > in.limit()) {
            return false;
        }
        for (int i = 0; i < prefix.length; i++) {
            if (in.get(at + i) != prefix[i]) {
                return false;
            }
        }
        return true;
    }

    private static boolean endsWith(ByteBuffer in, int end, byte[] suffix) {
        return end - suffix.length >= in.position() && startsWith(in, end - suffix.length, suffix);
    }

    private static int lastIndexOf(byte[] bytes, byte[] part) {
        for (int i = bytes.length - part.length; i >= 0; i--) {
            boolean match = true;
            for (int j = 0; j < part.length && match; j++) {
                match = bytes[i + j] == part[j];
            }
            if (match) {
                return i;
            }
        }
        throw new IllegalStateException("the frame was written with an empty chunk member");
    }

    private static String ascii(ByteBuffer in, int from, int to) {
        byte[] b = new byte[to - from];
        in.duplicate().position(from).get(b);
        return new String(b, StandardCharsets.US_ASCII);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
