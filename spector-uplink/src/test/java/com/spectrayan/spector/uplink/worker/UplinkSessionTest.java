package com.spectrayan.spector.uplink.worker;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.testkit.ManualScheduler;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.InMemoryFrameChannels;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.TestBodies;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

final class UplinkSessionTest {
    private static final Instant STARTED = Instant.parse("2025-01-01T00:00:00Z");

    private final List<FrameChannel> opened = new ArrayList<>();
    /**
     * Runs the in-memory delivery, the session and its targets of an exact test ({@link
     * #connectExact}) on the test's thread, when drained: once {@code runUntilIdle()} returns,
     * nothing more happens until the test acts, so "nothing was sent" holds exactly.
     */
    private final ManualScheduler tasks = new ManualScheduler();
    /** Every request a target received, in order. */
    private final List<RelayedRequest> requests = new CopyOnWriteArrayList<>();

    @AfterEach
    void closeChannels() {
        opened.forEach(c -> c.close("test over"));
    }

    private FakeGateway connect(UplinkSession.Role role, WorkerOptions options) {
        InMemoryFrameChannels.Pair<FakeGateway, UplinkSession> pair =
                InMemoryFrameChannels.pair(FakeGateway::new, ch -> UplinkSession.start(ch, role, options));
        opened.add(pair.gatewayEnd());
        return pair.gateway();
    }

    /** As {@link #connect(String, RelayTarget)}, with everything on {@link #tasks}. */
    private FakeGateway connectExact(UplinkSession.Role role, WorkerOptions.Builder options) {
        InMemoryFrameChannels.Pair<FakeGateway, UplinkSession> pair = InMemoryFrameChannels.pair(
                tasks,
                FakeGateway.drainedBy(tasks),
                ch -> UplinkSession.start(ch, role, options.executor(tasks).build()));
        opened.add(pair.gatewayEnd());
        return pair.gateway();
    }

    /**
     * An exact pair whose target answers 200 with {@code body}, the worker end's relay-chunk writes
     * held until the test releases them (added to {@code held}).
     */
    private FakeGateway connectHeld(ArrayBody body, List<HeldWrites> held) {
        InMemoryFrameChannels.Pair<FakeGateway, UplinkSession> pair =
                InMemoryFrameChannels.pair(tasks, FakeGateway.drainedBy(tasks), ch -> {
                    HeldWrites writes = new HeldWrites(ch);
                    held.add(writes);
                    return UplinkSession.start(
                            writes,
                            UplinkSession.Role.GATEWAY_UPLINK,
                            options(
                                            "app",
                                            request -> CompletableFuture.completedFuture(
                                                    new RelayedResponse(200, List.of(), body)))
                                    .executor(tasks)
                                    .build());
                });
        opened.add(pair.gatewayEnd());
        return pair.gateway();
    }

    private FakeGateway connectExact(WorkerOptions.Builder options) {
        return connectExact(UplinkSession.Role.GATEWAY_UPLINK, options);
    }

    private FakeGateway connect(String name, RelayTarget target) {
        return connect(UplinkSession.Role.GATEWAY_UPLINK, options(name, target).build());
    }

    private WorkerOptions.Builder options(String name, RelayTarget target) {
        return WorkerOptions.builder("w1").startedAt(STARTED).relayTarget(name, request -> {
            requests.add(request);
            return target.handle(request);
        });
    }

    private static RelayTarget answering(int status, byte[] body) {
        return request -> CompletableFuture.completedFuture(new RelayedResponse(
                status, List.of(new Header("content-type", "text/plain")), new ArrayBody(body, 100_000)));
    }

    /** A target that never answers: its relay stays active until cancelled or closed. */
    private static RelayTarget hanging() {
        return request -> new CompletableFuture<>();
    }

    /** A target that never answers but stops when aborted: its stage fails with the abort's reason. */
    private static RelayTarget stoppingOnAbort() {
        return request -> {
            CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
            request.signal().onAbort(answer::completeExceptionally);
            return answer;
        };
    }

    private static BodySource body(RelayedRequest request) {
        return java.util.Objects.requireNonNull(request.body(), "the relayed request has a body");
    }

    private RelayedRequest onlyRequest() {
        await().atMost(Duration.ofSeconds(5)).until(() -> !requests.isEmpty());
        return requests.get(0);
    }

    // ---- the exchange ----

    /**
     * A relay whose target cannot be called, the targets' executor refusing it (the worker
     * stopping), is answered {@code INTERNAL} and gives its slot back: the refusal was thrown out of
     * the frame's handling with the slot taken, for the connection's life (found by a review).
     * Only the target's call is refused here, as a shut-down executor refuses the task that would
     * run it; the session's own serial tasks still run, as the drain that handles the frame does.
     */
    @Test
    void relayRequest_whoseTargetsExecutorRefusesTheCall_isAnsweredAndFreesItsSlot() {
        Executor refusingTargetCalls = task -> {
            if (task instanceof CompletableFuture.AsynchronousCompletionTask) {
                throw new RejectedExecutionException("shut down");
            }
            tasks.execute(task);
        };
        InMemoryFrameChannels.Pair<FakeGateway, UplinkSession> pair = InMemoryFrameChannels.pair(
                tasks,
                FakeGateway.drainedBy(tasks),
                ch -> UplinkSession.start(
                        ch,
                        UplinkSession.Role.GATEWAY_UPLINK,
                        options("app", hanging()).executor(refusingTargetCalls).build()));
        opened.add(pair.gatewayEnd());

        long id = pair.gateway().relayRequest("r-1", "app", "GET", false);
        tasks.runUntilIdle();

        assertThat(pair.gateway().error(id, ErrorCode.INTERNAL).message()).contains("shut down");
        assertThat(pair.worker().activeRelays()).as("slots held").isZero();
        assertThat(requests).as("the target was never called").isEmpty();
    }

    @Test
    void relayRequest_get_reachesTargetWithItsFields_andHeadAndBodyComeBack() throws Exception {
        FakeGateway gw = connect("app", answering(200, "hello".getBytes(java.nio.charset.StandardCharsets.US_ASCII)));

        long id = gw.relayRequest("r-1", "app", "GET", false);

        assertThat(gw.result(id))
                .as("relay.request answers {} once the body ended")
                .isEmpty();
        RelayedRequest request = onlyRequest();
        assertThat(request.method()).isEqualTo("GET");
        assertThat(request.url()).hasToString("https://app.local/a?x=1");
        assertThat(request.headers())
                .as("headers keep order, authorization is filtered")
                .containsExactly(new Header("x-a", "1"), new Header("x-b", "2"));
        assertThat(request.tenant()).isEqualTo("acme");
        assertThat(request.leaseId()).isEqualTo("l-9");
        assertThat(request.body()).as("hasBody:false means no body").isNull();
        List<Frame.Push> pushes = gw.pushes(id);
        assertThat(pushes.get(0).push()).as("relay-head comes first").isEqualTo(RelayHead.PUSH);
        RelayHead head = RelayHead.parse(pushes.get(0).data());
        assertThat(head.status()).isEqualTo(200);
        assertThat(head.headers()).containsExactly(new Header("content-type", "text/plain"));
        assertThat(new String(gw.responseBody(id), java.nio.charset.StandardCharsets.US_ASCII))
                .isEqualTo("hello");
    }

    @Test
    void relayRequest_20MiBPut_bodyArrivesByteForByte_and20MiBResponseComesBackInBoundedChunks() throws Exception {
        byte[] upload = bytes(20 * 1024 * 1024);
        byte[] download = bytes(20 * 1024 * 1024 + 17);
        CompletableFuture<byte[]> received = new CompletableFuture<>();
        FakeGateway gw = connect(
                "app",
                request -> TestBodies.readAll(body(request)).thenApply(got -> {
                    received.complete(got);
                    return new RelayedResponse(200, List.of(), new ArrayBody(download, 1024 * 1024));
                }));

        long id = gw.relayRequest("r-big", "app", "PUT", true);
        gw.sendBody("r-big", upload);

        assertThat(gw.result(id)).as("relay.request completes").isEmpty();
        assertThat(received.get(5, SECONDS)).as("the PUT body byte for byte").isEqualTo(upload);
        assertThat(gw.chunks(id))
                .as("each relay-chunk at most 256 KiB")
                .allSatisfy(p -> assertThat(Frame.Push.class
                                .cast(p)
                                .data()
                                .get("chunk")
                                .asText() // base64 as it crossed: text, or read straight into bytes
                                .length())
                        .isLessThanOrEqualTo(4 * ((256 * 1024 + 2) / 3)));
        assertThat(gw.responseBody(id)).as("the response byte for byte").isEqualTo(download);
        assertThat(gw.chunks(id)).as("1 MiB parts split into 256 KiB pushes").hasSizeGreaterThanOrEqualTo(81);
    }

    @Test
    void responseBody_nextPartIsReadOnlyOnceThePreviousPushWasWritten() throws Exception {
        ArrayBody served = new ArrayBody(bytes(10_000), 1000);
        List<HeldWrites> held = new ArrayList<>();
        FakeGateway gw = connectHeld(served, held);
        HeldWrites worker = held.get(0);

        long id = gw.relayRequest("r-1", "app", "GET", false);
        tasks.runUntilIdle();
        assertThat(gw.chunks(id)).as("part 1 pushed").hasSize(1);
        assertThat(served.reads())
                .as("no second read while the first push is unwritten, once everything ran")
                .isEqualTo(1);

        worker.held.get(0).complete(null);
        tasks.runUntilIdle();
        assertThat(gw.chunks(id)).as("the write of push 1 lets part 2 be read").hasSize(2);
        assertThat(served.reads()).as("one read per written push").isEqualTo(2);

        for (int round = 0; round < 20 && !gw.answer(id).isDone(); round++) {
            worker.releaseAll();
            tasks.runUntilIdle();
        }
        assertThat(gw.result(id)).isEmpty();
        assertThat(gw.responseBody(id)).isEqualTo(bytes(10_000));
    }

    @Test
    void relayBody_isAnsweredOnlyOnceTheTargetTookTheChunk() throws Exception {
        FakeGateway gw = connectExact(options("app", hanging()));
        long id = gw.relayRequest("r-1", "app", "POST", true);
        long body = gw.chunk("r-1", 0, bytes(10));
        tasks.runUntilIdle();
        assertThat(requests).as("the target was called").hasSize(1);
        assertThat(gw.answer(body))
                .as("relay.body unanswered, once everything ran, while the target has not read")
                .isNotDone();

        CompletableFuture<ByteBuffer> part = body(requests.get(0)).next().toCompletableFuture();
        tasks.runUntilIdle();
        assertThat(part).as("the target's read").isDone();
        assertThat(java.util.Objects.requireNonNull(part.join()).remaining()).isEqualTo(10);
        assertThat(gw.result(body)).as("relay.body answered after the take").isEmpty();
        assertThat(gw.answer(id)).as("relay.request still running").isNotDone();
    }

    /**
     * PROTOCOL section 3 bounds the relay.body calls that wait for their answers ({@link
     * Limits#UNANSWERED_BODIES}); the worker held every one a gateway sent, and 800 parts of 256 KiB
     * to a target that did not read ran it out of heap (the third review). At the bound the calls
     * wait; one past it is BAD_REQUEST and aborts the relay, whose waiting calls are answered.
     */
    @Test
    void relayBody_oneCallPastTheUnansweredBound_isBadRequest_andAbortsTheRelay() throws Exception {
        FakeGateway gw = connectExact(options("app", hanging()));
        long id = gw.relayRequest("r-1", "app", "POST", true);
        List<Long> waiting = new java.util.ArrayList<>();
        for (int seq = 0; seq < Limits.UNANSWERED_BODIES; seq++) {
            waiting.add(gw.chunk("r-1", seq, bytes(10)));
        }
        tasks.runUntilIdle();
        for (long call : waiting) {
            assertThat(gw.answer(call))
                    .as("at the bound: call %d waits for the target", call)
                    .isNotDone();
        }

        long past = gw.chunk("r-1", Limits.UNANSWERED_BODIES, bytes(10));
        tasks.runUntilIdle();

        gw.error(past, ErrorCode.BAD_REQUEST);
        gw.error(id, ErrorCode.BAD_REQUEST);
        for (long call : waiting) {
            assertThat(gw.result(call))
                    .as("call %d answered as the relay ends", call)
                    .isEmpty();
        }
    }

    /**
     * PROTOCOL section 3: relay.request's {@code length} reaches the target as the request's
     * content length, and the chunk that completes it is handed over only with the body's end, so
     * the target never holds the whole of a body that then runs past (its upstream, framed with
     * Content-Length, would have taken it as complete). Exact: nothing runs until the test acts.
     */
    @Test
    void relayBody_theChunkThatCompletesTheDeclaredLength_reachesTheTargetWithTheEnd() throws Exception {
        FakeGateway gw = connectExact(options("app", hanging()));
        long id = gw.relayRequest("r-1", "app", "PUT", true, 246);
        long first = gw.chunk("r-1", 0, bytes(100));
        long last = gw.chunk("r-1", 1, bytes(146));
        tasks.runUntilIdle();
        RelayedRequest request = requests.get(0);
        assertThat(request.contentLength()).isEqualTo(246);
        BodySource body = body(request);

        CompletableFuture<ByteBuffer> part = body.next().toCompletableFuture();
        tasks.runUntilIdle();
        assertThat(java.util.Objects.requireNonNull(part.join()).remaining()).isEqualTo(100);
        assertThat(gw.result(first)).isEmpty();
        CompletableFuture<ByteBuffer> completing = body.next().toCompletableFuture();
        tasks.runUntilIdle();
        assertThat(completing)
                .as("the chunk that completes the length waits for the end, once everything ran")
                .isNotDone();
        assertThat(gw.answer(last)).as("and its relay.body is unanswered").isNotDone();

        long end = gw.end("r-1");
        tasks.runUntilIdle();

        assertThat(completing).as("the end releases it").isDone();
        assertThat(java.util.Objects.requireNonNull(completing.join()).remaining())
                .isEqualTo(146);
        assertThat(gw.result(last)).isEmpty();
        CompletableFuture<ByteBuffer> after = body.next().toCompletableFuture();
        tasks.runUntilIdle();
        assertThat(after.join()).as("then the end").isNull();
        assertThat(gw.result(end)).isEmpty();
        assertThat(gw.answer(id)).as("relay.request still running").isNotDone();
        assertThat(request.signal().isAborted()).isFalse();
    }

    /**
     * PROTOCOL section 3: a declared length is a promise. A chunk past it, or an end short of it,
     * is BAD_REQUEST ({@code length}) and aborts the relay: the target's read fails, never an end,
     * and the chunk that completed the length never reached it.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"oneBytePast", "oneByteShort"})
    void relayBody_breakingTheDeclaredLength_isBadRequest_andTheTargetsReadFails(String broken) throws Exception {
        FakeGateway gw = connectExact(options("app", hanging()));
        long id = gw.relayRequest("r-1", "app", "PUT", true, 246);
        gw.chunk("r-1", 0, bytes(100));
        tasks.runUntilIdle();
        BodySource body = body(requests.get(0));
        CompletableFuture<ByteBuffer> part = body.next().toCompletableFuture();
        tasks.runUntilIdle();
        assertThat(java.util.Objects.requireNonNull(part.join()).remaining()).isEqualTo(100);
        CompletableFuture<ByteBuffer> next = body.next().toCompletableFuture();

        long bad;
        String message;
        if (broken.equals("oneBytePast")) {
            gw.chunk("r-1", 1, bytes(146));
            bad = gw.chunk("r-1", 2, bytes(1));
            message = "length: the request body ran to 247 bytes (expected: the declared 246)";
        } else {
            gw.chunk("r-1", 1, bytes(145));
            tasks.runUntilIdle();
            assertThat(java.util.Objects.requireNonNull(next.join()).remaining())
                    .isEqualTo(145);
            next = body.next().toCompletableFuture();
            bad = gw.end("r-1");
            message = "length: the request body ended after 245 bytes (expected: the declared 246)";
        }
        tasks.runUntilIdle();

        assertThat(gw.error(bad, ErrorCode.BAD_REQUEST).message()).isEqualTo(message);
        assertThat(gw.error(id, ErrorCode.BAD_REQUEST).message()).isEqualTo("relay 'r-1' aborted: " + message);
        assertThat(requests.get(0).signal().isAborted())
                .as("the target's request is aborted")
                .isTrue();
        assertThat(next).as("the target's read fails, never an end").isCompletedExceptionally();
    }

    @Test
    void relayBody_targetAnswering401WithoutReading_everyBodyCallAnsweredOnceTheCallSettles() throws Exception {
        CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
        FakeGateway gw = connectExact(options("app", request -> answer));
        long id = gw.relayRequest("r-1", "app", "PUT", true);
        List<Long> bodies = new ArrayList<>();
        for (int seq = 0; seq < 4; seq++) {
            bodies.add(gw.chunk("r-1", seq, bytes(1000)));
        }
        tasks.runUntilIdle();
        assertThat(requests).as("the target was called").hasSize(1);
        assertThat(bodies)
                .as("no relay.body answered before the call settles, once everything ran")
                .noneMatch(b -> gw.answer(b).isDone());

        answer.complete(new RelayedResponse(401, List.of(), null));

        assertThat(gw.result(id)).isEmpty();
        for (long body : bodies) {
            assertThat(gw.result(body))
                    .as("relay.body %d answered {} after the settle", body)
                    .isEmpty();
        }
        assertThat(gw.head(id).status()).isEqualTo(401);
    }

    @ParameterizedTest
    @CsvSource({"204,GET", "205,GET", "304,GET", "200,HEAD"})
    void relayRequest_noBodyStatusOrHead_sendsNoChunk(int status, String method) throws Exception {
        FakeGateway gw = connect("app", answering(status, bytes(5000)));

        long id = gw.relayCompleted(method);

        assertThat(gw.pushes(id))
                .as("only relay-head for %d %s", status, method)
                .hasSize(1);
        assertThat(gw.chunks(id)).as("no relay-chunk for %d %s", status, method).isEmpty();
    }

    private static RelayTarget declaring(int status, long contentLength, byte[] body) {
        return request -> CompletableFuture.completedFuture(
                new RelayedResponse(status, List.of(), contentLength, new ArrayBody(body, 100_000)));
    }

    /** RFC 9110 §8.6: the target's declared length crosses as relay-head's length, the body as chunks. */
    @Test
    void relayRequest_targetDeclaresItsLength_headCarriesIt() throws Exception {
        FakeGateway gw = connect("app", declaring(200, 246, bytes(246)));

        long id = gw.relayCompleted("GET");

        assertThat(gw.head(id).length()).isEqualTo(246);
        assertThat(gw.pushes(id).get(0).data().get("length").longValue()).isEqualTo(246);
        assertThat(gw.responseBody(id)).hasSize(246);
    }

    /** A target that declares no length: relay-head has no length member (the client gets it chunked). */
    @Test
    void relayRequest_targetDeclaresNoLength_headHasNoLength() throws Exception {
        FakeGateway gw = connect("app", answering(200, bytes(10)));

        long id = gw.relayCompleted("GET");

        assertThat(gw.pushes(id).get(0).data().has("length")).isFalse();
    }

    /** RFC 9110 §9.3.2, §8.6: a HEAD's head carries the length a GET would have had, and no chunk follows. */
    @Test
    void relayRequest_headDeclaringTheGetLength_headCarriesIt_andNoChunk() throws Exception {
        FakeGateway gw = connect("app", declaring(200, 246, bytes(246)));

        long id = gw.relayCompleted("HEAD");

        assertThat(gw.head(id).length()).isEqualTo(246);
        assertThat(gw.chunks(id)).isEmpty();
    }

    /**
     * RFC 9110 §8.6 (no Content-Length in 1xx or 204; a 304's is the representation's) and §15.3.6
     * (a 205 declares 0): what a target declares is framed by ResponseFraming before it crosses.
     */
    @ParameterizedTest(name = "{0} declared as {1} crosses as {2}")
    @CsvSource({"204,5,-1", "205,5,0", "205,-1,0", "304,246,246"})
    void relayRequest_bodylessStatusDeclaringALength_crossesAsResponseFramingAllows(
            int status, long declared, long sent) throws Exception {
        FakeGateway gw = connect("app", declaring(status, declared, bytes(5)));

        long id = gw.relayCompleted("GET");

        assertThat(gw.head(id).length()).isEqualTo(sent);
        assertThat(gw.chunks(id)).as("no relay-chunk for %d", status).isEmpty();
    }

    // ---- failures ----

    @Test
    void relayRequest_targetThrows_answersInternalWithTheMessage() throws Exception {
        FakeGateway gw = connect("app", request -> {
            throw new IllegalStateException("boom in target");
        });

        long id = gw.relayRequest("r-1", "app", "GET", false);

        assertThat(gw.error(id, ErrorCode.INTERNAL).message()).contains("boom in target");
        assertThat(gw.pushes(id)).as("no push before a response").isEmpty();
    }

    @Test
    void relayRequest_targetStageFails_answersInternal() throws Exception {
        FakeGateway gw = connect("app", request -> CompletableFuture.failedFuture(new IllegalStateException("nope")));

        long id = gw.relayRequest("r-1", "app", "GET", false);

        assertThat(gw.error(id, ErrorCode.INTERNAL).message()).contains("nope");
    }

    @Test
    void relayRequest_bodyFailsAfterHead_answersInternalAfterTheChunksSent() throws Exception {
        byte[] sent = bytes(300_000);
        FakeGateway gw = connect(
                "app",
                request -> CompletableFuture.completedFuture(new RelayedResponse(
                        200,
                        List.of(),
                        ArrayBody.failingAtEnd(sent, 100_000, new IllegalStateException("disk gone")))));

        long id = gw.relayRequest("r-1", "app", "GET", false);

        Frame.ErrorFrame error = gw.error(id, ErrorCode.INTERNAL);
        assertThat(error.message()).contains("disk gone");
        assertThat(gw.responseBody(id)).as("the chunks sent before the failure").isEqualTo(sent);
        assertThat(gw.received.indexOf(error))
                .as("the error comes after every push")
                .isGreaterThan(
                        gw.received.indexOf(gw.chunks(id).get(gw.chunks(id).size() - 1)));
    }

    @Test
    void relayRequest_headersOverTheBound_answersInternal() throws Exception {
        List<Header> headers = new ArrayList<>();
        for (int i = 0; i < 101; i++) {
            headers.add(new Header("x-h" + i, "v"));
        }
        FakeGateway gw =
                connect("app", request -> CompletableFuture.completedFuture(new RelayedResponse(200, headers, null)));

        long id = gw.relayRequest("r-1", "app", "GET", false);

        assertThat(gw.error(id, ErrorCode.INTERNAL).message())
                .as("names the header bound")
                .contains("headers");
        assertThat(gw.pushes(id)).as("no head past the bound").isEmpty();
    }

    // ---- cancel and close ----

    @Test
    void relayCancel_abortsTheSignal_answersCancelled_andNoPushFollows() throws Exception {
        ArrayBody endless = ArrayBody.endless(1000);
        List<HeldWrites> held = new ArrayList<>(); // paces the endless body: one push per release
        FakeGateway gw = connectHeld(endless, held);
        long id = gw.relayRequest("r-1", "app", "GET", false);
        for (int round = 0; round < 3; round++) {
            tasks.runUntilIdle();
            held.get(0).releaseAll();
        }
        tasks.runUntilIdle();
        assertThat(gw.chunks(id)).as("the endless body streams").hasSizeGreaterThanOrEqualTo(3);

        long cancel = gw.cancel("r-1");

        assertThat(gw.result(cancel)).as("relay.cancel answers {}").isEmpty();
        assertThat(gw.result(id).get("cancelled").booleanValue())
                .as("relay.request answers cancelled")
                .isTrue();
        assertThat(requests.get(0).signal().isAborted())
                .as("cancel aborts the signal")
                .isTrue();
        assertThat(endless.cancelled()).as("the response body is cancelled").isDone();
        int after = gw.pushes(id).size();
        held.get(0).releaseAll(); // A write still held must not let another part out.
        tasks.runUntilIdle();
        int answerAt = gw.received.indexOf(gw.await(id));
        assertThat(gw.received.subList(answerAt, gw.received.size()))
                .as("no push for the relay after its cancelled answer, once everything ran")
                .noneMatch(f -> f instanceof Frame.Push && f.id() == id);
        assertThat(gw.pushes(id)).as("no push after the cancel").hasSize(after);
    }

    @Test
    void connectionClose_abortsTheSignal() {
        FakeGateway gw = connect("app", hanging());
        gw.relayRequest("r-1", "app", "POST", true);
        RelayedRequest request = onlyRequest();

        gw.channel.close("gateway going away");

        await("close aborts the signal").atMost(Duration.ofSeconds(5)).until(request.signal()::isAborted);
        CompletableFuture<ByteBuffer> read = body(request).next().toCompletableFuture();
        await("the request body fails on close").atMost(Duration.ofSeconds(5)).until(read::isCompletedExceptionally);
    }

    // ---- refusals ----

    @ParameterizedTest
    @ValueSource(strings = {"relay.request", "relay.body", "relay.cancel"})
    void relayOps_onLocalAdmin_areForbidden(String op) throws Exception {
        FakeGateway gw = connect(
                UplinkSession.Role.LOCAL_ADMIN, options("app", hanging()).build());

        long id = op.equals("relay.request")
                ? gw.relayRequest("r-1", "app", "GET", false)
                : gw.call(
                        op,
                        JsonNodeFactory.instance
                                .objectNode()
                                .put("relayId", "r-1")
                                .put("end", true));

        gw.error(id, ErrorCode.FORBIDDEN);
        assertThat(requests).as("no target called on a local admin session").isEmpty();
    }

    @Test
    void relayRequest_reusedActiveRelayId_isBadRequest() throws Exception {
        FakeGateway gw = connect("app", hanging());
        gw.relayRequest("r-1", "app", "GET", false);

        long second = gw.relayRequest("r-1", "app", "GET", false);

        assertThat(gw.error(second, ErrorCode.BAD_REQUEST)
                        .details()
                        .get("field")
                        .textValue())
                .isEqualTo("relayId");
    }

    @Test
    void relayBodyAndCancel_forUnknownRelay_answerEmpty() throws Exception {
        FakeGateway gw = connect("app", hanging());

        assertThat(gw.result(gw.chunk("nope", 0, bytes(3))))
                .as("unknown relay.body answers {}")
                .isEmpty();
        assertThat(gw.result(gw.end("nope")))
                .as("unknown relay.body end answers {}")
                .isEmpty();
        assertThat(gw.result(gw.cancel("nope")))
                .as("unknown relay.cancel answers {}")
                .isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"outOfOrder", "repeated", "chunkAfterEnd", "noBody"})
    void relayBody_brokenOrder_isBadRequest_andAbortsTheRelay(String broken) throws Exception {
        FakeGateway gw = connect("app", hanging());
        long id = gw.relayRequest("r-1", "app", "PUT", !broken.equals("noBody"));
        long bad = switch (broken) {
            case "outOfOrder" -> gw.chunk("r-1", 1, bytes(3));
            case "repeated" -> {
                gw.chunk("r-1", 0, bytes(3));
                yield gw.chunk("r-1", 0, bytes(3));
            }
            case "chunkAfterEnd" -> {
                gw.end("r-1");
                yield gw.chunk("r-1", 0, bytes(3));
            }
            default -> gw.chunk("r-1", 0, bytes(3));
        };

        gw.error(bad, ErrorCode.BAD_REQUEST);
        gw.error(id, ErrorCode.BAD_REQUEST);
        AbortSignal signal = onlyRequest().signal();
        await("the relay's signal aborts (" + broken + ")")
                .atMost(Duration.ofSeconds(5))
                .until(signal::isAborted);
        assertThat(gw.result(gw.chunk("r-1", 5, bytes(3))))
                .as("the aborted relay is no longer held: relay.body answers {}")
                .isEmpty();
    }

    @Test
    void relayRequest_17thActiveRelay_isBadRequest_16Accepted() throws Exception {
        FakeGateway gw = connect("app", stoppingOnAbort());
        for (int i = 0; i < 16; i++) {
            gw.relayRequest("r-" + i, "app", "GET", false);
        }
        long seventeenth = gw.relayRequest("r-16", "app", "GET", false);

        gw.error(seventeenth, ErrorCode.BAD_REQUEST);
        await().atMost(Duration.ofSeconds(5)).until(() -> requests.size() == 16);
        StatusReport status =
                StatusReport.parse(gw.result(gw.call("status.get", JsonNodeFactory.instance.objectNode())));
        assertThat(status.activeRelays()).as("16 relays accepted").isEqualTo(16);
        gw.result(gw.cancel("r-3"));
        long reused = gw.relayRequest("r-17", "app", "GET", false);
        StatusReport after =
                StatusReport.parse(gw.result(gw.call("status.get", JsonNodeFactory.instance.objectNode())));
        assertThat(after.activeRelays())
                .as("a slot freed by a cancel is usable again")
                .isEqualTo(16);
        assertThat(gw.answer(reused)).as("the relay in the freed slot runs").isNotDone();
    }

    /**
     * Regression (HTTP/2's rapid reset, CVE-2023-44487, in v1's terms; found by a review of the
     * worker): a relay.cancel freed the relay's slot at once while its target still ran, so a
     * gateway cancelling in a loop kept any number of exchanges running upstream. The id is free
     * at once; the slot only once the target ended: 16 cancelled relays whose targets ignore the
     * abort leave no room for a 17th.
     */
    @Test
    void relayCancel_whileTheTargetRuns_keepsTheSlotUntilTheTargetEnds() throws Exception {
        int limit = (int) Limits.ACTIVE_RELAYS_PER_CONNECTION.max();
        CompletableFuture<@Nullable Void> release = new CompletableFuture<>();
        FakeGateway gw = connect("app", request -> release.thenApply(v -> new RelayedResponse(204, List.of(), null)));
        for (int i = 0; i < limit; i++) {
            gw.relayRequest("r-" + i, "app", "GET", false);
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> requests.size() == limit);
        for (int i = 0; i < limit; i++) {
            gw.result(gw.cancel("r-" + i));
        }
        assertThat(requests).allSatisfy(r -> assertThat(r.signal().isAborted()).isTrue());

        long past = gw.relayRequest("r-0", "app", "GET", false);

        assertThat(gw.error(past, ErrorCode.BAD_REQUEST).details().get("field").textValue())
                .as("refused for the slots, not the id")
                .isEqualTo("activeRelaysPerConnection");
        assertThat(requests).as("the refused relay reached no target").hasSize(limit);
        assertThat(activeRelays(gw)).isEqualTo(limit);

        release.complete(null);

        await("the ended targets free their slots")
                .atMost(Duration.ofSeconds(5))
                .until(() -> activeRelays(gw) == 0);
        long again = gw.relayRequest("r-0", "app", "GET", false);
        assertThat(gw.result(again)).as("a relay runs again, to its end").isEmpty();
        assertThat(gw.head(again).status()).isEqualTo(204);
    }

    private static int activeRelays(FakeGateway gw) throws Exception {
        return StatusReport.parse(gw.result(gw.call("status.get", JsonNodeFactory.instance.objectNode())))
                .activeRelays();
    }

    @Test
    void relayBody_rightBehindRelayRequest_isNeverDropped() throws Exception {
        FakeGateway gw = connect(
                "app",
                request -> TestBodies.readAll(body(request))
                        .thenApply(body -> new RelayedResponse(200, List.of(), new ArrayBody(body, 1000))));
        for (int i = 0; i < 50; i++) {
            String relayId = "r-" + i;
            long id = gw.relayRequest(relayId, "app", "POST", true);
            long chunk = gw.chunk(relayId, 0, bytes(7));
            long end = gw.end(relayId);

            assertThat(gw.result(chunk)).as("round %d: chunk answered", i).isEmpty();
            assertThat(gw.result(end)).as("round %d: end answered", i).isEmpty();
            assertThat(gw.result(id)).as("round %d: relay completed", i).isEmpty();
            assertThat(gw.responseBody(id))
                    .as("round %d: the chunk reached the target", i)
                    .isEqualTo(bytes(7));
        }
    }

    @Test
    void relayRequest_unknownTarget_isRelayTargetMissing_beforeAnythingIsCalled() throws Exception {
        FakeGateway gw = connect("app", hanging());

        long id = gw.relayRequest("r-1", "other", "GET", false);

        assertThat(gw.error(id, ErrorCode.RELAY_TARGET_MISSING)
                        .details()
                        .get("target")
                        .textValue())
                .isEqualTo("other");
        assertThat(requests).as("no target called").isEmpty();
    }

    @Test
    void unknownOperation_isBadRequest() throws Exception {
        FakeGateway gw = connect("app", hanging());

        gw.error(gw.call("device.exec", JsonNodeFactory.instance.objectNode()), ErrorCode.BAD_REQUEST);
    }

    // ---- status, gate, corrupt frames ----

    @ParameterizedTest
    @ValueSource(strings = {"GATEWAY_UPLINK", "LOCAL_ADMIN"})
    void statusGet_answersOnEitherRole(String role) throws Exception {
        FakeGateway gw = connect(
                UplinkSession.Role.valueOf(role), options("app", hanging()).build());

        StatusReport status =
                StatusReport.parse(gw.result(gw.call("status.get", JsonNodeFactory.instance.objectNode())));

        assertThat(status).isEqualTo(new StatusReport("w1", List.of("app"), 0, STARTED));
    }

    @Test
    void operations_waitForTheStartupGate_inFrameOrder() throws Exception {
        CompletableFuture<Void> gate = new CompletableFuture<>();
        FakeGateway gw = connectExact(options(
                        "app",
                        request -> TestBodies.readAll(body(request))
                                .thenApply(b -> new RelayedResponse(200, List.of(), new ArrayBody(b, 100))))
                .startupGate(gate));
        long status = gw.call("status.get", JsonNodeFactory.instance.objectNode());
        long id = gw.relayRequest("r-1", "app", "PUT", true);
        long chunk = gw.chunk("r-1", 0, bytes(9));
        long end = gw.end("r-1");
        tasks.runUntilIdle();
        assertThat(gw.received)
                .as("nothing answers before the gate opens, once everything ran")
                .isEmpty();
        assertThat(requests).as("no target called before the gate opens").isEmpty();

        gate.complete(null);

        gw.result(status);
        assertThat(gw.result(chunk))
                .as("the chunk held behind the gate finds its relay")
                .isEmpty();
        gw.result(end);
        assertThat(gw.result(id)).isEmpty();
        assertThat(gw.responseBody(id)).isEqualTo(bytes(9));
    }

    /**
     * A starting worker holds the calls that arrive before its gate, up to {@link
     * UplinkSession#HELD_OTHER_CALLS} (status, requests, cancels) and {@link
     * UplinkSession#HELD_BODIES} bodies; one past either is answered {@code WORKER_UNREACHABLE} (a
     * 503, worth a retry) at once, and the held ones are all served when the gate opens.
     * Regression (a review): v1 calls were held without a count, a frame each, until the gate.
     */
    @Test
    void callsBeforeTheStartupGate_heldUpToTheirBounds_onePastAnsweredAtOnce() throws Exception {
        CompletableFuture<Void> gate = new CompletableFuture<>();
        FakeGateway gw = connectExact(options("app", hanging()).startupGate(gate));
        List<Long> held = new ArrayList<>();
        for (int i = 0; i < UplinkSession.HELD_OTHER_CALLS; i++) {
            held.add(gw.call("status.get", JsonNodeFactory.instance.objectNode()));
        }
        long pastCalls = gw.call("status.get", JsonNodeFactory.instance.objectNode());
        for (int i = 0; i < UplinkSession.HELD_BODIES; i++) {
            gw.chunk("r-" + i, 0, bytes(1)); // held: no relay is known before the gate
        }
        long pastBodies = gw.chunk("r-past", 0, bytes(1));

        Frame.ErrorFrame calls = gw.error(pastCalls, ErrorCode.WORKER_UNREACHABLE);
        Frame.ErrorFrame bodies = gw.error(pastBodies, ErrorCode.WORKER_UNREACHABLE);
        tasks.runUntilIdle();

        assertThat(calls.message()).contains("starting");
        assertThat(bodies.message()).contains("relay bodies");
        assertThat(gw.received).as("the held calls wait for the gate").hasSize(2);
        gate.complete(null);
        for (long id : held) {
            assertThat(StatusReport.parse(gw.result(id)).workerId()).isEqualTo("w1");
        }
    }

    @Test
    void corruptFrame_withAnId_answersBadRequest_withoutAnId_closesTheChannel() throws Exception {
        InMemoryFrameChannels.Pair<FakeGateway, UplinkSession> pair = InMemoryFrameChannels.pair(
                FakeGateway::new,
                ch -> UplinkSession.start(
                        ch,
                        UplinkSession.Role.GATEWAY_UPLINK,
                        options("app", hanging()).build()));
        opened.add(pair.gatewayEnd());
        FakeGateway gw = pair.gateway();
        UplinkSession session = pair.worker();

        assertThat(session.onCorruptFrame(corrupt("{\"type\":\"call\",\"id\":42,\"op\":\"Bad Op\",\"input\":{}}")))
                .as("the gateway's uplink takes a corrupt frame (the transport does not close)")
                .isTrue();
        gw.error(42, ErrorCode.BAD_REQUEST);

        assertThat(session.onCorruptFrame(corrupt("not json"))).isTrue();
        await("a corrupt frame without an id closes the channel")
                .atMost(Duration.ofSeconds(5))
                .until(() -> !pair.workerEnd().isOpen());
    }

    @Test
    void corruptFrame_onLocalAdmin_isLeftToTheTransport_whichCloses() throws Exception {
        InMemoryFrameChannels.Pair<FakeGateway, UplinkSession> pair = InMemoryFrameChannels.pair(
                tasks,
                FakeGateway.drainedBy(tasks),
                ch -> UplinkSession.start(
                        ch,
                        UplinkSession.Role.LOCAL_ADMIN,
                        options("app", hanging()).executor(tasks).build()));
        opened.add(pair.gatewayEnd());

        assertThat(pair.worker()
                        .onCorruptFrame(corrupt("{\"type\":\"call\",\"id\":42,\"op\":\"Bad Op\",\"input\":{}}")))
                .as("a local admin session does not answer corrupt frames: the transport closes (1007)")
                .isFalse();
        tasks.runUntilIdle();
        assertThat(pair.gateway().received)
                .as("nothing is answered, once everything ran")
                .isEmpty();
    }

    private static CorruptFrameException corrupt(String text) {
        try {
            FrameCodec.decode(text);
        } catch (CorruptFrameException e) {
            return e;
        }
        throw new AssertionError("expected a corrupt frame: " + text);
    }

    private static byte[] bytes(int size) {
        return TestBodies.pattern(size, 0);
    }
}
