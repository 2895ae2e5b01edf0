package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.uplink.testing.TestBodies.body;
import static com.spectrayan.spector.uplink.testing.TestBodies.pattern;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.CHUNK;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.MIB;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.requireNonNull;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.RelayCall;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A worker and a gateway of different versions (docs/PROTOCOL.md section 9.1) speak v1, and a
 * whole relay works over it: a v1 worker (offering v1 only) with a gateway that speaks v2, and a v2
 * worker (offering v2, then v1) with a gateway that speaks v1 only. Each relays a 1 MiB PUT whose
 * target echoes the body back, as relay.body calls and relay-chunk pushes on the wire.
 */
final class RelayMixedVersionEndToEndTest {
    @Test
    void v1Worker_v2Gateway_speakV1_andAWholeRelayWithABodyEachWayWorks() {
        try (RelayHarness h = new RelayHarness()) {
            wholeRelay(h, Protocol.V1);
        }
    }

    @Test
    void v2Worker_v1Gateway_speakV1_andAWholeRelayWithABodyEachWayWorks() {
        try (RelayHarness h = RelayHarness.gatewayV1Only()) {
            wholeRelay(h, Protocol.V2);
        }
    }

    /** The worker offers {@code offered}; {@link RelayHarness#connect} asserts the link speaks v1. */
    private static void wholeRelay(RelayHarness h, Protocol offered) {
        byte[] data = pattern(MIB, 21);
        h.target(request -> readAll(requireNonNull(request.body()))
                .thenApply(bytes -> new RelayedResponse(
                        201, List.of(new Header("x-echo", request.method())), new ArrayBody(bytes, CHUNK))));
        RecordingChannel wire = h.connect(W1, UplinkSession.Role.GATEWAY_UPLINK, offered);
        assertThat(wire.isV2()).as("the link speaks v1").isFalse();
        List<Header> headers = List.of(new Header("x-a", "1"));
        RelayedRequest request = new RelayedRequest(
                "PUT",
                URI.create("http://app.local/p?q=1"),
                headers,
                "acme",
                "l-1",
                new ArrayBody(data, MIB),
                new AbortSignal());

        RelayedResponse response = done(h.relay().relay(W1, new RelayCall("app", request)), "the PUT relays", WAIT);

        RelayedRequest got = take(h.targetCalls, "the target gets the PUT", WAIT);
        assertThat(got.method()).isEqualTo("PUT");
        assertThat(got.url()).isEqualTo(URI.create("http://app.local/p?q=1"));
        assertThat(got.headers()).isEqualTo(headers);
        assertThat(got.tenant()).isEqualTo("acme");
        assertThat(got.leaseId()).isEqualTo("l-1");
        assertThat(response.status()).isEqualTo(201);
        assertThat(response.headers()).containsExactly(new Header("x-echo", "PUT"));
        assertThat(done(readAll(body(response, "PUT")), "the echoed body", WAIT))
                .as("the 1 MiB comes back byte for byte")
                .isEqualTo(data);
        assertThat(wire.sent(RelayRequest.OP))
                .as("one relay.request on the v1 wire")
                .hasSize(1);
        assertThat(wire.sent(RelayBody.OP).stream()
                        .mapToLong(s -> Math.max(0, s.chunkBytes()))
                        .sum())
                .as("relay.body calls carried the request body")
                .isEqualTo(data.length);
        long id = wire.requestId(wire.lastRelayId());
        assertThat(wire.received(id).stream()
                        .filter(s -> s.name().equals(RelayChunk.PUSH))
                        .mapToLong(Seen::chunkBytes)
                        .sum())
                .as("relay-chunk pushes carried the response body")
                .isEqualTo(data.length);
        assertThat(done(h.link(W1).admin().statusGet(), "status.get", WAIT).workerId())
                .isEqualTo(W1);
    }
}
