package com.spectrayan.spector.uplink.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.ErrorKind;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import java.io.UncheckedIOException;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class ErrorFrameTest {

    @Test
    void relayTargetMissing_code_isHttp503AndCliExit1() {
        assertThat(ErrorCode.RELAY_TARGET_MISSING.httpStatus())
                .as("HTTP status")
                .isEqualTo(503);
        assertThat(ErrorCode.RELAY_TARGET_MISSING.cliExit()).as("CLI exit").isEqualTo(1);
        assertThat(ErrorCode.RELAY_TARGET_MISSING.kind())
                .as("a domain error, not a lost uplink")
                .isEqualTo(ErrorKind.DOMAIN);
        assertThat(ErrorCode.isConnectionLost(SpectorException.of(ErrorCode.RELAY_TARGET_MISSING, "m")))
                .isFalse();
    }

    @Test
    void relayTargetMissing_overTheWire_keepsItsCodeAndTarget() {
        SpectorException sent =
                SpectorException.of(ErrorCode.RELAY_TARGET_MISSING, "no relay target app", Map.of("target", "app"));

        String text = FrameCodec.encode(Frame.ErrorFrame.of(12, sent));
        SpectorException received = ((Frame.ErrorFrame) FrameCodec.decode(text)).toException();

        assertThat(text).contains("\"code\":\"RELAY_TARGET_MISSING\"", "\"details\":{\"target\":\"app\"}");
        assertThat(received.code()).isEqualTo(ErrorCode.RELAY_TARGET_MISSING);
        assertThat(received.code().httpStatus()).isEqualTo(503);
        assertThat(received.details()).isEqualTo(Map.of("target", "app"));
        assertThat(received).hasMessage("no relay target app");
    }

    @Test
    void toException_badRequest_keepsFieldAndReason() {
        SpectorException sent = SpectorException.badRequest("relayId", "65 chars (expected: 1..64)");

        SpectorException received =
                ((Frame.ErrorFrame) FrameCodec.decode(FrameCodec.encode(Frame.ErrorFrame.of(1, sent)))).toException();

        assertThat(received.code()).isEqualTo(ErrorCode.BAD_REQUEST);
        assertThat(received).hasMessage("relayId: 65 chars (expected: 1..64)");
        assertThat(received.details()).containsEntry("field", "relayId");
    }

    @Test
    void toException_detailsOutsideTheShape_areDropped() {
        Frame.ErrorFrame frame = new Frame.ErrorFrame(1, ErrorCode.OWNER_TIMEOUT, "slow", (ObjectNode)
                json("{'owner':'o-1','timeoutMs':'ten','extra':true}"));

        assertThat(frame.toException().details())
                .as("owner kept; timeoutMs of the wrong type and extra dropped")
                .isEqualTo(Map.of("owner", "o-1"));
    }

    @Test
    void toException_numericDetails_keepTheirShapeTypes() {
        Frame.ErrorFrame frame = new Frame.ErrorFrame(1, ErrorCode.GATEWAY_ROUTING_FAILURE, "busy", (ObjectNode)
                json("{'reason':'r','attempts':3,'retryAfterSeconds':5}"));

        assertThat(frame.toException().details())
                .isEqualTo(Map.of("reason", "r", "attempts", 3, "retryAfterSeconds", 5L));
        assertThat(Frame.ErrorFrame.of(1, frame.toException()).toException().details())
                .as("details survive a second trip")
                .isEqualTo(frame.toException().details());
    }

    @Test
    void toException_unknownCode_isInternalWithoutDetails() {
        Frame frame = FrameCodec.decode("{\"type\":\"error\",\"id\":2,\"code\":\"SOMETHING_NEW\","
                + "\"message\":\"later version\",\"details\":{\"x\":1}}");

        SpectorException e = ((Frame.ErrorFrame) frame).toException();

        assertThat(e.code()).as("an unknown code reads as INTERNAL").isEqualTo(ErrorCode.INTERNAL);
        assertThat(e.details()).isEmpty();
        assertThat(e).hasMessage("later version");
    }

    @Test
    void of_messageLongerThan4096Chars_isCutToTheBound() {
        SpectorException long4097 = SpectorException.of(ErrorCode.INTERNAL, "m".repeat(4097));
        SpectorException exactly4096 = SpectorException.of(ErrorCode.INTERNAL, "m".repeat(4096));

        assertThat(Frame.ErrorFrame.of(1, long4097).message())
                .as("4097 chars cut to 4096")
                .hasSize(4096);
        assertThat(Frame.ErrorFrame.of(1, exactly4096).message())
                .as("4096 chars kept")
                .hasSize(4096);
    }

    @Test
    void of_messageCutInsideASurrogatePair_dropsTheHalfPair() {
        SpectorException e = SpectorException.of(ErrorCode.INTERNAL, "m".repeat(4095) + "\ud83d\ude00");

        assertThat(Frame.ErrorFrame.of(1, e).message()).hasSize(4095);
    }

    /** Parses JSON text written with single quotes for readability. */
    private static JsonNode json(String singleQuoted) {
        try {
            return new ObjectMapper().readTree(singleQuoted.replace('\'', '"'));
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }
}
