package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.uplink.testing.TestBodies.pattern;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.testing.TestBodies.text;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.FedBody;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import java.io.IOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A relayed request keeps its declared length, end to end over a real uplink on loopback (RFC
 * 9110 §8.6; docs/PROTOCOL.md sections 3 and 9.3): the caller's {@link
 * RelayedRequest#contentLength()} crosses as the request's {@code length} (v1's {@code
 * relay.request} input, v2's request HEADERS) and reaches the target as its request's, the body
 * byte for byte; a body of unknown length crosses without one. The gateway holds its caller's body
 * to the length before it sends any of it: a body that runs past or ends short fails the relay
 * INTERNAL, cancels it, and the target's body never ends as if complete. The worker's own checks
 * of a gateway that breaks the length are {@code UplinkSessionTest}'s and {@code
 * V2ServedRelayTest}'s. Each runs over v1 and v2 ({@link Protocol}).
 */
final class RelayRequestLengthEndToEndTest {
    /** Past one v1 chunk (256 KiB) and one v2 stream window, so the body crosses in many parts. */
    private static final int LENGTH = 300 * 1024 + 7;

    private static final ObjectMapper JSON = new ObjectMapper();

    private final RelayHarness h = new RelayHarness();

    /** What the target read of the body, or how its read failed. */
    private final CompletableFuture<byte[]> stored = new CompletableFuture<>();

    @AfterEach
    void tearDown() {
        h.close();
    }

    /** Sets the target: it reads the whole body into {@link #stored} and answers 200 with its SHA-256. */
    private void readingTarget() {
        h.target(request -> {
            BodySource body = Objects.requireNonNull(request.body(), "the upload's body");
            return readAll(body)
                    .whenComplete((bytes, error) -> {
                        if (error != null) {
                            stored.completeExceptionally(error);
                        } else {
                            stored.complete(bytes);
                        }
                    })
                    .thenApply(bytes -> new RelayedResponse(200, List.of(), ArrayBody.of(sha256(bytes))));
        });
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** The request's {@code length} on the wire: v1's relay.request input, v2's request HEADERS. */
    private static ObjectNode requestOnTheWire(RecordingChannel wire, Protocol protocol) {
        if (protocol == Protocol.V2) {
            int stream = wire.v2().lastStreamId();
            List<V2FrameRecorder.Seen> heads = wire.v2().seen(s -> s.sent() && s.streamId() == stream && s.isHeaders());
            assertThat(heads).as("v2: one request HEADERS").hasSize(1);
            try {
                return (ObjectNode)
                        JSON.readTree(Objects.requireNonNull(heads.get(0).text()));
            } catch (IOException e) {
                throw new AssertionError("the request head is JSON", e);
            }
        }
        List<Seen> requests = wire.sent(RelayRequest.OP);
        assertThat(requests).as("one relay.request").hasSize(1);
        return Objects.requireNonNull(requests.get(0).json(), "the relay.request input is kept");
    }

    /**
     * Relays a PUT of {@link #LENGTH} bytes whose request declares {@code contentLength}, asserts
     * that the target's request declares the same and that the target read every byte (the SHA-256
     * it answers included), and returns the request as it crossed the wire.
     */
    private ObjectNode put(Protocol protocol, long contentLength) {
        byte[] data = pattern(LENGTH, 3);
        readingTarget();
        RecordingChannel wire = h.connect(protocol);

        RelayedResponse response = done(
                h.relay().relay(W1, call("PUT", "/up", new ArrayBody(data, 64 * 1024), contentLength)),
                "the PUT",
                WAIT);

        assertThat(take(h.targetCalls, "the target is called", WAIT).contentLength())
                .as("the target's request declares")
                .isEqualTo(contentLength);
        assertThat(done(stored, "the target reads the body", WAIT)).isEqualTo(data);
        assertThat(text(done(readAll(Objects.requireNonNull(response.body())), "the answer", WAIT)))
                .as("the SHA-256 the target computed")
                .isEqualTo(sha256(data));
        return requestOnTheWire(wire, protocol);
    }

    /** RFC 9110 §8.6: the caller's Content-Length reaches the target, and so does every byte. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void shouldCarryTheCallersDeclaredLengthToTheTarget_andTheBodyByteForByte(Protocol protocol) {
        assertThat(put(protocol, LENGTH).get("length").longValue())
                .as("the request's length on the wire")
                .isEqualTo(LENGTH);
    }

    /** RFC 9112 §7.1: a chunked upload declares no length; it crosses without one, every byte. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void shouldCarryNoLength_forABodyOfUnknownLength(Protocol protocol) {
        assertThat(put(protocol, ResponseFraming.UNKNOWN_LENGTH).has("length"))
                .as("no length member on the wire")
                .isFalse();
    }

    /**
     * A caller's body that runs one byte past its declared length, or ends one byte short of it,
     * fails the relay INTERNAL before the byte (or the end) is sent, and cancels it: the target's
     * read fails, never an end.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @CsvSource({"V1, past", "V1, short", "V2, past", "V2, short"})
    void shouldFailTheRelayInternal_whenTheCallersBodyBreaksItsDeclaredLength(Protocol protocol, String broken) {
        readingTarget();
        h.connect(protocol);
        FedBody body = new FedBody();
        body.offer(pattern(100, 7));

        CompletableFuture<RelayedResponse> relayed =
                h.relay().relay(W1, call("PUT", "/up", body, 246)).toCompletableFuture();
        RelayedRequest request = take(h.targetCalls, "the target is called", WAIT);
        String message;
        if (broken.equals("past")) {
            body.offer(pattern(146, 8));
            body.offer(pattern(1, 9));
            message = "the relayed request's body ran to 247 bytes of its declared 246";
        } else {
            body.offer(pattern(145, 8));
            body.end();
            message = "the relayed request's body ended after 245 of its declared 246 bytes";
        }

        assertThat(failure(relayed, "a body that breaks its length", WAIT))
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL))
                .hasMessage(message);
        assertThat(failure(stored, "the target's read fails, never an end", WAIT))
                .isNotNull();
        Waits.until(
                "the target's request is aborted", WAIT, () -> request.signal().isAborted());
        Waits.until("the relay releases its slot", WAIT, () -> h.relay().running(W1) == 0);
    }
}
