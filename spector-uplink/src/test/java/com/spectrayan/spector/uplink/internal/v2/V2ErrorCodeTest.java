package com.spectrayan.spector.uplink.internal.v2;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The error codes of section 9.2, numbered as RFC 9113 section 7. */
final class V2ErrorCodeTest {
    @Test
    void codes_areHttp2sNumbers_plusRelayError() {
        assertThat(V2ErrorCode.NO_ERROR.code()).isEqualTo(0x0);
        assertThat(V2ErrorCode.PROTOCOL_ERROR.code()).isEqualTo(0x1);
        assertThat(V2ErrorCode.INTERNAL_ERROR.code()).isEqualTo(0x2);
        assertThat(V2ErrorCode.FLOW_CONTROL_ERROR.code()).isEqualTo(0x3);
        assertThat(V2ErrorCode.STREAM_CLOSED.code()).isEqualTo(0x5);
        assertThat(V2ErrorCode.FRAME_SIZE_ERROR.code()).isEqualTo(0x6);
        assertThat(V2ErrorCode.REFUSED_STREAM.code()).isEqualTo(0x7);
        assertThat(V2ErrorCode.CANCEL.code()).isEqualTo(0x8);
        assertThat(V2ErrorCode.RELAY_ERROR.code()).isEqualTo(0x100);
    }

    @Test
    void fromWire_everyCode_readsAsItself() {
        for (V2ErrorCode code : V2ErrorCode.values()) {
            assertThat(V2ErrorCode.fromWire(code.code())).isEqualTo(code);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0x4, 0x9, 0xd, 0xff, 0x101, -1, Integer.MIN_VALUE})
    void fromWire_unknownCode_readsAsInternalError(int code) {
        assertThat(V2ErrorCode.fromWire(code)).isEqualTo(V2ErrorCode.INTERNAL_ERROR);
    }
}
