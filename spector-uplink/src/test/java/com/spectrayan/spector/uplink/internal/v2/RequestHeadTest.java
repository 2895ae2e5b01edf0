package com.spectrayan.spector.uplink.internal.v2;

import static com.spectrayan.spector.uplink.internal.v2.V2Wire.refusal;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.Header;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The request head of docs/PROTOCOL.md section 9.3: v1's relay.request input less two fields. */
final class RequestHeadTest {
    private static final String HEAD = "{\"target\":\"app\",\"method\":\"PUT\",\"url\":\"https://app.local/a?x=1\","
            + "\"headers\":[[\"content-type\",\"text/plain\"],[\"x-b\",\"1\"],[\"x-b\",\"2\"]],"
            + "\"tenant\":\"acme\",\"leaseId\":\"l-9\"}";

    private static V2Frame.Headers headers(String json, boolean endStream) {
        return new V2Frame.Headers(5, json.getBytes(StandardCharsets.UTF_8), endStream);
    }

    private static RequestHead head(String method, List<Header> headers, @Nullable String upgrade) {
        return new RequestHead("app", method, "http://app.local/", headers, "acme", null, upgrade, -1);
    }

    /** Asserts that the peer's head is a stream error PROTOCOL_ERROR on its stream, whose reason starts so. */
    private static void assertStreamError(V2Frame.Headers frame, String reasonStart) {
        V2ProtocolException e = refusal(() -> RequestHead.parse(frame));
        assertThat(e.isConnectionError())
                .as("a stream error: %s", e.getMessage())
                .isFalse();
        assertThat(e.streamId()).isEqualTo(frame.streamId());
        assertThat(e.code()).isEqualTo(V2ErrorCode.PROTOCOL_ERROR);
        assertThat(e.reason()).startsWith("request head: " + reasonStart);
    }

    private static void assertBadRequest(Runnable call, String field) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(SpectorException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
            assertThat(e.details().get("field")).isEqualTo(field);
        });
    }

    @Test
    void parse_validHead_readsEveryField() {
        assertThat(RequestHead.parse(headers(HEAD, false)))
                .isEqualTo(new RequestHead(
                        "app",
                        "PUT",
                        "https://app.local/a?x=1",
                        List.of(
                                new Header("content-type", "text/plain"),
                                new Header("x-b", "1"),
                                new Header("x-b", "2")),
                        "acme",
                        "l-9",
                        null,
                        -1));
    }

    @Test
    void toFrame_parsed_roundTrips() {
        RequestHead head = RequestHead.parse(headers(HEAD, false));

        V2Frame.Headers frame = head.toFrame(5, false);

        assertThat(new String(frame.json(), StandardCharsets.UTF_8)).isEqualTo(HEAD);
        assertThat(RequestHead.parse(frame)).isEqualTo(head);
    }

    @Test
    void parse_v1Input_ignoresRelayIdAndHasBody() {
        String v1 = HEAD.replace("{", "{\"relayId\":\"r-1\",\"hasBody\":true,");

        assertThat(RequestHead.parse(headers(v1, false))).isEqualTo(RequestHead.parse(headers(HEAD, false)));
    }

    @Test
    void parse_fieldOutOfItsV1Bound_isAStreamError_namingIt() {
        assertStreamError(
                headers(HEAD.replace("\"app\"", "\"" + "a".repeat(65) + "\""), false),
                "target: 65 chars (expected: 1..64)");
        assertStreamError(headers(HEAD.replace("https://app.local/a?x=1", "/a"), false), "url: ");
        assertStreamError(headers(HEAD.replace("\"PUT\"", "\"put\""), false), "method: ");
        assertStreamError(headers(HEAD.replace("\"acme\"", "\"\""), false), "tenant: ");
        assertStreamError(headers(HEAD.replace("\"l-9\"", "\"l 9\""), false), "leaseId: ");
    }

    @Test
    void parse_headersAtTheirCount_isRead_andOnePast_isAStreamError() {
        List<Header> list = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            list.add(new Header("x-h" + i, "v"));
        }
        assertThat(RequestHead.parse(head("POST", list, null).toFrame(5, false)).headers())
                .hasSize(100);

        StringBuilder json = new StringBuilder(
                "{\"target\":\"app\",\"method\":\"POST\",\"url\":\"http://a/\"," + "\"tenant\":\"t\",\"headers\":[");
        for (int i = 0; i <= 100; i++) {
            json.append(i == 0 ? "" : ",").append("[\"x-h").append(i).append("\",\"v\"]");
        }
        assertStreamError(headers(json.append("]}").toString(), false), "headers: 101 headers");
    }

    @Test
    void constructor_filtersHeaders_asV1Does() {
        RequestHead head = head("POST", List.of(new Header("Authorization", "Bearer x"), new Header("a", "b")), null);

        assertThat(head.headers()).containsExactly(new Header("a", "b"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "[]", "{\"target\":\"app\"", "{\"target\":\"app\",\"target\":\"app\"}", "{} {}"})
    void parse_notOneHeadObject_isAStreamError(String json) {
        assertStreamError(headers(json, false), "");
    }

    @Test
    void parse_bytesThatAreNotUtf8_isAStreamError() {
        assertStreamError(new V2Frame.Headers(5, new byte[] {'{', (byte) 0xc3, '}'}, false), "");
    }

    @Test
    void upgrade_atItsLimit_isKept_andOnePast_isRefused() {
        String token = "w".repeat(64);
        RequestHead head = head("GET", List.of(), token);
        assertThat(RequestHead.parse(head.toFrame(5, false)).upgrade()).isEqualTo(token);

        assertBadRequest(() -> head("GET", List.of(), "w".repeat(65)), "upgrade");
        assertBadRequest(() -> head("GET", List.of(), ""), "upgrade");
        assertBadRequest(() -> head("GET", List.of(), "web socket"), "upgrade");
        assertStreamError(
                headers(HEAD.replace("}", ",\"upgrade\":\"" + "w".repeat(65) + "\"}"), false),
                "upgrade: 65 chars (expected: 1..64)");
        assertStreamError(headers(HEAD.replace("}", ",\"upgrade\":7}"), false), "upgrade: ");
    }

    private static RequestHead declaring(long length) {
        return new RequestHead("app", "PUT", "http://app.local/", List.of(), "acme", null, null, length);
    }

    /**
     * Section 9.3: {@code length} as v1's relay.request carries it (RFC 9110 §8.6), 0..2^53-1
     * ({@code Limits.RELAY_LENGTH_BYTES}) at the limit, as the response head's is (ResponseHeadTest).
     */
    @Test
    void length_from0To2Pow53Minus1_isReadAndRoundTrips() {
        long max = com.spectrayan.spector.contract.Limits.RELAY_LENGTH_BYTES.max();
        assertThat(max).isEqualTo(9_007_199_254_740_991L);
        for (long length : new long[] {0, 246, max}) {
            RequestHead head = RequestHead.parse(headers(HEAD.replace("}", ",\"length\":" + length + "}"), false));
            assertThat(head.length()).as("length %d", length).isEqualTo(length);
            assertThat(RequestHead.parse(head.toFrame(5, false))).isEqualTo(head);
            assertThat(declaring(length).toJson().get("length").longValue()).isEqualTo(length);
        }
        assertThat(RequestHead.parse(headers(HEAD, false)).length())
                .as("absent: unknown (a chunked body)")
                .isEqualTo(-1);
        assertThat(new String(declaring(-1).toFrame(5, false).json(), StandardCharsets.UTF_8))
                .as("an unknown length is left out")
                .doesNotContain("length");
    }

    @Test
    void length_onePastEitherEnd_orNotAnInteger_isAStreamError() {
        assertStreamError(
                headers(HEAD.replace("}", ",\"length\":9007199254740992}"), false),
                "length: 9007199254740992 (expected: 0..9007199254740991)");
        assertStreamError(headers(HEAD.replace("}", ",\"length\":-1}"), false), "length: -1 (expected: 0..");
        assertStreamError(headers(HEAD.replace("}", ",\"length\":\"246\"}"), false), "length: a string");
        assertStreamError(headers(HEAD.replace("}", ",\"length\":246.5}"), false), "length: ");
        assertBadRequest(() -> declaring(9_007_199_254_740_992L), "length");
        assertBadRequest(() -> declaring(-2), "length");
    }

    /** END_STREAM says the request has no body: its length, when declared, is 0 (a client's Content-Length: 0). */
    @Test
    void length_withEndStream_onlyZero() {
        assertThat(RequestHead.parse(declaring(0).toFrame(5, true)).length()).isZero();

        assertBadRequest(() -> declaring(1).toFrame(5, true), "length");
        String json = new String(declaring(1).toFrame(5, false).json(), StandardCharsets.UTF_8);
        assertStreamError(
                headers(json, true), "length: 1 with END_STREAM (expected: absent or 0, a request without a body)");
    }

    /** Section 9.7: a switched stream carries the upgraded connection, which has no declared length. */
    @Test
    void length_withUpgrade_isRefused() {
        assertBadRequest(
                () -> new RequestHead("app", "GET", "http://app.local/", List.of(), "acme", null, "websocket", 0),
                "length");
        assertStreamError(
                headers(HEAD.replace("}", ",\"upgrade\":\"websocket\",\"length\":0}"), false),
                "length: 0 with upgrade");
    }

    /** v1's relay.request and v2's head share the member: a v1 input's length reads the same. */
    @Test
    void length_ofAV1Input_readsTheSame() {
        RelayRequest v1 = new RelayRequest("r-1", "app", "PUT", "http://app.local/", List.of(), "acme", null, true, 11);

        assertThat(RequestHead.parse(new V2Frame.Headers(
                                5,
                                com.spectrayan.spector.uplink.internal.wire.FrameCodec.writeJson(v1.toJson()),
                                false))
                        .length())
                .isEqualTo(11);
    }

    @Test
    void endStream_getAndHead_carryIt() {
        for (String method : List.of("GET", "HEAD")) {
            assertThat(RequestHead.parse(head(method, List.of(), null).toFrame(5, true))
                            .method())
                    .isEqualTo(method);
            assertBadRequest(() -> head(method, List.of(), null).toFrame(5, false), "endStream");
            String json =
                    new String(head(method, List.of(), null).toFrame(5, true).json(), StandardCharsets.UTF_8);
            assertStreamError(headers(json, false), "endStream: unset with " + method);
        }
    }

    @Test
    void endStream_otherMethods_eitherWay() {
        for (boolean endStream : new boolean[] {true, false}) {
            assertThat(RequestHead.parse(head("POST", List.of(), null).toFrame(5, endStream))
                            .method())
                    .isEqualTo("POST");
        }
    }

    @Test
    void endStream_upgrade_neverCarriesIt() {
        RequestHead upgrade = head("GET", List.of(), "websocket");

        assertThat(RequestHead.parse(upgrade.toFrame(5, false))).isEqualTo(upgrade);
        assertBadRequest(() -> upgrade.toFrame(5, true), "endStream");
        String json = new String(upgrade.toFrame(5, false).json(), StandardCharsets.UTF_8);
        assertThat(json).endsWith(",\"upgrade\":\"websocket\"}");
        assertStreamError(headers(json, true), "endStream: set with upgrade");
    }
}
