package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The {@code spector.cors.*} section: which browser origins may call the gateway, and what their
 * preflights are answered.
 *
 * <p>{@link GatewaySettings#load} builds it and has validated every value, including that
 * credentials never go with {@code *}; the constructor only refuses nulls and copies the lists.
 *
 * @param allowedOrigins {@code spector.cors.allowed-origins}, lower case; empty means CORS is off,
 *     {@code *} any origin
 * @param allowedMethods {@code spector.cors.allowed-methods}
 * @param allowedHeaders {@code spector.cors.allowed-headers}
 * @param maxAge {@code spector.cors.max-age}, how long a browser may cache a preflight answer
 * @param allowCredentials {@code spector.cors.allow-credentials}: whether allowed origins get
 *     {@code Access-Control-Allow-Credentials: true}; never with {@code *} among the origins
 * @param exposedHeaders {@code spector.cors.exposed-headers}: the response headers a page may
 *     read beyond the safelisted ones, sent as {@code Access-Control-Expose-Headers}
 */
public record CorsSettings(
        List<String> allowedOrigins,
        List<String> allowedMethods,
        List<String> allowedHeaders,
        Duration maxAge,
        boolean allowCredentials,
        List<String> exposedHeaders) {

    /**
     * The response headers a page may read by default, beyond the CORS-safelisted ones (Fetch
     * standard: {@code Cache-Control}, {@code Content-Language}, {@code Content-Length}, {@code
     * Content-Type}, {@code Expires}, {@code Last-Modified}, {@code Pragma}): the request id a page
     * quotes in a support ticket or matches with the access log, when to try again after a 429 or
     * 503, whether a command was a replay of an earlier one with the same Idempotency-Key, and
     * which owner answered. Browsers hide every other header from scripts, so without these a page
     * gets the response but not the id of the exchange that failed (found with headless Chromium).
     */
    /** {@code spector.cors.exposed-headers} that exposes none (an empty value is the default's). */
    static final String EXPOSE_NONE = "none";

    static final String DEFAULT_EXPOSED_HEADERS = "X-Request-Id,Retry-After,Idempotent-Replayed,X-Spector-Node";

    /** The longest preflight cache time, {@code spector.cors.max-age} (browsers cap it lower). */
    static final Duration MAX_CORS_MAX_AGE = Duration.ofHours(24);

    /** Refuses nulls and keeps unmodifiable copies of the lists. */
    public CorsSettings {
        allowedOrigins = List.copyOf(allowedOrigins);
        allowedMethods = List.copyOf(allowedMethods);
        allowedHeaders = List.copyOf(allowedHeaders);
        requireNonNull(maxAge, "maxAge");
        exposedHeaders = List.copyOf(exposedHeaders);
    }

    /** Reads the section, recording every problem and warning in {@code r}. */
    static CorsSettings read(SettingsReader r) {
        List<String> origins = origins(r);
        List<String> methods = tokens(r, Keys.CORS_METHODS, "HTTP methods, e.g. GET,POST");
        List<String> headers = tokens(r, Keys.CORS_HEADERS, "header names, e.g. Authorization,Content-Type");
        Duration maxAge = r.duration(
                Keys.CORS_MAX_AGE,
                ChronoUnit.SECONDS,
                Duration.ZERO,
                MAX_CORS_MAX_AGE,
                "a duration in 0s.." + Durations.format(MAX_CORS_MAX_AGE) + ", " + SettingsReader.DURATION_EXAMPLES);
        boolean credentials = r.bool(Keys.CORS_ALLOW_CREDENTIALS);
        if (credentials && origins.contains("*")) {
            r.problem(
                    Keys.CORS_ALLOW_CREDENTIALS,
                    "true with " + Keys.CORS_ORIGINS + "=*",
                    "false, or exact origins in " + Keys.CORS_ORIGINS
                            + ": the Fetch standard forbids credentials with a wildcard origin");
        } else if (credentials && origins.isEmpty()) {
            r.warn(Keys.CORS_ALLOW_CREDENTIALS + "=true does nothing while " + Keys.CORS_ORIGINS
                    + " is empty (CORS is off)");
        }
        List<String> exposed = r.list(Keys.CORS_EXPOSED_HEADERS).equals(List.of(EXPOSE_NONE))
                ? List.of()
                : tokens(
                        r, Keys.CORS_EXPOSED_HEADERS, "header names, e.g. X-Request-Id,Retry-After, or " + EXPOSE_NONE);
        if (credentials && exposed.contains("*")) {
            r.warn(Keys.CORS_EXPOSED_HEADERS + " lists *, which exposes only a header named * while "
                    + Keys.CORS_ALLOW_CREDENTIALS + "=true (the Fetch standard's wildcard is for requests"
                    + " without credentials): name the headers");
        }
        return new CorsSettings(origins, methods, headers, maxAge, credentials, exposed);
    }

    /** Puts the defaults of the keys that have one. */
    static void defaults(Map<String, String> d) {
        d.put(Keys.CORS_METHODS, "GET,POST,PUT,PATCH,DELETE,OPTIONS");
        d.put(
                Keys.CORS_HEADERS,
                "Authorization,Content-Type,Idempotency-Key,X-Idempotency-Key,X-Spector-Namespace,"
                        + "X-Spector-Tenant,Last-Event-ID");
        d.put(Keys.CORS_MAX_AGE, "1h");
        d.put(Keys.CORS_ALLOW_CREDENTIALS, "false");
        d.put(Keys.CORS_EXPOSED_HEADERS, DEFAULT_EXPOSED_HEADERS);
    }

    /** Returns this section's keys with their effective values, in the documented order. */
    Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(Keys.CORS_ORIGINS, String.join(",", allowedOrigins));
        d.put(Keys.CORS_METHODS, String.join(",", allowedMethods));
        d.put(Keys.CORS_HEADERS, String.join(",", allowedHeaders));
        d.put(Keys.CORS_MAX_AGE, Durations.format(maxAge));
        d.put(Keys.CORS_ALLOW_CREDENTIALS, String.valueOf(allowCredentials));
        d.put(Keys.CORS_EXPOSED_HEADERS, exposedHeaders.isEmpty() ? EXPOSE_NONE : String.join(",", exposedHeaders));
        return d;
    }

    @Override
    public String toString() {
        return "CorsSettings" + describe();
    }

    private static List<String> origins(SettingsReader r) {
        List<String> origins = new ArrayList<>();
        for (String entry : r.list(Keys.CORS_ORIGINS)) {
            String origin = origin(entry);
            if (origin == null) {
                r.problem(
                        Keys.CORS_ORIGINS,
                        show(entry),
                        "* or origins scheme://host[:port] with an http(s) scheme and no path, e.g. "
                                + "https://app.example.com");
            } else if (!origins.contains(origin)) {
                origins.add(origin);
            }
        }
        return origins;
    }

    private static @Nullable String origin(String entry) {
        if (entry.equals("*")) {
            return entry;
        }
        try {
            URI u = new URI(entry);
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            boolean ok = (scheme.equals("http") || scheme.equals("https"))
                    && u.getHost() != null
                    && u.getRawUserInfo() == null
                    && (u.getRawPath() == null || u.getRawPath().isEmpty())
                    && u.getRawQuery() == null
                    && u.getRawFragment() == null;
            return ok ? entry.toLowerCase(Locale.ROOT) : null;
        } catch (URISyntaxException e) {
            return null;
        }
    }

    private static List<String> tokens(SettingsReader r, String key, String what) {
        List<String> tokens = new ArrayList<>();
        for (String entry : r.list(key)) {
            if (!SettingsReader.isToken(entry)) {
                r.problem(key, show(entry), "a comma-separated list of " + what + " (RFC 9110 tokens)");
            } else if (!tokens.contains(entry)) {
                tokens.add(entry);
            }
        }
        return tokens;
    }
}
