package com.spectrayan.spector.gateway.auth;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.gateway.config.CorsSettings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The browser cross-origin policy of {@code spector.cors.*}: which origins may call the gateway
 * from a page, with which methods and request headers.
 *
 * <p>Rules:
 *
 * <ul>
 *   <li>CORS is off while {@code allowed-origins} is empty: no CORS header is ever written.
 *   <li>Origins are compared exactly ({@code scheme://host[:port]}, as browsers send them, lower
 *       case); {@code *} allows any origin. The opaque origin {@code null} (sandboxed frames,
 *       {@code file:}) is never allowed.
 *   <li>{@code Access-Control-Allow-Origin} echoes the request's origin, never {@code *}.
 *   <li>{@code Access-Control-Allow-Credentials: true} is sent to allowed origins, on preflights
 *       and actual responses, only with {@code spector.cors.allow-credentials}, so that a page's
 *       {@code EventSource} or {@code fetch(..., {credentials: "include"})} may carry the token
 *       cookie. The settings refuse it together with {@code *} (the Fetch standard forbids a
 *       wildcard origin with credentials), so only listed origins ever get it.
 *   <li>Every answer for an enabled policy carries {@code Vary: Origin}, so a cache never serves
 *       one origin's answer to another. The edge adds it to an upstream's {@code Vary} with
 *       {@link #mergeVary(List, String)}, never in its place.
 *   <li>An actual response to an allowed origin lists {@code spector.cors.exposed-headers} in
 *       {@code Access-Control-Expose-Headers} (merged into an upstream's own list, as {@code
 *       Vary} is), so that a page's script may read them (the request id above all); a preflight
 *       carries none (browsers read it only on actual responses).
 *   <li>A refused preflight gets no CORS headers; the browser then blocks the call.
 * </ul>
 *
 * <p>Thread-safe: immutable.
 */
public final class CorsPolicy {
    /** The longest {@code Origin} value considered; a longer one is refused. */
    public static final int MAX_ORIGIN_CHARS = 2048;

    /** Header names a preflight may list in {@code Access-Control-Request-Headers}; more is refused. */
    public static final int MAX_REQUEST_HEADERS = 64;

    static final String ALLOW_ORIGIN = "Access-Control-Allow-Origin";
    static final String ALLOW_METHODS = "Access-Control-Allow-Methods";
    static final String ALLOW_HEADERS = "Access-Control-Allow-Headers";
    static final String MAX_AGE = "Access-Control-Max-Age";
    static final String ALLOW_CREDENTIALS = "Access-Control-Allow-Credentials";
    static final String EXPOSE_HEADERS = "Access-Control-Expose-Headers";
    static final String VARY = "Vary";
    private static final String ORIGIN = "Origin";
    private static final String PREFLIGHT_VARY =
            "Origin, Access-Control-Request-Method, Access-Control-Request-Headers";

    private final Set<String> origins;
    private final boolean anyOrigin;
    private final List<String> methods;
    private final Set<String> headersLowerCase;
    private final String allowMethods;
    private final String allowHeaders;
    private final String maxAgeSeconds;
    private final boolean allowCredentials;
    private final String exposeHeaders;

    CorsPolicy(
            List<String> origins,
            List<String> methods,
            List<String> headers,
            Duration maxAge,
            boolean allowCredentials,
            List<String> exposedHeaders) {
        if (allowCredentials && origins.contains("*")) {
            throw new IllegalArgumentException(
                    "allowCredentials: true with origins * (expected: exact origins; the Fetch standard forbids"
                            + " credentials with a wildcard origin)");
        }
        this.origins = Set.copyOf(origins);
        this.anyOrigin = origins.contains("*");
        this.methods = List.copyOf(methods);
        this.headersLowerCase =
                headers.stream().map(h -> h.toLowerCase(Locale.ROOT)).collect(Collectors.toUnmodifiableSet());
        this.allowMethods = String.join(", ", methods);
        this.allowHeaders = String.join(", ", headers);
        this.maxAgeSeconds = String.valueOf(maxAge.toSeconds());
        this.allowCredentials = allowCredentials;
        this.exposeHeaders = String.join(", ", exposedHeaders);
    }

    /** Builds the policy of {@code spector.cors.*}. */
    public static CorsPolicy create(CorsSettings settings) {
        requireNonNull(settings, "settings");
        return new CorsPolicy(
                settings.allowedOrigins(),
                settings.allowedMethods(),
                settings.allowedHeaders(),
                settings.maxAge(),
                settings.allowCredentials(),
                settings.exposedHeaders());
    }

    /** Answers whether CORS is on (some origin is allowed). */
    public boolean enabled() {
        return !origins.isEmpty();
    }

    /**
     * Answers whether a request is a CORS preflight: {@code OPTIONS} with an {@code Origin} and an
     * {@code Access-Control-Request-Method}. A preflight is answered by the gateway and needs no
     * token.
     */
    public static boolean isPreflight(
            String method, @Nullable String origin, @Nullable String accessControlRequestMethod) {
        return "OPTIONS".equals(method) && origin != null && accessControlRequestMethod != null;
    }

    /**
     * Answers a preflight: the headers of a {@value CorsPreflight#STATUS} response, or null when
     * the origin, the method or one of the request headers is not allowed (or CORS is off).
     *
     * @param origin the {@code Origin} header
     * @param requestMethod the {@code Access-Control-Request-Method} header
     * @param requestHeaders the {@code Access-Control-Request-Headers} header, or null
     */
    public @Nullable CorsPreflight preflight(String origin, String requestMethod, @Nullable String requestHeaders) {
        if (!allows(origin) || !methods.contains(requestMethod.strip()) || !allowsHeaders(requestHeaders)) {
            return null;
        }
        Map<String, String> h = new LinkedHashMap<>();
        h.put(ALLOW_ORIGIN, origin);
        h.put(ALLOW_METHODS, allowMethods);
        h.put(ALLOW_HEADERS, allowHeaders);
        h.put(MAX_AGE, maxAgeSeconds);
        if (allowCredentials) {
            h.put(ALLOW_CREDENTIALS, "true");
        }
        h.put(VARY, PREFLIGHT_VARY);
        return new CorsPreflight(h);
    }

    /**
     * Returns the CORS headers of a response to an actual (not preflight) request: {@code
     * Access-Control-Allow-Origin} (and {@code Access-Control-Allow-Credentials: true} when
     * credentials are allowed, {@code Access-Control-Expose-Headers} when some are exposed) and
     * {@code Vary: Origin} for an allowed origin, {@code Vary: Origin}
     * alone for any other request, and nothing while CORS is off.
     *
     * @param origin the request's {@code Origin} header, or null when it has none
     */
    public Map<String, String> actualResponseHeaders(@Nullable String origin) {
        if (!enabled()) {
            return Map.of();
        }
        if (origin != null && allows(origin)) {
            Map<String, String> h = new LinkedHashMap<>();
            h.put(ALLOW_ORIGIN, origin);
            if (allowCredentials) {
                h.put(ALLOW_CREDENTIALS, "true");
            }
            if (!exposeHeaders.isEmpty()) {
                h.put(EXPOSE_HEADERS, exposeHeaders);
            }
            h.put(VARY, ORIGIN);
            return Collections.unmodifiableMap(h);
        }
        return Map.of(VARY, ORIGIN);
    }

    /** Answers whether allowed origins get {@code Access-Control-Allow-Credentials: true}. */
    public boolean allowsCredentials() {
        return allowCredentials;
    }

    /**
     * Returns the one {@code Vary} value that lists what a response already varies on, as it was,
     * and then the names of {@code wanted} it does not list yet (RFC 9110 section 12.5.5: names compare
     * case-insensitively; {@code *} already varies on everything and stays alone). {@code
     * Access-Control-Expose-Headers} is merged by the same rule (its {@code *} exposes every header
     * to a request without credentials).
     *
     * @param present the response's {@code Vary} field lines, in order; empty when it has none
     * @param wanted a comma-separated list of header names, e.g. {@code Origin}
     */
    public static String mergeVary(List<String> present, String wanted) {
        return merge(present, wanted, true);
    }

    /**
     * Returns the one {@code Access-Control-Expose-Headers} value of an upstream's list and the
     * edge's, merged as {@link #mergeVary} merges: with credentials allowed, {@code *} is a name
     * like any other (Fetch standard: it is the wildcard only for a request without credentials),
     * so the edge's names are still added.
     */
    public String mergeExposed(List<String> present, String wanted) {
        return merge(present, wanted, !allowCredentials);
    }

    private static String merge(List<String> present, String wanted, boolean starIsAll) {
        requireNonNull(present, "present");
        requireNonNull(wanted, "wanted");
        Set<String> seen = new HashSet<>();
        List<String> names = new ArrayList<>();
        for (String line : present) {
            for (String name : line.split(",", -1)) {
                String n = name.strip();
                if (n.equals("*") && starIsAll) {
                    return "*";
                }
                if (!n.isEmpty()) {
                    seen.add(n.toLowerCase(Locale.ROOT));
                    names.add(n);
                }
            }
        }
        for (String name : wanted.split(",", -1)) {
            String n = name.strip();
            if (!n.isEmpty() && seen.add(n.toLowerCase(Locale.ROOT))) {
                names.add(n);
            }
        }
        return String.join(", ", names);
    }

    /** Answers whether a page of this origin may call the gateway. */
    public boolean allows(String origin) {
        if (origins.isEmpty() || origin.isEmpty() || origin.length() > MAX_ORIGIN_CHARS || origin.equals("null")) {
            return false;
        }
        for (int i = 0; i < origin.length(); i++) {
            char c = origin.charAt(i);
            if (c <= 0x20 || c >= 0x7f) {
                return false; // never echo a value that could split or smuggle a header
            }
        }
        if (anyOrigin) {
            return origin.startsWith("https://") || origin.startsWith("http://");
        }
        return origins.contains(origin);
    }

    private boolean allowsHeaders(@Nullable String requestHeaders) {
        if (requestHeaders == null || requestHeaders.isBlank()) {
            return true;
        }
        String[] names = requestHeaders.split(",", MAX_REQUEST_HEADERS + 2);
        if (names.length > MAX_REQUEST_HEADERS) {
            return false;
        }
        for (String name : names) {
            String n = name.strip();
            if (!n.isEmpty() && !headersLowerCase.contains(n.toLowerCase(Locale.ROOT))) {
                return false;
            }
        }
        return true;
    }
}
