package com.spectrayan.spector.uplink.worker;

import static com.spectrayan.spector.uplink.testing.TestBodies.pattern;
import static com.spectrayan.spector.uplink.testing.TestBodies.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.ResponseHead;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.TestBodies;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.StatusReport;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The worker's half of a v2 relay (docs/PROTOCOL.md sections 9.3 to 9.5), end to end over a real
 * loopback WebSocket ({@link V2LinkPair}): a gateway-role {@code V2Connection} opens streams, the
 * worker's {@link UplinkSession} serves them through {@link V2ServedRelay} against a real relay
 * target. Netty's leak detection (PARANOID) checks after each test that every buffer the relay
 * queued, handed out or cut off was released once.
 */
final class V2ServedRelayTest {
    /** The bound on a wait that moves a megabyte across the socket under PARANOID leak tracking. */
    private static final Duration BULK = Duration.ofSeconds(30);

    private static final int MIB = 1024 * 1024;

    private final List<V2LinkPair> pairs = new ArrayList<>();
    /** Every request a target received, in order. */
    private final BlockingQueue<RelayedRequest> requests = new LinkedBlockingQueue<>();
    /** The thread each target call ran on. */
    private final List<String> targetThreads = new CopyOnWriteArrayList<>();

    @AfterEach
    void closePairs() {
        pairs.forEach(V2LinkPair::close);
    }

    private V2LinkPair connect(RelayTarget target) {
        return connect(UplinkSession.Role.GATEWAY_UPLINK, options(target).build());
    }

    private WorkerOptions.Builder options(RelayTarget target) {
        RelayTarget recorded = request -> {
            targetThreads.add(Thread.currentThread().getName());
            requests.add(request);
            return target.handle(request);
        };
        return WorkerOptions.builder("w-1").relayTarget("app", recorded);
    }

    private V2LinkPair connect(UplinkSession.Role role, WorkerOptions options) {
        V2LinkPair pair = V2LinkPair.connect(role, options);
        pairs.add(pair);
        return pair;
    }

    private static RequestHead head(String method) {
        return head("app", method);
    }

    private static RequestHead head(String target, String method) {
        return new RequestHead(
                target,
                method,
                "https://app.local/a?x=1",
                List.of(new Header("accept", "text/plain")),
                "acme",
                "l-9",
                null,
                -1);
    }

    /** A request head for target {@code app} declaring the body's {@code length}. */
    private static RequestHead head(String method, long length) {
        RequestHead h = head(method);
        return new RequestHead(h.target(), h.method(), h.url(), h.headers(), h.tenant(), h.leaseId(), null, length);
    }

    /**
     * A target that reads the request body to its end with {@code nextBuf}, counting the bytes it
     * took in {@code taken}, completes {@code read} with them (or the body's failure) and answers 204.
     */
    private static RelayTarget reading(AtomicLong taken, CompletableFuture<byte[]> read) {
        return request -> readAllBufs(java.util.Objects.requireNonNull(request.body()), new ArrayList<>(), taken)
                .whenComplete((bytes, error) -> {
                    if (error != null) {
                        read.completeExceptionally(error);
                    } else {
                        read.complete(bytes);
                    }
                })
                .thenApply(bytes -> new RelayedResponse(204, List.of(), null));
    }

    private RelayedRequest takeRequest() {
        return Waits.take(requests, "the target is called");
    }

    private static V2ServedRelay.StreamBody streamBody(RelayedRequest request) {
        BodySource body = request.body();
        assertThat(body).as("the request's body").isInstanceOf(V2ServedRelay.StreamBody.class);
        return (V2ServedRelay.StreamBody) java.util.Objects.requireNonNull(body);
    }

    private static GatewayStream.Reset reset(GatewayStream stream) {
        return Waits.done(stream.reset, "the worker resets the stream");
    }

    /** Returns the v1 error object of the stream's RESET RELAY_ERROR. */
    private static Frame.ErrorFrame errorObject(GatewayStream stream) {
        GatewayStream.Reset reset = reset(stream);
        assertThat(reset.code()).isEqualTo(V2ErrorCode.RELAY_ERROR);
        Frame.ErrorFrame error = reset.error();
        assertThat(error).as("the error object").isNotNull();
        return java.util.Objects.requireNonNull(error);
    }

    /** Asserts a RESET RELAY_ERROR carrying v1's error object with {@code code}; returns its message. */
    private static String relayError(GatewayStream stream, ErrorCode code) {
        Frame.ErrorFrame error = errorObject(stream);
        assertThat(error.code()).isEqualTo(code);
        return error.message();
    }

    private static void awaitNoRelays(V2LinkPair pair) {
        Waits.until("every relay freed its slot", () -> pair.session.activeRelays() == 0);
    }

    // ---- the exchange ----

    @Test
    void get_targetAnswers200WithABody_headThenBodyThenEndStream() {
        V2LinkPair pair = connect(request -> CompletableFuture.completedFuture(new RelayedResponse(
                200, List.of(new Header("content-type", "text/plain")), 11, ArrayBody.of("hello world"))));

        GatewayStream stream = pair.open(head("GET"), true);

        ResponseHead head = Waits.done(stream.head, "the worker answers the head");
        assertThat(head.status()).isEqualTo(200);
        assertThat(head.length()).isEqualTo(11);
        assertThat(head.headers()).containsExactly(new Header("content-type", "text/plain"));
        assertThat(TestBodies.text(Waits.done(stream.body, "the body ends with END_STREAM")))
                .isEqualTo("hello world");
        RelayedRequest request = takeRequest();
        assertThat(request.method()).isEqualTo("GET");
        assertThat(request.url()).hasToString("https://app.local/a?x=1");
        assertThat(request.headers()).containsExactly(new Header("accept", "text/plain"));
        assertThat(request.tenant()).isEqualTo("acme");
        assertThat(request.leaseId()).isEqualTo("l-9");
        assertThat(request.body()).as("a GET with END_STREAM has no body").isNull();
        assertThat(targetThreads)
                .as("target code runs on the worker's executor, never the event loop")
                .allSatisfy(name -> assertThat(name).startsWith("uplink-worker-"));
        awaitNoRelays(pair);
    }

    @ParameterizedTest(name = "read with nextBuf: {0}")
    @ValueSource(booleans = {true, false})
    void post_1MiBBody_echoedAndTheTargetReadExactlyIt(boolean zeroCopy) {
        byte[] sent = pattern(MIB, 7);
        CompletableFuture<byte[]> read = new CompletableFuture<>();
        List<String> readThreads = new CopyOnWriteArrayList<>();
        V2LinkPair pair = connect(request -> {
            BodySource body = java.util.Objects.requireNonNull(request.body());
            CompletableFuture<byte[]> all = zeroCopy ? readAllBufs(body, readThreads) : TestBodies.readAll(body);
            return all.thenApply(bytes -> {
                read.complete(bytes);
                return new RelayedResponse(200, List.of(), bytes.length, new ArrayBody(bytes, 100_000));
            });
        });

        GatewayStream stream = pair.open(head("POST"), false);
        stream.send(sent);

        assertThat(Waits.done(stream.body, "the echo ends with END_STREAM", BULK))
                .isEqualTo(sent);
        assertThat(Waits.done(read, "the target read the body")).isEqualTo(sent);
        assertThat(Waits.done(stream.head, "the head").length()).isEqualTo(MIB);
        assertThat(readThreads).allSatisfy(name -> assertThat(name).startsWith("uplink-worker-"));
        awaitNoRelays(pair);
    }

    /**
     * Section 9.5: credit returns only when the target took the bytes, so a body past the stream
     * window (256 KiB) waits at the gateway while the target does not read: held back, not failed.
     */
    @Test
    void post_bodyPastTheStreamWindow_heldAtTheGatewayUntilTheTargetReads() {
        byte[] sent = pattern(MIB, 3);
        CompletableFuture<Void> startReading = new CompletableFuture<>();
        CompletableFuture<byte[]> read = new CompletableFuture<>();
        V2LinkPair pair = connect(request -> startReading
                .thenCompose(v -> readAllBufs(java.util.Objects.requireNonNull(request.body()), new ArrayList<>()))
                .thenApply(bytes -> {
                    read.complete(bytes);
                    return new RelayedResponse(204, List.of(), null);
                }));

        GatewayStream stream = pair.open(head("POST"), false);
        stream.send(sent);
        V2ServedRelay.StreamBody body = streamBody(takeRequest());

        Waits.until(
                "the worker holds exactly one stream window of DATA",
                () -> body.queuedBytes() == V2Limits.INITIAL_STREAM_WINDOW);
        Waits.until("the gateway's producer is paused by its stream's queue", stream::paused);
        assertThat(stream.written())
                .as("the gateway wrote one window sent and at most one queue's high water waiting")
                .isLessThan(sent.length)
                .isLessThanOrEqualTo(
                        V2Limits.INITIAL_STREAM_WINDOW + V2Limits.STREAM_QUEUE_HIGH_WATER + GatewayStream.CHUNK);
        assertThat(body.queuedBytes()).isEqualTo(V2Limits.INITIAL_STREAM_WINDOW);
        assertThat(stream.reset).as("held back, not failed").isNotDone();

        startReading.complete(null);

        assertThat(Waits.done(read, "the target reads the whole body", BULK)).isEqualTo(sent);
        assertThat(Waits.done(stream.head, "the head").status()).isEqualTo(204);
        assertThat(stream.reset).isNotDone();
        awaitNoRelays(pair);
    }

    /**
     * A target that stops reading (cancel) has what was queued released at once, and the rest of
     * the upload is drained and credited, so the gateway's upload ends and the stream closes.
     */
    @Test
    void post_targetCancelsTheRequestBody_queuedReleasedAndTheRestDrainedWithCredit() {
        byte[] sent = pattern(MIB, 9);
        CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
        V2LinkPair pair = connect(request -> answer);

        GatewayStream stream = pair.open(head("POST"), false);
        stream.send(sent);
        V2ServedRelay.StreamBody body = streamBody(takeRequest());
        Waits.until("request bytes wait at the worker", () -> body.queuedBytes() > 0);
        body.cancel(new CancellationException("the target needs no more"));
        answer.complete(new RelayedResponse(200, List.of(), 2, ArrayBody.of("ok")));

        assertThat(TestBodies.text(Waits.done(stream.body, "the response ends")))
                .isEqualTo("ok");
        Waits.until("the gateway's whole upload goes out", BULK, () -> stream.written() == sent.length);
        Waits.until("the stream closes both ways", () -> pair.onWorkerLoop(pair.worker::openStreams) == 0);
        assertThat(body.queuedBytes()).isZero();
        assertThat(Waits.failure(body.nextBuf(), "a read after the cancel fails"))
                .isInstanceOf(CancellationException.class);
        assertThat(stream.reset).isNotDone();
        awaitNoRelays(pair);
    }

    /** BodySource's contract: one read at a time; a second outstanding read fails, the first still completes. */
    @Test
    void requestBody_secondReadWhileOneWaits_failsAndTheFirstStillCompletes() {
        CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
        V2LinkPair pair = connect(request -> answer);
        GatewayStream stream = pair.open(head("POST"), false);
        V2ServedRelay.StreamBody body = streamBody(takeRequest());

        CompletableFuture<@Nullable ByteBuf> first = body.nextBuf().toCompletableFuture();
        assertThat(Waits.failure(body.next(), "a second read fails")).isInstanceOf(IllegalStateException.class);
        stream.send(utf8("abc"));

        ByteBuf part = Waits.done(first, "the first read takes the DATA");
        try {
            assertThat(part).isNotNull();
            assertThat(ByteBufUtil.getBytes(java.util.Objects.requireNonNull(part)))
                    .isEqualTo(utf8("abc"));
        } finally {
            if (part != null) {
                part.release();
            }
        }
        assertThat(Waits.done(body.next(), "END_STREAM reads as the end")).isNull();
        answer.complete(new RelayedResponse(204, List.of(), null));
        Waits.done(stream.head, "the relay answers");
        awaitNoRelays(pair);
    }

    @Test
    void head_targetOffersABody_headWithEndStreamAndTheBodyCancelled() {
        ArrayBody offered = ArrayBody.of("hello world");
        V2LinkPair pair =
                connect(request -> CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), 11, offered)));

        GatewayStream stream = pair.open(head("HEAD"), true);

        assertThat(Waits.done(stream.head, "the head").length()).isEqualTo(11);
        assertThat(Waits.done(stream.body, "END_STREAM on the head")).isEmpty();
        assertThat(Waits.done(offered.cancelled(), "the body a HEAD does not carry is cancelled"))
                .isInstanceOf(CancellationException.class);
        assertThat(offered.reads()).isZero();
    }

    // ---- refusals ----

    @Test
    void unknownTarget_resetRelayErrorWithRelayTargetMissing() {
        V2LinkPair pair = connect(request -> CompletableFuture.failedFuture(new AssertionError("not called")));

        GatewayStream stream = pair.open(head("nope", "GET"), true);

        assertThat(relayError(stream, ErrorCode.RELAY_TARGET_MISSING)).contains("nope");
        assertThat(errorObject(stream).details().path("target").asText()).isEqualTo("nope");
        assertThat(stream.head).isNotDone();
        assertThat(requests).isEmpty();
        awaitNoRelays(pair);
    }

    @Test
    void localAdminConnection_resetRelayErrorForbidden() {
        V2LinkPair pair = connect(
                UplinkSession.Role.LOCAL_ADMIN,
                options(request -> CompletableFuture.failedFuture(new AssertionError("not called")))
                        .build());

        GatewayStream stream = pair.open(head("GET"), true);

        relayError(stream, ErrorCode.FORBIDDEN);
        assertThat(requests).isEmpty();
    }

    private static RequestHead upgradeHead() {
        return new RequestHead("app", "GET", "https://app.local/ws", List.of(), "acme", null, "websocket", -1);
    }

    /**
     * Section 9.7: a 101 keeps both directions open after the head. The target echoes the
     * stream's DATA (its 101 body is the request body itself); the gateway's END_STREAM is the
     * client's half close, the echo's end follows it, and the relay settles once both ended.
     */
    @Test
    void upgradeHead_target101_echoesBothWaysAndSettlesAfterBothHalfCloses() {
        V2LinkPair pair = connect(request -> CompletableFuture.completedFuture(RelayedResponse.switching(
                List.of(new Header("sec-websocket-accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")),
                java.util.Objects.requireNonNull(request.body()))));

        GatewayStream stream = pair.open(upgradeHead(), false);

        ResponseHead switched = Waits.done(stream.head, "the 101 goes out before any byte");
        assertThat(switched.status()).isEqualTo(101);
        assertThat(switched.headers())
                .containsExactly(new Header("sec-websocket-accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="));
        assertThat(takeRequest().upgrade()).isEqualTo("websocket");
        assertThat(stream.body).as("no END_STREAM on a 101").isNotDone();
        byte[] bytes = pattern(3 * GatewayStream.CHUNK + 7, 5); // past the first window's worth of slices
        stream.send(bytes);

        assertThat(Waits.done(stream.body, "the echo ends after the gateway's end", BULK))
                .isEqualTo(bytes);
        awaitNoRelays(pair);
        assertThat(stream.reset).as("both ends were half closes, never a reset").isNotDone();
    }

    /** RFC 9110 §7.8: a target may ignore the upgrade; its answer is an ordinary response, the stream then settles. */
    @Test
    void upgradeHead_targetAnswersNot101_anOrdinaryResponse() {
        V2LinkPair pair = connect(request -> {
            java.util.Objects.requireNonNull(request.body()).cancel(new CancellationException("not switching"));
            return CompletableFuture.completedFuture(new RelayedResponse(
                    426, List.of(new Header("sec-websocket-version", "13")), 2, ArrayBody.of("no")));
        });

        GatewayStream stream = pair.open(upgradeHead(), false);

        assertThat(Waits.done(stream.head, "the head").status()).isEqualTo(426);
        assertThat(Waits.done(stream.body, "the body")).isEqualTo(utf8("no"));
        awaitNoRelays(pair);
    }

    /** Section 9.7: RESET aborts both directions of a switched stream: the target's signal aborts. */
    @Test
    void switchedStream_gatewayResets_abortsTheTarget() {
        V2LinkPair pair = connect(request -> CompletableFuture.completedFuture(
                RelayedResponse.switching(List.of(), java.util.Objects.requireNonNull(request.body()))));

        GatewayStream stream = pair.open(upgradeHead(), false);
        assertThat(Waits.done(stream.head, "the 101").status()).isEqualTo(101);
        RelayedRequest request = takeRequest();
        stream.cancel();

        Waits.until("the target's request is aborted", () -> request.signal().isAborted());
        awaitNoRelays(pair);
    }

    /**
     * Section 9.4 and v1's limit: 16 relays at once per link; the 17th stream is refused
     * REFUSED_STREAM (nothing of it processed), and once one ends the limit admits one more.
     */
    @Test
    void streams_atActiveRelaysPerConnection_theNextRefusedAndOneMoreAfterOneEnds() {
        int limit = (int) Limits.ACTIVE_RELAYS_PER_CONNECTION.max();
        List<CompletableFuture<RelayedResponse>> answers = new CopyOnWriteArrayList<>();
        V2LinkPair pair = connect(request -> {
            CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
            answers.add(answer);
            return answer;
        });
        List<GatewayStream> streams = new ArrayList<>();
        for (int i = 0; i < limit; i++) {
            streams.add(pair.open(head("GET"), true));
        }
        Waits.until("all 16 targets are called", () -> answers.size() == limit);
        assertThat(pair.session.activeRelays()).isEqualTo(limit);

        GatewayStream past = pair.open(head("GET"), true);

        assertThat(reset(past).code()).isEqualTo(V2ErrorCode.REFUSED_STREAM);
        assertThat(answers).hasSize(limit);

        // The targets run on the executor, so the first answer is not necessarily stream 0's.
        answers.get(0).complete(new RelayedResponse(204, List.of(), null));
        Waits.until("one relay answers", () -> streams.stream().anyMatch(s -> s.head.isDone()));
        assertThat(streams.stream().filter(s -> s.head.isDone()).toList())
                .singleElement()
                .satisfies(s -> assertThat(s.head.join().status()).isEqualTo(204));
        Waits.until("the ended relay freed its slot", () -> pair.session.activeRelays() == limit - 1);
        GatewayStream again = pair.open(head("GET"), true);
        Waits.until("the stream at the limit again is called", () -> answers.size() == limit + 1);
        assertThat(again.reset).isNotDone();

        answers.forEach(a -> a.complete(new RelayedResponse(204, List.of(), null)));
        Waits.done(again.head, "the last relay answers");
        awaitNoRelays(pair);
    }

    // ---- a reset stream's slot (rapid reset, CVE-2023-44487) ----

    /**
     * Regression (HTTP/2's rapid reset, CVE-2023-44487; found by a review of the worker): a stream
     * the gateway reset freed its slot at the reset while its target still ran upstream, so a peer
     * opening and resetting streams in a loop kept any number of exchanges running past the 16.
     * Now 16 streams reset while their targets run leave no room: the 17th is refused
     * REFUSED_STREAM and reaches no target; once the targets end, a stream is served again.
     */
    @Test
    void streamsReset_whileTheirTargetsRun_keepTheirSlots_theNextRefusedUntilTheTargetsEnd() {
        int limit = (int) Limits.ACTIVE_RELAYS_PER_CONNECTION.max();
        SlowToStop target = new SlowToStop();
        V2LinkPair pair = connect(target);
        resetWhileRunning(pair, limit);

        GatewayStream past = pair.open(head("GET"), true);

        assertThat(reset(past).code()).isEqualTo(V2ErrorCode.REFUSED_STREAM);
        assertThat(requests).as("the refused stream reached no target").isEmpty();
        assertThat(target.running.get()).as("the reset targets still run").isEqualTo(limit);
        assertThat(pair.session.activeRelays()).isEqualTo(limit);

        target.release.complete(null);

        awaitNoRelays(pair);
        GatewayStream again = pair.open(head("GET"), true);
        assertThat(Waits.done(again.head, "a stream is served once the targets ended")
                        .status())
                .isEqualTo(204);
        assertThat(target.mostRunning.get())
                .as("target calls running at once, at most")
                .isEqualTo(limit);
        awaitNoRelays(pair);
    }

    /** The boundary: with 15 streams reset and their targets still running, one more is served. */
    @Test
    void streamsReset_oneUnderTheLimitWhileTheirTargetsRun_theNextIsServed() {
        int limit = (int) Limits.ACTIVE_RELAYS_PER_CONNECTION.max();
        SlowToStop target = new SlowToStop();
        V2LinkPair pair = connect(target);
        resetWhileRunning(pair, limit - 1);

        GatewayStream last = pair.open(head("GET"), true);

        takeRequest();
        assertThat(last.reset).as("the stream in the last slot is not refused").isNotDone();
        assertThat(pair.session.activeRelays()).isEqualTo(limit);
        target.release.complete(null);
        assertThat(Waits.done(last.head, "the stream in the last slot answers").status())
                .isEqualTo(204);
        assertThat(target.mostRunning.get())
                .as("target calls running at once, at most")
                .isEqualTo(limit);
        awaitNoRelays(pair);
    }

    /**
     * A stream reset mid-body keeps its slot while a read of the target's response body is
     * outstanding and the body's cancel does not end it; the read's end frees the slot.
     */
    @Test
    void streamReset_withAResponseBodyReadOutstanding_keepsItsSlotUntilTheReadEnds() {
        StuckBody stuck = new StuckBody();
        V2LinkPair pair =
                connect(request -> CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), stuck)));
        GatewayStream stream = pair.open(head("GET"), true);
        assertThat(Waits.done(stream.head, "the head").status()).isEqualTo(200);
        Waits.done(stuck.asked, "the relay reads the response body");

        stream.cancel();

        Waits.done(stuck.cancelled, "the reset cancels the response body");
        heldCount(pair); // a task on the session's executor: behind any slot freed at the reset
        assertThat(pair.session.activeRelays())
                .as("the slot is held while the body's read is outstanding")
                .isEqualTo(1);
        stuck.read.completeExceptionally(new CancellationException("the upstream stopped"));
        awaitNoRelays(pair);
    }

    /**
     * Opens {@code n} GET streams, waits until each one's target runs, resets them all and waits
     * until each target's signal aborted; the targets go on running.
     */
    private void resetWhileRunning(V2LinkPair pair, int n) {
        List<GatewayStream> streams = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            streams.add(pair.open(head("GET"), true));
        }
        List<RelayedRequest> called = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            called.add(takeRequest());
        }
        streams.forEach(GatewayStream::cancel);
        for (RelayedRequest request : called) {
            Waits.until(
                    "the reset aborts the target's signal",
                    () -> request.signal().isAborted());
        }
    }

    /** Section 9.8: status.get travels as a CALL on the v2 link and counts the v2 relays. */
    @Test
    void statusGet_overACall_countsTheOpenV2Relays() {
        CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
        V2LinkPair pair = connect(request -> answer);
        GatewayStream stream = pair.open(head("GET"), true);
        takeRequest();

        pair.gateway.sendCall(new Frame.Call(1, "status.get", JsonNodeFactory.instance.objectNode()));

        Waits.until("status.get is answered", () -> !pair.gatewayListener.calls.isEmpty());
        Frame result = pair.gatewayListener.calls.get(0);
        assertThat(result).isInstanceOf(Frame.Result.class);
        assertThat(StatusReport.parse(((Frame.Result) result).output()).activeRelays())
                .isEqualTo(1);
        answer.complete(new RelayedResponse(204, List.of(), null));
        Waits.done(stream.head, "the relay answers");
        awaitNoRelays(pair);
    }

    // ---- the startup gate ----

    /** Connects a worker whose target answers 204 behind {@code gate}, and opens a GET the worker took. */
    private GatewayStream openBehind(CompletableFuture<Void> gate) {
        V2LinkPair pair = connect(
                UplinkSession.Role.GATEWAY_UPLINK,
                options(request -> CompletableFuture.completedFuture(new RelayedResponse(204, List.of(), null)))
                        .startupGate(gate)
                        .build());
        GatewayStream stream = pair.open(head("GET"), true);
        Waits.until("the worker took the stream", () -> pair.onWorkerLoop(pair.worker::openStreams) == 1);
        return stream;
    }

    @Test
    void streamBeforeTheGate_heldThenServedWhenTheGateOpens() {
        CompletableFuture<Void> gate = new CompletableFuture<>();
        GatewayStream stream = openBehind(gate);
        assertThat(requests).as("held behind the gate").isEmpty();
        assertThat(stream.head).isNotDone();

        gate.complete(null);

        assertThat(Waits.done(stream.head, "served once the gate opens").status())
                .isEqualTo(204);
    }

    /**
     * Streams opened and reset before the startup gate settles leave nothing held: 200 of them
     * (a rapid reset, each within the link's 16) and the worker holds none, and the one stream
     * still open when the gate opens is served. Regression (a review): each reset stream's relay
     * and head stayed in the session's held list until the gate settled, without a bound.
     */
    @Test
    void streamsResetBeforeTheGate_areNotHeld() {
        CompletableFuture<Void> gate = new CompletableFuture<>();
        V2LinkPair pair = connect(
                UplinkSession.Role.GATEWAY_UPLINK,
                options(request -> CompletableFuture.completedFuture(new RelayedResponse(204, List.of(), null)))
                        .startupGate(gate)
                        .build());
        for (int i = 0; i < 200; i++) {
            GatewayStream reset = pair.open(head("GET"), true);
            Waits.until("the worker took stream " + i, () -> pair.onWorkerLoop(pair.worker::openStreams) == 1);
            reset.cancel();
            Waits.until("the worker let stream " + i + " go", () -> pair.onWorkerLoop(pair.worker::openStreams) == 0);
        }
        GatewayStream kept = pair.open(head("GET"), true);
        Waits.until("the worker took the last stream", () -> pair.onWorkerLoop(pair.worker::openStreams) == 1);
        Waits.until("only the open stream is held", () -> heldCount(pair) == 1);

        gate.complete(null);

        assertThat(Waits.done(kept.head, "served once the gate opens").status()).isEqualTo(204);
        assertThat(requests).as("only the open stream reached the target").hasSize(1);
    }

    private static int heldCount(V2LinkPair pair) {
        return Waits.done(pair.session.heldCount(), "the session's count", Duration.ofSeconds(5));
    }

    /** A stream held before the gate is answered as v1's held call is when the worker failed to start: INTERNAL. */
    @Test
    void streamBeforeTheGate_gateFails_resetRelayErrorInternal() {
        CompletableFuture<Void> gate = new CompletableFuture<>();
        GatewayStream stream = openBehind(gate);
        gate.completeExceptionally(new IllegalStateException("no config"));

        assertThat(relayError(stream, ErrorCode.INTERNAL))
                .contains("worker failed to start")
                .contains("no config");
        assertThat(requests).isEmpty();
    }

    // ---- failures ----

    @Test
    void targetThrows_beforeTheHead_resetRelayErrorInternal() {
        V2LinkPair pair = connect(request -> {
            throw new IllegalStateException("boom");
        });

        GatewayStream stream = pair.open(head("GET"), true);

        assertThat(relayError(stream, ErrorCode.INTERNAL)).contains("boom");
        assertThat(stream.head).isNotDone();
        awaitNoRelays(pair);
    }

    @Test
    void targetFailsWithASpectorException_beforeTheHead_resetRelayErrorWithItsCode() {
        V2LinkPair pair = connect(request ->
                CompletableFuture.failedFuture(SpectorException.badRequest("q", "not a number (expected: digits)")));

        GatewayStream stream = pair.open(head("GET"), true);

        assertThat(relayError(stream, ErrorCode.BAD_REQUEST)).contains("not a number");
        awaitNoRelays(pair);
    }

    /** A 101 answers only a head that named an upgrade (section 9.3); this one named none. */
    @Test
    void target101_withoutAnUpgrade_resetRelayErrorInternalAndNoHead() {
        V2LinkPair pair = connect(
                request -> CompletableFuture.completedFuture(RelayedResponse.switching(List.of(), ArrayBody.of("x"))));

        GatewayStream stream = pair.open(head("GET"), true);

        assertThat(relayError(stream, ErrorCode.INTERNAL)).contains("101");
        assertThat(stream.head).isNotDone();
    }

    @Test
    void responseBodyFails_afterTheHead_resetRelayErrorInternal() {
        ArrayBody failing = new ArrayBody(pattern(100_000, 1), 16_384, new IllegalStateException("disk gone"));
        V2LinkPair pair =
                connect(request -> CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), failing)));

        GatewayStream stream = pair.open(head("GET"), true);

        assertThat(Waits.done(stream.head, "the head goes first").status()).isEqualTo(200);
        assertThat(relayError(stream, ErrorCode.INTERNAL)).contains("disk gone");
        assertThat(stream.body).as("never END_STREAM").isNotDone();
        awaitNoRelays(pair);
    }

    /**
     * Section 9.4, a declared length is a promise: the worker never sends a body past it or one
     * that ends short of it; it resets the stream RELAY_ERROR INTERNAL instead (the gateway then
     * resets its client). At the length, the body completes.
     */
    @ParameterizedTest(name = "declared {0}, served {1}")
    @CsvSource({"20, 20, complete", "20, 21, overrun", "20, 19, underrun", "20, 0, underrun"})
    void declaredLength_heldToIt(long declared, int served, String outcome) {
        V2LinkPair pair = connect(request -> CompletableFuture.completedFuture(
                new RelayedResponse(200, List.of(), declared, new PooledBody(served, served))));

        GatewayStream stream = pair.open(head("GET"), true);

        if (outcome.equals("complete")) {
            assertThat(Waits.done(stream.body, "the body at its length completes"))
                    .hasSize(served);
            assertThat(stream.reset).isNotDone();
        } else {
            assertThat(relayError(stream, ErrorCode.INTERNAL)).contains("declared");
            assertThat(Waits.done(stream.head, "the head went first").length()).isEqualTo(declared);
            assertThat(stream.body).as("never END_STREAM").isNotDone();
            assertThat(stream.receivedBytes().length)
                    .as("never past the length")
                    .isLessThanOrEqualTo((int) declared);
        }
        awaitNoRelays(pair);
    }

    @Test
    void declaredLength_withoutABody_resetRelayErrorInternalBeforeTheHead() {
        V2LinkPair pair =
                connect(request -> CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), 20, null)));

        GatewayStream stream = pair.open(head("GET"), true);

        assertThat(relayError(stream, ErrorCode.INTERNAL)).contains("declared 20 bytes");
        assertThat(stream.head).isNotDone();
    }

    // ---- the request's declared length (section 9.4) ----

    /**
     * The request head's {@code length} reaches the target as the request's content length, and
     * the DATA that completes it is kept from the target until END_STREAM: a target never holds
     * the whole of a body that then runs past (an upstream framed with Content-Length would take it
     * as a complete request).
     */
    @Test
    void requestLength_theDataThatCompletesIt_reachesTheTargetOnlyWithEndStream() {
        byte[] sent = pattern(246, 4);
        AtomicLong taken = new AtomicLong();
        CompletableFuture<byte[]> read = new CompletableFuture<>();
        V2LinkPair pair = connect(reading(taken, read));

        GatewayStream stream = pair.open(head("PUT", 246), false);
        stream.data(java.util.Arrays.copyOfRange(sent, 0, 100), false);
        RelayedRequest request = takeRequest();
        assertThat(request.contentLength()).isEqualTo(246);
        V2ServedRelay.StreamBody body = streamBody(request);
        Waits.until("the first 100 bytes reach the target", () -> taken.get() == 100);
        stream.data(java.util.Arrays.copyOfRange(sent, 100, 246), false);
        Waits.until("the DATA that completes the length arrives", () -> body.queuedBytes() == 146);
        org.awaitility.Awaitility.await("it is kept from the target until END_STREAM")
                .during(Duration.ofMillis(200))
                .atMost(Duration.ofSeconds(5))
                .until(taken::get, n -> n == 100);

        stream.data(new byte[0], true);

        assertThat(Waits.done(read, "the target reads the whole body, then its end"))
                .isEqualTo(sent);
        assertThat(Waits.done(stream.head, "the answer").status()).isEqualTo(204);
        assertThat(stream.reset).isNotDone();
        assertThat(request.signal().isAborted()).isFalse();
        awaitNoRelays(pair);
    }

    /**
     * A declared length is a promise (section 9.4): DATA past it, or END_STREAM short of it, resets
     * the stream PROTOCOL_ERROR and aborts the target, whose read fails (never an end); the DATA
     * that broke it, and the DATA that completed the length, never reach the target.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"oneBytePast", "oneByteShort"})
    void requestLength_broken_resetProtocolError_andTheTargetsReadFails(String broken) {
        AtomicLong taken = new AtomicLong();
        CompletableFuture<byte[]> read = new CompletableFuture<>();
        V2LinkPair pair = connect(reading(taken, read));

        GatewayStream stream = pair.open(head("PUT", 246), false);
        stream.data(pattern(100, 1), false);
        RelayedRequest request = takeRequest();
        Waits.until("the first 100 bytes reach the target", () -> taken.get() == 100);
        String message;
        if (broken.equals("oneBytePast")) {
            stream.data(pattern(146, 2), false);
            stream.data(pattern(1, 3), false);
            message = "length: the request body ran to 247 bytes (expected: the declared 246)";
        } else {
            stream.data(pattern(145, 2), true);
            message = "length: the request body ended after 245 bytes (expected: the declared 246)";
        }

        GatewayStream.Reset reset = reset(stream);
        assertThat(reset.code()).isEqualTo(V2ErrorCode.PROTOCOL_ERROR);
        assertThat(reset.error()).as("no error object").isNull();
        assertThat(Waits.failure(read, "the target's read fails"))
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST))
                .hasMessage(message);
        assertThat(taken.get()).as("the target took only what came before").isEqualTo(100);
        Waits.until("the target's signal aborts", () -> request.signal().isAborted());
        assertThat(stream.head).as("no response head").isNotDone();
        awaitNoRelays(pair);
    }

    // ---- cancel and the link's loss ----

    /**
     * Section 9.4: the gateway's CANCEL aborts the target's request, cancels its response body and
     * releases what the relay queued both ways (the leak check after the test holds it to that).
     */
    @Test
    void gatewayCancel_midBody_targetAbortedResponseCancelledNothingLeaks() {
        PooledBody endless = new PooledBody(-1, 16_384);
        V2LinkPair pair =
                connect(request -> CompletableFuture.completedFuture(new RelayedResponse(200, List.of(), endless)));

        GatewayStream stream = pair.open(head("POST"), false);
        stream.send(pattern(512 * 1024, 5)); // the target never reads it: the worker queues a window
        RelayedRequest request = takeRequest();
        V2ServedRelay.StreamBody body = streamBody(request);
        Waits.until("response bytes flow", () -> stream.receivedBytes().length >= 64 * 1024);
        Waits.until("request bytes wait at the worker", () -> body.queuedBytes() > 0);

        stream.cancel();

        Waits.until("the target's signal aborts", () -> request.signal().isAborted());
        assertThat(request.signal().reason()).isInstanceOf(CancellationException.class);
        assertThat(Waits.done(endless.cancelled, "the response body is cancelled"))
                .isInstanceOf(CancellationException.class);
        assertThat(Waits.failure(body.nextBuf(), "a read after the cancel fails"))
                .isInstanceOf(CancellationException.class);
        assertThat(body.queuedBytes())
                .as("the queued request bytes were released")
                .isZero();
        awaitNoRelays(pair);
    }

    @Test
    void linkClosed_midRelay_targetAbortedDaemonConnectionLost() {
        CompletableFuture<RelayedResponse> never = new CompletableFuture<>();
        V2LinkPair pair = connect(request -> never);

        GatewayStream stream = pair.open(head("POST"), false);
        stream.send(pattern(100_000, 2));
        RelayedRequest request = takeRequest();
        V2ServedRelay.StreamBody body = streamBody(request);
        Waits.until("request bytes wait at the worker", () -> body.queuedBytes() > 0);

        pair.gateway.close(io.netty.handler.codec.http.websocketx.WebSocketCloseStatus.NORMAL_CLOSURE, "gone");

        Waits.until("the target's signal aborts", () -> request.signal().isAborted());
        assertThat(request.signal().reason())
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.DAEMON_CONNECTION_LOST));
        assertThat(Waits.failure(body.next(), "a read after the loss fails"))
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.DAEMON_CONNECTION_LOST));
        never.complete(new RelayedResponse(200, List.of(), new PooledBody(10, 10))); // late: its body is cancelled
        awaitNoRelays(pair); // the slot is held until the target's stage completed
    }

    // ---- helpers ----

    /** Reads a body to its end with {@code nextBuf}, releasing each buffer; records the threads the reads completed on. */
    static CompletableFuture<byte[]> readAllBufs(BodySource body, List<String> threads) {
        return readAllBufs(body, threads, new AtomicLong());
    }

    /** As {@link #readAllBufs(BodySource, List)}, counting the bytes taken so far in {@code taken}. */
    static CompletableFuture<byte[]> readAllBufs(BodySource body, List<String> threads, AtomicLong taken) {
        CompletableFuture<byte[]> all = new CompletableFuture<>();
        readBufs(body, new ByteArrayOutputStream(), all, threads, taken);
        return all;
    }

    private static void readBufs(
            BodySource body,
            ByteArrayOutputStream out,
            CompletableFuture<byte[]> all,
            List<String> threads,
            AtomicLong taken) {
        body.nextBuf().whenComplete((buf, error) -> {
            threads.add(Thread.currentThread().getName());
            if (error != null) {
                all.completeExceptionally(error);
            } else if (buf == null) {
                all.complete(out.toByteArray());
            } else {
                try {
                    out.writeBytes(ByteBufUtil.getBytes(buf));
                    taken.addAndGet(buf.readableBytes());
                } finally {
                    buf.release();
                }
                readBufs(body, out, all, threads, taken);
            }
        });
    }

    /**
     * A response body of pooled Netty buffers ({@link #nextBuf()}), {@code total} bytes in parts of
     * {@code partBytes} (-1: never ends), so the leak check sees any the relay drops. Thread-safe.
     */
    static final class PooledBody implements BodySource {
        final CompletableFuture<Throwable> cancelled = new CompletableFuture<>();
        private final long total;
        private final int partBytes;
        private final AtomicLong served = new AtomicLong();

        PooledBody(long total, int partBytes) {
            this.total = total;
            this.partBytes = partBytes;
        }

        @Override
        public CompletionStage<@Nullable ByteBuf> nextBuf() {
            if (cancelled.isDone()) {
                return CompletableFuture.failedFuture(new CancellationException("cancelled"));
            }
            long left = total < 0 ? partBytes : total - served.get();
            if (left <= 0) {
                return CompletableFuture.completedFuture(null);
            }
            int n = (int) Math.min(partBytes, left);
            served.addAndGet(n);
            ByteBuf part = ByteBufAllocator.DEFAULT.directBuffer(n).writeBytes(utf8("x".repeat(n)));
            return CompletableFuture.completedFuture(part);
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            return nextBuf().thenApply(buf -> {
                if (buf == null) {
                    return null;
                }
                try {
                    return ByteBuffer.wrap(ByteBufUtil.getBytes(buf));
                } finally {
                    buf.release();
                }
            });
        }

        @Override
        public void cancel(Throwable reason) {
            cancelled.complete(reason);
        }
    }

    /**
     * A target that answers 204 only once {@link #release} completes, whatever its request's
     * signal says (it ignores the abort), counting the calls running at once: from {@code handle}
     * until the stage it returned completed. Thread-safe.
     */
    static final class SlowToStop implements RelayTarget {
        final CompletableFuture<@Nullable Void> release = new CompletableFuture<>();
        final AtomicInteger running = new AtomicInteger();
        final AtomicInteger mostRunning = new AtomicInteger();

        @Override
        public CompletionStage<RelayedResponse> handle(RelayedRequest request) {
            mostRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
            return release.thenApply(v -> new RelayedResponse(204, List.of(), null))
                    .whenComplete((response, failure) -> running.decrementAndGet());
        }
    }

    /**
     * A response body whose first read completes only when the test completes {@link #read}; its
     * cancel is recorded and does not end that read (an upstream slow to stop). Thread-safe.
     */
    static final class StuckBody implements BodySource {
        final CompletableFuture<@Nullable ByteBuf> read = new CompletableFuture<>();
        final CompletableFuture<Boolean> asked = new CompletableFuture<>();
        final CompletableFuture<Throwable> cancelled = new CompletableFuture<>();

        @Override
        public CompletionStage<@Nullable ByteBuf> nextBuf() {
            asked.complete(true);
            return read;
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            return nextBuf().thenApply(buf -> {
                if (buf == null) {
                    return null;
                }
                try {
                    return ByteBuffer.wrap(ByteBufUtil.getBytes(buf));
                } finally {
                    buf.release();
                }
            });
        }

        @Override
        public void cancel(Throwable reason) {
            cancelled.complete(reason);
        }
    }
}
