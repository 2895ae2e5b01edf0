package com.spectrayan.spector.uplink.internal.wire;

import static com.spectrayan.spector.uplink.internal.wire.BadRequests.assertRefused;
import static com.spectrayan.spector.uplink.internal.wire.BadRequests.json;
import static com.spectrayan.spector.uplink.internal.wire.BadRequests.pairs;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.Header;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class PushesTest {

    private static ObjectNode head(int status, List<Header> headers) {
        ObjectNode data = JsonNodeFactory.instance.objectNode().put("status", status);
        data.set("headers", pairs(headers));
        return data;
    }

    private static List<Header> headers(int count) {
        List<Header> headers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            headers.add(new Header("x-h" + i, "v"));
        }
        return headers;
    }

    @Test
    void relayHead_parsed_roundTrips() {
        RelayHead head = RelayHead.parse(json(
                "{'status':200,'headers':[['content-type','text/plain'],['set-cookie','a=1'],['set-cookie','b=2']]}"));

        assertThat(head.status()).isEqualTo(200);
        assertThat(head.headers())
                .as("order and repeats kept")
                .containsExactly(
                        new Header("content-type", "text/plain"),
                        new Header("set-cookie", "a=1"),
                        new Header("set-cookie", "b=2"));
        assertThat(RelayHead.parse(head.toJson())).isEqualTo(head);
    }

    @ParameterizedTest
    @ValueSource(ints = {200, 204, 304, 421, 599})
    void relayHead_finalStatus_isAccepted(int status) {
        assertThat(RelayHead.parse(head(status, List.of())).status())
                .as("status %d", status)
                .isEqualTo(status);
    }

    /** RFC 9110 §15.2: a 1xx is interim; a relay carries the final head alone. */
    @ParameterizedTest
    @ValueSource(ints = {100, 102, 103, 199})
    void relayHead_interimStatus_isBadRequest(int status) {
        assertRefused(() -> RelayHead.parse(head(status, List.of())), "status", "status " + status)
                .hasMessage(
                        "status: " + status + " (expected: a final status, 200..599; an interim 1xx is not relayed)");
        assertRefused(() -> new RelayHead(status, List.of()), "status", "building a " + status + " head");
    }

    @Test
    void relayHead_status101_isBadRequest() {
        assertRefused(() -> RelayHead.parse(head(101, List.of())), "status", "status 101")
                .hasMessage("status: 101 (expected: not 101, the relay carries no protocol switch)");
        assertRefused(() -> new RelayHead(101, List.of()), "status", "building a 101 head");
    }

    @Test
    void relayHead_statusOnePastEitherEnd_isBadRequest() {
        assertRefused(() -> RelayHead.parse(head(99, List.of())), "status", "status 99")
                .hasMessage("status: 99 (expected: 100..599)");
        assertRefused(() -> RelayHead.parse(head(600, List.of())), "status", "status 600")
                .hasMessage("status: 600 (expected: 100..599)");
        assertRefused(() -> new RelayHead(600, List.of()), "status", "building a 600 head");
    }

    @Test
    void relayHead_statusNotAnInteger_isBadRequest() {
        assertRefused(() -> RelayHead.parse(json("{'status':'200','headers':[]}")), "status", "status a string");
        assertRefused(() -> RelayHead.parse(json("{'status':200.5,'headers':[]}")), "status", "status 200.5");
        assertRefused(() -> RelayHead.parse(json("{'headers':[]}")), "status", "status missing");
    }

    @Test
    void relayHead_100Headers_isAccepted_and101_isBadRequest() {
        assertThat(RelayHead.parse(head(200, headers(100))).headers())
                .as("100 headers")
                .hasSize(100);
        assertRefused(() -> RelayHead.parse(head(200, headers(101))), "headers", "101 headers")
                .hasMessage("headers: 101 headers (expected: <= 100)");
        assertRefused(() -> new RelayHead(200, headers(101)), "headers", "a target answering 101 headers");
    }

    @Test
    void relayHead_framingAndHopByHopHeaders_areDroppedBeforeTheCount() {
        List<Header> given = headers(100);
        given.add(new Header("Content-Length", "5"));
        given.add(new Header("Connection", "close, x-hop"));
        given.add(new Header("x-hop", "1"));
        given.add(new Header("Transfer-Encoding", "chunked"));
        given.add(new Header("Keep-Alive", "timeout=5"));

        assertThat(RelayHead.parse(head(200, given)).headers())
                .as("a target's content-length and connection never reach the caller")
                .isEqualTo(headers(100));
        assertThat(new RelayHead(200, given).headers())
                .as("the worker filters the same way")
                .isEqualTo(headers(100));
    }

    @Test
    void relayHead_headerBounds_applyAsOnTheRequest() {
        assertRefused(
                () -> RelayHead.parse(head(200, List.of(new Header("x v", "1")))),
                "headers[0].name",
                "a name with a space");
        assertRefused(
                () -> RelayHead.parse(head(200, List.of(new Header("x-v", "a\nb")))),
                "headers[0].value",
                "a value with a newline");
        assertThat(RelayHead.parse(head(200, List.of(new Header("x-v", "v".repeat(8192)))))
                        .headers())
                .as("a value of 8192 chars")
                .hasSize(1);
        assertRefused(
                () -> RelayHead.parse(head(200, List.of(new Header("x-v", "v".repeat(8193))))),
                "headers[0].value",
                "a value of 8193 chars");
        assertRefused(() -> RelayHead.parse(json("{'status':200}")), "headers", "headers missing");
    }

    private static ObjectNode head(int status, long length) {
        return head(status, List.of()).put("length", length);
    }

    /** RFC 9110 §8.6: the declared length crosses as {@code length}, 0..2^53-1 (at the limit). */
    @Test
    void relayHead_lengthFrom0To2Pow53Minus1_isAcceptedAndRoundTrips() {
        long max = Limits.RELAY_LENGTH_BYTES.max();
        for (long length : new long[] {0, 246, max}) {
            RelayHead head = RelayHead.parse(head(200, length));
            assertThat(head.length()).as("length %d", length).isEqualTo(length);
            assertThat(head.toJson().get("length").longValue()).isEqualTo(length);
            assertThat(RelayHead.parse(head.toJson())).isEqualTo(head);
            assertThat(new RelayHead(200, List.of(), length)).isEqualTo(head);
        }
        assertThat(max).isEqualTo(9_007_199_254_740_991L);
    }

    /** One past either end of {@link Limits#RELAY_LENGTH_BYTES}, on the wire and when building. */
    @Test
    void relayHead_lengthOnePastEitherEnd_isBadRequest() {
        assertRefused(() -> RelayHead.parse(head(200, 9_007_199_254_740_992L)), "length", "length 2^53")
                .hasMessage("length: 9007199254740992 (expected: 0..9007199254740991)");
        assertRefused(() -> RelayHead.parse(head(200, -1)), "length", "length -1 on the wire")
                .hasMessage("length: -1 (expected: 0..9007199254740991)");
        assertRefused(() -> new RelayHead(200, List.of(), 9_007_199_254_740_992L), "length", "building 2^53")
                .hasMessage("length: 9007199254740992 (expected: absent or 0..9007199254740991)");
        assertRefused(() -> new RelayHead(200, List.of(), -2), "length", "building -2");
        assertRefused(
                () -> RelayHead.parse(json("{'status':200,'headers':[],'length':1e300}")), "length", "length 1e300");
        assertRefused(
                () -> RelayHead.parse(json("{'status':200,'headers':[],'length':99999999999999999999999}")),
                "length",
                "length past a long");
    }

    @Test
    void relayHead_lengthNotAnInteger_isBadRequest() {
        assertRefused(
                () -> RelayHead.parse(json("{'status':200,'headers':[],'length':'246'}")), "length", "length a string");
        assertRefused(
                () -> RelayHead.parse(json("{'status':200,'headers':[],'length':246.5}")), "length", "length 246.5");
    }

    /** An older peer omits {@code length}: the length is unknown (-1), and toJson omits it too. */
    @Test
    void relayHead_lengthAbsentOrNull_isUnknown() {
        RelayHead absent = RelayHead.parse(head(200, List.of()));
        assertThat(absent.length()).isEqualTo(ResponseFraming.UNKNOWN_LENGTH);
        assertThat(absent.toJson().has("length"))
                .as("no length member when unknown")
                .isFalse();
        assertThat(new RelayHead(200, List.of())).isEqualTo(absent);
        assertThat(RelayHead.parse(json("{'status':200,'headers':[],'length':null}"))
                        .length())
                .isEqualTo(-1);
    }

    /** Members the schema does not name are ignored (PROTOCOL.md section 2), so a later peer may add some. */
    @Test
    void relayHead_unknownMembers_areIgnored() {
        assertThat(RelayHead.parse(json("{'status':200,'headers':[],'length':5,'etag-hint':'x','v2':{'a':1}}")))
                .isEqualTo(new RelayHead(200, List.of(), 5));
    }

    /** RFC 9110 §8.6: a 204 carries no Content-Length, so its head declares no length. */
    @ParameterizedTest
    @ValueSource(ints = {204})
    void relayHead_lengthWith204_isBadRequest(int status) {
        assertRefused(() -> RelayHead.parse(head(status, 0)), "length", "length with " + status)
                .hasMessage("length: 0 with status " + status + " (expected: absent, RFC 9110 section 8.6)");
        assertRefused(() -> new RelayHead(status, List.of(), 0), "length", "building length with " + status);
        assertThat(RelayHead.parse(head(status, List.of())).length()).isEqualTo(-1);
    }

    /** RFC 9110 §15.3.6: a 205 has no content, so 0 or no length; RFC 9110 §8.6: a 304 may declare one. */
    @Test
    void relayHead_lengthWith205_isZeroOrAbsent_andWith304_isTheRepresentations() {
        assertThat(RelayHead.parse(head(205, 0)).length()).isZero();
        assertThat(RelayHead.parse(head(205, List.of())).length()).isEqualTo(-1);
        assertRefused(() -> RelayHead.parse(head(205, 1)), "length", "length 1 with 205")
                .hasMessage("length: 1 with status 205 (expected: absent or 0, RFC 9110 section 15.3.6)");
        assertThat(RelayHead.parse(head(304, 246)).length()).isEqualTo(246);
    }

    @Test
    void relayHead_dataNotAnObject_isBadRequest() {
        assertRefused(() -> RelayHead.parse(json("[200]")), "data", "data an array");
    }

    @Test
    void relayChunk_parsed_roundTrips() {
        RelayChunk chunk = RelayChunk.of(new byte[] {0, 1, 2, (byte) 0xff});

        assertThat(chunk.toJson().toString())
                .as("the data as it is written: the chunk in standard padded base64")
                .isEqualTo(json("{'chunk':'AAEC/w=='}").toString());
        assertThat(RelayChunk.parse(json("{'chunk':'AAEC/w=='}"))).isEqualTo(chunk);
        assertThat(RelayChunk.parse(chunk.toJson())).isEqualTo(chunk);
    }

    @Test
    void relayChunk_262144Bytes_isAccepted_and262145_isBadRequest() {
        String max = Base64.getEncoder().encodeToString(new byte[262_144]);
        String past = Base64.getEncoder().encodeToString(new byte[262_145]);

        assertThat(RelayChunk.parse(JsonNodeFactory.instance.objectNode().put("chunk", max))
                        .chunk()
                        .remaining())
                .as("a relay-chunk of 256 KiB")
                .isEqualTo(262_144);
        assertRefused(
                        () -> RelayChunk.parse(
                                JsonNodeFactory.instance.objectNode().put("chunk", past)),
                        "chunk",
                        "a relay-chunk of 262 145 bytes")
                .hasMessage("chunk: 262145 bytes (expected: <= 262144)");
        assertRefused(() -> RelayChunk.of(new byte[262_145]), "chunk", "building a chunk of 262 145 bytes");
    }

    @ParameterizedTest
    @ValueSource(strings = {"AAEC_w==", "AAEC/w", "AAEC /w=", "not base64!"})
    void relayChunk_notStandardBase64_isBadRequest(String chunk) {
        assertRefused(
                () -> RelayChunk.parse(JsonNodeFactory.instance.objectNode().put("chunk", chunk)),
                "chunk",
                "relay-chunk '" + chunk + "'");
    }

    @Test
    void relayChunk_missingChunk_isBadRequest() {
        assertRefused(() -> RelayChunk.parse(json("{}")), "chunk", "a relay-chunk without chunk");
    }

    @Test
    void pushes_names_matchTheFrameNamePattern() {
        assertThat(new Frame.Push(1, RelayHead.PUSH, JsonNodeFactory.instance.objectNode()).push())
                .isEqualTo("relay-head");
        assertThat(new Frame.Push(1, RelayChunk.PUSH, JsonNodeFactory.instance.objectNode()).push())
                .isEqualTo("relay-chunk");
    }
}
