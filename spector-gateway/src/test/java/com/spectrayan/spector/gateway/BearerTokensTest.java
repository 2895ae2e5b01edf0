package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/** Where the edge finds a bearer token: header, cookie, {@code access_token}, and what it refuses. */
final class BearerTokensTest {
    /** A compact JWS shape: three base64url parts (the JWT check, not this class, verifies it). */
    private static final String JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl";

    private static final String COOKIE = "spector_token";

    private static final BearerTokens ALL = new BearerTokens(COOKIE, true);

    private static HttpHeaders headers(String... nameValue) {
        HttpHeaders h = new DefaultHttpHeaders();
        for (int i = 0; i < nameValue.length; i += 2) {
            h.add(nameValue[i], nameValue[i + 1]);
        }
        return h;
    }

    private static SpectorException refused(BearerTokens tokens, HttpHeaders headers, @Nullable String query) {
        SpectorException e = catchThrowableOfType(SpectorException.class, () -> tokens.find(headers, query));
        assertThat(e).as("the request must be refused").isNotNull();
        assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
        assertThat(e.getMessage()).as("a refusal never shows the token").doesNotContain(JWT);
        return e;
    }

    /** RFC 6750 section 2.1: the header is returned as sent, whatever the other rules allow. */
    @Test
    void find_headerOnly_returnsTheHeaderAsSent() {
        assertThat(ALL.find(headers("Authorization", "Bearer " + JWT), "a=1")).isEqualTo("Bearer " + JWT);
        assertThat(ALL.find(headers("Authorization", "Basic YTpi"), null))
                .as("another scheme is the JWT check's to refuse")
                .isEqualTo("Basic YTpi");
    }

    /** RFC 6265 section 5.4: the token cookie is found among the others. */
    @Test
    void find_cookieOnly_returnsBearerOfTheCookie() {
        HttpHeaders h = headers("Cookie", "theme=dark; " + COOKIE + "=" + JWT + "; lang=en");

        assertThat(ALL.find(h, null)).isEqualTo("Bearer " + JWT);
        assertThat(new BearerTokens(null, false).find(h, null))
                .as("no cookie name configured: cookies are never read")
                .isNull();
        assertThat(new BearerTokens("other", false).find(h, null))
                .as("another cookie name")
                .isNull();
        assertThat(ALL.find(headers("Cookie", "Spector_Token=" + JWT), null))
                .as("cookie names are case-sensitive")
                .isNull();
    }

    /** RFC 6265 section 5.4: the cookie is found on any of several {@code Cookie} lines. */
    @Test
    void find_cookieOnASecondLine_orQuoted_isFound() {
        assertThat(ALL.find(headers("Cookie", "a=1", "Cookie", COOKIE + "=" + JWT), null))
                .as("HTTP/2 may split Cookie into several lines")
                .isEqualTo("Bearer " + JWT);
        assertThat(ALL.find(headers("Cookie", COOKIE + "=\"" + JWT + "\""), null))
                .as("a quoted cookie-value is unwrapped")
                .isEqualTo("Bearer " + JWT);
    }

    /** RFC 6265 section 4.2.1: a Cookie header that is not cookie-pairs carries no token. */
    @Test
    void find_malformedCookieHeader_isIgnored() {
        assertThat(ALL.find(headers("Cookie", "garbage without pairs"), null)).isNull();
        assertThat(ALL.find(headers("Cookie", COOKIE + "=a b c"), null))
                .as("a space is not a cookie-octet: the strict decoder skips the cookie")
                .isNull();
        assertThat(ALL.find(headers("Cookie", COOKIE + "=\"" + JWT), null))
                .as("unbalanced quotes")
                .isNull();
        assertThat(ALL.find(headers("Cookie", COOKIE + "="), null))
                .as("an empty cookie (a logged-out browser) carries no token")
                .isNull();
        assertThat(ALL.find(headers("Cookie", "=x; ;;" + COOKIE + "=" + JWT), null))
                .as("broken pairs around the token cookie do not hide it")
                .isEqualTo("Bearer " + JWT);
    }

    /** RFC 6750 section 2.3: the access_token parameter, when allowed. */
    @Test
    void find_queryOnlyAndAllowed_returnsBearerOfTheDecodedParameter() {
        assertThat(ALL.find(headers(), "a=1&access_token=" + JWT + "&b=2")).isEqualTo("Bearer " + JWT);
        assertThat(ALL.find(headers(), "access_token=abc%2Ddef%7E"))
                .as("%XX decoded")
                .isEqualTo("Bearer abc-def~");
        assertThat(ALL.find(headers(), "access%5Ftoken=" + JWT))
                .as("an encoded name is the same parameter")
                .isEqualTo("Bearer " + JWT);
        assertThat(ALL.find(headers(), "access_token=")).as("an empty value").isNull();
        assertThat(ALL.find(headers(), "access_token")).as("no value").isNull();
        assertThat(ALL.find(headers(), "access_tokens=" + JWT + "&xaccess_token=" + JWT))
                .as("other names")
                .isNull();
        assertThat(ALL.find(headers(), "access_token=not%20a%20b64token"))
                .as("a non-b64token is the JWT check's to refuse")
                .isEqualTo("Bearer not a b64token");
    }

    /** RFC 6750 section 2.3: a server may refuse the query method; then the parameter is not a token. */
    @Test
    void find_queryOnlyAndNotAllowed_ignoresTheParameter() {
        BearerTokens headerOnly = new BearerTokens(null, false);

        assertThat(headerOnly.allowsQueryToken()).isFalse();
        assertThat(headerOnly.find(headers(), "access_token=" + JWT)).isNull();
        assertThat(headerOnly.find(headers("Authorization", "Bearer " + JWT), "access_token=x&access_token=y"))
                .as("neither twice nor beside the header is refused while the parameter means nothing")
                .isEqualTo("Bearer " + JWT);
    }

    /** RFC 6750 section 2: clients MUST NOT use more than one method in a request. */
    @Test
    void find_headerAndQuery_isBadRequest() {
        SpectorException e = refused(ALL, headers("Authorization", "Bearer " + JWT), "access_token=" + JWT);

        assertThat(e.details()).containsEntry("field", "access_token");
        refused(ALL, headers("Authorization", "Bearer " + JWT), "access_token=");
    }

    /** RFC 6750 section 2.3: the parameter is sent once. */
    @Test
    void find_accessTokenTwice_isBadRequest() {
        SpectorException e = refused(ALL, headers(), "access_token=" + JWT + "&a=1&access_token=" + JWT);

        assertThat(e.details()).containsEntry("field", "access_token");
        assertThat(e.getMessage()).contains("more than once");
        refused(ALL, headers(), "access_token=" + JWT + "&access%5ftoken=" + JWT);
    }

    /** RFC 9110 section 5.3: Authorization is not a list field, so two lines are ambiguous. */
    @Test
    void find_authorizationTwice_isBadRequest() {
        SpectorException e =
                refused(ALL, headers("Authorization", "Bearer " + JWT, "Authorization", "Bearer " + JWT), null);

        assertThat(e.details()).containsEntry("field", "Authorization");
    }

    /** The header wins over the cookie; the cookie over the query (RFC 6750 knows no cookie method). */
    @Test
    void find_severalPlaces_preferHeaderThenCookieThenQuery() {
        assertThat(ALL.find(headers("Authorization", "Bearer from-header", "Cookie", COOKIE + "=from-cookie"), null))
                .isEqualTo("Bearer from-header");
        assertThat(ALL.find(headers("Cookie", COOKIE + "=from-cookie"), "access_token=from-query"))
                .isEqualTo("Bearer from-cookie");
    }

    /** RFC 6750 section 2.1: a token within {@value BearerTokens#MAX_TOKEN_CHARS} chars; one past is 400. */
    @Test
    void find_tokenAtTheLengthLimit_isReturnedAndOnePastIsBadRequest() {
        String atLimit = "a".repeat(BearerTokens.MAX_TOKEN_CHARS);

        assertThat(ALL.find(headers(), "access_token=" + atLimit)).isEqualTo("Bearer " + atLimit);
        assertThat(ALL.find(headers("Cookie", COOKIE + "=" + atLimit), null)).isEqualTo("Bearer " + atLimit);
        assertThat(refused(ALL, headers(), "access_token=" + atLimit + "a").details())
                .containsEntry("field", "access_token");
        assertThat(refused(ALL, headers("Cookie", COOKIE + "=" + atLimit + "a"), null)
                        .details())
                .containsEntry("field", "cookie " + COOKIE);
        refused(ALL, headers(), "access_token=" + "%61".repeat(BearerTokens.MAX_TOKEN_CHARS + 1));
        assertThat(ALL.find(headers(), "access_token=" + "%61".repeat(BearerTokens.MAX_TOKEN_CHARS)))
                .as("the limit counts decoded chars")
                .isEqualTo("Bearer " + atLimit);
    }

    /** RFC 3986 section 2.1 and RFC 9110 section 5.5: broken escapes and chars no header can carry. */
    @Test
    void find_brokenEscapeOrControlChar_isBadRequest() {
        refused(ALL, headers(), "access_token=abc%zz");
        refused(ALL, headers(), "access_token=abc%4");
        assertThat(refused(ALL, headers(), "access_token=abc%0D%0ASet-Cookie:x").getMessage())
                .contains("control or non-ASCII");
        refused(ALL, headers(), "access_token=%C3%A9");
        assertThat(ALL.find(headers(), "a%zz=1&access_token=" + JWT))
                .as("another parameter's broken name is not this class's business")
                .isEqualTo("Bearer " + JWT);
    }

    /** The token never reaches a log line through this class. */
    @Test
    void toString_showsWhereTokensAreLookedForAndNoToken() {
        assertThat(ALL.toString())
                .isEqualTo("BearerTokens[header, cookie=spector_token, access_token=allowed]")
                .doesNotContain(JWT);
        assertThat(new BearerTokens(null, false).toString())
                .isEqualTo("BearerTokens[header, cookie=<none>, access_token=ignored]");
    }

    /** RFC 6750 section 2.3: the token is removed before the query travels on; the rest is untouched. */
    @Test
    void withoutAccessToken_keepsTheOtherParametersByteForByteInOrder() {
        assertThat(BearerTokens.withoutAccessToken("a=1&access_token=x&b=%20")).isEqualTo("a=1&b=%20");
        assertThat(BearerTokens.withoutAccessToken("access_token=x")).isNull();
        assertThat(BearerTokens.withoutAccessToken("access_token=x&access_token=y"))
                .isNull();
        assertThat(BearerTokens.withoutAccessToken("access_token=x&z=+%2B&y")).isEqualTo("z=+%2B&y");
        assertThat(BearerTokens.withoutAccessToken("a=1&access%5Ftoken=x")).isEqualTo("a=1");
        assertThat(BearerTokens.withoutAccessToken("a=1&&b=2&access_token")).isEqualTo("a=1&&b=2");
        assertThat(BearerTokens.withoutAccessToken("access_tokens=1&b")).isEqualTo("access_tokens=1&b");
        assertThat(BearerTokens.withoutAccessToken("")).isNull();
        assertThat(BearerTokens.withoutAccessToken(null)).isNull();
        String untouched = "q=%E2%82%AC&sort=-date";
        assertThat(BearerTokens.withoutAccessToken(untouched)).isSameAs(untouched);
    }

    @Test
    void from_settings_readsCookieNameAndQueryFlag() {
        GatewaySettings s = GatewaySettings.load(
                null,
                Map.of(),
                Map.of(
                        "spector.cell.role", "gateway",
                        "spector.cell.ring-members", "owner-0",
                        "spector.security.enabled", "false",
                        "spector.security.jwt.cookie-name", COOKIE,
                        "spector.security.jwt.allow-query-token", "true"));

        BearerTokens tokens = BearerTokens.from(s.security().jwt(), Cors.OFF);

        assertThat(tokens.allowsQueryToken()).isTrue();
        assertThat(tokens.find(headers("Cookie", COOKIE + "=" + JWT), null)).isEqualTo("Bearer " + JWT);
    }

    @Test
    void removeTokenCookie_dropsOnlyTheTokenCookie_keepsTheOthersInOrder() {
        HttpHeaders h =
                headers("Cookie", "app=1; " + COOKIE + "=" + JWT + "; theme=dark", "Cookie", COOKIE + "=" + JWT);

        ALL.removeTokenCookie(h);

        assertThat(h.getAll("Cookie")).containsExactly("app=1; theme=dark");
    }

    /** RFC 6265 §4.1.1: the name is what precedes the first '='; names are case-sensitive. */
    @Test
    void setsTokenCookie_isTheCookiesName_notItsValueOrAttributes() {
        assertThat(ALL.setsTokenCookie(COOKIE + "=evil; Path=/")).isTrue();
        assertThat(ALL.setsTokenCookie(" " + COOKIE + " =evil")).isTrue();
        assertThat(ALL.setsTokenCookie(COOKIE + "=")).isTrue();
        assertThat(ALL.setsTokenCookie("app=" + COOKIE + "=x")).isFalse();
        assertThat(ALL.setsTokenCookie(COOKIE.toUpperCase(java.util.Locale.ROOT) + "=x"))
                .isFalse();
        assertThat(ALL.setsTokenCookie(COOKIE)).as("no '=': no cookie").isFalse();
        assertThat(new BearerTokens(null, false).setsTokenCookie(COOKIE + "=x")).isFalse();
    }

    /**
     * Cookie tossing: a second token cookie (another site of the parent domain sets one with {@code
     * Domain=}, a script sets one) is 400 whichever comes first, on one {@code Cookie} line or two.
     * Regression (a review): the first was taken, and the longer path's, the tosser's, comes first.
     */
    @Test
    void find_theTokenCookieTwice_isRefused() {
        for (HttpHeaders h : List.of(
                headers("Cookie", COOKIE + "=" + JWT + "; " + COOKIE + "=" + JWT + "x"),
                headers("Cookie", COOKIE + "=" + JWT, "Cookie", "a=1; " + COOKIE + "=" + JWT))) {
            assertThat(refused(ALL, h, null).details()).containsEntry("field", "cookie " + COOKIE);
        }
    }

    /**
     * Cross-site request forgery and WebSocket hijacking: a browser sends the cookie with a form post
     * or a WebSocket from any page; the cookie counts only from the gateway's own origin (its
     * {@code Host}), from an origin allowed to send credentials, or with no {@code Origin} at all.
     * Regression (a review): a cookie from any origin was taken.
     */
    @Test
    void find_theTokenCookieFromAPageOfAnotherOrigin_isForbidden() {
        BearerTokens tokens = new BearerTokens(COOKIE, false, "https://app.example"::equals);
        String cookie = COOKIE + "=" + JWT;

        for (String origin :
                List.of("https://evil.example", "null", "https://gw.example:8443", "https://gw.example.evil")) {
            SpectorException e = catchThrowableOfType(
                    SpectorException.class,
                    () -> tokens.find(headers("Cookie", cookie, "Host", "gw.example", "Origin", origin), null));
            assertThat(e).as(origin).isNotNull();
            assertThat(e.code()).isEqualTo(ErrorCode.FORBIDDEN);
            assertThat(e.details()).containsEntry("reason", "cookie-cross-origin");
        }
        for (String[] sent : new String[][] {
            {"https://gw.example", "gw.example"},
            {"https://gw.example", "gw.example:443"},
            {"https://GW.example:443", "gw.example"},
            {"http://gw.example:8080", "gw.example:8080"},
            {"https://app.example", "gw.example"}
        }) {
            assertThat(tokens.find(headers("Cookie", cookie, "Host", sent[1], "Origin", sent[0]), null))
                    .as("%s to %s", sent[0], sent[1])
                    .isEqualTo("Bearer " + JWT);
        }
        assertThat(tokens.find(
                        headers(
                                "Cookie", cookie,
                                "Host", "gateway-internal:8080",
                                "X-Forwarded-Host", "gw.example, proxy2",
                                "Origin", "https://gw.example"),
                        null))
                .as("a proxy in front rewrote Host; X-Forwarded-Host names the page's origin")
                .isEqualTo("Bearer " + JWT);
        assertThat(tokens.find(
                        headers(
                                "Cookie", cookie,
                                "Host", "gateway-internal:8080",
                                "Forwarded", "for=1.2.3.4;host=\"gw.example\";proto=https",
                                "Origin", "https://gw.example"),
                        null))
                .as("RFC 7239 Forwarded host=")
                .isEqualTo("Bearer " + JWT);
        assertThat(tokens.find(headers("Cookie", cookie, "Host", "gw.example"), null))
                .as("no Origin: no browser's cross-site request")
                .isEqualTo("Bearer " + JWT);
        assertThat(tokens.find(
                        headers(
                                "Authorization",
                                "Bearer " + JWT,
                                "Host",
                                "gw.example",
                                "Origin",
                                "https://evil.example"),
                        null))
                .as("a header credential is no browser's ambient one")
                .isEqualTo("Bearer " + JWT);
    }

    /** RFC 6265bis §5.6: a nameless cookie "=NAME=VALUE" is sent back as "NAME=VALUE". */
    @Test
    void setsTokenCookie_aNamelessCookieCarryingTheName_isTheTokenCookie() {
        assertThat(ALL.setsTokenCookie("=" + COOKIE + "=x; Path=/api/v1")).isTrue();
        assertThat(ALL.setsTokenCookie(" = " + COOKIE + "=x")).isTrue();
        assertThat(ALL.setsTokenCookie("=other=x")).isFalse();
    }

    @Test
    void removeTokenCookie_withoutACookieName_changesNothing() {
        HttpHeaders h = headers("Cookie", COOKIE + "=" + JWT);

        new BearerTokens(null, false).removeTokenCookie(h);

        assertThat(h.getAll("Cookie")).containsExactly(COOKIE + "=" + JWT);
    }
}
