package com.spectrayan.spector.contract;

import static java.util.Objects.requireNonNull;

import java.util.Map;

/**
 * An inclusive numeric bound on one field or resource, named as operators and messages see it,
 * and the error a value outside it raises.
 *
 * <p>Messages follow {@code "name: value (expected: min..max unit)"}, so a refusal names the bound
 * that broke.
 *
 * @param name the field or setting the bound applies to, e.g. {@code relayIdChars}
 * @param min the smallest allowed value
 * @param max the largest allowed value
 * @param unit what the numbers count, e.g. {@code bytes} or {@code chars}
 * @param code the error a value outside the bound raises
 */
public record Bound(String name, long min, long max, String unit, ErrorCode code) {
    public Bound {
        requireNonNull(name, "name");
        requireNonNull(unit, "unit");
        requireNonNull(code, "code");
        if (min > max) {
            throw new IllegalArgumentException("min: " + min + " (expected: <= max " + max + ")");
        }
    }

    /** A bound from 0 to {@code max}. */
    public static Bound atMost(String name, long max, String unit, ErrorCode code) {
        return new Bound(name, 0, max, unit, code);
    }

    /** Answers whether a value is within the bound. */
    public boolean allows(long value) {
        return value >= min && value <= max;
    }

    /**
     * Returns the value when it is within the bound.
     *
     * @throws SpectorException with {@link #code()} naming this bound otherwise
     */
    public long check(long value) {
        if (!allows(value)) {
            throw refusal(value);
        }
        return value;
    }

    /** Returns the failure for a value outside the bound. */
    public SpectorException refusal(long value) {
        String expected = min == 0 ? "<= " + max : min + ".." + max;
        String message = name + ": " + value + " (expected: " + expected + " " + unit + ")";
        return switch (code) {
            case BAD_REQUEST -> SpectorException.badRequest(name, value + " (expected: " + expected + " " + unit + ")");
            case PAYLOAD_TOO_LARGE -> SpectorException.of(code, message, Map.of("limitBytes", max));
            case GATEWAY_ROUTING_FAILURE -> SpectorException.of(code, message, Map.of("reason", name));
            default -> SpectorException.of(code, message);
        };
    }
}
