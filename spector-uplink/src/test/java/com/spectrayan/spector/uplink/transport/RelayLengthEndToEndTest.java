package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.uplink.testing.TestBodies.body;
import static com.spectrayan.spector.uplink.testing.TestBodies.pattern;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import com.spectrayan.spector.uplink.wire.Header;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A relayed response keeps its known length, end to end over a real uplink on loopback (RFC 9110
 * §8.6): the length the target declares crosses in {@code relay-head}'s {@code length} and reaches
 * the caller as {@link RelayedResponse#contentLength()}; a HEAD carries the length a GET would
 * have had and no body (RFC 9110 §9.3.2); a worker whose body runs past or short of the length it
 * declared fails the caller's body INTERNAL naming it; a target that declares none gives -1. Each
 * runs over v1 and v2 ({@link Protocol}); on v2 the length is the response HEADERS's {@code length}
 * (section 9.3), and the worker holds its own target to it (section 9.4: it resets the stream
 * {@code RELAY_ERROR} INTERNAL rather than send what the gateway would refuse), so the caller's
 * error is the worker's; the gateway's own check of a worker that breaks it is {@code
 * RelayV2ViolationEndToEndTest}'s.
 */
final class RelayLengthEndToEndTest {
    private static final int LENGTH = 246;

    private final RelayHarness h = new RelayHarness();

    @AfterEach
    void tearDown() {
        h.close();
    }

    /** The target answers {@code status}, declaring {@code length}, with {@code body} in parts of 100 bytes. */
    private void target(int status, long length, byte @Nullable [] body) {
        h.target(request -> CompletableFuture.completedFuture(new RelayedResponse(
                status,
                List.of(new Header("content-type", "application/octet-stream")),
                length,
                body == null ? null : new ArrayBody(body, 100))));
    }

    private static Seen head(RecordingChannel wire) {
        long requestId = wire.requestId(wire.lastRelayId());
        List<Seen> heads =
                wire.seen(s -> !s.sent() && s.id() == requestId && s.name().equals(RelayHead.PUSH));
        assertThat(heads).as("one relay-head").hasSize(1);
        return heads.get(0);
    }

    /** v2: the response head's JSON of the last stream, the one HEADERS the worker sent on it. */
    private static ObjectNode v2Head(RecordingChannel wire) {
        int stream = wire.v2().lastStreamId();
        List<V2FrameRecorder.Seen> heads = wire.v2().seen(s -> !s.sent() && s.streamId() == stream && s.isHeaders());
        assertThat(heads).as("v2: one response HEADERS").hasSize(1);
        try {
            return (ObjectNode) new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(RelaySeedFixture.requireNonNull(heads.get(0).text()));
        } catch (java.io.IOException e) {
            throw new AssertionError("the response head is JSON", e);
        }
    }

    private static ObjectNode data(Seen seen) {
        ObjectNode json = seen.json();
        assertThat(json).as("the relay-head's data is kept").isNotNull();
        return json == null ? JsonNodeFactory.instance.objectNode() : json;
    }

    /** v2: the worker's own RELAY_ERROR INTERNAL, with its message, reaches the caller's body. */
    private static void internal(Throwable failure, String message) {
        assertThat(failure).isInstanceOf(SpectorException.class);
        assertThat(((SpectorException) failure).code()).isEqualTo(ErrorCode.INTERNAL);
        assertThat(failure.getMessage()).isEqualTo(message);
    }

    private static void internalNamingTheWorker(Throwable failure, String message) {
        assertThat(failure).isInstanceOf(SpectorException.class);
        assertThat(((SpectorException) failure).code()).isEqualTo(ErrorCode.INTERNAL);
        assertThat(failure.getMessage()).isEqualTo(message).contains("worker " + W1);
    }

    /** RFC 9110 §8.6: the target's Content-Length reaches the caller (not chunked), and so do its bytes. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void shouldCarryTheLengthTheTargetDeclaredToTheCaller(Protocol protocol) {
        byte[] data = pattern(LENGTH, 3);
        target(200, LENGTH, data);
        RecordingChannel wire = h.connect(protocol);

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/x", null)), "the head", WAIT);

        assertThat(response.contentLength()).isEqualTo(LENGTH);
        assertThat(response.headers())
                .as("the length travels beside the headers, never as content-length")
                .containsExactly(new Header("content-type", "application/octet-stream"));
        assertThat(done(readAll(body(response, "GET")), "the body", WAIT)).isEqualTo(data);
        if (protocol == Protocol.V2) {
            assertThat(v2Head(wire).get("length").longValue())
                    .as("v2: the response HEADERS's length on the wire")
                    .isEqualTo(LENGTH);
            assertThat(wire.v2().dataBytes(wire.v2().lastStreamId(), false))
                    .as("v2: DATA carries exactly the declared length")
                    .isEqualTo(LENGTH);
            return;
        }
        assertThat(data(head(wire)).get("length").longValue())
                .as("relay-head's length on the wire")
                .isEqualTo(LENGTH);
    }

    /** RFC 9110 §9.3.2, §8.6: a HEAD's length is the GET's, and no relay-chunk crosses for it. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void shouldCarryTheGetLengthForAHead_andNoBody(Protocol protocol) {
        target(200, LENGTH, pattern(LENGTH, 5)); // a body the worker must not send for a HEAD
        RecordingChannel wire = h.connect(protocol);

        RelayedResponse response = done(h.relay().relay(W1, call("HEAD", "/x", null)), "the HEAD's head", WAIT);

        assertThat(response.contentLength()).isEqualTo(LENGTH);
        assertThat(response.body()).as("a HEAD has no body").isNull();
        if (protocol == Protocol.V2) {
            done(h.link(W1).admin().statusGet(), "a round trip on the link after the HEAD", WAIT);
            assertThat(wire.v2().names(wire.v2().lastStreamId(), false))
                    .as("v2: one response HEADERS with END_STREAM, and no DATA")
                    .containsExactly("HEADERS+END");
            assertThat(v2Head(wire).get("length").longValue()).isEqualTo(LENGTH);
            return;
        }
        long requestId = wire.requestId(wire.lastRelayId());
        Waits.until(
                "relay.request answers the HEAD",
                WAIT,
                () -> wire.received(requestId).stream().anyMatch(s -> s.name().equals("result")));
        assertThat(wire.received(requestId).stream().map(Seen::name).toList())
                .as("a relay-head, then the answer, and no relay-chunk")
                .containsExactly(RelayHead.PUSH, "result");
        assertThat(data(head(wire)).get("length").longValue()).isEqualTo(LENGTH);
    }

    /** RFC 9110 §8.6: one byte past the declared length fails the caller's body INTERNAL. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void shouldFailTheCallersBodyInternal_whenTheWorkerSendsOneBytePastItsDeclaredLength(Protocol protocol) {
        target(200, LENGTH, pattern(LENGTH + 1, 7));
        h.connect(protocol);

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/x", null)), "the head", WAIT);

        assertThat(response.contentLength()).isEqualTo(LENGTH);
        Throwable tooLong = failure(readAll(body(response, "GET")), "a body one byte too long", WAIT);
        if (protocol == Protocol.V2) {
            // The worker stops its own target at the part that runs past (parts of 100, 100 and 47 bytes).
            internal(tooLong, "relay target 'app' response body ran past the 246 bytes it declared (at least 247)");
        } else {
            internalNamingTheWorker(tooLong, "worker w1 sent 247 bytes of a relayed response it declared as 246");
        }
        Waits.until("the overrun relay releases its slot", WAIT, () -> h.relay().running(W1) == 0);
    }

    /** RFC 9110 §8.6: a body that ends one byte short of its declared length fails INTERNAL. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void shouldFailTheCallersBodyInternal_whenTheWorkerEndsOneByteShortOfItsDeclaredLength(Protocol protocol) {
        target(200, LENGTH, pattern(LENGTH - 1, 9));
        h.connect(protocol);

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/x", null)), "the head", WAIT);
        BodySource body = body(response, "GET");

        Throwable tooShort = failure(readAll(body), "a body one byte short", WAIT);
        if (protocol == Protocol.V2) {
            internal(tooShort, "relay target 'app' response body ended after 245 of the 246 bytes it declared");
        } else {
            internalNamingTheWorker(
                    tooShort, "worker w1 ended the relayed response after 245 of its declared 246 bytes");
        }
        Waits.until("the short relay releases its slot", WAIT, () -> h.relay().running(W1) == 0);
    }

    /** RFC 9112 §6.3: a response without a declared length (chunked or close-delimited) gives -1. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void shouldGiveAnUnknownLength_whenTheTargetDeclaresNone(Protocol protocol) {
        byte[] data = pattern(LENGTH, 11);
        target(200, ResponseFraming.UNKNOWN_LENGTH, data);
        RecordingChannel wire = h.connect(protocol);

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/x", null)), "the head", WAIT);

        assertThat(response.contentLength()).isEqualTo(-1);
        assertThat(done(readAll(body(response, "GET")), "the body", WAIT)).isEqualTo(data);
        if (protocol == Protocol.V2) {
            assertThat(v2Head(wire).has("length"))
                    .as("v2: no length member on the wire")
                    .isFalse();
            assertThat(wire.v2().dataBytes(wire.v2().lastStreamId(), false))
                    .as("v2: the body still crosses, as DATA")
                    .isEqualTo(LENGTH);
            return;
        }
        assertThat(data(head(wire)).has("length"))
                .as("no length member on the wire")
                .isFalse();
        assertThat(wire.seen(s -> s.name().equals(RelayChunk.PUSH)))
                .as("the body still crosses")
                .isNotEmpty();
    }
}
