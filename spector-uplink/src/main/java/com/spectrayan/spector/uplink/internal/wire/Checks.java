package com.spectrayan.spector.uplink.internal.wire;

import com.spectrayan.spector.contract.Bound;
import com.spectrayan.spector.contract.SpectorException;
import java.util.Locale;

/**
 * The field checks the schemas share. Each refuses with BAD_REQUEST naming the field, the value's
 * size or its first bad char (never the value itself: it may be a secret), and what was expected.
 */
public final class Checks {
    /** The pattern of relay ids, lease ids and worker ids. */
    static final String ID_PATTERN = "[A-Za-z0-9._:-]";

    /** The pattern of relay target names. */
    static final String TARGET_PATTERN = "[a-z0-9][a-z0-9-]*";

    private Checks() {}

    /** Returns {@code "(expected: 1..64)"} or, for a bound starting at 0, {@code "(expected: <= 64)"}. */
    static String expected(Bound bound) {
        return "(expected: " + (bound.min() == 0 ? "<= " + bound.max() : bound.min() + ".." + bound.max()) + ")";
    }

    /** Refuses a string whose length is outside the bound: {@code "relayId: 65 chars (expected: 1..64)"}. */
    public static String length(String field, String value, Bound bound) {
        if (!bound.allows(value.length())) {
            throw SpectorException.badRequest(field, value.length() + " chars " + expected(bound));
        }
        return value;
    }

    /** Refuses a count outside the bound: {@code "headers: 101 headers (expected: <= 100)"}. */
    public static int count(String field, int count, Bound bound) {
        if (!bound.allows(count)) {
            throw SpectorException.badRequest(field, count + " " + bound.unit() + " " + expected(bound));
        }
        return count;
    }

    /** Refuses an id outside the bound or with a char outside {@link #ID_PATTERN}. */
    public static String id(String field, String value, Bound bound) {
        length(field, value, bound);
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (!isIdChar(c)) {
                throw badChar(field, i, c, ID_PATTERN);
            }
        }
        return value;
    }

    /**
     * Refuses a string outside the bound or with a char that is not an RFC 9110 {@code tchar}
     * (section 5.6.2): a header name, an {@code Upgrade} protocol.
     */
    public static String token(String field, String value, Bound bound) {
        length(field, value, bound);
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (!isTchar(c)) {
                throw badChar(field, i, c, "an RFC 9110 token");
            }
        }
        return value;
    }

    /** Refuses a target name outside the bound or the pattern {@link #TARGET_PATTERN}. */
    public static String target(String field, String value, Bound bound) {
        length(field, value, bound);
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && i > 0);
            if (!ok) {
                throw badChar(field, i, c, TARGET_PATTERN);
            }
        }
        return value;
    }

    /** Refuses text outside the bound or holding a control char (C0, DEL or C1). */
    static String printable(String field, String value, Bound bound) {
        length(field, value, bound);
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c)) {
                throw badChar(field, i, c, "no control chars");
            }
        }
        return value;
    }

    /** The refusal of {@code c} at index {@code i}: {@code "target: char 1 is 'A' (expected: ...)"}. */
    static SpectorException badChar(String field, int i, char c, String expected) {
        return SpectorException.badRequest(
                field, "char " + (i + 1) + " is " + describe(c) + " (expected: " + expected + ")");
    }

    /** Returns a visible printable ASCII char quoted, any other as {@code U+000A}. */
    static String describe(char c) {
        return c > 0x20 && c < 0x7f ? "'" + c + "'" : String.format(Locale.ROOT, "U+%04X", (int) c);
    }

    /** Answers whether a char is in {@link #ID_PATTERN}. */
    static boolean isIdChar(char c) {
        return (c >= 'a' && c <= 'z')
                || (c >= 'A' && c <= 'Z')
                || (c >= '0' && c <= '9')
                || c == '.'
                || c == '_'
                || c == ':'
                || c == '-';
    }

    /** Answers whether a char is an RFC 9110 {@code tchar}, the chars of a header name. */
    static boolean isTchar(char c) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            return true;
        }
        return "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
    }
}
