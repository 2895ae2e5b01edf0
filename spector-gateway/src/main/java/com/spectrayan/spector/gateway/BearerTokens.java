package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.gateway.auth.JwtAuthenticator;
import com.spectrayan.spector.gateway.config.SecuritySettings;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.cookie.Cookie;
import io.netty.handler.codec.http.cookie.ServerCookieDecoder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * Where the edge finds a request's bearer token: the {@code Authorization} header, else the cookie
 * {@code spector.security.jwt.cookie-name}, else the {@code access_token} query parameter when
 * {@code spector.security.jwt.allow-query-token} is on (RFC 6750 section 2.3). Browsers need the
 * last two: an {@code EventSource} cannot send {@code Authorization}.
 *
 * <p>Rules:
 *
 * <ul>
 *   <li>The header wins over the cookie, the cookie over the parameter: a page that holds the
 *       cookie may still send {@code Authorization} from script. {@code Authorization} sent twice
 *       is 400: it is not a list field (RFC 9110 section 5.3), so two proxies could each read a
 *       different one.
 *   <li>A client MUST NOT use more than one method (RFC 6750 section 2): {@code Authorization}
 *       together with {@code access_token} is 400, and so is {@code access_token} given twice.
 *       While the parameter is not allowed it is ignored, and forwarded like any other.
 *   <li>A parameter is {@code access_token} when its form-decoded name is, so {@link
 *       #withoutAccessToken(String)} strips exactly what {@link #find(HttpHeaders, String)} reads.
 *       Its value is form-decoded ({@code %XX}; {@code +} is a space); a broken escape is 400.
 *   <li>A token from the cookie or the parameter longer than {@link #MAX_TOKEN_CHARS}, or holding
 *       a control or non-ASCII char (it could not travel in a header), is 400. Any other text, a
 *       b64token (RFC 6750 section 2.1) or not, is returned as is and judged by the JWT check. An
 *       empty cookie or parameter carries no token.
 *   <li>The token is never logged and never put in a message: refusals name the field and the
 *       rule only. (Netty's cookie decoder logs a cookie it skips as invalid at DEBUG, value
 *       included; keep {@code io.netty} above DEBUG in production.)
 * </ul>
 *
 * <p>Thread-safe: immutable.
 */
final class BearerTokens {
    /** The longest token taken from a cookie or the query, in chars: the JWT check's own cap (8 KiB). */
    static final int MAX_TOKEN_CHARS = JwtAuthenticator.MAX_TOKEN_CHARS;

    /** The query parameter of RFC 6750 section 2.3. */
    static final String ACCESS_TOKEN = "access_token";

    private static final String X_FORWARDED_HOST = "X-Forwarded-Host";

    /** How a found token is returned: as an {@code Authorization} value of this scheme. */
    private static final String BEARER = "Bearer ";

    /** Chars of a percent-escape, {@code %XX}: an encoded value is at most this many times longer. */
    private static final int ESCAPE_CHARS = 3;

    private final @Nullable String cookieName;
    private final boolean allowQueryToken;
    /** The other origins whose pages may send the token cookie (CORS's, with credentials). */
    private final Predicate<String> cookieOrigins;

    /**
     * Creates the rules of one gateway whose token cookie only its own origin's pages may send.
     *
     * @param cookieName the cookie that may carry the token, or null for none
     * @param allowQueryToken whether the {@code access_token} parameter is read
     */
    BearerTokens(@Nullable String cookieName, boolean allowQueryToken) {
        this(cookieName, allowQueryToken, origin -> false);
    }

    /**
     * Creates the rules of one gateway.
     *
     * @param cookieName the cookie that may carry the token, or null for none
     * @param allowQueryToken whether the {@code access_token} parameter is read
     * @param cookieOrigins the other origins whose pages may send the cookie
     */
    BearerTokens(@Nullable String cookieName, boolean allowQueryToken, Predicate<String> cookieOrigins) {
        if (cookieName != null && cookieName.isEmpty()) {
            throw new IllegalArgumentException("cookieName: '' (expected: null or a cookie name)");
        }
        this.cookieName = cookieName;
        this.allowQueryToken = allowQueryToken;
        this.cookieOrigins = requireNonNull(cookieOrigins, "cookieOrigins");
    }

    /**
     * Returns the rules of {@code spector.security.jwt.cookie-name} and {@code allow-query-token};
     * the cookie is taken from pages of the gateway's own origin and of those {@code cors} lets
     * send credentials.
     */
    static BearerTokens from(SecuritySettings.Jwt s, Cors cors) {
        requireNonNull(s, "s");
        requireNonNull(cors, "cors");
        return new BearerTokens(s.cookieName(), s.allowQueryToken(), cors::allowsCredentialsFrom);
    }

    /** Answers whether the {@code access_token} parameter is read (and so must be stripped before forwarding). */
    boolean allowsQueryToken() {
        return allowQueryToken;
    }

    /**
     * Returns the request's credential as an {@code Authorization} value: the header as sent, else
     * {@code Bearer <token>} from the cookie, else from {@code access_token}; null when there is none.
     *
     * @param headers the request's headers
     * @param rawQuery the request target's query, still percent-encoded, without {@code ?}; or null
     * @throws SpectorException BAD_REQUEST (field {@code access_token}, {@code Authorization} or the
     *     cookie name) when the request breaks a rule of the class comment
     */
    @Nullable
    String find(HttpHeaders headers, @Nullable String rawQuery) {
        requireNonNull(headers, "headers");
        List<String> authorization = headers.getAll(HttpHeaderNames.AUTHORIZATION);
        if (authorization.size() > 1) {
            throw SpectorException.badRequest(
                    "Authorization", "sent " + authorization.size() + " times (expected: once)");
        }
        String header = authorization.isEmpty() ? null : authorization.get(0);
        String queryToken = allowQueryToken ? queryToken(rawQuery) : null;
        if (header != null && queryToken != null) {
            throw SpectorException.badRequest(
                    ACCESS_TOKEN, "sent with Authorization (expected: one method per request, RFC 6750 section 2)");
        }
        if (header != null) {
            return header;
        }
        String cookieToken = cookieName == null ? null : cookieToken(headers, cookieName);
        if (cookieToken != null) {
            checkCookieOrigin(headers);
            return BEARER + cookieToken;
        }
        return queryToken == null || queryToken.isEmpty() ? null : BEARER + queryToken;
    }

    /**
     * Returns the raw query without any {@code access_token} parameter, the others byte for byte
     * and in order; null when nothing is left. Used when {@link #allowsQueryToken()}, so that the
     * token never reaches an owner, a worker or an access log.
     */
    static @Nullable String withoutAccessToken(@Nullable String rawQuery) {
        if (rawQuery == null || rawQuery.isEmpty()) {
            return null;
        }
        StringBuilder kept = new StringBuilder(rawQuery.length());
        boolean removed = false;
        boolean first = true;
        int start = 0;
        while (start <= rawQuery.length()) {
            int end = endOfParameter(rawQuery, start);
            if (isAccessToken(rawQuery, start, end)) {
                removed = true;
            } else {
                if (!first) {
                    kept.append('&');
                }
                kept.append(rawQuery, start, end);
                first = false;
            }
            start = end + 1;
        }
        if (!removed) {
            return rawQuery;
        }
        return kept.length() == 0 ? null : kept.toString();
    }

    /**
     * Removes the token cookie ({@code spector.security.jwt.cookie-name}) from the request's
     * {@code Cookie} headers, the other cookies kept, in order (a header left empty goes): a relayed request never carries the gateway's credential to a worker, nor over
     * the peer hop. Does nothing without a cookie name.
     */
    void removeTokenCookie(HttpHeaders headers) {
        String name = cookieName;
        List<String> lines = headers.getAll(HttpHeaderNames.COOKIE);
        if (name == null || lines.isEmpty()) {
            return;
        }
        List<String> kept = new ArrayList<>(lines.size());
        for (String line : lines) {
            StringBuilder out = new StringBuilder(line.length());
            for (String pair : line.split(";", -1)) {
                int eq = pair.indexOf('=');
                String pairName = (eq < 0 ? pair : pair.substring(0, eq)).strip();
                if (!pairName.equals(name) && !pair.isBlank()) {
                    out.append(out.length() == 0 ? "" : "; ").append(pair.strip());
                }
            }
            if (out.length() > 0) {
                kept.add(out.toString());
            }
        }
        headers.remove(HttpHeaderNames.COOKIE);
        for (String line : kept) {
            headers.add(HttpHeaderNames.COOKIE, line);
        }
    }

    /**
     * Answers whether a {@code Set-Cookie} value sets the token cookie: a relayed response may not
     * (a worker never holds a gateway credential, nor plants one: a worker's page served on the
     * gateway's origin could otherwise set or replace the cookie the gateway then takes as the
     * user's). RFC 6265 §4.1.1: the cookie's name is what precedes the first {@code =}.
     */
    boolean setsTokenCookie(String setCookie) {
        String name = cookieName;
        if (name == null) {
            return false;
        }
        int eq = setCookie.indexOf('=');
        if (eq < 0) {
            return false;
        }
        String named = setCookie.substring(0, eq).strip();
        // A nameless cookie (RFC 6265bis 5.6: "=NAME=VALUE") goes back as "NAME=VALUE": the token
        // cookie by another road (found by a review).
        return named.equals(name)
                || (named.isEmpty() && setCookie.substring(eq + 1).strip().startsWith(name + "="));
    }

    /** Returns where tokens are looked for; it holds no token, so it is safe to log. */
    @Override
    public String toString() {
        return "BearerTokens[header, cookie=" + (cookieName == null ? "<none>" : cookieName) + ", " + ACCESS_TOKEN + "="
                + (allowQueryToken ? "allowed" : "ignored") + "]";
    }

    /** Returns the form-decoded {@code access_token} ("" when empty), or null when absent. */
    private static @Nullable String queryToken(@Nullable String rawQuery) {
        if (rawQuery == null || rawQuery.isEmpty()) {
            return null;
        }
        String raw = null;
        int start = 0;
        while (start <= rawQuery.length()) {
            int end = endOfParameter(rawQuery, start);
            if (isAccessToken(rawQuery, start, end)) {
                if (raw != null) {
                    throw SpectorException.badRequest(
                            ACCESS_TOKEN, "sent more than once (expected: once, RFC 6750 section 2.3)");
                }
                int eq = indexOf(rawQuery, '=', start, end);
                raw = eq < 0 ? "" : rawQuery.substring(eq + 1, end);
            }
            start = end + 1;
        }
        if (raw == null) {
            return null;
        }
        if (raw.length() > (long) MAX_TOKEN_CHARS * ESCAPE_CHARS) {
            throw tooLong(ACCESS_TOKEN);
        }
        String token;
        try {
            token = QueryStringDecoder.decodeComponent(raw);
        } catch (IllegalArgumentException e) {
            throw SpectorException.badRequest(ACCESS_TOKEN, "a broken percent-escape (expected: %XX)");
        }
        return checked(ACCESS_TOKEN, token);
    }

    /**
     * The token cookie more than once is 400: one of them was set by someone else (another site
     * of the parent domain, a {@code Domain=} cookie "tossed" over ours, or a script), and taking
     * the first (the longest path, RFC 6265 section 5.4) would let that one win, signing the user
     * in as its owner (found by a review). Its value is never named in the refusal.
     */
    private static @Nullable String cookieToken(HttpHeaders headers, String name) {
        String found = null;
        int seen = 0;
        for (String line : headers.getAll(HttpHeaderNames.COOKIE)) {
            for (Cookie cookie : ServerCookieDecoder.STRICT.decodeAll(line)) {
                if (cookie.name().equals(name)) {
                    seen++;
                    if (seen > 1) {
                        throw SpectorException.badRequest(
                                "cookie " + name,
                                "sent more than once (expected: once; another site of the domain, or a script,"
                                        + " may have set a second: clear the cookies of this site)");
                    }
                    found = cookie.value();
                }
            }
        }
        if (found == null) {
            return null;
        }
        String token = checked("cookie " + name, found);
        return token.isEmpty() ? null : token;
    }

    /**
     * A browser sends the cookie with any request to the gateway, a cross-site page's form post and
     * WebSocket too (no CORS applies to those): a request whose {@code Origin} is neither the
     * gateway's own (the {@code Host} it was sent to) nor one allowed to send credentials is 403,
     * as Spring Security's CSRF check and Envoy's CSRF filter refuse it. A request without {@code
     * Origin} is no browser's cross-site request (browsers send it on every cross-origin fetch,
     * every non-GET and every WebSocket).
     */
    private void checkCookieOrigin(HttpHeaders headers) {
        String origin = headers.get(HttpHeaderNames.ORIGIN);
        if (origin == null
                || sameOrigin(origin, headers.get(HttpHeaderNames.HOST))
                || sameOrigin(origin, forwardedHost(headers))
                || cookieOrigins.test(origin)) {
            return;
        }
        throw SpectorException.of(
                ErrorCode.FORBIDDEN,
                "the token cookie came from a page of another origin (expected: the gateway's own, or one of"
                        + " spector.cors.allowed-origins with allow-credentials)",
                Map.of("reason", "cookie-cross-origin"));
    }

    /**
     * Returns the host a proxy in front says the client asked for: the first {@code
     * X-Forwarded-Host}, else the first {@code host=} of {@code Forwarded} (RFC 7239); null when
     * neither. A proxy that rewrites {@code Host} (nginx's {@code proxy_pass} sends the upstream's
     * name by default) keeps the public one there, and a page of the gateway's own origin behind it
     * is still its own (found by a review). A browser cannot set either field on a cross-site
     * request without a CORS preflight, which names no such header, so trusting it here lets no
     * other site in.
     */
    static @Nullable String forwardedHost(HttpHeaders headers) {
        String xfh = headers.get(X_FORWARDED_HOST);
        if (xfh != null) {
            int comma = xfh.indexOf(',');
            return (comma < 0 ? xfh : xfh.substring(0, comma)).strip();
        }
        String forwarded = headers.get("Forwarded");
        if (forwarded == null) {
            return null;
        }
        int end = forwarded.indexOf(',');
        String first = end < 0 ? forwarded : forwarded.substring(0, end);
        for (String pair : first.split(";", -1)) {
            int eq = pair.indexOf('=');
            if (eq > 0 && pair.substring(0, eq).strip().equalsIgnoreCase("host")) {
                String v = pair.substring(eq + 1).strip();
                return v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"") ? v.substring(1, v.length() - 1) : v;
            }
        }
        return null;
    }

    /**
     * Answers whether {@code origin} ({@code scheme://host[:port]}) names {@code host}, default ports
     * aside. The scheme is not compared: a page of the same host and port over the other scheme is
     * the same site, whose cookies the browser shares anyway (RFC 6265 section 8.5).
     */
    static boolean sameOrigin(String origin, @Nullable String host) {
        if (host == null) {
            return false;
        }
        int sep = origin.indexOf("://");
        if (sep < 0) {
            return false; // "null" (a sandboxed or file page), or no origin at all
        }
        String scheme = origin.substring(0, sep);
        String authority = withoutDefaultPort(origin.substring(sep + 3), scheme);
        String h = host.strip();
        String hostAuthority = h.endsWith(":443") || h.endsWith(":80")
                ? withoutDefaultPort(h, h.endsWith(":443") ? "https" : "http")
                : h;
        return authority.equalsIgnoreCase(hostAuthority);
    }

    private static String withoutDefaultPort(String authority, String scheme) {
        String port = "https".equalsIgnoreCase(scheme) ? ":443" : "http".equalsIgnoreCase(scheme) ? ":80" : null;
        return port != null && authority.endsWith(port)
                ? authority.substring(0, authority.length() - port.length())
                : authority;
    }

    private static String checked(String field, String token) {
        if (token.length() > MAX_TOKEN_CHARS) {
            throw tooLong(field);
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c < 0x20 || c >= 0x7f) {
                throw SpectorException.badRequest(
                        field, "a control or non-ASCII char (expected: a b64token, RFC 6750 section 2.1)");
            }
        }
        return token;
    }

    private static SpectorException tooLong(String field) {
        return SpectorException.badRequest(field, "a token over " + MAX_TOKEN_CHARS + " chars");
    }

    /** Answers whether the parameter at {@code start..end} is named {@code access_token}, form-decoded. */
    private static boolean isAccessToken(String query, int start, int end) {
        int eq = indexOf(query, '=', start, end);
        int nameEnd = eq < 0 ? end : eq;
        if (query.startsWith(ACCESS_TOKEN, start) && nameEnd - start == ACCESS_TOKEN.length()) {
            return true;
        }
        String name = query.substring(start, nameEnd);
        if (name.indexOf('%') < 0 || name.length() > ACCESS_TOKEN.length() * ESCAPE_CHARS) {
            return false;
        }
        try {
            return QueryStringDecoder.decodeComponent(name).equals(ACCESS_TOKEN);
        } catch (IllegalArgumentException e) {
            return false; // a broken name is some other parameter's problem, not a token
        }
    }

    private static int endOfParameter(String query, int start) {
        int end = query.indexOf('&', start);
        return end < 0 ? query.length() : end;
    }

    /** Finds {@code c} in {@code start..end} only: a scan past the parameter would make many parameters quadratic. */
    private static int indexOf(String s, char c, int start, int end) {
        for (int i = start; i < end; i++) {
            if (s.charAt(i) == c) {
                return i;
            }
        }
        return -1;
    }
}
