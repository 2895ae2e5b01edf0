package com.spectrayan.spector.uplink.gateway;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.uplink.gateway.RawWorker.empty;
import static com.spectrayan.spector.uplink.gateway.RawWorker.relayId;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.call;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.get;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.spectorFailure;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.text;
import static com.spectrayan.spector.uplink.testing.TestBodies.pattern;
import static com.spectrayan.spector.uplink.testing.TestBodies.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.ManualScheduler;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.internal.wire.StatusGet;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.FedBody;
import com.spectrayan.spector.uplink.testing.TestBodies;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class GatewayRelayTest {
    private static final int CHUNK = (int) Limits.CHUNK_BYTES.max();

    private final RelayFixture w1 = new RelayFixture();
    private final ScheduledExecutorService scheduler = w1.scheduler;
    private final WorkerDirectory directory = w1.directory;
    private final RawWorker worker = w1.worker;
    private final GatewayRelay relay = w1.relay;

    @AfterEach
    void tearDown() {
        w1.close();
    }

    /** Waits until the gateway processed every frame the worker sent so far (one thread, in order). */
    private void gatewayCaughtUp() {
        CompletionStage<StatusReport> status = w1.client.statusGet();
        Frame.Call get = worker.take(StatusGet.OP);
        worker.result(get.id(), new StatusReport("w1", List.of("app"), 1, Instant.EPOCH).toJson());
        done(status, "the status.get barrier");
    }

    @Test
    void relay_workerWithoutLiveLink_failsUnreachableBeforeSendingAnything() {
        SpectorException e = spectorFailure(relay.relay("w2", get()), ErrorCode.WORKER_UNREACHABLE, "no live link");
        w1.client.close("gone");
        Waits.until("the closed link leaves the directory", () -> directory.live("w1") == null);
        SpectorException closed = spectorFailure(relay.relay("w1", get()), ErrorCode.WORKER_UNREACHABLE, "closed link");

        assertThat(e.getMessage()).as("names the worker").contains("w2");
        assertThat(List.of(e, closed))
                .as("marked as nothing sent, so the caller may take the relay to another replica")
                .allMatch(GatewayRelay::isNoLink);
        assertThat(e.details()).containsEntry("reason", "no-link");
        assertThat(worker.seen(RelayRequest.OP))
                .as("nothing sent to a worker without a live link")
                .isEmpty();
    }

    /**
     * A relay asked for while the gateway stops (its scheduler shut down, so the deadline cannot be
     * armed) fails, nothing sent, and keeps neither its worker's slot nor, for an upgrade, an
     * upgrade permit: it threw, and both leaked until the process ended (found by a review).
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void relay_whileTheSchedulerIsShutDown_failsAndKeepsNoSlotOrPermit(boolean upgrade) {
        scheduler.shutdownNow();
        RelayCall call = upgrade
                ? new RelayCall(
                        "app",
                        new RelayedRequest(
                                "GET",
                                URI.create("http://app.local/ws"),
                                List.of(),
                                "acme",
                                null,
                                new FedBody(),
                                new AbortSignal(),
                                "websocket"))
                : get();

        spectorFailure(relay.relay("w1", call), ErrorCode.WORKER_UNREACHABLE, "a relay the stopping scheduler refused");

        assertThat(relay.upgrades("w1")).as("upgrade permits held").isZero();
        assertThat(relay.trackedWorkers())
                .as("workers with a slot held or awaited")
                .isZero();
        assertThat(worker.seen(RelayRequest.OP))
                .as("relays the worker was sent")
                .isEmpty();
    }

    @Test
    void relay_get_sendsRequestFields_andResolvesAtHead_withChunksPartByPartBeforeTheEnd() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        RelayRequest sent = RelayRequest.parse(request.input());
        assertThat(sent.url()).isEqualTo("https://app.local/a?x=1");
        assertThat(sent.method()).isEqualTo("GET");
        assertThat(sent.target()).isEqualTo("app");
        assertThat(sent.tenant()).isEqualTo("acme");
        assertThat(sent.leaseId()).isEqualTo("l-1");
        assertThat(sent.headers()).containsExactly(new Header("x-a", "1"));
        assertThat(sent.hasBody()).isFalse();

        worker.push(
                request.id(),
                RelayHead.PUSH,
                new RelayHead(200, List.of(new Header("content-type", "text/plain"))).toJson());
        RelayedResponse response = done(stage, "the stage resolves at the head");
        assertThat(response.status()).isEqualTo(200);
        assertThat(response.headers()).containsExactly(new Header("content-type", "text/plain"));
        BodySource body = TestBodies.body(response);

        worker.chunk(request.id(), utf8("one"));
        assertThat(text(done(body.next(), "first part")))
                .as("first part before the end")
                .isEqualTo("one");
        worker.chunk(request.id(), utf8("two"));
        assertThat(text(done(body.next(), "second part")))
                .as("second part before the end")
                .isEqualTo("two");
        CompletionStage<?> end = body.next();
        assertThat(end.toCompletableFuture().isDone())
                .as("the body does not end before {}")
                .isFalse();
        worker.result(request.id(), empty());
        assertThat(done(end, "the end")).as("{} ends the body").isNull();
        Waits.untilAsserted(() ->
                assertThat(relay.running("w1")).as("slot released at the end").isZero());
    }

    @ParameterizedTest
    @ValueSource(ints = {204, 205, 304})
    void relay_statusWithoutBody_resolvesWithNullBody(int status) {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), status);
        RelayedResponse response = done(stage, "head " + status);
        assertThat(response.body()).as(status + " has a null body").isNull();
        worker.result(request.id(), empty());
    }

    @Test
    void relay_headMethod_resolvesWithNullBody() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", call("HEAD", null, new AbortSignal()));
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        assertThat(done(stage, "HEAD").body()).as("HEAD has a null body").isNull();
        worker.result(request.id(), empty());
    }

    private void head(Frame.Call request, int status, long length) {
        worker.push(request.id(), RelayHead.PUSH, new RelayHead(status, List.of(), length).toJson());
    }

    /** RFC 9110 §8.6: the worker's declared length reaches the caller, and a body of exactly that length ends. */
    @Test
    void relay_headDeclaringALength_resolvesWithThatContentLength_andABodyOfExactlyItEnds() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        head(request, 200, 6);
        RelayedResponse response = done(stage, "head");
        assertThat(response.contentLength()).isEqualTo(6);
        BodySource body = TestBodies.body(response);

        worker.chunk(request.id(), utf8("abc"));
        worker.chunk(request.id(), utf8("def"));
        worker.result(request.id(), empty());

        // Parts that queued before the read come as one (ResponseBody.MAX_COALESCED_BYTES).
        StringBuilder read = new StringBuilder(text(done(body.next(), "first part")));
        if (read.length() < 6) {
            read.append(text(done(body.next(), "second part")));
        }
        assertThat(read.toString()).as("the 6 declared bytes, in order").isEqualTo("abcdef");
        assertThat(done(body.next(), "the end"))
                .as("6 of 6 bytes: the body ends")
                .isNull();
        assertThat(worker.cancelled(relayId(request))).isFalse();
        Waits.untilAsserted(() -> assertThat(relay.running("w1")).isZero());
    }

    @Test
    void relay_headWithoutLength_resolvesWithAnUnknownContentLength() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        assertThat(done(stage, "head").contentLength()).isEqualTo(-1);
        worker.result(request.id(), empty());
    }

    /** RFC 9110 §8.6: the length is a promise; one byte past it fails the body INTERNAL at once and cancels. */
    @Test
    void relay_chunksRunningOnePastTheDeclaredLength_failTheBodyInternalNamingTheWorker_andCancel() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        head(request, 200, 5);
        BodySource body = TestBodies.body(done(stage, "head"));
        worker.chunk(request.id(), utf8("abc"));
        assertThat(text(done(body.next(), "3 of 5 bytes"))).isEqualTo("abc");

        worker.chunk(request.id(), utf8("def"));

        Throwable t = failure(body.next(), "6 of 5 bytes");
        assertThat(t).isInstanceOf(SpectorException.class);
        assertThat(((SpectorException) t).code()).isEqualTo(ErrorCode.INTERNAL);
        assertThat(t.getMessage()).isEqualTo("worker w1 sent 6 bytes of a relayed response it declared as 5");
        Waits.until("overrun: relay.cancel sent", () -> worker.cancelled(relayId(request)));
        worker.result(request.id(), RawWorker.empty().put("cancelled", true));
        Waits.untilAsserted(() -> assertThat(relay.running("w1")).isZero());
    }

    /** RFC 9110 §8.6: a body that ends one byte short of its declared length fails INTERNAL after the bytes that came. */
    @Test
    void relay_answeredOneByteShortOfTheDeclaredLength_failsTheBodyInternalAfterTheBytesThatCame() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        head(request, 200, 6);
        BodySource body = TestBodies.body(done(stage, "head"));
        worker.chunk(request.id(), utf8("abcde"));
        worker.result(request.id(), empty());

        assertThat(text(done(body.next(), "the bytes that came"))).isEqualTo("abcde");
        Throwable t = failure(body.next(), "5 of 6 bytes, then the answer");
        assertThat(t).isInstanceOf(SpectorException.class);
        assertThat(((SpectorException) t).code()).isEqualTo(ErrorCode.INTERNAL);
        assertThat(t.getMessage()).isEqualTo("worker w1 ended the relayed response after 5 of its declared 6 bytes");
        gatewayCaughtUp();
        assertThat(worker.cancelled(relayId(request)))
                .as("the relay already ended on the worker: no cancel")
                .isFalse();
        Waits.untilAsserted(() -> assertThat(relay.running("w1")).isZero());
    }

    /** RFC 9110 §9.3.2, §8.6: a HEAD resolves with the GET's length and no body; a chunk after it breaks the protocol. */
    @Test
    void relay_headMethodDeclaringTheGetLength_resolvesWithItAndNoBody_andAChunkAfterItCancels() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", call("HEAD", null, new AbortSignal()));
        Frame.Call request = worker.take(RelayRequest.OP);
        head(request, 200, 246);
        RelayedResponse response = done(stage, "HEAD");
        assertThat(response.contentLength()).isEqualTo(246);
        assertThat(response.body()).isNull();

        worker.chunk(request.id(), utf8("stray"));

        Waits.until("a chunk for a bodyless answer: relay.cancel sent", () -> worker.cancelled(relayId(request)));
        worker.result(request.id(), RawWorker.empty().put("cancelled", true));
        Waits.untilAsserted(() -> assertThat(relay.running("w1")).isZero());
    }

    @Test
    void upload_workerAnswersSlowly_neverMoreThanFourBodiesUnanswered() {
        byte[] data = pattern(3 * 1024 * 1024, 0); // 12 chunks + end = 13 relay.body calls
        int total = 13;
        CompletionStage<RelayedResponse> stage =
                relay.relay("w1", call("PUT", new ArrayBody(data, 1024 * 1024), new AbortSignal()));
        Frame.Call request = worker.take(RelayRequest.OP);
        assertThat(RelayRequest.parse(request.input()).hasBody()).isTrue();
        int answered = 0;
        int maxUnanswered = 0;
        while (answered < total) {
            int expected = Math.min(Limits.UNANSWERED_BODIES, total - answered);
            Waits.until(
                    "the gateway fills its window of relay.body calls",
                    () -> worker.waiting(RelayBody.OP).size() >= expected);
            int unanswered = worker.waiting(RelayBody.OP).size();
            maxUnanswered = Math.max(maxUnanswered, unanswered);
            assertThat(unanswered)
                    .as("window bound: at most %d relay.body sent and not answered", Limits.UNANSWERED_BODIES)
                    .isLessThanOrEqualTo(Limits.UNANSWERED_BODIES);
            Frame.Call oldest = worker.take(RelayBody.OP);
            worker.result(oldest.id(), empty());
            answered++;
        }
        assertThat(maxUnanswered).as("the window was used").isEqualTo(Limits.UNANSWERED_BODIES);
        worker.head(request.id(), 201);
        worker.result(request.id(), empty());
        assertThat(done(stage, "upload").status()).isEqualTo(201);
    }

    @Test
    void upload_twentyMiB_isSplitIntoPartsOfAtMost256KiB_inSeqOrder() {
        worker.autoAnswerEmpty(RelayBody.OP);
        byte[] data = pattern(20 * 1024 * 1024, 0);
        CompletionStage<RelayedResponse> stage =
                relay.relay("w1", call("PUT", new ArrayBody(data, 700 * 1024), new AbortSignal()));
        Frame.Call request = worker.take(RelayRequest.OP);
        Waits.until(
                "the upload ends",
                () -> worker.seen(RelayBody.OP).stream()
                        .anyMatch(c -> RelayBody.parse(c.input()) instanceof RelayBody.End));

        ByteArrayOutputStream received = new ByteArrayOutputStream();
        List<RelayBody> parts = new ArrayList<>();
        worker.seen(RelayBody.OP).forEach(c -> parts.add(RelayBody.parse(c.input())));
        assertThat(parts.get(parts.size() - 1)).as("end comes last").isInstanceOf(RelayBody.End.class);
        for (int i = 0; i < parts.size() - 1; i++) {
            RelayBody.Chunk chunk = (RelayBody.Chunk) parts.get(i);
            assertThat(chunk.seq()).as("seq order").isEqualTo(i);
            assertThat(chunk.chunk().remaining()).as("part bound 256 KiB").isBetween(1, CHUNK);
            byte[] bytes = new byte[chunk.chunk().remaining()];
            chunk.chunk().get(bytes);
            received.write(bytes, 0, bytes.length);
        }
        assertThat(received.toByteArray()).as("the body arrives byte for byte").isEqualTo(data);

        worker.head(request.id(), 204);
        worker.result(request.id(), empty());
        assertThat(done(stage, "upload").status()).isEqualTo(204);
    }

    @Test
    void upload_workerAnswersBeforeReadingBody_stopsReadingAndCancelsCallersBody() {
        ArrayBody body = new ArrayBody(pattern(8 * 1024 * 1024, 0), CHUNK);
        CompletionStage<RelayedResponse> stage = relay.relay("w1", call("POST", body, new AbortSignal()));
        Frame.Call request = worker.take(RelayRequest.OP);
        Waits.until("the window fills", () -> worker.waiting(RelayBody.OP).size() == Limits.UNANSWERED_BODIES);
        worker.head(request.id(), 401);
        worker.result(request.id(), empty());
        RelayedResponse response = done(stage, "401");
        assertThat(response.status()).isEqualTo(401);
        Waits.untilAsserted(() -> assertThat(body.cancelled())
                .as("the caller's body is cancelled once the call settled")
                .isDone());
        int reads = body.reads();
        worker.waiting(RelayBody.OP).forEach(c -> worker.result(c.id(), empty()));
        gatewayCaughtUp();
        assertThat(body.reads())
                .as("no read of the caller's body after the call settled")
                .isEqualTo(reads);
    }

    @Test
    void response_callerReadsNothing_bodyFailsFellBehindOnce64MiBBuffered_andCancelIsSent() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        BodySource body = TestBodies.body(done(stage, "head"));
        byte[] chunk = pattern(CHUNK, 0);
        int atCap = (int) (Limits.UNREAD_RELAY_BYTES / CHUNK); // 256 chunks = 64 MiB
        List<CompletableFuture<Void>> sends = new ArrayList<>();
        for (int i = 0; i < atCap; i++) {
            sends.add(w1.ends
                    .workerEnd()
                    .send(new Frame.Push(
                            request.id(), RelayChunk.PUSH, RelayChunk.of(chunk).toJson()))
                    .toCompletableFuture());
            if (sends.size() == 16) {
                done(CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)), "push batch");
                sends.clear();
            }
        }
        gatewayCaughtUp();
        assertThat(worker.cancelled(relayId(request)))
                .as("unread cap: no cancel while exactly 64 MiB is buffered")
                .isFalse();
        int total = 80 * 4; // 80 MiB in all
        for (int i = atCap; i < total && !worker.cancelled(relayId(request)); i++) {
            worker.chunk(request.id(), chunk);
            if (i % 16 == 0) {
                gatewayCaughtUp();
            }
        }
        Waits.until("unread cap: relay.cancel sent past 64 MiB", () -> worker.cancelled(relayId(request)));
        Throwable t = failure(body.next(), "the unread body");
        assertThat(t.getMessage())
                .as("unread cap: the body says the reader fell behind")
                .contains("fell behind");
    }

    @Test
    void abort_beforeHead_failsStageWithReason_andSendsCancel() {
        AbortSignal signal = new AbortSignal();
        CompletionStage<RelayedResponse> stage = relay.relay("w1", call("GET", null, signal));
        Frame.Call request = worker.take(RelayRequest.OP);
        IllegalStateException reason = new IllegalStateException("caller went away");
        signal.abort(reason);
        assertThat(failure(stage, "abort before head"))
                .as("cancel: stage fails with the abort reason")
                .isSameAs(reason);
        Waits.until("cancel: relay.cancel sent", () -> worker.cancelled(relayId(request)));
        worker.result(request.id(), RawWorker.empty().put("cancelled", true));
        Waits.untilAsserted(() -> assertThat(relay.running("w1")).isZero());
    }

    @Test
    void abort_afterHead_failsBodyWithReason_andSendsCancel() {
        AbortSignal signal = new AbortSignal();
        CompletionStage<RelayedResponse> stage = relay.relay("w1", call("GET", null, signal));
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        BodySource body = TestBodies.body(done(stage, "head"));
        IllegalStateException reason = new IllegalStateException("caller went away");
        signal.abort(reason);
        assertThat(failure(body.next(), "abort after head"))
                .as("cancel: body fails with the abort reason")
                .isSameAs(reason);
        Waits.until("cancel: relay.cancel sent", () -> worker.cancelled(relayId(request)));
    }

    @Test
    void callerBodyError_failsStageWithIt_andSendsCancel() {
        IllegalStateException broken = new IllegalStateException("upload broke");
        CompletionStage<RelayedResponse> stage =
                relay.relay("w1", call("PUT", new ArrayBody(pattern(1024, 0), 512, broken), new AbortSignal()));
        Frame.Call request = worker.take(RelayRequest.OP);
        assertThat(failure(stage, "caller body error"))
                .as("cancel: stage fails with the body's error")
                .isSameAs(broken);
        Waits.until("cancel: relay.cancel sent", () -> worker.cancelled(relayId(request)));
    }

    @Test
    void callerCancelsResponseBody_sendsCancel() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        BodySource body = TestBodies.body(done(stage, "head"));
        body.cancel(new IllegalStateException("reader gone"));
        Waits.until("cancel: relay.cancel sent", () -> worker.cancelled(relayId(request)));
    }

    // The deadline tests run the relay's timer on a ManualScheduler: time moves only when the test
    // says, so "not a nanosecond before the deadline" and "at the deadline" are exact.

    @Test
    void deadline_silentWorker_failsUnreachableAtExactlyTheDeadline_withExactMessage_andSendsCancel() {
        ManualScheduler clock = new ManualScheduler();
        GatewayRelay quick = new GatewayRelay(directory, Duration.ofMillis(200), 8, clock);
        CompletionStage<RelayedResponse> stage = quick.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        clock.advance(Duration.ofMillis(200).minusNanos(1));
        assertThat(stage.toCompletableFuture())
                .as("1 ns before the 200 ms deadline")
                .isNotDone();
        clock.advance(Duration.ofNanos(1));
        assertThat(stage.toCompletableFuture()).as("at the deadline").isCompletedExceptionally();
        SpectorException e = spectorFailure(stage, ErrorCode.WORKER_UNREACHABLE, "deadline");
        assertThat(e.getMessage())
                .as("deadline message")
                .isEqualTo("worker w1 did not finish the relayed request within 200 ms");
        Waits.until("deadline: relay.cancel sent", () -> worker.cancelled(relayId(request)));
    }

    @Test
    void deadline_stallAfterHead_failsBodyAtExactlyTheDeadline_withExactMessage() {
        ManualScheduler clock = new ManualScheduler();
        GatewayRelay quick = new GatewayRelay(directory, Duration.ofMillis(200), 8, clock);
        CompletionStage<RelayedResponse> stage = quick.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        clock.advance(Duration.ofMillis(150));
        worker.head(request.id(), 200);
        BodySource body = TestBodies.body(done(stage, "head"));
        CompletionStage<?> part = body.next();
        clock.advance(Duration.ofMillis(50).minusNanos(1));
        assertThat(part.toCompletableFuture())
                .as("the body 1 ns before the deadline, counted from the call, not the head")
                .isNotDone();
        clock.advance(Duration.ofNanos(1));
        SpectorException e = spectorFailure(part, ErrorCode.WORKER_UNREACHABLE, "deadline after head");
        assertThat(e.getMessage())
                .as("deadline message on the body")
                .isEqualTo("worker w1 did not finish the relayed request within 200 ms");
        Waits.until("deadline: relay.cancel sent", () -> worker.cancelled(relayId(request)));
    }

    @Test
    void deadline_countsTheWaitForASlot() {
        ManualScheduler clock = new ManualScheduler();
        GatewayRelay one = new GatewayRelay(directory, Duration.ofMillis(500), 1, clock);
        CompletionStage<RelayedResponse> first = one.relay("w1", get());
        worker.take(RelayRequest.OP);
        clock.advance(Duration.ofMillis(100));
        CompletionStage<RelayedResponse> second = one.relay("w1", get()); // waits for the one slot
        clock.advance(Duration.ofMillis(400));
        spectorFailure(first, ErrorCode.WORKER_UNREACHABLE, "first relay's deadline, at 500 ms");
        Waits.until(
                "the freed slot passes to the second relay",
                () -> worker.seen(RelayRequest.OP).size() == 2);
        clock.advance(Duration.ofMillis(100).minusNanos(1));
        assertThat(second.toCompletableFuture())
                .as("the second relay 1 ns before its own deadline (its call at 100 ms + 500 ms)")
                .isNotDone();
        // Had the wait for the slot not counted, the second relay would end at 500 + 500 ms.
        clock.advance(Duration.ofNanos(1));
        SpectorException e = spectorFailure(second, ErrorCode.WORKER_UNREACHABLE, "deadline while waiting");
        assertThat(e.getMessage()).isEqualTo("worker w1 did not finish the relayed request within 500 ms");
    }

    @Test
    void uplinkClosed_beforeHead_failsStageUnreachable() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        worker.take(RelayRequest.OP);
        w1.ends.workerEnd().close("worker gone");
        SpectorException e = spectorFailure(stage, ErrorCode.WORKER_UNREACHABLE, "drop before head");
        assertThat(GatewayRelay.isNoLink(e))
                .as("relay.request went out: the worker may have seen it, so it is no refusal to retry")
                .isFalse();
    }

    @Test
    void uplinkClosed_afterHead_failsBodyUnreachable() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        BodySource body = TestBodies.body(done(stage, "head"));
        w1.ends.workerEnd().close("worker gone");
        spectorFailure(body.next(), ErrorCode.WORKER_UNREACHABLE, "drop after head");
    }

    @Test
    void perWorkerLimit_ninthRelayStartsOnlyAfterOneOfEightEnds() {
        List<Frame.Call> requests = new ArrayList<>();
        List<CompletionStage<RelayedResponse>> stages = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            stages.add(relay.relay("w1", get()));
            requests.add(worker.take(RelayRequest.OP));
        }
        CompletionStage<RelayedResponse> ninth = relay.relay("w1", get());
        gatewayCaughtUp();
        assertThat(worker.waiting(RelayRequest.OP))
                .as("order: the 9th waits while 8 run")
                .isEmpty();
        assertThat(relay.running("w1")).as("per-worker bound").isEqualTo(Limits.RELAYS_PER_WORKER);

        worker.head(requests.get(3).id(), 204);
        worker.result(requests.get(3).id(), empty());
        Frame.Call ninthRequest = worker.take(RelayRequest.OP);
        assertThat(stages.get(3).toCompletableFuture())
                .as("order: the 4th ended first")
                .isCompleted();
        worker.head(ninthRequest.id(), 200);
        assertThat(done(ninth, "9th").status()).isEqualTo(200);
    }

    @Test
    void violation_head101_failsInternal_andSendsCancel() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.push(request.id(), RelayHead.PUSH, empty().put("status", 101).set("headers", null));
        SpectorException e = spectorFailure(stage, ErrorCode.INTERNAL, "101 head");
        assertThat(e.getMessage()).isEqualTo("worker w1 sent an invalid relay response");
        Waits.until("violation: relay.cancel sent", () -> worker.cancelled(relayId(request)));
    }

    @Test
    void violation_chunkNotBase64_failsBodyInternal_andSendsCancel() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        BodySource body = TestBodies.body(done(stage, "head"));
        worker.push(request.id(), RelayChunk.PUSH, empty().put("chunk", "not base64!"));
        SpectorException e = spectorFailure(body.next(), ErrorCode.INTERNAL, "non-base64 chunk");
        assertThat(e.getMessage()).isEqualTo("worker w1 sent an invalid relay response");
        Waits.until("violation: relay.cancel sent", () -> worker.cancelled(relayId(request)));
    }

    @Test
    void violation_emptyAnswerWithoutHead_failsInternalEndedWithoutResponse() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.result(request.id(), empty());
        SpectorException e = spectorFailure(stage, ErrorCode.INTERNAL, "{} with no head");
        assertThat(e.getMessage()).isEqualTo("worker w1 ended the relay without a response");
    }

    @Test
    void violation_cancelledWithoutCancelSent_failsInternalEndedWithoutResponse() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.result(request.id(), empty().put("cancelled", true));
        SpectorException e = spectorFailure(stage, ErrorCode.INTERNAL, "{cancelled:true} with no cancel");
        assertThat(e.getMessage()).isEqualTo("worker w1 ended the relay without a response");
    }

    @Test
    void violation_workerInternalAfterHead_failsBodyWithItsMessage() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        worker.chunk(request.id(), utf8("part"));
        BodySource body = TestBodies.body(done(stage, "head"));
        assertThat(text(done(body.next(), "part before the error"))).isEqualTo("part");
        worker.error(request.id(), ErrorCode.INTERNAL, "target body broke");
        SpectorException e = spectorFailure(body.next(), ErrorCode.INTERNAL, "worker INTERNAL after head");
        assertThat(e.getMessage()).isEqualTo("target body broke");
    }

    @Test
    void workerInternalAfterChunks_theCallerReadsTheChunksAlreadySent_thenTheError() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        Frame.Call request = worker.take(RelayRequest.OP);
        worker.head(request.id(), 200);
        worker.chunk(request.id(), utf8("one,"));
        worker.chunk(request.id(), utf8("two,"));
        worker.error(request.id(), ErrorCode.INTERNAL, "target body broke");
        BodySource body = TestBodies.body(done(stage, "head"));
        gatewayCaughtUp(); // the error is processed, and nothing was read yet
        assertThat(relay.running("w1"))
                .as("the relay ended on the worker's error")
                .isZero();

        assertThat(text(done(body.next(), "the chunks, coalesced (ResponseBody.MAX_COALESCED_BYTES)")))
                .as("the chunks the worker sent before its error are not dropped")
                .isEqualTo("one,two,");
        SpectorException e = spectorFailure(body.next(), ErrorCode.INTERNAL, "the error after the chunks");
        assertThat(e.getMessage()).isEqualTo("target body broke");
    }

    @Test
    void daemonStoppingFromWorker_readsAsLostUplink() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        worker.refuse(RelayRequest.OP, ErrorCode.DAEMON_STOPPING, "worker stopping");
        SpectorException e = spectorFailure(stage, ErrorCode.WORKER_UNREACHABLE, "DAEMON_STOPPING");
        assertThat(ErrorCode.isConnectionLost(e)).isTrue();
    }

    @Test
    void workerError_beforeHead_failsStageWithIt() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        worker.refuse(RelayRequest.OP, ErrorCode.RELAY_TARGET_MISSING, "no target app");
        SpectorException e = spectorFailure(stage, ErrorCode.RELAY_TARGET_MISSING, "worker error");
        assertThat(e.getMessage()).isEqualTo("no target app");
    }

    @Test
    void replacingLink_failsOldLinksRelaysUnreachable() {
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        worker.take(RelayRequest.OP);
        RelayFixture newer = new RelayFixture(directory);
        spectorFailure(stage, ErrorCode.WORKER_UNREACHABLE, "old link's relay");
        assertThat(w1.link.isOpen()).as("the old link is closed").isFalse();
        assertThat(directory.live("w1")).as("the newer link serves w1").isSameAs(newer.link);
        CompletionStage<RelayedResponse> next = relay.relay("w1", get());
        Frame.Call request = newer.worker.take(RelayRequest.OP);
        newer.worker.head(request.id(), 204);
        assertThat(done(next, "relay on the newer link").status()).isEqualTo(204);
        newer.client.close("test over");
    }

    // ---- several links of one worker (issue 11): one worker, spread over its links ----

    @Test
    void twoLinks_aRelayTakesTheLinkWithFewerRunning_andLosingALinkFailsOnlyItsRelays() {
        RelayFixture other = new RelayFixture(directory, 1);
        CompletionStage<RelayedResponse> first = relay.relay("w1", get());
        Waits.until(
                "the first relay reaches one of the links",
                () -> !worker.seen(RelayRequest.OP).isEmpty()
                        || !other.worker.seen(RelayRequest.OP).isEmpty());
        RawWorker firstOn = worker.seen(RelayRequest.OP).isEmpty() ? other.worker : worker;
        Frame.Call firstRequest = firstOn.take(RelayRequest.OP);
        RawWorker secondOn = firstOn == worker ? other.worker : worker;
        CompletionStage<RelayedResponse> second = relay.relay("w1", get());
        Frame.Call secondRequest = secondOn.take(RelayRequest.OP);
        assertThat(firstOn.seen(RelayRequest.OP))
                .as("the busy link got no second relay")
                .hasSize(1);

        RelayFixture lost = firstOn == worker ? w1 : other;
        lost.client.close("link lost");
        spectorFailure(first, ErrorCode.WORKER_UNREACHABLE, "the relay on the lost link");
        secondOn.head(secondRequest.id(), 204);
        assertThat(done(second, "the relay on the other link").status())
                .as("the worker's other link carries on")
                .isEqualTo(204);
        assertThat(firstRequest.id()).isPositive();
        other.client.close("test over");
    }

    @Test
    void twoLinks_theRelaysPerWorkerAreCountedAcrossLinks() {
        RelayFixture other = new RelayFixture(directory, 1);
        GatewayRelay two = new GatewayRelay(directory, Duration.ofSeconds(30), 2, scheduler);
        two.relay("w1", get());
        two.relay("w1", get());
        CompletionStage<RelayedResponse> third = two.relay("w1", get());
        assertThat(two.running("w1")).as("two slots held, across both links").isEqualTo(2);
        assertThat(third.toCompletableFuture()).as("the third waits for a slot").isNotDone();
        Waits.until(
                "one relay.request on each link",
                () -> worker.seen(RelayRequest.OP).size() == 1
                        && other.worker.seen(RelayRequest.OP).size() == 1);
        other.client.close("test over");
        Waits.until(
                "the slot of the lost link's relay passes to the third, on the link left",
                () -> worker.seen(RelayRequest.OP).size() == 2);
    }

    @Test
    void callerBodyError_afterHead_failsBodyWithIt_andSendsCancel() {
        FedBody upload = new FedBody();
        CompletionStage<RelayedResponse> stage = relay.relay("w1", call("POST", upload, new AbortSignal()));
        Frame.Call request = worker.take(RelayRequest.OP);
        take(upload.readsStarted, "the relay reads the caller's body");
        worker.head(request.id(), 200);
        BodySource body = TestBodies.body(done(stage, "head"));
        IllegalStateException broken = new IllegalStateException("upload broke after the head");
        upload.fail(broken); // the first read, still waiting, fails
        assertThat(failure(body.next(), "caller body error after head"))
                .as("cancel: the response body fails with the request body's error")
                .isSameAs(broken);
        Waits.until("cancel: relay.cancel sent", () -> worker.cancelled(relayId(request)));
    }

    @Test
    void requestRefusedByItsBounds_failsBadRequest_andSendsNothing() {
        FedBody upload = new FedBody();
        spectorFailure(
                relay.relay("w1", call("GET", upload, new AbortSignal())), ErrorCode.BAD_REQUEST, "GET with a body");
        gatewayCaughtUp();
        assertThat(worker.seen(RelayRequest.OP))
                .as("a refused request is not sent")
                .isEmpty();
        Waits.untilAsserted(
                () -> assertThat(relay.running("w1")).as("slot released").isZero());
    }

    @Test
    void abortWhileWaitingForASlot_failsWithReason_andTheSlotGoesToTheNextWaiter() {
        GatewayRelay one = new GatewayRelay(directory, Duration.ofSeconds(30), 1, scheduler);
        CompletionStage<RelayedResponse> first = one.relay("w1", get());
        Frame.Call firstRequest = worker.take(RelayRequest.OP);
        AbortSignal signal = new AbortSignal();
        CompletionStage<RelayedResponse> second = one.relay("w1", call("GET", null, signal));
        CompletionStage<RelayedResponse> third = one.relay("w1", get());
        IllegalStateException reason = new IllegalStateException("gave up waiting");
        signal.abort(reason);
        assertThat(failure(second, "abort while waiting")).isSameAs(reason);

        worker.head(firstRequest.id(), 204);
        worker.result(firstRequest.id(), empty());
        assertThat(done(first, "first").status()).isEqualTo(204);
        Frame.Call thirdRequest = worker.take(RelayRequest.OP);
        worker.head(thirdRequest.id(), 200);
        assertThat(done(third, "order: the third gets the slot the aborted second gave up")
                        .status())
                .isEqualTo(200);
        assertThat(worker.seen(RelayRequest.OP))
                .as("the aborted waiter never sent relay.request")
                .hasSize(2);
    }
}
