package com.spectrayan.spector.gateway.config;

import io.smallrye.config.ConfigValue;
import io.smallrye.config.SmallRyeConfig;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Reads raw values from a built {@link SmallRyeConfig} and parses them, collecting every problem
 * and every warning instead of stopping at the first. A parser that records a problem returns a
 * harmless fallback so that the keys after it are still checked.
 *
 * <p>Each section's {@code read(SettingsReader)} takes its keys through one reader, in the
 * documented order, so the problems come out in that order.
 */
final class SettingsReader {
    /** Chars of an offending value a message shows; the rest is cut and marked with an ellipsis. */
    static final int SHOWN_VALUE_CHARS = 120;

    /** What a message shows for a key that has no value. */
    static final String UNSET = "<unset>";

    /** What messages and {@code describe()} show in place of a secret. */
    static final String REDACTED = "<redacted>";

    /** The longest duration any setting takes, so that no conversion to milliseconds overflows. */
    static final Duration MAX_DURATION = Duration.ofDays(365);

    /** The duration forms an expectation lists. */
    static final String DURATION_EXAMPLES = "e.g. 200ms, 10s, 5m, 1h or PT10S";

    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");

    private final SmallRyeConfig config;
    private final List<String> problems = new ArrayList<>();
    private final List<String> warnings = new ArrayList<>();

    SettingsReader(SmallRyeConfig config) {
        this.config = config;
    }

    /** Returns the value of a key, stripped, or null when it is unset or blank. */
    @Nullable
    String raw(String key) {
        ConfigValue value = config.getConfigValue(key);
        String text = value == null ? null : value.getValue();
        if (text == null || text.isBlank()) {
            return null;
        }
        return text.strip();
    }

    /** Returns the value of a key that has a default; a blank value means the default. */
    String text(String key) {
        String value = raw(key);
        if (value != null) {
            return value;
        }
        String fallback = Keys.DEFAULTS.get(key);
        if (fallback == null) {
            throw new IllegalStateException(key + ": has no default (expected: a key of Keys.DEFAULTS)");
        }
        return fallback;
    }

    /** Records a problem: {@code key: shown (expected: expected)}. */
    void problem(String key, String shown, String expected) {
        problems.add(key + ": " + shown + " (expected: " + expected + ")");
    }

    /** Returns the problems recorded so far, in order. */
    List<String> problems() {
        return Collections.unmodifiableList(problems);
    }

    /** Records what an operator should know but that does not stop the start. */
    void warn(String warning) {
        warnings.add(warning);
    }

    /** Returns the warnings recorded so far, in order. */
    List<String> warnings() {
        return Collections.unmodifiableList(warnings);
    }

    /** Reads an integer in {@code min..max}; {@code expected} says so in words. */
    long integer(String key, long min, long max, String expected) {
        String value = text(key);
        try {
            long n = Long.parseLong(value);
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // recorded below
        }
        problem(key, show(value), expected);
        return fallback(key, min);
    }

    /**
     * Reads a duration in {@code min..max}. A bare number is read in {@code bareUnit} when given.
     */
    Duration duration(String key, @Nullable ChronoUnit bareUnit, Duration min, Duration max, String expected) {
        String value = text(key);
        Duration d = Durations.parse(value, bareUnit);
        if (d != null && d.compareTo(min) >= 0 && d.compareTo(max) <= 0) {
            return d;
        }
        problem(key, show(value), expected);
        Duration fallback = Durations.parse(Keys.DEFAULTS.getOrDefault(key, ""), bareUnit);
        return fallback == null ? min : fallback;
    }

    /**
     * Reads a duration in {@code 1ns..}{@link #MAX_DURATION}; {@code example} is a valid value for
     * the expectation.
     */
    Duration positive(String key, @Nullable ChronoUnit bareUnit, String example) {
        return duration(
                key,
                bareUnit,
                Duration.ofNanos(1),
                MAX_DURATION,
                "a duration > 0, e.g. " + example + " (at most " + Durations.format(MAX_DURATION) + ")");
    }

    /** Reads {@code true} or {@code false}, in any case. */
    boolean bool(String key) {
        String value = text(key);
        if (value.equalsIgnoreCase("true")) {
            return true;
        }
        if (value.equalsIgnoreCase("false")) {
            return false;
        }
        problem(key, show(value), "true or false");
        return Boolean.parseBoolean(Keys.DEFAULTS.get(key));
    }

    /**
     * Reads a comma-separated list (a YAML sequence arrives in this form too); each entry is
     * stripped. An unset key is the default's list, or empty; an empty entry is a problem.
     */
    List<String> list(String key) {
        String value = raw(key);
        if (value == null) {
            value = Keys.DEFAULTS.get(key);
        }
        List<String> entries = new ArrayList<>();
        if (value == null) {
            return entries;
        }
        for (String entry : value.split(",", -1)) {
            String e = entry.strip();
            if (e.isEmpty()) {
                problem(key, show(value), "a comma-separated list without empty entries");
                entries.clear();
                return entries;
            }
            entries.add(e);
        }
        return entries;
    }

    /** Returns a value as a message shows it: control chars as {@code ?}, cut after a limit. */
    static String show(String value) {
        if (value.isEmpty()) {
            return "''";
        }
        StringBuilder out = new StringBuilder(Math.min(value.length(), SHOWN_VALUE_CHARS + 3));
        for (int i = 0; i < value.length() && i < SHOWN_VALUE_CHARS; i++) {
            char c = value.charAt(i);
            out.append(c < 0x20 || c == 0x7f ? '?' : c);
        }
        if (value.length() > SHOWN_VALUE_CHARS) {
            out.append("...");
        }
        return out.toString();
    }

    /** Answers whether a value is an RFC 9110 token (a method, a header or a cookie name). */
    static boolean isToken(String value) {
        return TOKEN.matcher(value).matches();
    }

    /**
     * Returns a URI with its user info, which may hold a password, replaced by {@link #REDACTED}:
     * everything between the scheme's {@code //} (or its {@code :}) and the last {@code @}. A
     * password is not always written as RFC 3986 asks: {@code openssl rand -base64} gives {@code /}
     * and {@code +}, and an unencoded {@code /}, {@code ?}, {@code #} or {@code @} in it made the
     * URI one with no host, refused, and printed whole in the refusal (found by a review). An
     * {@code @} later in the URI redacts more than the user info: never less.
     */
    static String redactUserInfo(String uri) {
        int at = uri.lastIndexOf('@');
        if (at < 0) {
            return uri;
        }
        int slashes = uri.indexOf("//");
        int from = slashes >= 0 && slashes < at ? slashes + 2 : uri.indexOf(':') + 1;
        return uri.substring(0, Math.min(from, at)) + REDACTED + uri.substring(at);
    }

    private static long fallback(String key, long min) {
        String d = Keys.DEFAULTS.get(key);
        if (d == null) {
            return min;
        }
        try {
            return Long.parseLong(d);
        } catch (NumberFormatException e) {
            return min;
        }
    }
}
