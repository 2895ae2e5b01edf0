package com.spectrayan.spector.gateway;

import java.nio.charset.StandardCharsets;

/** Shows raw protocol bytes in failure messages: printable ASCII as is, everything else escaped. */
final class Bytes {
    /** Runs of one byte at least this long are shown as {@code p{x12000}}. */
    static final int RUN = 16;

    private Bytes() {}

    /** Returns the bytes as a Java-like string literal body ({@code \r}, {@code \n}, {@code \x00}). */
    static String escape(byte[] b) {
        return show(b, 0, Integer.MAX_VALUE);
    }

    /** Returns an escaped string of ISO-8859-1 characters. */
    static String escape(String s) {
        return escape(s.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** Returns at most {@code max} bytes from {@code from}, escaped, with the count of the rest. */
    static String show(byte[] b, int from, int max) {
        StringBuilder sb = new StringBuilder();
        int end = (int) Math.min(b.length, (long) from + max);
        for (int i = from; i < end; i++) {
            int c = b[i] & 0xff;
            int run = 1;
            while (i + run < b.length && b[i + run] == b[i]) {
                run++;
            }
            if (run >= RUN) { // a long run (a padded field, leading zeros) is shown once, with its count
                sb.append(show(new byte[] {b[i]}, 0, 1))
                        .append("{x")
                        .append(run)
                        .append('}');
                i += run - 1;
                end = (int) Math.min(b.length, (long) end + run - 1);
                continue;
            }
            switch (c) {
                case '\r' -> sb.append("\\r");
                case '\n' -> sb.append("\\n");
                case '\t' -> sb.append("\\t");
                case '\\' -> sb.append("\\\\");
                case '"' -> sb.append("\\\"");
                default -> {
                    if (c < 0x20 || c >= 0x7f) {
                        sb.append(String.format("\\x%02x", c));
                    } else {
                        sb.append((char) c);
                    }
                }
            }
        }
        if (end < b.length) {
            sb.append("...(").append(b.length - end).append(" more bytes)");
        }
        return sb.toString();
    }
}
