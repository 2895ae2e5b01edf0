package com.spectrayan.spector.uplink.internal.v2;

import static com.spectrayan.spector.uplink.internal.v2.V2Wire.refusal;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.Header;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The response head of docs/PROTOCOL.md section 9.3: v1's relay-head data, 101 on an upgrade. */
final class ResponseHeadTest {
    private static V2Frame.Headers headers(String json) {
        return new V2Frame.Headers(7, json.getBytes(StandardCharsets.UTF_8), false);
    }

    private static void assertStreamError(V2Frame.Headers frame, boolean upgradeRequested, String reasonStart) {
        V2ProtocolException e = refusal(() -> ResponseHead.parse(frame, upgradeRequested));
        assertThat(e.isConnectionError())
                .as("a stream error: %s", e.getMessage())
                .isFalse();
        assertThat(e.streamId()).isEqualTo(7);
        assertThat(e.code()).isEqualTo(V2ErrorCode.PROTOCOL_ERROR);
        assertThat(e.reason()).startsWith("response head: " + reasonStart);
    }

    @Test
    void parse_validHead_readsEveryField() {
        ResponseHead head = ResponseHead.parse(
                headers("{\"status\":200,\"headers\":[[\"content-type\",\"text/plain\"]],\"length\":246}"), false);

        assertThat(head.status()).isEqualTo(200);
        assertThat(head.headers()).containsExactly(new Header("content-type", "text/plain"));
        assertThat(head.length()).isEqualTo(246);
    }

    @Test
    void toFrame_roundTrips_lengthLeftOutWhenUnknown() {
        ResponseHead head = new ResponseHead(200, List.of(new Header("a", "b")), ResponseFraming.UNKNOWN_LENGTH);

        V2Frame.Headers frame = head.toFrame(7, false, false);

        assertThat(new String(frame.json(), StandardCharsets.UTF_8))
                .isEqualTo("{\"status\":200,\"headers\":[[\"a\",\"b\"]]}");
        assertThat(ResponseHead.parse(frame, false)).isEqualTo(head);
        assertThat(frame.endStream()).isFalse();
        assertThat(new ResponseHead(204, List.of(), -1).toFrame(7, true, false).endStream())
                .isTrue();
    }

    @Test
    void status101_onlyWhenTheRequestNamedAnUpgrade() {
        ResponseHead switching = new ResponseHead(101, List.of(new Header("sec-websocket-accept", "x")), -1);

        assertThat(ResponseHead.parse(switching.toFrame(7, false, true), true)).isEqualTo(switching);
        assertThatThrownBy(() -> switching.toFrame(7, false, false))
                .isInstanceOfSatisfying(SpectorException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
                    assertThat(e.details().get("field")).isEqualTo("status");
                });
        assertStreamError(switching.toFrame(7, false, true), false, "status: 101");
    }

    @Test
    void status_atItsBounds_isRead_andOnePast_isAStreamError() {
        assertThat(ResponseHead.parse(headers("{\"status\":200,\"headers\":[]}"), false)
                        .status())
                .isEqualTo(200);
        // RFC 9110 §15.2: an interim 1xx is never the answer; a relay carries the final head alone
        assertStreamError(headers("{\"status\":199,\"headers\":[]}"), true, "status: 199 (expected: a final status");
        assertStreamError(headers("{\"status\":103,\"headers\":[]}"), false, "status: 103 (expected: a final status");
        assertStreamError(headers("{\"status\":100,\"headers\":[]}"), false, "status: 100 (expected: a final status");
        assertThat(ResponseHead.parse(headers("{\"status\":599,\"headers\":[]}"), false)
                        .status())
                .isEqualTo(599);
        assertStreamError(headers("{\"status\":99,\"headers\":[]}"), true, "status: 99 (expected: 100..599)");
        assertStreamError(headers("{\"status\":600,\"headers\":[]}"), true, "status: 600 (expected: 100..599)");
    }

    @Test
    void length_v1sRules_apply() {
        assertThat(ResponseHead.parse(headers("{\"status\":205,\"headers\":[],\"length\":0}"), false)
                        .length())
                .isZero();
        assertThat(ResponseHead.parse(headers("{\"status\":200,\"headers\":[],\"length\":null}"), false)
                        .length())
                .isEqualTo(ResponseFraming.UNKNOWN_LENGTH);
        assertStreamError(headers("{\"status\":204,\"headers\":[],\"length\":0}"), false, "length: ");
        assertStreamError(headers("{\"status\":101,\"headers\":[],\"length\":0}"), true, "length: ");
        assertStreamError(headers("{\"status\":200,\"headers\":[],\"length\":9007199254740992}"), false, "length: ");
        assertStreamError(headers("{\"status\":200,\"headers\":[],\"length\":-1}"), false, "length: ");
    }

    @Test
    void constructor_filtersHeaders_asV1Does() {
        ResponseHead head =
                new ResponseHead(200, List.of(new Header("connection", "close"), new Header("content-length", "3")), 3);

        assertThat(head.headers()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "",
                "7",
                "{\"status\":200}",
                "{\"status\":\"200\",\"headers\":[]}",
                "{\"status\":200,\"headers\":{}}"
            })
    void parse_notAHead_isAStreamError(String json) {
        assertStreamError(headers(json), false, "");
    }
}
