package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.FrameTooLargeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.jspecify.annotations.Nullable;

/**
 * Reads and writes the frames of uplink protocol v1, one JSON object per WebSocket text frame:
 *
 * <pre>
 * call   {"type":"call",   "id":ID, "op":NAME,   "input":{...}}
 * result {"type":"result", "id":ID, "output":{...}}
 * error  {"type":"error",  "id":ID, "code":CODE, "message":TEXT, "details":{...}}
 * push   {"type":"push",   "id":ID, "push":NAME, "data":{...}}
 *
 * ID    integer 1..2^53-1, assigned by the caller; a push and an answer carry their call's id
 * NAME  [a-z][a-z0-9.-]{0,63}
 * CODE  an ErrorCode name; one this side does not know decodes as INTERNAL
 * TEXT  string of at most 4096 chars
 * the whole frame: at most MAX_FRAME_CHARS chars, checked before parsing
 * </pre>
 *
 * <p>Decoding refuses text that is too long ({@link FrameTooLargeException}), not one JSON object
 * (trailing content and duplicate member names included), of an unknown {@code type}, or with a
 * member missing, of the wrong JSON type or outside its bound ({@link CorruptFrameException},
 * naming the member). Members a frame does not define are ignored, so a later version can add
 * some. Encoding refuses a frame whose text would be too long, so a peer never receives one.
 *
 * <p>Thread-safe and stateless.
 */
public final class FrameCodec {
    /** The WebSocket subprotocol a worker offers and the gateway selects for protocol v1. */
    public static final String SUBPROTOCOL = "spector-uplink.v1";

    /** The protocol version these frames are. */
    public static final int PROTOCOL_VERSION = 1;

    /**
     * Chars of one text frame, 360 KiB: the base64 of a 256 KiB chunk (349 528 chars) plus room
     * for the rest of the frame. Counted in chars; as UTF-8 a frame is at most 3 bytes a char.
     */
    public static final int MAX_FRAME_CHARS = 360 * 1024;

    /** Nesting depth of a frame's JSON; the deepest member of v1 (a header pair) is at depth 4. */
    static final int MAX_NESTING_DEPTH = 32;

    /** Chars of a JSON parser's message kept in a refusal. */
    static final int MAX_PARSER_MESSAGE_CHARS = 200;

    private static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
                    .streamReadConstraints(StreamReadConstraints.builder()
                            .maxNestingDepth(MAX_NESTING_DEPTH)
                            .maxStringLength(MAX_FRAME_CHARS)
                            .build())
                    .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                    .build())
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private FrameCodec() {}

    /**
     * Returns the text of a frame.
     *
     * @throws FrameTooLargeException when the text would be longer than {@link #MAX_FRAME_CHARS}
     */
    public static String encode(Frame frame) {
        return new String(encodeUtf8(frame), StandardCharsets.UTF_8);
    }

    /**
     * Returns the text of a frame as UTF-8 bytes, what a WebSocket text frame carries: written by
     * Jackson straight to bytes, with no intermediate {@code String} (a relay chunk's base64 is
     * about 350 000 chars, and each copy of it costs on the hot path).
     *
     * @throws FrameTooLargeException when the text would be longer than {@link #MAX_FRAME_CHARS}
     */
    public static byte[] encodeUtf8(Frame frame) {
        byte[] bulk = BulkFrames.encode(frame);
        byte[] utf8 = bulk != null ? bulk : jsonBytes(frame);
        if (utf8.length > MAX_FRAME_CHARS) { // a char is 1 to 3 bytes here: count only when it may matter
            int chars = new String(utf8, StandardCharsets.UTF_8).length();
            if (chars > MAX_FRAME_CHARS) {
                throw FrameTooLargeException.of(chars, MAX_FRAME_CHARS);
            }
        }
        return utf8;
    }

    /** Writes a frame through Jackson's tree, with no bound. */
    static byte[] jsonBytes(Frame frame) {
        ObjectNode node = JsonNodeFactory.instance.objectNode();
        if (frame instanceof Frame.Call call) {
            node.put("type", "call").put("id", call.id()).put("op", call.op());
            node.set("input", call.input());
        } else if (frame instanceof Frame.Result result) {
            node.put("type", "result").put("id", result.id());
            node.set("output", result.output());
        } else if (frame instanceof Frame.ErrorFrame error) {
            node.put("type", "error")
                    .put("id", error.id())
                    .put("code", error.code().name())
                    .put("message", error.message());
            node.set("details", error.details());
        } else if (frame instanceof Frame.Push push) {
            node.put("type", "push").put("id", push.id()).put("push", push.push());
            node.set("data", push.data());
        } else {
            throw new IllegalStateException("a frame is a call, result, error or push: " + frame);
        }
        return writeJson(node);
    }

    /**
     * Reads one frame from the text of a WebSocket text frame.
     *
     * @throws FrameTooLargeException when the text is longer than {@link #MAX_FRAME_CHARS}
     * @throws CorruptFrameException when it is not a frame of protocol v1, naming the member
     */
    public static Frame decode(String text) {
        if (text.length() > MAX_FRAME_CHARS) {
            throw FrameTooLargeException.of(text.length(), MAX_FRAME_CHARS);
        }
        JsonNode root;
        try {
            root = MAPPER.readTree(text);
        } catch (JsonProcessingException e) {
            throw CorruptFrameException.malformed(malformed(e), e);
        }
        return frame(root);
    }

    /**
     * Reads one frame from the UTF-8 bytes of a WebSocket text frame, parsing the bytes as they
     * are (no {@code String} of the whole text; a body chunk is decoded straight from them, see
     * {@link BulkFrames}). Bytes that are not UTF-8 are a corrupt frame.
     *
     * @param utf8 the text's bytes, from its position to its limit (not moved)
     * @throws FrameTooLargeException when the text is longer than {@link #MAX_FRAME_CHARS}
     * @throws CorruptFrameException when it is not a frame of protocol v1, naming the member
     */
    public static Frame decode(ByteBuffer utf8) {
        int length = utf8.remaining();
        if (length <= MAX_FRAME_CHARS) {
            Frame bulk = BulkFrames.decode(utf8);
            if (bulk != null) {
                return bulk;
            }
        }
        byte[] bytes;
        int offset;
        if (utf8.hasArray()) {
            bytes = utf8.array();
            offset = utf8.arrayOffset() + utf8.position();
        } else {
            bytes = new byte[length];
            utf8.duplicate().get(bytes);
            offset = 0;
        }
        if (length > MAX_FRAME_CHARS) { // a char is 1 to 3 bytes: only then count the chars
            return decode(new String(bytes, offset, length, StandardCharsets.UTF_8));
        }
        return frame(readObject(bytes, offset, length));
    }

    /**
     * Reads one JSON object from UTF-8 bytes by the rules of a frame's text (section 2: no trailing
     * content, no duplicate member names, nesting at most {@value #MAX_NESTING_DEPTH}; bytes that
     * are not UTF-8 are refused): the JSON payloads of protocol v2 (heads, a RESET's error object).
     * The caller bounds the length first.
     *
     * @throws CorruptFrameException naming {@code frame} when the bytes are not one JSON object
     */
    public static ObjectNode readObject(byte[] utf8, int offset, int length) {
        JsonNode root;
        try {
            root = MAPPER.readTree(utf8, offset, length);
        } catch (JsonProcessingException e) {
            throw CorruptFrameException.malformed(malformed(e), e);
        } catch (IOException e) {
            throw CorruptFrameException.malformed("unreadable: " + e.getMessage(), e);
        }
        if (root == null || root.isMissingNode() || !root.isObject()) {
            throw CorruptFrameException.of(
                    CorruptFrameException.FRAME, Inputs.kind(root) + " (expected: a JSON object)");
        }
        return (ObjectNode) root;
    }

    /** Returns a JSON tree as UTF-8 bytes, with no bound: the JSON payloads of protocol v2. */
    public static byte[] writeJson(JsonNode node) {
        try {
            return MAPPER.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a JSON tree always serialises", e);
        }
    }

    /**
     * Returns an error frame's members but {@code type} and {@code id}, as UTF-8 JSON: {@code
     * {"code":CODE,"message":TEXT,"details":{...}}}, the error object of a protocol v2 RESET.
     */
    public static byte[] encodeErrorObject(Frame.ErrorFrame error) {
        ObjectNode node = JsonNodeFactory.instance.objectNode();
        node.put("code", error.code().name()).put("message", error.message());
        node.set("details", error.details());
        return writeJson(node);
    }

    /**
     * Reads an error object ({@link #encodeErrorObject}) as the error frame of call {@code id},
     * with the checks of an error frame's members: an unknown code reads as INTERNAL, and members
     * the schema does not name (a {@code type} or {@code id} among them) are ignored.
     *
     * @throws CorruptFrameException naming the member that broke
     */
    public static Frame.ErrorFrame decodeErrorObject(byte[] utf8, int offset, int length, long id) {
        ObjectNode root = readObject(utf8, offset, length);
        String problem = FrameRules.idProblem(id);
        if (problem != null) {
            throw new IllegalArgumentException("id: " + problem);
        }
        root.put("type", "error").put("id", id);
        return (Frame.ErrorFrame) frame(root);
    }

    /** Checks a parsed frame's members and makes the frame. */
    static Frame frame(@Nullable JsonNode root) {
        if (root == null || root.isMissingNode() || !root.isObject()) {
            throw CorruptFrameException.of(
                    CorruptFrameException.FRAME, Inputs.kind(root) + " (expected: a JSON object)");
        }
        String type = text(root, "type", 0);
        long id = id(root);
        return switch (type) {
            case "call" -> new Frame.Call(id, name(root, "op", id), object(root, "input", id));
            case "result" -> new Frame.Result(id, object(root, "output", id));
            case "error" -> new Frame.ErrorFrame(id, code(root, id), message(root, id), object(root, "details", id));
            case "push" -> new Frame.Push(id, name(root, "push", id), object(root, "data", id));
            default -> throw CorruptFrameException.of("type", "unknown (expected: call, result, error or push)", id);
        };
    }

    private static long id(JsonNode root) {
        JsonNode node = root.get("id");
        String expected = "an integer " + Frame.MIN_ID + ".." + Frame.MAX_ID;
        if (node == null || node.isNull()) {
            throw CorruptFrameException.of("id", "missing (expected: " + expected + ")");
        }
        if (!node.isIntegralNumber()) {
            throw CorruptFrameException.of("id", Inputs.kind(node) + " (expected: " + expected + ")");
        }
        if (!node.canConvertToLong()) {
            throw CorruptFrameException.of("id", "out of range (expected: " + Frame.MIN_ID + ".." + Frame.MAX_ID + ")");
        }
        long id = node.longValue();
        String problem = FrameRules.idProblem(id);
        if (problem != null) {
            throw CorruptFrameException.of("id", problem);
        }
        return id;
    }

    private static String text(JsonNode root, String field, long id) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            throw CorruptFrameException.of(field, "missing (expected: a string)", id);
        }
        if (!node.isTextual()) {
            throw CorruptFrameException.of(field, Inputs.kind(node) + " (expected: a string)", id);
        }
        return node.textValue();
    }

    private static String name(JsonNode root, String field, long id) {
        String name = text(root, field, id);
        String problem = FrameRules.nameProblem(name);
        if (problem != null) {
            throw CorruptFrameException.of(field, problem, id);
        }
        return name;
    }

    private static ErrorCode code(JsonNode root, long id) {
        String name = text(root, "code", id);
        ErrorCode code = ErrorCode.fromWire(name);
        return code == null ? ErrorCode.INTERNAL : code;
    }

    private static String message(JsonNode root, long id) {
        String message = text(root, "message", id);
        String problem = FrameRules.messageProblem(message);
        if (problem != null) {
            throw CorruptFrameException.of("message", problem, id);
        }
        return message;
    }

    private static ObjectNode object(JsonNode root, String field, long id) {
        JsonNode node = root.get(field);
        if (node == null || !node.isObject()) {
            throw CorruptFrameException.of(field, Inputs.kind(node) + " (expected: an object)", id);
        }
        return (ObjectNode) node;
    }

    private static String malformed(JsonProcessingException e) {
        String message = String.valueOf(e.getOriginalMessage());
        if (message.length() > MAX_PARSER_MESSAGE_CHARS) {
            message = message.substring(0, MAX_PARSER_MESSAGE_CHARS) + "...";
        }
        @Nullable JsonLocation at = e.getLocation();
        String where = at == null ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr();
        return "malformed JSON" + where + ": " + message;
    }
}
