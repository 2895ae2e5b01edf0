package com.spectrayan.spector.uplink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import java.net.URI;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * An upgrade request always carries the client's side of the connection as its body (docs/PROTOCOL.md
 * section 9.7, RFC 9110 §7.8); a declared length is the client's Content-Length, within {@link
 * Limits#RELAY_LENGTH_BYTES} (RFC 9110 §8.6).
 */
final class RelayedRequestTest {
    private static final URI URL = URI.create("http://app.local/ws");

    @Test
    void relayedRequest_upgradeWithABody_keepsTheProtocol() {
        RelayedRequest r = new RelayedRequest(
                "GET", URL, List.of(), "acme", null, ArrayBody.of(""), new AbortSignal(), "websocket");

        assertThat(r.upgrade()).isEqualTo("websocket");
    }

    @Test
    void relayedRequest_upgradeWithoutABody_refused() {
        assertThatIllegalArgumentException()
                .isThrownBy(() ->
                        new RelayedRequest("GET", URL, List.of(), "acme", null, null, new AbortSignal(), "websocket"))
                .withMessageContaining("body: null with upgrade websocket");
    }

    @Test
    void relayedRequest_withoutUpgrade_isAnOrdinaryRequest() {
        assertThat(new RelayedRequest("GET", URL, List.of(), "acme", null, null, new AbortSignal()).upgrade())
                .isNull();
    }

    private static RelayedRequest declaring(long contentLength, boolean withBody, @Nullable String upgrade) {
        return new RelayedRequest(
                "PUT",
                URL,
                List.of(),
                "acme",
                null,
                withBody ? ArrayBody.of("") : null,
                new AbortSignal(),
                upgrade,
                null,
                contentLength);
    }

    @Test
    void contentLength_atTheRelayLengthBound_isKept_andOnePastEitherEnd_refused() {
        long max = Limits.RELAY_LENGTH_BYTES.max();
        assertThat(declaring(max, true, null).contentLength()).isEqualTo(max);
        assertThat(declaring(0, true, null).contentLength()).isZero();
        assertThat(declaring(-1, true, null).contentLength()).isEqualTo(ResponseFraming.UNKNOWN_LENGTH);
        assertThat(new RelayedRequest("GET", URL, List.of(), "acme", null, null, new AbortSignal()).contentLength())
                .as("unknown unless declared")
                .isEqualTo(ResponseFraming.UNKNOWN_LENGTH);

        assertThatIllegalArgumentException()
                .isThrownBy(() -> declaring(max + 1, true, null))
                .withMessage("contentLength: 9007199254740992 (expected: -1 or 0..9007199254740991)");
        assertThatIllegalArgumentException().isThrownBy(() -> declaring(-2, true, null));
    }

    @Test
    void contentLength_withoutABody_onlyZero_andNoneWithAnUpgrade() {
        assertThat(declaring(0, false, null).contentLength()).isZero();

        assertThatIllegalArgumentException()
                .isThrownBy(() -> declaring(1, false, null))
                .withMessage("contentLength: 1 (expected: -1 or 0 without a body)");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> declaring(0, true, "websocket"))
                .withMessage("contentLength: 0 (expected: -1 with an upgrade)");
    }
}
