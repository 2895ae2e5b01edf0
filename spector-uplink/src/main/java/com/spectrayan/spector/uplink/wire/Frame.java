package com.spectrayan.spector.uplink.wire;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.internal.wire.FrameRules;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One text frame of the uplink, protocol v1. The caller of an operation gives each call an {@code
 * id}; the answer ({@link Result} or {@link ErrorFrame}) and every {@link Push} the call causes
 * carry the same id. {@link FrameCodec} reads and writes them.
 *
 * <p>Constructing a frame outside its bounds is a programming error ({@link
 * IllegalArgumentException}); a peer's frame outside them is a {@link CorruptFrameException}. The
 * JSON members ({@code input}, {@code output}, {@code details}, {@code data}) are held as given,
 * not copied: do not change them after building a frame.
 */
public sealed interface Frame permits Frame.Call, Frame.Result, Frame.ErrorFrame, Frame.Push {
    /** The smallest frame id. */
    long MIN_ID = 1;

    /** The largest frame id: 2^53 - 1, the largest integer a JavaScript peer reads exactly. */
    long MAX_ID = (1L << 53) - 1;

    /** Chars of an operation or push name, {@code [a-z][a-z0-9.-]{0,63}}. */
    int MAX_NAME_CHARS = 64;

    /** Chars of an error frame's message. */
    int MAX_MESSAGE_CHARS = 4096;

    /** Returns the id of the call this frame is or belongs to. */
    long id();

    /**
     * A call of an operation: {@code {"type":"call","id":7,"op":"relay.request","input":{...}}}.
     *
     * @param id the id the caller assigned, unique among its calls in flight on the connection
     * @param op the operation's name, e.g. {@code relay.request}
     * @param input the operation's input; its schema parses it
     */
    record Call(long id, String op, ObjectNode input) implements Frame {
        public Call {
            FrameRules.requireValid("id", FrameRules.idProblem(id));
            FrameRules.requireValid("op", FrameRules.nameProblem(op));
            requireNonNull(input, "input");
        }
    }

    /**
     * The answer of a call that succeeded: {@code {"type":"result","id":7,"output":{}}}.
     *
     * @param id the call's id
     * @param output the operation's output
     */
    record Result(long id, ObjectNode output) implements Frame {
        public Result {
            FrameRules.requireValid("id", FrameRules.idProblem(id));
            requireNonNull(output, "output");
        }
    }

    /**
     * The answer of a call that failed: {@code {"type":"error","id":7,"code":"BAD_REQUEST",
     * "message":"...","details":{...}}}. A code the reader does not know decodes as {@link
     * ErrorCode#INTERNAL}.
     *
     * @param id the call's id
     * @param code the error code
     * @param message the message for humans, at most {@link #MAX_MESSAGE_CHARS} chars
     * @param details the details for machines, shaped as {@link ErrorCode#details()} says
     */
    record ErrorFrame(long id, ErrorCode code, String message, ObjectNode details) implements Frame {
        public ErrorFrame {
            FrameRules.requireValid("id", FrameRules.idProblem(id));
            requireNonNull(code, "code");
            FrameRules.requireValid("message", FrameRules.messageProblem(message));
            requireNonNull(details, "details");
        }

        /** Returns the error frame answering call {@code id} with a failure; a long message is cut. */
        public static ErrorFrame of(long id, SpectorException failure) {
            String message = String.valueOf(failure.getMessage());
            if (message.length() > MAX_MESSAGE_CHARS) {
                int end = MAX_MESSAGE_CHARS;
                if (Character.isHighSurrogate(message.charAt(end - 1))) {
                    end--;
                }
                message = message.substring(0, end);
            }
            ObjectNode details = JsonNodeFactory.instance.objectNode();
            for (Map.Entry<String, Object> e : failure.details().entrySet()) {
                Object value = e.getValue();
                if (value instanceof Integer i) {
                    details.put(e.getKey(), i);
                } else if (value instanceof Long l) {
                    details.put(e.getKey(), l);
                } else {
                    details.put(e.getKey(), String.valueOf(value));
                }
            }
            return new ErrorFrame(id, failure.code(), message, details);
        }

        /**
         * Returns the failure this frame reports, with the details that fit the code's shape (a
         * member the shape does not name, or of another type, is dropped).
         */
        public SpectorException toException() {
            Map<String, Object> shaped = new LinkedHashMap<>();
            for (Map.Entry<String, Class<?>> member : code.details().entrySet()) {
                Object value = shapedValue(details.get(member.getKey()), member.getValue());
                if (value != null) {
                    shaped.put(member.getKey(), value);
                }
            }
            return SpectorException.of(code, message, shaped);
        }

        private static @Nullable Object shapedValue(@Nullable JsonNode node, Class<?> type) {
            if (node == null) {
                return null;
            }
            if (type == String.class && node.isTextual()) {
                return node.textValue();
            }
            if (type == Long.class && node.isIntegralNumber() && node.canConvertToLong()) {
                return node.longValue();
            }
            if (type == Integer.class && node.isIntegralNumber() && node.canConvertToInt()) {
                return node.intValue();
            }
            return null;
        }
    }

    /**
     * A push a call causes before its answer: {@code {"type":"push","id":7,"push":"relay-head",
     * "data":{...}}}.
     *
     * @param id the id of the call the push belongs to
     * @param push the push's name, e.g. {@code relay-head}
     * @param data the push's data; its schema parses it
     */
    record Push(long id, String push, ObjectNode data) implements Frame {
        public Push {
            FrameRules.requireValid("id", FrameRules.idProblem(id));
            FrameRules.requireValid("push", FrameRules.nameProblem(push));
            requireNonNull(data, "data");
        }
    }
}
