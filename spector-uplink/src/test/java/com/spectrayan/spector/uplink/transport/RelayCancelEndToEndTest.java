package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.testing.TestBodies.body;
import static com.spectrayan.spector.uplink.testing.TestBodies.bytesOf;
import static com.spectrayan.spector.uplink.testing.TestBodies.pattern;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.testing.TestBodies.text;
import static com.spectrayan.spector.uplink.testing.TestBodies.utf8;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.KIB;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.answer;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.requireNonNull;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.resultOf;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.FedBody;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import com.spectrayan.spector.uplink.wire.Frame;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Seed 000's Tests lines on deadlines, cancellation and lost uplinks: a caller that aborts, a caller body that errors, the deadline, an uplink that closes, a worker with no uplink: one test per line, end to end over
 * {@link RelaySeedFixture}. Each runs over v1 and v2 ({@link Protocol}); on v2 a cancel is the stream's
 * RESET {@code CANCEL} (section 9.4), after which the worker sends nothing more on it.
 */
final class RelayCancelEndToEndTest {
    @RegisterExtension
    final RelaySeedFixture seed = new RelaySeedFixture();

    private final RelayHarness h = seed.h;

    /**
     * Asserts that {@code stage} fails with {@code reason} itself (not a wrapper), and that the
     * target's request signal for the relay to {@code path} aborts.
     */
    private void failsWithAndTheTargetAborts(CompletionStage<?> stage, Throwable reason, String path, String what) {
        assertThat(failure(stage, what, WAIT))
                .as(what + ": fails with the reason itself")
                .isSameAs(reason);
        done(seed.aborted(path), what + ": the target's request signal aborts", WAIT);
    }

    // ---- seed: aborting the caller's request signal before the head comes fails the call; after
    // the head, it errors the caller's body stream; either way the target's request signal aborts
    // and relay.request answers { cancelled: true } with no push after the cancel

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void
            callerAbort_beforeHeadFailsTheCall_afterHeadErrorsTheBody_eitherWayTheTargetAborts_andRelayRequestAnswersCancelledWithNoPushAfter(
                    Protocol protocol) {
        ArrayBody endless = ArrayBody.endless(32 * KIB);
        seed.route("/hold", RelaySeedFixture::never);
        seed.route("/endless", request -> respond(200, endless));
        RecordingChannel wire = h.connect(protocol);
        boolean v2 = protocol == Protocol.V2;

        // Before the head.
        AbortSignal early = new AbortSignal();
        CompletionStage<RelayedResponse> held = h.relay().relay(W1, call("GET", "/hold", null, early));
        take(h.targetCalls, "the target gets the first relay", WAIT);
        String heldRelay = v2 ? "" : wire.lastRelayId();
        int heldStream = v2 ? wire.v2().lastStreamId() : 0;
        CancellationException gone = new CancellationException("the caller went away");
        early.abort(gone);
        failsWithAndTheTargetAborts(held, gone, "/hold", "the call aborted before its head");
        if (v2) {
            cancelledV2(wire, heldStream, "the held stream");
            assertThat(wire.v2().received(heldStream))
                    .as("v2: no frame from the worker on the stream cancelled before its head")
                    .isEmpty();
        }
        long heldId = v2 ? 0 : wire.requestId(heldRelay);
        if (!v2) {
            assertThat(resultOf(answer(wire, heldId, "relay.request before head"), "relay.request before head"))
                    .as("relay.request answers {cancelled: true} (before the head)")
                    .isEqualTo(RelayOutcome.CANCELLED.toJson());
            assertThat(wire.received(heldId).stream().filter(Seen::isPush).toList())
                    .as("no push for the relay cancelled before its head")
                    .isEmpty();
        }

        // After the head, while the target streams without end.
        AbortSignal late = new AbortSignal();
        RelayedResponse response =
                done(h.relay().relay(W1, call("GET", "/endless", null, late)), "the second relay gets its head", WAIT);
        String streamRelay = v2 ? "" : wire.lastRelayId();
        int endlessStream = v2 ? wire.v2().lastStreamId() : 0;
        BodySource b = body(response, "/endless");
        assertThat(done(b.next(), "a first part", WAIT)).as("a first part").isNotNull();
        CancellationException left = new CancellationException("the caller left mid-body");
        late.abort(left);
        failsWithAndTheTargetAborts(b.next(), left, "/endless", "the caller's body stream after the abort");
        done(endless.cancelled(), "the worker stops the target's endless body", WAIT);
        if (v2) {
            cancelledV2(wire, endlessStream, "the endless stream");
            // The worker wrote the answer of this round trip after it took the RESET: all it sent
            // before has arrived by then, and nothing of the stream may follow.
            done(h.link(W1).admin().statusGet(), "a round trip on the link after the cancel", WAIT);
            int seenAfterCancel = wire.v2().received(endlessStream).size();
            done(h.link(W1).admin().statusGet(), "a second round trip", WAIT);
            assertThat(wire.v2().received(endlessStream))
                    .as("v2: no frame of the cancelled stream from the worker after it took the RESET CANCEL")
                    .hasSize(seenAfterCancel);
            long resetOrder = wire.v2()
                    .seen(s -> s.sent() && s.isReset() && s.streamId() == endlessStream)
                    .get(0)
                    .order();
            assertThat(wire.v2()
                            .seen(s ->
                                    !s.sent() && s.isData() && s.streamId() == endlessStream && s.order() < resetOrder))
                    .as("v2: the endless stream carried DATA before the cancel (so DATA after it would show)")
                    .isNotEmpty();
            assertThat(wire.v2().resets(endlessStream, false))
                    .as("v2: the worker does not answer a RESET")
                    .isEmpty();
            return;
        }
        long streamId = wire.requestId(streamRelay);
        Frame answered = answer(wire, streamId, "relay.request after head");
        assertThat(resultOf(answered, "relay.request after head"))
                .as("relay.request answers {cancelled: true} (after the head)")
                .isEqualTo(RelayOutcome.CANCELLED.toJson());
        done(h.link(W1).admin().statusGet(), "a round trip on the uplink after the cancel", WAIT);
        long answerOrder = wire.received(streamId).stream()
                .filter(Seen::isAnswer)
                .mapToLong(Seen::order)
                .findFirst()
                .orElseThrow();
        long cancelOrder = wire.sent(RelayCancel.OP).stream()
                .filter(s -> streamRelay.equals(s.relayId()))
                .mapToLong(Seen::order)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no relay.cancel sent for the aborted relay"));
        assertThat(wire.received(streamId).stream()
                        .filter(s -> s.isPush() && s.order() > answerOrder)
                        .toList())
                .as("no push for the cancelled relay after its {cancelled: true} (the worker's cancel point)")
                .isEmpty();
        assertThat(wire.received(streamId).stream()
                        .filter(s -> s.name().equals(RelayChunk.PUSH) && s.order() < cancelOrder)
                        .count())
                .as("the endless relay pushed chunks before the cancel (so a push after it would show)")
                .isPositive();
    }

    /** v2: the gateway reset the stream {@code CANCEL}, once. */
    private static void cancelledV2(RecordingChannel wire, int stream, String what) {
        until(
                "v2: the gateway resets " + what + " CANCEL",
                WAIT,
                () -> !wire.v2().resets(stream, true).isEmpty());
        assertThat(wire.v2().resets(stream, true))
                .as("v2: " + what + " reset CANCEL")
                .containsExactly(V2ErrorCode.CANCEL);
    }

    // ---- seed: a caller's request body that errors mid-upload aborts the target's request signal

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void callerBodyErrorsMidUpload_abortsTheTargetsRequestSignal_andFailsTheCallWithTheError(Protocol protocol) {
        AtomicInteger partsRead = new AtomicInteger();
        seed.route("/upload", request -> {
            BodySource b = requireNonNull(request.body());
            readAll(new BodySource() {
                @Override
                public CompletionStage<@Nullable ByteBuffer> next() {
                    return b.next().thenApply(part -> {
                        if (part != null) {
                            partsRead.incrementAndGet();
                        }
                        return part;
                    });
                }

                @Override
                public void cancel(Throwable reason) {
                    b.cancel(reason);
                }
            });
            return new CompletableFuture<>();
        });
        RecordingChannel wire = h.connect(protocol);
        FedBody upload = new FedBody();
        upload.offer(pattern(100 * KIB, 1));

        CompletionStage<RelayedResponse> put = h.relay().relay(W1, call("PUT", "/upload", upload));
        // v2 hands the 100 KiB part over in the DATA slices it crossed in (16 KiB), so more than one read.
        until(
                "the target reads the first part of the upload",
                WAIT,
                () -> protocol == Protocol.V2 ? partsRead.get() >= 1 : partsRead.get() == 1);
        IOException broken = new IOException("the caller's connection broke mid-upload");
        upload.fail(broken);

        failsWithAndTheTargetAborts(put, broken, "/upload", "the upload whose body failed (before the head)");
        if (protocol == Protocol.V2) {
            cancelledV2(wire, wire.v2().lastStreamId(), "the upload's stream");
            return;
        }
        assertThat(wire.sent(RelayCancel.OP))
                .as("the gateway sent relay.cancel")
                .hasSize(1);
    }

    // ---- seed: a target that never answers is cancelled after a 200 ms deadline, and the caller
    // gets WORKER_UNREACHABLE with message worker <id> did not finish the relayed request within
    // 200 ms; one that stalls after its head gets its body stream errored with that message

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void deadline200ms_silentTargetIsCancelledAndTheCallerGetsWorkerUnreachable_andAStallAfterTheHeadErrorsTheBody(
            Protocol protocol) {
        FedBody stalling = new FedBody();
        stalling.offer(utf8("first and last part"));
        seed.route("/hello", request -> respond(200, ArrayBody.of("hello")));
        seed.route("/silent", RelaySeedFixture::never);
        seed.route("/stall", request -> respond(200, stalling));
        RecordingChannel wire = h.connect(protocol);
        done(
                readAll(body(done(h.relay().relay(W1, call("GET", "/hello", null)), "warm-up", WAIT), "warm-up")),
                "warm-up",
                WAIT);
        GatewayRelay fast = h.relay(Duration.ofMillis(200));
        String expected = "worker w1 did not finish the relayed request within 200 ms";

        long start = System.nanoTime();
        SpectorException silent =
                spector(fast.relay(W1, call("GET", "/silent", null)), ErrorCode.WORKER_UNREACHABLE, "silent target");
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(silent.getMessage()).as("the deadline's exact message").isEqualTo(expected);
        assertThat(tookMs)
                .as("the call failed no sooner than the 200 ms deadline (ms)")
                .isGreaterThanOrEqualTo(200);
        done(seed.aborted("/silent"), "the silent target's request signal aborts: the gateway cancelled it", WAIT);
        if (protocol == Protocol.V2) {
            cancelledV2(wire, wire.v2().lastStreamId(), "the silent relay's stream");
        } else {
            assertThat(wire.sent(RelayCancel.OP).stream().map(Seen::relayId))
                    .as("relay.cancel was sent for the silent relay")
                    .contains(wire.lastRelayId());
        }

        RelayedResponse stalled = done(fast.relay(W1, call("GET", "/stall", null)), "the stalling target's head", WAIT);
        BodySource b = body(stalled, "/stall");
        assertThat(text(bytesOf(requireNonNull(done(b.next(), "the part before the stall", WAIT)))))
                .as("the part before the stall")
                .isEqualTo("first and last part");
        SpectorException stall = spector(b.next(), ErrorCode.WORKER_UNREACHABLE, "the stalled body");
        assertThat(stall.getMessage())
                .as("the stalled body's error is the deadline's exact message")
                .isEqualTo(expected);
        done(seed.aborted("/stall"), "the stalling target's request signal aborts", WAIT);
    }

    // ---- seed: closing the uplink mid-relay fails the caller with WORKER_UNREACHABLE, or errors
    // its body stream after the head, and aborts the target's request signal

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void
            closingTheUplinkMidRelay_failsTheCallerBeforeTheHead_errorsTheBodyAfterIt_withWorkerUnreachable_andAbortsTheTargets(
                    Protocol protocol) {
        FedBody stalling = new FedBody();
        stalling.offer(utf8("a part"));
        seed.route("/hold", RelaySeedFixture::never);
        seed.route("/stall", request -> respond(200, stalling));
        h.connect(protocol);

        CompletionStage<RelayedResponse> beforeHead = h.relay().relay(W1, call("GET", "/hold", null));
        RelayedResponse afterHead =
                done(h.relay().relay(W1, call("GET", "/stall", null)), "the second relay's head", WAIT);
        BodySource b = body(afterHead, "/stall");
        assertThat(done(b.next(), "a part before the drop", WAIT))
                .as("a part before the drop")
                .isNotNull();
        until("both relays reached the target", WAIT, () -> h.targetCalls.size() == 2);

        h.workerSocket(W1).close(); // The TCP connection drops: no WebSocket close.

        SpectorException before = spector(beforeHead, ErrorCode.WORKER_UNREACHABLE, "the relay before its head");
        assertThat(before.getMessage()).as("it names the worker").contains("w1");
        spector(b.next(), ErrorCode.WORKER_UNREACHABLE, "the body of the relay after its head");
        done(seed.aborted("/hold"), "the target's signal of the relay before its head aborts", WAIT);
        done(seed.aborted("/stall"), "the target's signal of the relay after its head aborts", WAIT);
    }

    // ---- seed: a relay to a worker with no uplink fails with WORKER_UNREACHABLE and the target
    // sees nothing

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void relayToAWorkerWithNoUplink_failsWorkerUnreachable_andTheTargetSeesNothing(Protocol protocol) {
        seed.route("/hello", request -> respond(200, ArrayBody.of("hello")));
        RecordingChannel wire = h.connect(protocol);
        h.stopWorker(W1);
        until("the stopped worker's uplink leaves the directory", WAIT, () -> h.directory.live(W1) == null);

        spector(h.relay().relay(W1, call("GET", "/hello", null)), ErrorCode.WORKER_UNREACHABLE, "a relay to w1");
        spector(h.relay().relay("w9", call("GET", "/hello", null)), ErrorCode.WORKER_UNREACHABLE, "a relay to w9");
        assertThat(h.targetCalls).as("the target saw nothing").isEmpty();
        assertThat(wire.sent(RelayRequest.OP)).as("no relay.request went out").isEmpty();
        if (protocol == Protocol.V2) {
            assertThat(wire.v2().seen(s -> s.sent() && s.isHeaders()))
                    .as("v2: no stream was opened")
                    .isEmpty();
        }
    }
}
