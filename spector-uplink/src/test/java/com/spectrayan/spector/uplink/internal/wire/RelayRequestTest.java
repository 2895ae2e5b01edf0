package com.spectrayan.spector.uplink.internal.wire;

import static com.spectrayan.spector.uplink.internal.wire.BadRequests.assertRefused;
import static com.spectrayan.spector.uplink.internal.wire.BadRequests.json;
import static com.spectrayan.spector.uplink.internal.wire.BadRequests.pairs;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.RelayHeaders;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class RelayRequestTest {

    /** A valid input; each test changes one member. */
    private static ObjectNode input() {
        return (ObjectNode) json("{'relayId':'r-1','target':'app','method':'POST','url':'https://app.local/a/b?x=1',"
                + "'headers':[['content-type','text/plain'],['x-b','1'],['x-b','2']],"
                + "'tenant':'acme','leaseId':'l-9','hasBody':true}");
    }

    private static ObjectNode with(String field, String value) {
        return input().put(field, value);
    }

    private static List<Header> headers(int count) {
        List<Header> headers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            headers.add(new Header("x-h" + i, "v" + i));
        }
        return headers;
    }

    private static ObjectNode withHeaders(List<Header> headers) {
        ObjectNode in = input();
        in.set("headers", pairs(headers));
        return in;
    }

    @Test
    void parse_validInput_readsEveryField() {
        RelayRequest request = RelayRequest.parse(input());

        assertThat(request.relayId()).isEqualTo("r-1");
        assertThat(request.target()).isEqualTo("app");
        assertThat(request.method()).isEqualTo("POST");
        assertThat(request.url()).isEqualTo("https://app.local/a/b?x=1");
        assertThat(request.headers())
                .as("order and repeats kept")
                .containsExactly(
                        new Header("content-type", "text/plain"), new Header("x-b", "1"), new Header("x-b", "2"));
        assertThat(request.tenant()).isEqualTo("acme");
        assertThat(request.leaseId()).isEqualTo("l-9");
        assertThat(request.hasBody()).isTrue();
    }

    @Test
    void toJson_parsed_roundTrips() {
        RelayRequest request = RelayRequest.parse(input());

        assertThat(request.toJson()).isEqualTo(input());
        assertThat(RelayRequest.parse(request.toJson())).isEqualTo(request);
    }

    @Test
    void toJson_noLeaseId_leavesItOut() {
        ObjectNode in = input();
        in.remove("leaseId");

        RelayRequest request = RelayRequest.parse(in);

        assertThat(request.leaseId()).isNull();
        assertThat(request.toJson().has("leaseId")).isFalse();
        assertThat(RelayRequest.parse(input().putNull("leaseId")).leaseId())
                .as("null reads as absent")
                .isNull();
    }

    @Test
    void parse_notAnObject_isBadRequest() {
        assertRefused(() -> RelayRequest.parse(json("[]")), "input", "input an array");
    }

    @Test
    void relayRequest_relayIdOf64Chars_isAccepted() {
        String max = "aZ0._:-".repeat(9) + "x";
        assertThat(max).hasSize(64);

        assertThat(RelayRequest.parse(with("relayId", max)).relayId())
                .as("relayId at 64 chars")
                .isEqualTo(max);
    }

    @Test
    void relayRequest_relayIdOf65Chars_isBadRequest() {
        assertRefused(() -> RelayRequest.parse(with("relayId", "r".repeat(65))), "relayId", "relayId of 65 chars")
                .hasMessage("relayId: 65 chars (expected: 1..64)");
        assertRefused(() -> RelayRequest.parse(with("relayId", "")), "relayId", "relayId of 0 chars")
                .hasMessage("relayId: 0 chars (expected: 1..64)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"r 1", "r/1", "r\n1", "ré", "r@1"})
    void relayRequest_relayIdOutsideThePattern_isBadRequest(String relayId) {
        assertRefused(() -> RelayRequest.parse(with("relayId", relayId)), "relayId", "relayId '" + relayId + "'")
                .hasMessageContaining("(expected: [A-Za-z0-9._:-])");
    }

    @Test
    void relayRequest_relayIdNotAString_isBadRequest() {
        assertRefused(() -> RelayRequest.parse(input().put("relayId", 7)), "relayId", "relayId a number")
                .hasMessage("relayId: an integer (expected: a string)");
        ObjectNode missing = input();
        missing.remove("relayId");
        assertRefused(() -> RelayRequest.parse(missing), "relayId", "relayId missing")
                .hasMessage("relayId: missing (expected: a string)");
    }

    @Test
    void relayRequest_targetOf64Chars_isAccepted_and65_isBadRequest() {
        String max = "a" + "-0b".repeat(21);
        assertThat(max).hasSize(64);

        assertThat(RelayRequest.parse(with("target", max)).target())
                .as("target at 64 chars")
                .isEqualTo(max);
        assertRefused(() -> RelayRequest.parse(with("target", max + "a")), "target", "target of 65 chars")
                .hasMessage("target: 65 chars (expected: 1..64)");
    }

    @Test
    void relayRequest_upperCaseTarget_isBadRequest() {
        assertRefused(() -> RelayRequest.parse(with("target", "App")), "target", "upper-case target")
                .hasMessage("target: char 1 is 'A' (expected: [a-z0-9][a-z0-9-]*)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"-app", "app.x", "app_x", "app x", ""})
    void relayRequest_targetOutsideThePattern_isBadRequest(String target) {
        assertRefused(() -> RelayRequest.parse(with("target", target)), "target", "target '" + target + "'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
    void relayRequest_relayedMethod_isAccepted(String method) {
        ObjectNode in = with("method", method).put("hasBody", false);

        assertThat(RelayRequest.parse(in).method()).as(method).isEqualTo(method);
    }

    @ParameterizedTest
    @ValueSource(strings = {"FOO", "get", "CONNECT", "TRACE", "", "GET "})
    void relayRequest_unknownMethod_isBadRequest(String method) {
        assertRefused(() -> RelayRequest.parse(with("method", method)), "method", "method '" + method + "'")
                .hasMessageContaining("(expected: one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS)");
    }

    @Test
    void relayRequest_unknownMethod_isQuotedOnlyWhenShortAndAToken() {
        assertRefused(() -> RelayRequest.parse(with("method", "FOO")), "method", "method FOO")
                .hasMessageStartingWith("method: 'FOO' (expected:");
        assertRefused(() -> RelayRequest.parse(with("method", "X".repeat(17))), "method", "method of 17 chars")
                .hasMessageStartingWith("method: 17 chars (expected:");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "http://h",
                "https://app.local/a/b?x=1&y=%20",
                "HTTPS://App.Local:8443/a",
                "http://10.0.0.1:1/",
                "http://[::1]:65535/x",
                "http://[2001:db8::1]/",
                "http://h?x=/a",
                "http://my_host.internal/{a}|b",
                "http://h/a...b/.../x.y/.hidden/..x/x..",
                "http://h/a?x=/../..&y=%2e%2e"
            })
    void relayRequest_absoluteHttpUrl_isAccepted(String url) {
        assertThat(RelayRequest.parse(with("url", url)).url()).as(url).isEqualTo(url);
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "/a/b",
                "a/b",
                "//h/a",
                "file:///etc/passwd",
                "ftp://h/a",
                "ws://h/a",
                "http:/h/a",
                "http:///a",
                "http://:80/a",
                "http://user:pw@h/a",
                "http://h/a#frag",
                "http://h/a b",
                "http://h/\u00e9",
                "http://h:0/",
                "http://h:65536/",
                "http://h:/a",
                "http://h:8x/",
                "http://[::1/",
                "http://[zz]/",
                "http://[::1]x/",
                "http://h!/",
                "http://h/../../etc/passwd",
                "http://h/a/..",
                "http://h/./a",
                "http://h/a/%2e%2E/b",
                "http://h/%2e/a",
                "http://h/a/..;/b",
                "http://h/a/.;x=1/b",
                "http://h/a/..?q=1"
            })
    void relayRequest_relativeFileOrMalformedUrl_isBadRequest(String url) {
        assertRefused(() -> RelayRequest.parse(with("url", url)), "url", "url '" + url + "'");
    }

    @Test
    void relayRequest_urlOf4096Chars_isAccepted_and4097_isBadRequest() {
        String prefix = "https://app.local/";
        String max = prefix + "a".repeat(4096 - prefix.length());

        assertThat(RelayRequest.parse(with("url", max)).url())
                .as("url at 4096 chars")
                .hasSize(4096);
        assertRefused(() -> RelayRequest.parse(with("url", max + "a")), "url", "url of 4097 chars")
                .hasMessage("url: 4097 chars (expected: 1..4096)");
    }

    @Test
    void relayRequest_100Headers_isAccepted_and101_isBadRequest() {
        assertThat(RelayRequest.parse(withHeaders(headers(100))).headers())
                .as("100 headers")
                .hasSize(100);
        assertRefused(() -> RelayRequest.parse(withHeaders(headers(101))), "headers", "101 headers")
                .hasMessage("headers: 101 headers (expected: <= 100)");
    }

    @Test
    void relayRequest_droppedHeaders_doNotCountAgainstTheBound() {
        List<Header> all = headers(100);
        all.add(0, new Header("Connection", "keep-alive, X-Hop"));
        all.add(new Header("X-Hop", "hop"));
        all.add(new Header("Authorization", "Bearer secret"));
        all.add(new Header("x-agent-device-token", "t"));
        all.add(new Header("Transfer-Encoding", "chunked"));
        all.add(new Header("Content-Length", "3"));
        all.add(new Header("Keep-Alive", "timeout=5"));
        all.add(new Header("Upgrade", "websocket"));
        all.add(new Header("TE", "trailers"));
        all.add(new Header("Trailer", "x-t"));
        all.add(new Header("Proxy-Authorization", "Basic x"));
        all.add(new Header("Proxy-Authenticate", "Basic"));
        all.add(new Header("Host", "app.local"));

        RelayRequest request = RelayRequest.parse(withHeaders(all));

        assertThat(request.headers())
                .as("113 given, 13 dropped by the header policy, 100 kept: at the bound")
                .isEqualTo(headers(100));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "authorization",
                "x-agent-device-token",
                "connection",
                "transfer-encoding",
                "content-length",
                "keep-alive",
                "upgrade",
                "te",
                "trailer",
                "proxy-authorization",
                "proxy-authenticate"
            })
    void relayRequest_credentialOrHopByHopHeader_isDropped(String name) {
        List<Header> given = List.of(new Header(name, "v"), new Header("x-kept", "k"));

        assertThat(RelayRequest.parse(withHeaders(given)).headers())
                .as("%s never reaches the worker", name)
                .containsExactly(new Header("x-kept", "k"));
        assertThat(RelayHeaders.forRequest(List.of(new Header(name.toUpperCase(Locale.ROOT), "v"))))
                .as("%s in upper case", name)
                .isEmpty();
    }

    @Test
    void newRelayRequest_senderSide_filtersLikeTheReceiver() {
        RelayRequest request = new RelayRequest(
                "r-1",
                "app",
                "GET",
                "http://h/",
                List.of(new Header("Authorization", "Bearer s"), new Header("Accept", "*/*")),
                "acme",
                null,
                false,
                -1);

        assertThat(request.headers()).containsExactly(new Header("Accept", "*/*"));
    }

    @Test
    void relayRequest_connectionListingMoreThan32Names_isBadRequest() {
        StringBuilder names = new StringBuilder("n0");
        for (int i = 1; i < 33; i++) {
            names.append(", n").append(i);
        }

        assertRefused(
                () -> RelayRequest.parse(withHeaders(List.of(new Header("Connection", names.toString())))),
                "Connection",
                "a Connection header listing 33 names");
    }

    @Test
    void relayRequest_headerNameWithASpace_isBadRequest() {
        assertRefused(
                        () -> RelayRequest.parse(withHeaders(List.of(new Header("x-a", "1"), new Header("x b", "v")))),
                        "headers[1].name",
                        "a header name with a space")
                .hasMessage("headers[1].name: char 2 is U+0020 (expected: an RFC 9110 token)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"x:y", "x\"y", "x(y)", "x/y", "é", "x@y", "x\ty"})
    void relayRequest_headerNameNotAToken_isBadRequest(String name) {
        assertRefused(
                () -> RelayRequest.parse(withHeaders(List.of(new Header(name, "v")))),
                "headers[0].name",
                "header name '" + name + "'");
    }

    @Test
    void relayRequest_headerNameOf256Chars_isAccepted_and257_orEmpty_isBadRequest() {
        String max = "!#$%&'*+-.^_`|~09AZaz".repeat(13).substring(0, 256);

        assertThat(RelayRequest.parse(withHeaders(List.of(new Header(max, "v"))))
                        .headers())
                .as("a name of 256 token chars")
                .containsExactly(new Header(max, "v"));
        assertRefused(
                        () -> RelayRequest.parse(withHeaders(List.of(new Header(max + "a", "v")))),
                        "headers[0].name",
                        "a name of 257 chars")
                .hasMessage("headers[0].name: 257 chars (expected: 1..256)");
        assertRefused(
                () -> RelayRequest.parse(withHeaders(List.of(new Header("", "v")))),
                "headers[0].name",
                "an empty name");
    }

    @Test
    void relayRequest_headerValueOf8192Chars_isAccepted_and8193_isBadRequest() {
        String max = "v".repeat(8192);

        assertThat(RelayRequest.parse(withHeaders(List.of(new Header("x-v", max))))
                        .headers()
                        .get(0)
                        .value())
                .as("a value of 8192 chars")
                .hasSize(8192);
        assertRefused(
                        () -> RelayRequest.parse(withHeaders(List.of(new Header("x-v", max + "v")))),
                        "headers[0].value",
                        "a value of 8193 chars")
                .hasMessage("headers[0].value: 8193 chars (expected: <= 8192)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"a\nb", "a\rb", "a\u0000b", "\u20ac", "\u0001", "a\u007fb", "\u001b[0m", " lead", "\tlead"})
    void relayRequest_headerValueNotAFieldValue_isBadRequest(String value) {
        // RFC 9110 §5.5: what HTTP/1.1 cannot carry is refused on the wire, not where the head is written
        assertRefused(
                        () -> RelayRequest.parse(withHeaders(List.of(new Header("x-v", value)))),
                        "headers[0].value",
                        "a value with a forbidden char")
                .hasMessageContaining("(expected: a field value (RFC 9110 section 5.5)");
    }

    @Test
    void relayRequest_headerValueEmptyTabOrLatin1_isAccepted() {
        List<Header> given = List.of(
                new Header("x-empty", ""),
                new Header("x-tab", "a\tb"),
                new Header("x-latin", "caf\u00e9"),
                new Header("x-trailing", "a \t"));

        assertThat(RelayRequest.parse(withHeaders(given)).headers()).isEqualTo(given);
    }

    @ParameterizedTest
    @ValueSource(strings = {"{}", "'x'", "[['a']]", "[['a','b','c']]", "[['a',1]]", "['a: b']", "[null]"})
    void relayRequest_headersNotAListOfStringPairs_isBadRequest(String headers) {
        ObjectNode in = input();
        in.set("headers", json(headers));

        assertRefused(() -> RelayRequest.parse(in), headers.startsWith("[") ? "headers[0]" : "headers", headers);
    }

    @Test
    void relayRequest_tenantOf300Chars_isAccepted_and301_isBadRequest() {
        String max = "t\u00e9nant ".repeat(43).substring(0, 300);

        assertThat(RelayRequest.parse(with("tenant", max)).tenant())
                .as("tenant at 300 chars")
                .isEqualTo(max);
        assertRefused(() -> RelayRequest.parse(with("tenant", max + "t")), "tenant", "tenant of 301 chars")
                .hasMessage("tenant: 301 chars (expected: 1..300)");
        assertRefused(() -> RelayRequest.parse(with("tenant", "")), "tenant", "empty tenant");
    }

    @ParameterizedTest
    @ValueSource(strings = {"a\nb", "a\u0000", "a\u007f", "a\u0085", "\tx"})
    void relayRequest_tenantWithAControlChar_isBadRequest(String tenant) {
        assertRefused(() -> RelayRequest.parse(with("tenant", tenant)), "tenant", "a tenant with a control char")
                .hasMessageContaining("(expected: no control chars)");
    }

    @Test
    void relayRequest_leaseIdOf128Chars_isAccepted_and129_isBadRequest() {
        String max = "L0._:-".repeat(22).substring(0, 128);

        assertThat(RelayRequest.parse(with("leaseId", max)).leaseId())
                .as("leaseId at 128 chars")
                .isEqualTo(max);
        assertRefused(() -> RelayRequest.parse(with("leaseId", max + "a")), "leaseId", "leaseId of 129 chars")
                .hasMessage("leaseId: 129 chars (expected: 1..128)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "l 1", "l/1", "l\u00e9", "l#1"})
    void relayRequest_badLeaseId_isBadRequest(String leaseId) {
        assertRefused(() -> RelayRequest.parse(with("leaseId", leaseId)), "leaseId", "leaseId '" + leaseId + "'");
    }

    @Test
    void relayRequest_leaseIdNotAString_isBadRequest() {
        assertRefused(() -> RelayRequest.parse(input().put("leaseId", 9)), "leaseId", "a numeric leaseId");
    }

    @ParameterizedTest
    @ValueSource(strings = {"GET", "HEAD"})
    void relayRequest_getOrHeadWithHasBody_isBadRequest(String method) {
        assertRefused(() -> RelayRequest.parse(with("method", method).put("hasBody", true)), "hasBody", method)
                .hasMessage("hasBody: true with " + method + " (expected: false for GET and HEAD)");
        assertThat(RelayRequest.parse(with("method", method).put("hasBody", false))
                        .hasBody())
                .as("%s without a body", method)
                .isFalse();
    }

    /**
     * RFC 9110 §8.6: the client's Content-Length crosses as {@code length}, 0..2^53-1
     * ({@link Limits#RELAY_LENGTH_BYTES}), at the limit; as {@code relay-head}'s does (PushesTest).
     */
    @Test
    void relayRequest_lengthFrom0To2Pow53Minus1_isAcceptedAndRoundTrips() {
        long max = Limits.RELAY_LENGTH_BYTES.max();
        for (long length : new long[] {0, 246, max}) {
            RelayRequest request = RelayRequest.parse(input().put("length", length));
            assertThat(request.length()).as("length %d", length).isEqualTo(length);
            assertThat(request.toJson().get("length").longValue()).isEqualTo(length);
            assertThat(RelayRequest.parse(request.toJson())).isEqualTo(request);
        }
        assertThat(max).isEqualTo(9_007_199_254_740_991L);
    }

    /** A request without a declared length (a chunked body, or a gateway from before the member): -1, left out. */
    @Test
    void relayRequest_noLength_isUnknown_andLeftOut() {
        RelayRequest request = RelayRequest.parse(input());

        assertThat(request.length()).isEqualTo(ResponseFraming.UNKNOWN_LENGTH);
        assertThat(request.toJson().has("length")).isFalse();
        assertThat(RelayRequest.parse(input().putNull("length")).length())
                .as("null reads as absent")
                .isEqualTo(ResponseFraming.UNKNOWN_LENGTH);
    }

    /** One past either end of {@link Limits#RELAY_LENGTH_BYTES}, on the wire and when building. */
    @Test
    void relayRequest_lengthOnePastEitherEnd_isBadRequest() {
        assertRefused(() -> RelayRequest.parse(input().put("length", 9_007_199_254_740_992L)), "length", "2^53")
                .hasMessage("length: 9007199254740992 (expected: 0..9007199254740991)");
        assertRefused(() -> RelayRequest.parse(input().put("length", -1)), "length", "length -1 on the wire")
                .hasMessage("length: -1 (expected: 0..9007199254740991)");
        assertRefused(() -> build(true, 9_007_199_254_740_992L), "length", "building 2^53")
                .hasMessage("length: 9007199254740992 (expected: absent or 0..9007199254740991)");
        assertRefused(() -> build(true, -2), "length", "building -2");
        assertRefused(
                () -> RelayRequest.parse(input().put("length", new java.math.BigInteger("99999999999999999999999"))),
                "length",
                "length past a long");
    }

    @Test
    void relayRequest_lengthNotAnInteger_isBadRequest() {
        assertRefused(() -> RelayRequest.parse(with("length", "246")), "length", "length a string")
                .hasMessage("length: a string (expected: an integer 0..9007199254740991)");
        assertRefused(() -> RelayRequest.parse(input().put("length", 246.5)), "length", "length 246.5");
        assertRefused(() -> RelayRequest.parse(input().put("length", 1e300)), "length", "length 1e300");
    }

    /** A request without a body declares no length, or 0 (a client's {@code Content-Length: 0}); never more. */
    @Test
    void relayRequest_lengthWithoutABody_onlyZero() {
        assertThat(RelayRequest.parse(input().put("hasBody", false).put("length", 0))
                        .length())
                .isZero();
        assertThat(build(false, 0).toJson().get("length").longValue()).isZero();

        assertRefused(() -> RelayRequest.parse(input().put("hasBody", false).put("length", 1)), "length", "1, no body")
                .hasMessage("length: 1 with hasBody: false (expected: absent or 0, a request without a body)");
        assertRefused(() -> build(false, 246), "length", "building 246 without a body");
    }

    private static RelayRequest build(boolean hasBody, long length) {
        return new RelayRequest("r-1", "app", "PUT", "http://app.local/", List.of(), "acme", null, hasBody, length);
    }

    @Test
    void relayRequest_hasBodyMissingOrNotABoolean_isBadRequest() {
        ObjectNode missing = input();
        missing.remove("hasBody");

        assertRefused(() -> RelayRequest.parse(missing), "hasBody", "hasBody missing");
        assertRefused(() -> RelayRequest.parse(with("hasBody", "true")), "hasBody", "hasBody a string")
                .hasMessage("hasBody: a string (expected: a boolean)");
    }

    @Test
    void relayRequest_unknownMembers_areIgnored() {
        ObjectNode in = input().put("priority", 3);

        assertThat(RelayRequest.parse(in)).isEqualTo(RelayRequest.parse(input()));
    }

    @Test
    void limits_usedByTheSchema_areTheSeeds() {
        assertThat(Limits.RELAY_ID_CHARS.max()).isEqualTo(64);
        assertThat(Limits.HEADER_NAME_CHARS.max()).isEqualTo(256);
        assertThat(Limits.LEASE_ID_CHARS.max()).isEqualTo(128);
    }

    /**
     * A path is refused exactly when one of its segments, cut at its first {@code ;} and with
     * {@code %2e} read as a dot, is {@code .} or {@code ..} (RFC 3986 section 5.2.4): what the
     * gateway's normalization never leaves, and what would take {@code http-forward} out of its
     * base path.
     */
    @Property(tries = 500)
    void relayRequest_pathIsRefused_exactlyWhenASegmentIsADotSegment(@ForAll("segments") List<String> segments) {
        String url = "http://h/" + String.join("/", segments);
        boolean dotSegment = segments.stream().anyMatch(seg -> {
            int semi = seg.indexOf(';');
            String s = (semi >= 0 ? seg.substring(0, semi) : seg).replaceAll("(?i)%2e", ".");
            return s.equals(".") || s.equals("..");
        });
        boolean accepted;
        try {
            RelayRequest.parse(with("url", url));
            accepted = true;
        } catch (com.spectrayan.spector.contract.SpectorException e) {
            accepted = false;
        }
        assertThat(accepted).as(url).isEqualTo(!dotSegment);
    }

    /**
     * An encoded '/', '\\' or NUL in the path is refused, any case, wherever it stands: an upstream
     * that decodes before it removes dot-segments took {@code ..%2F..%2Fadmin} out of the target's
     * base (found by a review); in the query it is the query's business.
     */
    @Property(tries = 200)
    void relayRequest_anEncodedSlashBackslashOrNulInThePath_isRefused(
            @ForAll("encodedSeparators") String encoded, @ForAll("segments") List<String> segments) {
        String path = String.join("/", segments);
        String url = "http://h/" + path + encoded + "x";
        assertThatThrownBy(() -> RelayRequest.parse(with("url", url)))
                .as(url)
                .isInstanceOf(com.spectrayan.spector.contract.SpectorException.class);
        boolean dotSegment = segments.stream().anyMatch(seg -> {
            int semi = seg.indexOf(';');
            String s2 = (semi >= 0 ? seg.substring(0, semi) : seg).replaceAll("(?i)%2e", ".");
            return s2.equals(".") || s2.equals("..");
        });
        if (!dotSegment) {
            RelayRequest.parse(with("url", "http://h/" + path + "x?q=" + encoded)); // the query: kept
        }
    }

    @Provide
    Arbitrary<String> encodedSeparators() {
        return Arbitraries.of("%2f", "%2F", "%5c", "%5C", "%00");
    }

    @Provide
    Arbitrary<List<String>> segments() {
        Arbitrary<String> piece = Arbitraries.of(".", ".", "%2e", "%2E", "a", ";", "x=1", "-", "%41");
        return piece.list()
                .ofMinSize(0)
                .ofMaxSize(4)
                .map(p -> String.join("", p))
                .list()
                .ofMinSize(1)
                .ofMaxSize(5);
    }
}
