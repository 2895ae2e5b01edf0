package com.spectrayan.spector.gateway.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * Reads and writes the duration form of the settings: {@code 200ms}, {@code 10s}, {@code 5m},
 * {@code 1h}, or ISO-8601 ({@code PT10S}).
 */
final class Durations {
    /** Digits of the number in {@code <number><unit>}; more would overflow a {@code long}. */
    static final int MAX_DIGITS = 18;

    private Durations() {}

    /**
     * Parses a duration, or returns null when the text is not one. A bare number is read in {@code
     * bareUnit} when it is given (keys named {@code -ms} or {@code -seconds}), and refused otherwise.
     */
    static @Nullable Duration parse(String text, @Nullable ChronoUnit bareUnit) {
        String s = text.strip();
        if (s.isEmpty()) {
            return null;
        }
        char first = s.charAt(0);
        if (first == 'P' || first == 'p' || ((first == '-' || first == '+') && s.length() > 1 && isP(s.charAt(1)))) {
            try {
                return Duration.parse(s.toUpperCase(Locale.ROOT));
            } catch (DateTimeParseException e) {
                return null;
            }
        }
        int digits = 0;
        while (digits < s.length() && s.charAt(digits) >= '0' && s.charAt(digits) <= '9') {
            digits++;
        }
        if (digits == 0 || digits > MAX_DIGITS) {
            return null;
        }
        long amount = Long.parseLong(s.substring(0, digits));
        String unit = s.substring(digits).strip().toLowerCase(Locale.ROOT);
        try {
            return switch (unit) {
                case "" -> bareUnit == null ? null : Duration.of(amount, bareUnit);
                case "ms" -> Duration.ofMillis(amount);
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                case "h" -> Duration.ofHours(amount);
                default -> null;
            };
        } catch (ArithmeticException e) {
            return null;
        }
    }

    /** Writes a duration in the shortest exact short form: {@code 1h}, {@code 5m}, {@code 10s}, {@code 200ms}. */
    static String format(Duration d) {
        if (d.isNegative() || d.getNano() % 1_000_000 != 0 || d.getSeconds() > Long.MAX_VALUE / 1000) {
            return d.toString();
        }
        long ms = d.toMillis();
        if (ms != 0 && ms % 3_600_000 == 0) {
            return ms / 3_600_000 + "h";
        }
        if (ms != 0 && ms % 60_000 == 0) {
            return ms / 60_000 + "m";
        }
        if (ms % 1000 == 0) {
            return ms / 1000 + "s";
        }
        return ms + "ms";
    }

    private static boolean isP(char c) {
        return c == 'P' || c == 'p';
    }
}
