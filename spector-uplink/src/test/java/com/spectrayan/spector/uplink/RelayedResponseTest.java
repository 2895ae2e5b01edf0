package com.spectrayan.spector.uplink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A {@code 101} always carries the upstream's side of the connection and no length (docs/PROTOCOL.md section 9.7, RFC 9110 §15.2.2). */
final class RelayedResponseTest {

    @Test
    void relayedResponse_switching_isA101WithABodyAndNoLength() {
        RelayedResponse r = RelayedResponse.switching(List.of(), ArrayBody.of(""));

        assertThat(r.isSwitching()).isTrue();
        assertThat(r.status()).isEqualTo(101);
        assertThat(r.contentLength()).isEqualTo(ResponseFraming.UNKNOWN_LENGTH);
        assertThat(r.body()).isNotNull();
    }

    @Test
    void relayedResponse_101WithoutABody_refused() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new RelayedResponse(101, List.of(), null))
                .withMessageContaining("status: 101 with no body");
    }

    @Test
    void relayedResponse_101WithALength_refused() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new RelayedResponse(101, List.of(), 0, ArrayBody.of("")))
                .withMessageContaining("status: 101 with a length");
    }

    @Test
    void relayedResponse_200_isNotSwitching() {
        assertThat(new RelayedResponse(200, List.of(), null).isSwitching()).isFalse();
    }
}
