package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.util.List;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The request target and Host: each rule of {@link RequestTarget}, with the RFC text it defends. */
final class RequestTargetTest {
    private static final String HOST = "gw.example";

    /** Headers as a decoder may hand them over: unvalidated, so that OWS and odd values get through. */
    private static HttpHeaders hosts(String... values) {
        HttpHeaders headers =
                DefaultHttpHeadersFactory.headersFactory().withValidation(false).newHeaders();
        for (String value : values) {
            headers.add(HttpHeaderNames.HOST, value);
        }
        return headers;
    }

    private static RequestTarget get(String target) {
        return RequestTarget.parse(HttpMethod.GET, target, HttpVersion.HTTP_1_1, hosts(HOST));
    }

    private static RequestTarget withHost(HttpVersion version, HttpHeaders headers) {
        return RequestTarget.parse(HttpMethod.GET, "/", version, headers);
    }

    private static SpectorException refused(ThrowingCallable call) {
        SpectorException e = catchThrowableOfType(SpectorException.class, call);
        assertThat(e).as("must be refused").isNotNull();
        assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
        return e;
    }

    /** Asserts the target is refused on field {@code target} with a reason containing {@code why}. */
    private static void assertTargetRefused(String target, String why) {
        SpectorException e = refused(() -> get(target));
        assertThat(e.details()).containsEntry("field", "target");
        assertThat((String) e.details().get("reason")).contains(why);
    }

    /** Asserts the Host value is refused on field {@code host} with a reason containing {@code why}. */
    private static void assertHostRefused(String host, String why) {
        SpectorException e = refused(() -> withHost(HttpVersion.HTTP_1_1, hosts(host)));
        assertThat(e.details()).containsEntry("field", "host");
        assertThat((String) e.details().get("reason")).contains(why);
    }

    /** RFC 9112 §3.2.1: origin-form is {@code absolute-path [ "?" query ]}, split at the first '?'. */
    @Test
    void parse_originForm_splitsAtFirstQuestionMark() {
        RequestTarget t = get("/a/b?x=1?y=/z");
        assertThat(t.form()).isEqualTo(RequestTarget.Form.ORIGIN);
        assertThat(t.path()).isEqualTo("/a/b");
        assertThat(t.query()).isEqualTo("x=1?y=/z");
        assertThat(t.pathAndQuery()).isEqualTo("/a/b?x=1?y=/z");
        assertThat(t.authority()).isEqualTo(HOST);

        assertThat(get("/a").query()).isNull();
        assertThat(get("/a").pathAndQuery()).isEqualTo("/a");
        assertThat(get("/a?").query()).isEmpty();
        assertThat(get("/a?").pathAndQuery()).isEqualTo("/a?");
    }

    /** RFC 9112 §3.2 and RFC 3986 §3.5: a fragment is never sent, so a '#' in a target is refused. */
    @ParameterizedTest
    @ValueSource(strings = {"/a#b", "/a?x#y", "/#", "http://h/a#b", "/a%20#"})
    void parse_fragment_refused(String target) {
        assertTargetRefused(target, "fragment ('#')");
    }

    /** RFC 3986 §2.3 and §6.2.2.2: escapes of unreserved characters are decoded. */
    @Test
    void normalizePath_unreservedEscapes_decoded() {
        assertThat(RequestTarget.normalizePath("/x%41%7e%2D%5f%2e%30%7A")).isEqualTo("/xA~-_.0z");
    }

    /** RFC 3986 §6.2.2.1: every other escape stays encoded, with upper-case hex digits. */
    @Test
    void normalizePath_otherEscapes_upperCased() {
        assertThat(RequestTarget.normalizePath("/caf%c3%a9/%3f%20%25%2b")).isEqualTo("/caf%C3%A9/%3F%20%25%2B");
    }

    /** RFC 3986 §2.1: a '%' is followed by two hex digits, else the target is malformed. */
    @ParameterizedTest
    @ValueSource(strings = {"/%zz", "/%4", "/a%", "/%g0", "/%0", "/%%41", "/%4\u0661"})
    void normalizePath_malformedEscape_refused(String path) {
        assertTargetRefused(path, "percent-encoding");
    }

    /** RFC 3986 §2.2: an encoded '/' is data, not a delimiter; decoded by an owner it splits a segment. */
    @ParameterizedTest
    @ValueSource(strings = {"/a%2Fb", "/a%2fb", "/api/v1/..%2f", "/api/v1/%2e%2e%2f", "/%2F"})
    void normalizePath_encodedSlash_refused(String path) {
        assertTargetRefused(path, "encoded '/' (%2F)");
    }

    /** RFC 3986 §2.2 and §7.3: an encoded '\' is a path separator for some owners' file systems. */
    @ParameterizedTest
    @ValueSource(strings = {"/a%5Cb", "/a%5c", "/..%5c..%5cetc"})
    void normalizePath_encodedBackslash_refused(String path) {
        assertTargetRefused(path, "encoded '\\' (%5C)");
    }

    /** RFC 3986 §7.3: an encoded NUL or control character is refused rather than passed on. */
    @ParameterizedTest
    @CsvSource({
        "/a%00b, encoded NUL (%00)",
        "/a%01, encoded control character (%01)",
        "/a%0a, encoded control character (%0A)",
        "/a%0D, encoded control character (%0D)",
        "/a%1f, encoded control character (%1F)",
        "/a%7F, encoded control character (%7F)"
    })
    void normalizePath_encodedControl_refused(String path, String why) {
        assertTargetRefused(path, why);
    }

    static Stream<Arguments> forbiddenPathCharacters() {
        return Stream.of(
                Arguments.of("/a\\b", "'\\' in the path"),
                Arguments.of("/a\u0000b", "NUL in the path"),
                Arguments.of("/a\tb", "control character U+0009"),
                Arguments.of("/a\rb", "control character U+000D"),
                Arguments.of("/a\u007fb", "control character U+007F"),
                Arguments.of("/a b", "space in the path"),
                Arguments.of("/a\"b", "character '\"'"),
                Arguments.of("/a<b", "character '<'"),
                Arguments.of("/a[b", "character '['"),
                Arguments.of("/a^b", "character '^'"),
                Arguments.of("/a`b", "character '`'"),
                Arguments.of("/a{b", "character '{'"),
                Arguments.of("/a|b", "character '|'"),
                Arguments.of("/caf\u00e9", "non-ASCII character U+00E9"));
    }

    /** RFC 3986 §3.3: a path holds only pchar and '/'; anything else, raw, is refused. */
    @ParameterizedTest
    @MethodSource("forbiddenPathCharacters")
    void normalizePath_rawCharacterOutsidePchar_refused(String path, String why) {
        assertTargetRefused(path, why);
    }

    /** RFC 3986 §3.3: every pchar ({@code unreserved / sub-delims / ":" / "@"}) is kept as it is. */
    @Test
    void normalizePath_everyPchar_kept() {
        String all = "/azAZ09-._~!$&'()*+,;=:@";
        assertThat(RequestTarget.normalizePath(all)).isEqualTo(all);
    }

    /**
     * RFC 3986 §5.2.4 and the §5.4 examples (the merged paths for base {@code http://a/b/c/d;p?q}):
     * dot-segments are removed exactly as the algorithm says.
     */
    @ParameterizedTest
    @CsvSource({
        "/a/b/c/./../../g, /a/g",
        "/mid/content=5/../6, /mid/6",
        "/b/c/g, /b/c/g",
        "/b/c/./g, /b/c/g",
        "/b/c/g/, /b/c/g/",
        "/b/c/., /b/c/",
        "/b/c/./, /b/c/",
        "/b/c/.., /b/",
        "/b/c/../, /b/",
        "/b/c/../g, /b/g",
        "/b/c/../.., /",
        "/b/c/../../, /",
        "/b/c/../../g, /g",
        "/./g, /g",
        "/b/c/g., /b/c/g.",
        "/b/c/.g, /b/c/.g",
        "/b/c/g.., /b/c/g..",
        "/b/c/..g, /b/c/..g",
        "/b/c/./../g, /b/g",
        "/b/c/./g/., /b/c/g/",
        "/b/c/g/./h, /b/c/g/h",
        "/b/c/g/../h, /b/c/h",
        "/b/c/g;x=1/./y, /b/c/g;x=1/y",
        "/b/c/g;x=1/../y, /b/c/y",
        "/., /",
        "/..., /..."
    })
    void normalizePath_dotSegments_removedAsRfc3986(String path, String expected) {
        assertThat(RequestTarget.normalizePath(path)).isEqualTo(expected);
    }

    /**
     * RFC 3986 §5.2.4 clamps a '..' at the root (§5.4.2: {@code ../../../g} is {@code /g}); the
     * gateway refuses it instead, so a climb can never be mistaken for a path under the root.
     */
    @ParameterizedTest
    @ValueSource(
            strings = {
                "/..",
                "/../",
                "/../g",
                "/a/../../b",
                "/b/c/../../../g",
                "/%2e%2e",
                "/a/.%2e/%2E./x",
                "/api/v1/namespaces/a/../../../../../admin",
                "/relay/w/t/../../../.."
            })
    void normalizePath_climbAboveRoot_refused(String path) {
        assertTargetRefused(path, "path climbs above the root");
    }

    /**
     * RFC 3986 §2.3 then §5.2.4: the issue's bypass strings, each an escaped or plain dot-segment,
     * normalize to the path an owner would resolve (so the skip list and routing judge that path).
     */
    @ParameterizedTest
    @CsvSource({
        "/api/v1/auth/../namespaces/x/echo, /api/v1/namespaces/x/echo",
        "/api/v1/namespaces/a/../../../admin/requests, /api/admin/requests",
        "/api/v1/%2e%2e/x, /api/x",
        "/api/v1/namespaces/a/%2e%2e/%2e%2e/%2e%2e/admin, /api/admin",
        "/api/v1/.%2e/x, /api/x",
        "/api/v1/%2E%2E/x, /api/x",
        "/api/v1/auth/%2e%2e/namespaces/x, /api/v1/namespaces/x",
        "/relay/w/t/../../.., /"
    })
    void parse_issueBypassStrings_normalized(String target, String expected) {
        assertThat(get(target).path()).isEqualTo(expected);
    }

    /** nginx {@code merge_slashes on}: runs of '/' are one '/', merged before dot removal. */
    @ParameterizedTest
    @CsvSource({"//a///b//, /a/b/", "/a//../b, /b", "//, /", "/a//b, /a/b"})
    void normalizePath_slashRuns_merged(String path, String expected) {
        assertThat(RequestTarget.normalizePath(path)).isEqualTo(expected);
    }

    /** RFC 3986 §6.2.3 leaves a trailing '/' significant: it is kept, never added. */
    @Test
    void normalizePath_trailingSlash_keptNotAdded() {
        assertThat(RequestTarget.normalizePath("/a/b/")).isEqualTo("/a/b/");
        assertThat(RequestTarget.normalizePath("/a/b")).isEqualTo("/a/b");
        assertThat(RequestTarget.normalizePath("/")).isEqualTo("/");
    }

    /** {@link RequestTarget#MAX_SEGMENTS}: 128 segments pass, 129 are refused (dots count). */
    @Test
    void normalizePath_segmentsAtLimit_acceptedAndOnePastRefused() {
        String atLimit = "/a".repeat(RequestTarget.MAX_SEGMENTS);
        assertThat(RequestTarget.normalizePath(atLimit)).isEqualTo(atLimit);
        assertThat(RequestTarget.normalizePath("/a".repeat(RequestTarget.MAX_SEGMENTS - 1) + "/.."))
                .isEqualTo("/a".repeat(RequestTarget.MAX_SEGMENTS - 2) + "/");

        assertTargetRefused(atLimit + "/a", "more than 128 segments");
        assertTargetRefused(atLimit + "/.", "more than 128 segments");
    }

    /** RFC 9112 §3.2.1 and RFC 3986 §3.4: the query is forwarded byte for byte, escapes included. */
    @Test
    void parse_query_keptByteForByte() {
        String query = "a=%2f&b=/x?y&c=%c3%a9&d=..&e=:@!$'()*+,;=&f=%2E";
        RequestTarget t = get("/p/./q?" + query);
        assertThat(t.query()).isEqualTo(query);
        assertThat(t.pathAndQuery()).isEqualTo("/p/q?" + query);
    }

    /**
     * WHATWG URL (query percent-encode set): browsers send {@code [ ] { } | ^ `} in a query as they
     * are; they pass byte for byte, as nginx passes them. Regression (a review): a 400 and a close.
     */
    @Test
    void parse_queryWithWhatBrowsersLeaveRaw_keptByteForByte() {
        String query = "a[]=1&a[]=2&f={\"x\":1}&q=a|b^c&t=`";
        for (String raw : List.of("a[]=1&a[]=2", "f={x}", "q=a|b^c", "t=`x`")) {
            assertThat(get("/p?" + raw).query()).as(raw).isEqualTo(raw);
        }
        assertThat(query).contains("\"");
        assertTargetRefused("/p?" + query, "character '\"' in the query");
        assertTargetRefused("/p{x}", "character '{'");
        assertThat(RequestTarget.escapeBrowserQueryChars("a[]=1&f={x}|^`&b=%41"))
                .as("for a relayed URL")
                .isEqualTo("a%5B%5D=1&f=%7Bx%7D%7C%5E%60&b=%41");
        assertThat(java.net.URI.create("http://t/p?" + RequestTarget.escapeBrowserQueryChars("a[]={|^`}")))
                .isNotNull();
    }

    static Stream<Arguments> queryOutsideRfc3986() {
        return Stream.of(
                Arguments.of("/p?a b", "space in the query"),
                Arguments.of("/p?a\\b", "'\\' in the query"),
                Arguments.of("/p?a\"b", "character '\"' in the query"),
                Arguments.of("/p?a<b", "character '<' in the query"),
                Arguments.of("/p?%zz", "malformed percent-encoding '%zz' in the query"),
                Arguments.of("/p?a=%4", "truncated percent-encoding in the query"),
                Arguments.of("/p?a%", "truncated percent-encoding in the query"));
    }

    /** RFC 3986 §3.4: a query holds only pchar, '/' and '?', and well-formed escapes. */
    @ParameterizedTest
    @MethodSource("queryOutsideRfc3986")
    void parse_queryOutsideRfc3986_refused(String target, String why) {
        assertTargetRefused(target, why);
    }

    /** RFC 9112 §3.2.1: a query with a control character is refused. */
    @Test
    void parse_queryWithControl_refused() {
        assertTargetRefused("/p?a\u0000", "NUL in the query");
        assertTargetRefused("/p?a\u0001", "control character U+0001 in the query");
    }

    /**
     * RFC 9112 §3.2.2: a server MUST accept absolute-form; its authority replaces Host, its path is
     * normalized like any other, and the scheme is case-insensitive (RFC 3986 §3.1).
     */
    @Test
    void parse_absoluteForm_acceptedAndItsAuthorityWins() {
        RequestTarget t = get("http://h:80/api/v1/x?y=1");
        assertThat(t.form()).isEqualTo(RequestTarget.Form.ABSOLUTE);
        assertThat(t.path()).isEqualTo("/api/v1/x");
        assertThat(t.query()).isEqualTo("y=1");
        assertThat(t.pathAndQuery()).isEqualTo("/api/v1/x?y=1");
        assertThat(t.authority()).isEqualTo("h:80");

        RequestTarget upper = get("HTTPS://H.example/a/../b");
        assertThat(upper.path()).isEqualTo("/b");
        assertThat(upper.authority()).isEqualTo("H.example");
    }

    /** RFC 3986 §6.2.3: an absolute-form with an empty path has the path "/". */
    @Test
    void parse_absoluteFormEmptyPath_isRoot() {
        assertThat(get("http://h").pathAndQuery()).isEqualTo("/");
        assertThat(get("http://h?x=1").path()).isEqualTo("/");
        assertThat(get("http://h?x=1").query()).isEqualTo("x=1");
    }

    /** RFC 9110 §4.2.4: userinfo in an http(s) URI is refused (a sender MUST NOT generate it). */
    @ParameterizedTest
    @ValueSource(strings = {"http://user@h/", "http://u:p@h/x", "https://@h/"})
    void parse_absoluteFormUserinfo_refused(String target) {
        assertTargetRefused(target, "userinfo ('@')");
    }

    /** RFC 9110 §4.2.1: an http URI with an empty host is invalid; its authority is checked as Host. */
    @Test
    void parse_absoluteFormBadAuthority_refused() {
        assertTargetRefused("http:///x", "without a host");
        assertTargetRefused("http://h:99999/x", "port 99999");
        assertTargetRefused("http://a b/x", "space in the host");
        assertTargetRefused("http://[::1/x", "IP literal without ']'");
    }

    /** RFC 9112 §3.2.2: only http and https are served; another scheme's target is refused. */
    @ParameterizedTest
    @ValueSource(strings = {"ftp://h/x", "ws://h/", "file:///etc/passwd", "git+ssh://h/r"})
    void parse_otherScheme_refused(String target) {
        assertTargetRefused(target, "not served (expected: http or https)");
    }

    /** RFC 9112 §3.2.3: authority-form is only for CONNECT, which the gateway does not serve. */
    @Test
    void parse_authorityForm_refused() {
        SpectorException e =
                refused(() -> RequestTarget.parse(HttpMethod.CONNECT, "h:443", HttpVersion.HTTP_1_1, hosts("h:443")));
        assertThat((String) e.details().get("reason")).contains("authority-form (CONNECT)");
        assertTargetRefused("h:443", "not origin-form");
        assertTargetRefused("api/v1/x", "not origin-form");
    }

    /** RFC 9112 §3.2.4: asterisk-form is only for a server-wide OPTIONS. */
    @Test
    void parse_asteriskForm_onlyWithOptions() {
        RequestTarget t = RequestTarget.parse(HttpMethod.OPTIONS, "*", HttpVersion.HTTP_1_1, hosts(HOST));
        assertThat(t.form()).isEqualTo(RequestTarget.Form.ASTERISK);
        assertThat(t.path()).isEqualTo("*");
        assertThat(t.query()).isNull();
        assertThat(t.pathAndQuery()).isEqualTo("*");
        assertThat(t.authority()).isEqualTo(HOST);

        assertTargetRefused("*", "only for OPTIONS, not 'GET'");
        SpectorException e =
                refused(() -> RequestTarget.parse(HttpMethod.OPTIONS, "*?x", HttpVersion.HTTP_1_1, hosts(HOST)));
        assertThat(e.details()).containsEntry("field", "target");
    }

    /** RFC 9112 §3.2: a server MUST respond 400 to an HTTP/1.1 request that lacks Host. */
    @Test
    void parse_http11WithoutHost_refused() {
        SpectorException e = refused(() -> withHost(HttpVersion.HTTP_1_1, hosts()));
        assertThat(e.details())
                .containsEntry("field", "host")
                .containsEntry("reason", "missing (required in HTTP/1.1)");
    }

    /**
     * RFC 9112 §3.2.2: a client MUST send Host even with absolute-form, and §3.2's 400 applies to
     * any HTTP/1.1 request; the Host sent is still checked, then ignored for the target's authority.
     */
    @Test
    void parse_absoluteFormHost_stillRequiredAndChecked() {
        SpectorException missing =
                refused(() -> RequestTarget.parse(HttpMethod.GET, "http://h/x", HttpVersion.HTTP_1_1, hosts()));
        assertThat(missing.details()).containsEntry("field", "host");
        SpectorException invalid =
                refused(() -> RequestTarget.parse(HttpMethod.GET, "http://h/x", HttpVersion.HTTP_1_1, hosts("a b")));
        assertThat(invalid.details()).containsEntry("field", "host");
        assertThat(RequestTarget.parse(HttpMethod.GET, "http://h/x", HttpVersion.HTTP_1_0, hosts())
                        .authority())
                .isEqualTo("h");
    }

    /** RFC 9112 §3.2 (and RFC 1945): HTTP/1.0 may omit Host; there is then no authority. */
    @Test
    void parse_http10WithoutHost_hasNoAuthority() {
        assertThat(withHost(HttpVersion.HTTP_1_0, hosts()).authority()).isNull();
        assertThat(withHost(HttpVersion.HTTP_1_0, hosts("h:8080")).authority()).isEqualTo("h:8080");
    }

    /** RFC 9112 §3.2: a request with more than one Host field line MUST be answered 400. */
    @Test
    void parse_twoHostLines_refused() {
        SpectorException same = refused(() -> withHost(HttpVersion.HTTP_1_1, hosts("h", "h")));
        assertThat(same.details())
                .containsEntry("field", "host")
                .containsEntry("reason", "2 Host field lines (expected: 1)");
        refused(() -> withHost(HttpVersion.HTTP_1_0, hosts("a", "b")));
    }

    /** RFC 9112 §3.2 and RFC 9110 §5.3: Host is a singleton; a comma-separated list is refused. */
    @ParameterizedTest
    @ValueSource(strings = {"a,b", "a, b", "h:80,h:80", ","})
    void parse_hostList_refused(String host) {
        assertHostRefused(host, "a list of values");
    }

    static Stream<Arguments> invalidHosts() {
        return Stream.of(
                Arguments.of("a b", "space in the host"),
                Arguments.of("h:99999", "port 99999"),
                Arguments.of("h:-1", "port is not 1..5 digits"),
                Arguments.of("h:1:2", "port is not 1..5 digits"),
                Arguments.of("h:8o", "port is not 1..5 digits"),
                Arguments.of("[::1", "IP literal without ']'"),
                Arguments.of("x@y", "character '@' in the host"),
                Arguments.of(":80", "empty host"),
                Arguments.of("[::1]x", "characters after the IP literal"),
                Arguments.of("[::1]:x", "port is not 1..5 digits"),
                Arguments.of("[zz]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[fe80::1%25eth0]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[1:2:3:4:5:6:7:8:9]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[1:2:3:4:5:6:7]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[1::2::3]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[12345::]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[::1.2.3.256]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[::01.2.3.4]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[1:]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[:1]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[v.x]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("[v1.]", "not an IPv6 or IPvFuture literal"),
                Arguments.of("h/p", "character '/' in the host"),
                Arguments.of("h\\x", "'\\' in the host"),
                Arguments.of("h%zz", "malformed percent-encoding"));
    }

    /** RFC 9112 §3.2 and RFC 3986 §3.2.2-3.2.3: a Host that is not {@code uri-host [":" port]} is 400. */
    @ParameterizedTest
    @MethodSource("invalidHosts")
    void parse_invalidHost_refused(String host, String why) {
        assertHostRefused(host, why);
    }

    /** RFC 3986 §3.2.2: reg-name, IPv4address and IP-literal hosts, with or without a port, pass as sent. */
    @ParameterizedTest
    @ValueSource(
            strings = {
                "h",
                "h:80",
                "H.Example.COM:8080",
                "10.0.0.1:7070",
                "999.1.1.1",
                "[::1]",
                "[::1]:7070",
                "[::]",
                "[2001:db8::ff00:42:8329]",
                "[2001:0db8:0000:0000:0000:ff00:0042:8329]",
                "[1:2:3:4:5:6:7::]",
                "[::ffff:192.0.2.1]",
                "[1:2:3:4:5:6:1.2.3.4]",
                "[v1.fe:x]",
                "xn--bcher-kva.example",
                "a%41b",
                "h:0"
            })
    void parse_validHost_keptAsAuthority(String host) {
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts(host)).authority()).isEqualTo(host);
    }

    /** RFC 9112 §3.2: an empty Host value is allowed (no authority to name); there is then none. */
    @Test
    void parse_emptyHost_hasNoAuthority() {
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts("")).authority()).isNull();
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts(" \t")).authority()).isNull();
    }

    /** RFC 9110 §5.5: OWS around a field value is not part of it. */
    @Test
    void parse_hostWithOws_trimmed() {
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts(" \th:80 \t")).authority())
                .isEqualTo("h:80");
    }

    /** RFC 3986 §3.2.3 allows an empty port and §6.2.3 drops it: {@code h:} is {@code h}. */
    @Test
    void parse_emptyPort_dropped() {
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts("h:")).authority()).isEqualTo("h");
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts("[::1]:")).authority()).isEqualTo("[::1]");
        assertThat(get("http://h:/x").authority()).isEqualTo("h");
    }

    /** {@link RequestTarget#MAX_PORT}: port 65535 passes, 65536 is refused (RFC 9110 §4.2.1). */
    @Test
    void parse_portAtLimit_acceptedAndOnePastRefused() {
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts("h:65535")).authority()).isEqualTo("h:65535");
        assertHostRefused("h:65536", "port 65536 (expected: 0..65535)");
    }

    /** {@link RequestTarget#MAX_PORT_DIGITS}: a 5-digit port passes, 6 digits are refused. */
    @Test
    void parse_portDigitsAtLimit_acceptedAndOnePastRefused() {
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts("h:00080")).authority()).isEqualTo("h:00080");
        assertHostRefused("h:000080", "port is not 1..5 digits");
    }

    /** {@link RequestTarget#MAX_REG_NAME_CHARS}: a 255-character name passes, 256 are refused. */
    @Test
    void parse_regNameAtLimit_acceptedAndOnePastRefused() {
        String atLimit = "a".repeat(RequestTarget.MAX_REG_NAME_CHARS);
        assertThat(withHost(HttpVersion.HTTP_1_1, hosts(atLimit + ":80")).authority())
                .isEqualTo(atLimit + ":80");
        assertHostRefused(atLimit + "a", "host name of 256 characters (expected: at most 255)");
    }

    /**
     * {@link RequestTarget#MAX_QUOTED_CHARS}: a reason quotes 100 characters of client input whole
     * and cuts a 101st (RFC 9110 §17: a server's errors should not amplify or forward client input).
     */
    @Test
    void refusal_quotedInputAtLimit_wholeAndOnePastCut() {
        String atLimit = "/" + "a".repeat(RequestTarget.MAX_QUOTED_CHARS - 2) + "\"";
        SpectorException whole = refused(() -> get(atLimit));
        assertThat((String) whole.details().get("reason")).endsWith("'" + atLimit + "'");

        String onePast = atLimit + "b";
        SpectorException cut = refused(() -> get(onePast));
        assertThat((String) cut.details().get("reason"))
                .endsWith("'" + atLimit + "'... (101 characters)")
                .doesNotContain(onePast);
    }

    /** RFC 9110 §17.3 (log injection): a quoted CR, LF or other control is escaped, never raw. */
    @Test
    void refusal_controlInInput_escapedInReason() {
        SpectorException e = refused(() -> get("/a\r\nX-Injected: 1"));
        assertThat((String) e.details().get("reason"))
                .contains("'/a\\u000D\\u000AX-Injected: 1'")
                .doesNotContain("\r")
                .doesNotContain("\n");
    }

    /**
     * RFC 3986 §5.2.4: the relay's rest path is normalized alone, so once appended to a target's
     * base path it can never leave it; a rest that climbs is refused, a relative one too.
     */
    @Test
    void normalizePath_relayRestPath_staysUnderBase() {
        String rest = RequestTarget.normalizePath("/files/./a/../b%2e");
        assertThat(rest).isEqualTo("/files/b.");
        assertThat(RequestTarget.normalizePath("/base" + rest)).isEqualTo("/base/files/b.");

        SpectorException climbs = refused(() -> RequestTarget.normalizePath("/files/../../etc/passwd"));
        assertThat((String) climbs.details().get("reason")).contains("path climbs above the root");
        SpectorException relative = refused(() -> RequestTarget.normalizePath("files"));
        assertThat((String) relative.details().get("reason")).contains("does not start with '/'");
        refused(() -> RequestTarget.normalizePath(""));
    }

    /** RFC 9112 §3.2: an empty request target is not a request-target of any form. */
    @Test
    void parse_emptyTarget_refused() {
        assertTargetRefused("", "empty request target");
    }
}
