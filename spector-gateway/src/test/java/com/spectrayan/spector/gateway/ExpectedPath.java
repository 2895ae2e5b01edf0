package com.spectrayan.spector.gateway;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;

/**
 * The normalization of a request path that the gateway promises (DESIGN.md §10, issue 9 §2),
 * computed here independently of the gateway's code, as a test oracle:
 *
 * <ol>
 *   <li>percent-decoding of unreserved characters ({@code ALPHA DIGIT - . _ ~}; {@code %2e} is a
 *       dot), other escapes kept (hex digits upper-cased, RFC 3986 §6.2.2.1);
 *   <li>dot-segment removal (RFC 3986 §5.2.4);
 *   <li>merged slashes.
 * </ol>
 *
 * A path that climbs above the root, holds an encoded {@code /} or {@code \}, an encoded NUL or
 * control character, or a malformed escape, is refused (400).
 *
 * <p>Where the order of the last two steps changes the result ({@code /a//../b} is {@code /b}
 * when slashes merge first, as nginx does, and {@code /a/b} when dot-segments go first), both
 * results are accepted: the promise names the steps, not their order.
 */
final class ExpectedPath {
    /**
     * What a raw path may become.
     *
     * @param paths the normalized paths a correct gateway may forward (escapes upper-cased)
     * @param mayRefuse whether a 400 is a correct answer too
     */
    record Outcome(Set<String> paths, boolean mayRefuse) {
        /** Answers whether every correct gateway refuses the path. */
        boolean mustRefuse() {
            return paths.isEmpty();
        }

        /** Answers whether {@code forwarded} (a raw path as an owner got it) is a correct result. */
        boolean accepts(String forwarded) {
            return paths.contains(upperEscapes(forwarded));
        }

        /** Answers whether a fully decoded path (as an owner's log holds it) is a correct result. */
        boolean acceptsDecoded(String decoded) {
            for (String p : paths) {
                if (decode(p).equals(decoded)) {
                    return true;
                }
            }
            return false;
        }
    }

    private ExpectedPath() {}

    /** Returns the outcome for the path of an origin-form target (no query). */
    static Outcome of(String rawPath) {
        Set<String> paths = new LinkedHashSet<>();
        boolean refused = false;
        for (boolean mergeFirst : new boolean[] {true, false}) {
            String p = normalize(rawPath, mergeFirst);
            if (p == null) {
                refused = true;
            } else {
                paths.add(p);
            }
        }
        return new Outcome(Set.copyOf(paths), refused);
    }

    /** Returns the normalized path, or null when it must be refused. */
    static @org.jspecify.annotations.Nullable String normalize(String rawPath, boolean mergeFirst) {
        if (!rawPath.startsWith("/")) {
            return null;
        }
        StringBuilder decoded = new StringBuilder();
        for (int i = 0; i < rawPath.length(); i++) {
            char c = rawPath.charAt(i);
            if (c != '%') {
                decoded.append(c);
                continue;
            }
            if (i + 2 >= rawPath.length()
                    || Character.digit(rawPath.charAt(i + 1), 16) < 0
                    || Character.digit(rawPath.charAt(i + 2), 16) < 0) {
                return null; // a malformed escape
            }
            int v = Character.digit(rawPath.charAt(i + 1), 16) * 16 + Character.digit(rawPath.charAt(i + 2), 16);
            i += 2;
            if (v == '/' || v == '\\' || v < 0x20 || v == 0x7f) {
                return null;
            }
            if (unreserved(v)) {
                decoded.append((char) v);
            } else {
                decoded.append('%').append(String.format("%02X", v));
            }
        }
        String p = decoded.toString();
        for (String segment : p.split("/", -1)) {
            int semicolon = segment.indexOf(';');
            String bare = semicolon < 0 ? "" : segment.substring(0, semicolon);
            if (bare.equals(".") || bare.equals("..")) {
                return null; // "..;x": a back end that drops parameters would read a dot-segment
            }
        }
        if (mergeFirst) {
            p = p.replaceAll("/{2,}", "/");
        }
        p = removeDotSegments(p);
        if (p == null) {
            return null;
        }
        if (!mergeFirst) {
            p = p.replaceAll("/{2,}", "/");
        }
        return p.isEmpty() ? "/" : p;
    }

    /** RFC 3986 §5.2.4 on an absolute path; null when a ".." would climb above the root. */
    static @org.jspecify.annotations.Nullable String removeDotSegments(String path) {
        String input = path;
        StringBuilder output = new StringBuilder();
        while (!input.isEmpty()) {
            if (input.startsWith("../")) {
                input = input.substring(3);
            } else if (input.startsWith("./")) {
                input = input.substring(2);
            } else if (input.startsWith("/./")) {
                input = input.substring(2);
            } else if (input.equals("/.")) {
                input = "/";
            } else if (input.startsWith("/../") || input.equals("/..")) {
                input = input.equals("/..") ? "/" : input.substring(3);
                if (output.length() == 0) {
                    return null; // above the root
                }
                output.setLength(output.lastIndexOf("/"));
            } else if (input.equals(".") || input.equals("..")) {
                input = "";
            } else {
                int next = input.indexOf('/', 1);
                String segment = next < 0 ? input : input.substring(0, next);
                output.append(segment);
                input = next < 0 ? "" : input.substring(next);
            }
        }
        return output.toString();
    }

    /** Upper-cases the hex digits of every escape, so escapes compare as RFC 3986 §6.2.2.1 says. */
    static String upperEscapes(String raw) {
        StringBuilder sb = new StringBuilder(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            sb.append(c);
            if (c == '%' && i + 2 < raw.length()) {
                sb.append(raw.substring(i + 1, i + 3).toUpperCase(Locale.ROOT));
                i += 2;
            }
        }
        return sb.toString();
    }

    /** Decodes every escape (UTF-8), as an owner's {@code QueryStringDecoder.path()} does. */
    static String decode(String raw) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%'
                    && i + 2 < raw.length()
                    && Character.digit(raw.charAt(i + 1), 16) >= 0
                    && Character.digit(raw.charAt(i + 2), 16) >= 0) {
                out.write(Character.digit(raw.charAt(i + 1), 16) * 16 + Character.digit(raw.charAt(i + 2), 16));
                i += 2;
            } else {
                byte[] b = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                out.write(b, 0, b.length);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    private static boolean unreserved(int c) {
        return (c >= 'a' && c <= 'z')
                || (c >= 'A' && c <= 'Z')
                || (c >= '0' && c <= '9')
                || c == '-'
                || c == '.'
                || c == '_'
                || c == '~';
    }
}
