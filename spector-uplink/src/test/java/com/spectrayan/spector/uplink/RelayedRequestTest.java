package com.spectrayan.spector.uplink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import com.spectrayan.spector.uplink.testing.ArrayBody;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An upgrade request always carries the client's side of the connection as its body (docs/PROTOCOL.md section 9.7, RFC 9110 §7.8). */
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
}
