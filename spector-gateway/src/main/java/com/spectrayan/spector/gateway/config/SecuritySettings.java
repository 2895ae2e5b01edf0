package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.REDACTED;
import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.security.PublicKey;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The {@code spector.security.*} section: whether {@code /api/v1/**} needs a bearer JWT, and how
 * tokens are found and verified ({@link Jwt}).
 *
 * <p>{@link GatewaySettings#load} builds it and has validated every value, including that a key is
 * set while security is on; the constructor only refuses nulls.
 *
 * @param enabled {@code spector.security.enabled}: whether {@code /api/v1/**} needs a bearer JWT
 * @param jwt {@code spector.security.jwt.*}
 */
public record SecuritySettings(boolean enabled, Jwt jwt) {

    /** The fewest bytes of an HMAC secret: 256 bits, as HS256 needs (RFC 7518 section 3.2). */
    static final int MIN_HMAC_SECRET_BYTES = 32;

    /** Refuses nulls. */
    public SecuritySettings {
        requireNonNull(jwt, "jwt");
    }

    /**
     * The {@code spector.security.jwt.*} keys. {@link #toString()} redacts the HMAC secret.
     *
     * @param hmacSecret {@code hmac-secret}, at least {@value #MIN_HMAC_SECRET_BYTES} bytes, or
     *     null; a secret, never log it
     * @param publicKeyLocation {@code public-key-location}, or null
     * @param publicKey the RSA or EC key read from {@code publicKeyLocation}, or null
     * @param jwkSetUri {@code jwk-set-uri}, an http(s) URI, or null
     * @param issuer {@code issuer}, the required {@code iss}, or null for any
     * @param audience {@code audience}, a required {@code aud} member, or null for any
     * @param cookieName {@code cookie-name}, a cookie that may carry the bearer token when a
     *     request has no {@code Authorization}, or null when tokens are never read from cookies
     * @param allowQueryToken {@code allow-query-token}: whether the bearer token may come in the
     *     {@code access_token} query parameter (RFC 6750 section 2.3)
     */
    public record Jwt(
            @Nullable String hmacSecret,
            @Nullable Path publicKeyLocation,
            @Nullable PublicKey publicKey,
            @Nullable URI jwkSetUri,
            @Nullable String issuer,
            @Nullable String audience,
            @Nullable String cookieName,
            boolean allowQueryToken) {

        @Override
        public String toString() {
            return "Jwt[hmacSecret=" + (hmacSecret == null ? "null" : REDACTED) + ", publicKeyLocation="
                    + publicKeyLocation + ", jwkSetUri="
                    + (jwkSetUri == null ? "null" : SettingsReader.redactUserInfo(jwkSetUri.toString()))
                    + ", issuer=" + issuer + ", audience=" + audience + ", cookieName=" + cookieName
                    + ", allowQueryToken=" + allowQueryToken + "]";
        }
    }

    /** Reads the section, recording every problem and warning in {@code r}. */
    static SecuritySettings read(SettingsReader r) {
        boolean enabled = r.bool(Keys.SECURITY_ENABLED);
        String secret = r.raw(Keys.JWT_HMAC_SECRET);
        if (secret != null) {
            int bytes = secret.getBytes(StandardCharsets.UTF_8).length;
            if (bytes < MIN_HMAC_SECRET_BYTES) {
                r.problem(
                        Keys.JWT_HMAC_SECRET,
                        REDACTED + " of " + bytes + " bytes",
                        "a secret of at least " + MIN_HMAC_SECRET_BYTES
                                + " bytes, e.g. the output of 'openssl rand -base64 48'");
            }
        }
        String keyLocation = r.raw(Keys.JWT_PUBLIC_KEY);
        Path keyPath = null;
        PublicKey key = null;
        if (keyLocation != null) {
            try {
                keyPath = Path.of(keyLocation);
                key = PemKeys.read(keyPath);
            } catch (InvalidPathException | IOException e) {
                r.problem(
                        Keys.JWT_PUBLIC_KEY,
                        show(keyLocation),
                        "a readable PEM file (" + e.getClass().getSimpleName() + ")");
            } catch (IllegalArgumentException e) {
                r.problem(Keys.JWT_PUBLIC_KEY, show(keyLocation), String.valueOf(e.getMessage()));
            }
        }
        Jwt jwt = new Jwt(
                secret,
                keyPath,
                key,
                jwkSetUri(r),
                r.raw(Keys.JWT_ISSUER),
                r.raw(Keys.JWT_AUDIENCE),
                cookieName(r),
                r.bool(Keys.JWT_ALLOW_QUERY_TOKEN));
        if (enabled && secret == null && keyLocation == null && r.raw(Keys.JWT_JWK_SET_URI) == null) {
            r.problem(
                    Keys.JWT_HMAC_SECRET + ", " + Keys.JWT_PUBLIC_KEY + ", " + Keys.JWT_JWK_SET_URI,
                    SettingsReader.UNSET,
                    "at least one of them while " + Keys.SECURITY_ENABLED + "=true; set " + Keys.SECURITY_ENABLED
                            + "=false to serve /api/v1/** without authentication");
        }
        if (!enabled) {
            r.warn(Keys.SECURITY_ENABLED + "=false: /api/v1/** is served without authentication");
        }
        return new SecuritySettings(enabled, jwt);
    }

    /** Puts the defaults of the keys that have one. */
    static void defaults(Map<String, String> d) {
        d.put(Keys.SECURITY_ENABLED, "true");
        d.put(Keys.JWT_ALLOW_QUERY_TOKEN, "false");
    }

    /** Returns this section's keys with their effective values, in the documented order; secrets are redacted. */
    Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(Keys.SECURITY_ENABLED, String.valueOf(enabled));
        d.put(Keys.JWT_HMAC_SECRET, jwt.hmacSecret() == null ? "" : REDACTED);
        Path location = jwt.publicKeyLocation();
        d.put(Keys.JWT_PUBLIC_KEY, location == null ? "" : location.toString());
        URI jwks = jwt.jwkSetUri();
        d.put(Keys.JWT_JWK_SET_URI, jwks == null ? "" : SettingsReader.redactUserInfo(jwks.toString()));
        d.put(Keys.JWT_ISSUER, orEmpty(jwt.issuer()));
        d.put(Keys.JWT_AUDIENCE, orEmpty(jwt.audience()));
        d.put(Keys.JWT_COOKIE_NAME, orEmpty(jwt.cookieName()));
        d.put(Keys.JWT_ALLOW_QUERY_TOKEN, String.valueOf(jwt.allowQueryToken()));
        return d;
    }

    @Override
    public String toString() {
        return "SecuritySettings" + describe();
    }

    private static @Nullable String cookieName(SettingsReader r) {
        String name = r.raw(Keys.JWT_COOKIE_NAME);
        if (name != null && !SettingsReader.isToken(name)) {
            r.problem(
                    Keys.JWT_COOKIE_NAME,
                    show(name),
                    "a cookie name (an RFC 6265 token of letters, digits and !#$%&'*+-.^_`|~), e.g. spector_token");
            return null;
        }
        return name;
    }

    private static @Nullable URI jwkSetUri(SettingsReader r) {
        String value = r.raw(Keys.JWT_JWK_SET_URI);
        if (value == null) {
            return null;
        }
        try {
            URI u = new URI(value);
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            if ((scheme.equals("http") || scheme.equals("https")) && u.getHost() != null) {
                if (scheme.equals("http") && !isLoopback(u.getHost())) {
                    r.warn(Keys.JWT_JWK_SET_URI + " is plain http to " + u.getHost()
                            + ": anyone on the path can substitute signing keys; use https");
                }
                return u;
            }
        } catch (URISyntaxException e) {
            // recorded below
        }
        r.problem(Keys.JWT_JWK_SET_URI, show(SettingsReader.redactUserInfo(value)), "an http(s) URI with a host");
        return null;
    }

    private static boolean isLoopback(String host) {
        return host.equals("localhost") || host.startsWith("127.") || host.equals("[::1]");
    }

    private static String orEmpty(@Nullable String s) {
        return s == null ? "" : s;
    }
}
