package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.testing.TestBodies.body;
import static com.spectrayan.spector.uplink.testing.TestBodies.bytesOf;
import static com.spectrayan.spector.uplink.testing.TestBodies.text;
import static com.spectrayan.spector.uplink.testing.TestBodies.utf8;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.requireNonNull;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.RelayCall;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.FedBody;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import com.spectrayan.spector.uplink.wire.Header;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Seed 000's Tests lines on relay targets that fail: none registered, one that throws or whose body errors, one that answers too many headers: one test per line, end to end over
 * {@link RelaySeedFixture}. Each runs over v1 and v2 ({@link Protocol}); on v2 a failure is the
 * stream's RESET {@code RELAY_ERROR} with v1's error object (section 9.4).
 */
final class RelayTargetFailureEndToEndTest {
    @RegisterExtension
    final RelaySeedFixture seed = new RelaySeedFixture();

    private final RelayHarness h = seed.h;

    // ---- seed: a relay naming a target nobody registered fails with RELAY_TARGET_MISSING

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void relayNamingATargetNobodyRegistered_failsRelayTargetMissing(Protocol protocol) {
        RecordingChannel wire = h.connect(protocol);
        RelayCall missing = new RelayCall(
                "nobody",
                new RelayedRequest(
                        "GET", URI.create("http://app.local/x"), List.of(), "acme", null, null, new AbortSignal()));
        SpectorException e =
                spector(h.relay().relay(W1, missing), ErrorCode.RELAY_TARGET_MISSING, "a relay to target nobody");
        assertThat(e.details()).as("details name the target").containsEntry("target", "nobody");
        assertThat(h.targetCalls).as("no registered target was called").isEmpty();
        if (protocol == Protocol.V2) {
            int stream = wire.v2().lastStreamId();
            assertThat(wire.v2().names(stream, false))
                    .as("v2: the worker reset the stream RELAY_ERROR, with no head")
                    .containsExactly("RESET RELAY_ERROR");
            assertThat(wire.v2().received(stream).get(0).text()).contains("RELAY_TARGET_MISSING");
        }
    }

    // ---- seed: a target that throws fails the call with INTERNAL and the worker logs its message;
    // a response body that errors after the head fails the call with INTERNAL after the chunks
    // already sent

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void
            targetThrows_failsInternal_andTheWorkerLogsItsMessage_andABodyErrorAfterTheHead_failsInternalAfterTheChunksSent(
                    Protocol protocol) {
        seed.route("/throws", request -> {
            throw new IllegalStateException("the disk is on fire");
        });
        FedBody breaking = new FedBody();
        breaking.offer(utf8("one,"));
        breaking.offer(utf8("two,"));
        breaking.fail(new IllegalStateException("upstream reset"));
        seed.route("/breaks", request -> respond(200, breaking));
        RecordingChannel wire = h.connect(protocol);

        try (LogCapture log = new LogCapture()) {
            SpectorException thrown = spector(
                    h.relay().relay(W1, call("GET", "/throws", null)), ErrorCode.INTERNAL, "a target that throws");
            assertThat(thrown.getMessage())
                    .as("the caller's error carries the target's message")
                    .contains("the disk is on fire");
            until(
                    "the worker logs the thrown error's message",
                    WAIT,
                    () -> log.text().contains("the disk is on fire"));
        }

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/breaks", null)), "the head comes", WAIT);
        BodySource b = body(response, "/breaks");
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        Throwable broke = null;
        while (broke == null) {
            CompletableFuture<@Nullable ByteBuffer> next = b.next().toCompletableFuture();
            try {
                ByteBuffer part = next.get(TestGateway.WAIT.toMillis(), TimeUnit.MILLISECONDS);
                assertThat(part).as("the body errors, it does not end").isNotNull();
                got.writeBytes(bytesOf(requireNonNull(part)));
            } catch (java.util.concurrent.ExecutionException e) {
                broke = e.getCause();
            } catch (Exception e) {
                throw new AssertionError("reading the breaking body", e);
            }
        }
        assertThat(text(got.toByteArray()))
                .as("the chunks sent before the error reach the caller")
                .isEqualTo("one,two,");
        SpectorException internal = spector(broke, ErrorCode.INTERNAL, "the body after the head");
        assertThat(internal.getMessage()).as("it carries the body's error").contains("upstream reset");
        if (protocol == Protocol.V2) {
            int stream = wire.v2().lastStreamId();
            List<String> names = wire.v2().names(stream, false);
            assertThat(names.get(0)).as("v2: the head first").isEqualTo("HEADERS");
            assertThat(names.get(names.size() - 1))
                    .as("v2: then, after the DATA already sent, RELAY_ERROR")
                    .isEqualTo("RESET RELAY_ERROR");
            assertThat(names.subList(1, names.size() - 1))
                    .as("v2: only DATA between")
                    .allMatch("DATA"::equals);
            assertThat(wire.v2().dataBytes(stream, false))
                    .as("v2: the chunks already sent, as DATA")
                    .isEqualTo("one,two,".length());
            return;
        }
        long requestId = wire.requestId(wire.lastRelayId());
        assertThat(wire.received(requestId).stream().map(Seen::name).toList())
                .as("on the wire: the head, the chunks already sent, then INTERNAL")
                .containsExactly(RelayHead.PUSH, RelayChunk.PUSH, RelayChunk.PUSH, ErrorCode.INTERNAL.name());
    }

    // ---- seed: a target answering 101 headers fails the call with INTERNAL, and the worker logs
    // it

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void targetAnswering101Headers_failsTheCallInternal_andTheWorkerLogsTheBound(Protocol protocol) {
        List<Header> many = new ArrayList<>();
        for (int i = 0; i < 101; i++) {
            many.add(new Header("x-h" + i, "v"));
        }
        seed.route("/many", request -> respond(200, ArrayBody.of("never sent"), many.toArray(Header[]::new)));
        RecordingChannel wire = h.connect(protocol);
        try (LogCapture log = new LogCapture()) {
            SpectorException e = spector(
                    h.relay().relay(W1, call("GET", "/many", null)), ErrorCode.INTERNAL, "101 response headers");
            assertThat(e.getMessage()).as("the caller's error names the bound").contains("101");
            until(
                    "the worker logs which bound the response broke",
                    WAIT,
                    // v2's worker (V2ServedRelay) words it "failed before its response", naming the bound as v1's.
                    () -> log.text()
                                    .contains(
                                            protocol == Protocol.V2
                                                    ? "failed before its response"
                                                    : "outside the relay's bounds")
                            && log.text().contains("101 headers"));
        }
        if (protocol == Protocol.V2) {
            assertThat(wire.v2().names(wire.v2().lastStreamId(), false))
                    .as("v2: no response HEADERS for a response out of bounds, only RELAY_ERROR")
                    .containsExactly("RESET RELAY_ERROR");
            return;
        }
        long requestId = wire.requestId(wire.lastRelayId());
        assertThat(wire.received(requestId).stream().filter(Seen::isPush).toList())
                .as("no relay-head for a response out of bounds")
                .isEmpty();
    }
}
