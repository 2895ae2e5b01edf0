package com.spectrayan.spector.gateway.auth;

import static java.util.Objects.requireNonNull;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The verified claims of a bearer JWT, as {@link JwtAuthenticator#authenticate} returns them.
 *
 * <p>{@link #asMap()} is the claims set as JSON values (numbers, strings, booleans, lists, maps;
 * {@code exp}, {@code nbf} and {@code iat} in seconds since the epoch), deeply immutable. The
 * routing claims {@code tenant} and {@code namespace} are strings when present: the authenticator
 * refuses a token where they are not.
 */
public final class Claims {
    /** The claim that names the caller's tenant (DESIGN.md section 4). */
    public static final String TENANT = "tenant";

    /** The claim that names the caller's default namespace (DESIGN.md section 4). */
    public static final String NAMESPACE = "namespace";

    /** The claim that lists the token's scopes: a space-separated string (RFC 8693 §4.2), or a list. */
    public static final String SCOPE = "scope";

    /**
     * The scope that reads the gateway's status views ({@code /gateway/v1/status}, {@code
     * /gateway/v1/workers}): their owner addresses and worker ids are the cell's, not a tenant's.
     */
    public static final String ADMIN_SCOPE = "spector:admin";

    private final Map<String, Object> claims;
    private final Instant expiresAt;
    /** {@link #expiresAt} in epoch milliseconds, for the verified-token cache's check per request. */
    private final long expiresAtMillis;
    /** When the token was verified, in epoch milliseconds of the authenticator's clock. */
    private final long verifiedAtMillis;

    Claims(Map<String, Object> claims, Instant expiresAt, long verifiedAtMillis) {
        this.claims = immutableMap(requireNonNull(claims, "claims"));
        this.expiresAt = requireNonNull(expiresAt, "expiresAt");
        long millis;
        try {
            millis = expiresAt.toEpochMilli();
        } catch (ArithmeticException e) {
            millis = expiresAt.isBefore(Instant.EPOCH) ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        this.expiresAtMillis = millis;
        this.verifiedAtMillis = verifiedAtMillis;
    }

    /**
     * Answers whether verified claims ({@link #asMap()}) grant {@code scope}: their {@value #SCOPE}
     * claim is a space-separated string naming it (RFC 8693 §4.2, RFC 9068 §2.2.3), or a list of
     * strings holding it (as some identity providers write it).
     */
    public static boolean grants(Map<String, Object> claims, String scope) {
        Object granted = claims.get(SCOPE);
        if (granted instanceof String text) {
            for (String s : text.split(" ", -1)) {
                if (s.equals(scope)) {
                    return true;
                }
            }
            return false;
        }
        return granted instanceof List<?> list && list.contains(scope);
    }

    /** Returns every claim, deeply immutable, in the token's order. */
    public Map<String, Object> asMap() {
        return claims;
    }

    /** Returns the {@code sub} claim, or null when absent. */
    public @Nullable String subject() {
        return string("sub");
    }

    /** Returns the {@code tenant} claim, or null for an untenanted caller. */
    public @Nullable String tenant() {
        return string(TENANT);
    }

    /** Returns the {@code namespace} claim, or null when absent. */
    public @Nullable String namespace() {
        return string(NAMESPACE);
    }

    /** Returns the {@code iss} claim, or null when absent. */
    public @Nullable String issuer() {
        return string("iss");
    }

    /** Returns when the token expires ({@code exp}, always present in a verified token). */
    public Instant expiresAt() {
        return expiresAt;
    }

    /** Returns {@link #expiresAt()} in epoch milliseconds (saturated at the bounds of a long). */
    long expiresAtMillis() {
        return expiresAtMillis;
    }

    /** Returns when the token was verified (epoch milliseconds). */
    long verifiedAtMillis() {
        return verifiedAtMillis;
    }

    /** Returns a claim that is a string, or null when it is absent or not a string. */
    public @Nullable String string(String name) {
        return claims.get(name) instanceof String s ? s : null;
    }

    @Override
    public String toString() {
        // claim names only: values may be personal data, and a log line needs no more
        return "Claims" + claims.keySet();
    }

    private static Map<String, Object> immutableMap(Map<?, ?> map) {
        Map<String, Object> copy = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            Object value = e.getValue();
            if (value != null) {
                copy.put(String.valueOf(e.getKey()), immutable(value));
            }
        }
        return Collections.unmodifiableMap(copy);
    }

    private static Object immutable(Object value) {
        if (value instanceof Map<?, ?> map) {
            return immutableMap(map);
        }
        if (value instanceof List<?> list) {
            List<@Nullable Object> copy = new ArrayList<>(list.size());
            for (Object item : list) {
                copy.add(item == null ? null : immutable(item));
            }
            return Collections.unmodifiableList(copy);
        }
        return value;
    }
}
