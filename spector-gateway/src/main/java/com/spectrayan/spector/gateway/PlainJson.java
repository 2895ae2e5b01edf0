package com.spectrayan.spector.gateway;

import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Writes the bodies the gateway builds itself (health, status, the worker list) as JSON (RFC
 * 8259): maps with string keys, lists, strings, numbers, booleans and null, nested to any depth.
 *
 * <p>Design notes. These bodies used Jackson's {@code ObjectMapper}, whose construction loads
 * about 500 classes: the first health probe paid for them, and every idle gateway kept them (about
 * 5 MiB of class metadata and heap; bench/README.md, start-up and idle memory). The output is
 * what Jackson's defaults wrote for the same values: members in the map's iteration order, no
 * whitespace, {@code "}, {@code \} and control characters escaped (RFC 8259 section 7), other
 * characters as they are; numbers as their {@code toString()}, a non-finite float or double as a
 * string. Any other kind of value is a programming error ({@link IllegalArgumentException}).
 * Problems ({@code application/problem+json}) still go through the contract's {@code ProblemJson}.
 */
final class PlainJson {
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private PlainJson() {}

    /** Returns {@code value} as JSON text. */
    static String write(Object value) {
        StringBuilder out = new StringBuilder(256);
        append(out, value);
        return out.toString();
    }

    private static void append(StringBuilder out, @Nullable Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof CharSequence s) {
            string(out, s);
        } else if (value instanceof Boolean b) {
            out.append(b.booleanValue());
        } else if (value instanceof Double d && !Double.isFinite(d)) {
            string(out, d.toString());
        } else if (value instanceof Float f && !Float.isFinite(f)) {
            string(out, f.toString());
        } else if (value instanceof Number n) {
            out.append(n);
        } else if (value instanceof Map<?, ?> map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                if (!(e.getKey() instanceof String key)) {
                    throw new IllegalArgumentException("a JSON object key must be a string: " + e.getKey());
                }
                string(out, key);
                out.append(':');
                append(out, e.getValue());
            }
            out.append('}');
        } else if (value instanceof Iterable<?> items) {
            out.append('[');
            boolean first = true;
            for (Object item : items) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                append(out, item);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException(
                    "not a plain JSON value: " + value.getClass().getName());
        }
    }

    /** A JSON string: quotation mark, reverse solidus and U+0000..U+001F escaped (RFC 8259 section 7). */
    private static void string(StringBuilder out, CharSequence s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20) {
                        out.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xf]);
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
