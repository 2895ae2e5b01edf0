package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.SpectorException;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Reads the members of an operation's input (or a push's data, or a result's output) by JSON
 * type, refusing a missing member or one of the wrong type with BAD_REQUEST naming it. Members
 * the schema does not name are ignored. A JSON {@code null} reads as a missing member.
 */
public final class Inputs {
    private Inputs() {}

    /** Returns {@code node} as an object, or refuses it naming {@code what} ({@code input}, {@code data}...). */
    public static ObjectNode object(@Nullable JsonNode node, String what) {
        if (node == null || !node.isObject()) {
            throw SpectorException.badRequest(what, kind(node) + " (expected: an object)");
        }
        return (ObjectNode) node;
    }

    /** Returns a member, or null when it is absent or JSON null. */
    public static @Nullable JsonNode member(ObjectNode object, String field) {
        JsonNode node = object.get(field);
        return node == null || node.isNull() ? null : node;
    }

    /** Returns a required string member. */
    public static String text(ObjectNode object, String field) {
        String value = optionalText(object, field);
        if (value == null) {
            throw missing(field, "a string");
        }
        return value;
    }

    /** Returns an optional string member, or null when it is absent. */
    public static @Nullable String optionalText(ObjectNode object, String field) {
        JsonNode node = member(object, field);
        if (node == null) {
            return null;
        }
        if (!node.isTextual()) {
            throw wrongType(field, node, "a string");
        }
        return node.textValue();
    }

    /** Returns a required boolean member. */
    static boolean bool(ObjectNode object, String field) {
        Boolean value = optionalBool(object, field);
        if (value == null) {
            throw missing(field, "a boolean");
        }
        return value;
    }

    /** Returns an optional boolean member, or null when it is absent. */
    static @Nullable Boolean optionalBool(ObjectNode object, String field) {
        JsonNode node = member(object, field);
        if (node == null) {
            return null;
        }
        if (!node.isBoolean()) {
            throw wrongType(field, node, "a boolean");
        }
        return node.booleanValue();
    }

    /** Returns a required integer member within {@code min..max}. */
    public static long integer(ObjectNode object, String field, long min, long max) {
        JsonNode node = member(object, field);
        String expected = "an integer " + min + ".." + max;
        if (node == null) {
            throw missing(field, expected);
        }
        if (!node.isIntegralNumber()) {
            throw wrongType(field, node, expected);
        }
        if (!node.canConvertToLong()) {
            throw SpectorException.badRequest(field, "out of range (expected: " + min + ".." + max + ")");
        }
        long value = node.longValue();
        if (value < min || value > max) {
            throw SpectorException.badRequest(field, value + " (expected: " + min + ".." + max + ")");
        }
        return value;
    }

    /** The refusal of an absent member. */
    public static SpectorException missing(String field, String expected) {
        return SpectorException.badRequest(field, "missing (expected: " + expected + ")");
    }

    /** The refusal of a member of the wrong JSON type. */
    public static SpectorException wrongType(String field, JsonNode node, String expected) {
        return SpectorException.badRequest(field, kind(node) + " (expected: " + expected + ")");
    }

    /** Returns the JSON type of a node for a message: {@code "a string"}, {@code "a number"}... */
    static String kind(@Nullable JsonNode node) {
        if (node == null || node.isMissingNode()) {
            return "missing";
        }
        return switch (node.getNodeType()) {
            case STRING -> "a string";
            case NUMBER -> node.isIntegralNumber() ? "an integer" : "a number with a fraction";
            case BOOLEAN -> "a boolean";
            case ARRAY -> "an array";
            case OBJECT -> "an object";
            case NULL -> "null";
            default -> "a " + node.getNodeType().name().toLowerCase(Locale.ROOT);
        };
    }
}
