package com.spectrayan.spector.uplink.wire;

import static com.spectrayan.spector.uplink.wire.BadRequests.assertRefused;
import static com.spectrayan.spector.uplink.wire.BadRequests.json;
import static com.spectrayan.spector.uplink.wire.BadRequests.pairs;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
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
    @ValueSource(ints = {100, 102, 200, 204, 304, 421, 599})
    void relayHead_statusFrom100To599Except101_isAccepted(int status) {
        assertThat(RelayHead.parse(head(status, List.of())).status())
                .as("status %d", status)
                .isEqualTo(status);
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
