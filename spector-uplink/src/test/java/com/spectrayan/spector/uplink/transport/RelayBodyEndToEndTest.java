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
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.CHUNK;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.JSON;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.KIB;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.MIB;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.answer;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.hooks;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.requireNonNull;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.resultOf;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.wireRequest;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.FedBody;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Seed 000's Tests lines on relayed bodies and the relay.body window: 20 MiB each way, the window of 4, a target that stops reading, streamed parts, a reader that falls behind, a body frame right behind its request: one test per line, end to end over
 * {@link RelaySeedFixture}. The lines that hold on either version run over v1 and v2 ({@link
 * Protocol}); the window of 4 relay.body calls, the unread cap and raw relay.body calls are v1's
 * own, and each has its v2 counterpart below (the stream window of section 9.5 in their place).
 */
final class RelayBodyEndToEndTest {
    @RegisterExtension
    final RelaySeedFixture seed = new RelaySeedFixture();

    private final RelayHarness h = seed.h;

    // ---- seed: a 20 MiB PUT body arrives at the target byte for byte, and a 20 MiB response
    // body comes back byte for byte in relay-chunk pushes of at most 256 KiB

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void twentyMibPut_arrivesByteForByte_andTwentyMibGet_comesBackByteForByte_inRelayChunksOfAtMost256KiB(
            Protocol protocol) {
        byte[] data = pattern(20 * MIB, 0);
        CompletableFuture<byte[]> stored = new CompletableFuture<>();
        seed.route("/blob", request -> {
            if (request.method().equals("PUT")) {
                BodySource b = request.body();
                if (b == null) {
                    throw new IllegalStateException("a PUT without a body");
                }
                return readAll(b).thenApply(bytes -> {
                    stored.complete(bytes);
                    return new RelayedResponse(204, List.of(), null);
                });
            }
            // Parts of 1 MiB: the worker must cut them into pushes of at most 256 KiB.
            return respond(200, new ArrayBody(data, MIB));
        });
        RecordingChannel wire = h.connect(protocol);
        boolean v2 = protocol == Protocol.V2;

        RelayedResponse put =
                done(h.relay().relay(W1, call("PUT", "/blob", new ArrayBody(data, MIB))), "a 20 MiB PUT relays", WAIT);
        assertThat(put.status()).as("PUT status").isEqualTo(204);
        assertThat(done(stored, "the target reads the PUT body", WAIT))
                .as("the target got the 20 MiB byte for byte")
                .isEqualTo(data);
        if (v2) {
            int putStream = wire.v2().lastStreamId();
            dataSlices(wire.v2().seen(s -> s.sent() && s.isData() && s.streamId() == putStream), data.length, "PUT");
            RelayedResponse get = done(h.relay().relay(W1, call("GET", "/blob", null)), "a 20 MiB GET relays", WAIT);
            assertThat(Waits.done(readAll(body(get, "GET /blob")), "the 20 MiB GET body", Duration.ofSeconds(50)))
                    .as("the 20 MiB comes back byte for byte")
                    .isEqualTo(data);
            int getStream = wire.v2().lastStreamId();
            dataSlices(wire.v2().seen(s -> !s.sent() && s.isData() && s.streamId() == getStream), data.length, "GET");
            return;
        }
        List<Seen> bodies = wire.sent(RelayBody.OP).stream()
                .filter(s -> s.chunkBytes() >= 0)
                .toList();
        assertThat(bodies.stream().mapToInt(Seen::chunkBytes).max().orElse(0))
                .as("the gateway cut the caller's 1 MiB parts into relay.body chunks of at most 256 KiB")
                .isEqualTo(CHUNK);
        assertThat(bodies.stream().mapToLong(Seen::chunkBytes).sum())
                .as("relay.body chunks carry the 20 MiB")
                .isEqualTo(data.length);

        RelayedResponse get = done(h.relay().relay(W1, call("GET", "/blob", null)), "a 20 MiB GET relays", WAIT);
        assertThat(get.status()).as("GET status").isEqualTo(200);
        assertThat(Waits.done(readAll(body(get, "GET /blob")), "the 20 MiB GET body", Duration.ofSeconds(50)))
                .as("the 20 MiB comes back byte for byte")
                .isEqualTo(data);
        long getId = wire.requestId(wire.lastRelayId());
        List<Seen> chunks = wire.received(getId).stream()
                .filter(s -> s.name().equals(RelayChunk.PUSH))
                .toList();
        assertThat(chunks.stream().mapToInt(Seen::chunkBytes).max().orElse(0))
                .as("the worker cut the target's 1 MiB parts into relay-chunk pushes of at most 256 KiB")
                .isEqualTo(CHUNK);
        assertThat(chunks.stream().mapToLong(Seen::chunkBytes).sum())
                .as("relay-chunk pushes carry the 20 MiB")
                .isEqualTo(data.length);
    }

    /** v2: a body's DATA frames carry all its bytes, cut into slices of at most 16 KiB (section 9.6). */
    private static void dataSlices(List<V2FrameRecorder.Seen> frames, long total, String what) {
        assertThat(frames.stream().mapToInt(V2FrameRecorder.Seen::length).max().orElse(0))
                .as("v2: the %s body crossed in DATA slices of at most 16 KiB", what)
                .isEqualTo(V2Limits.DATA_SLICE);
        assertThat(frames.stream().mapToLong(V2FrameRecorder.Seen::length).sum())
                .as("v2: the %s body's DATA carry all of it", what)
                .isEqualTo(total);
    }

    // ---- seed: while a 20 MiB relay runs, a lease.renew forwarded to the same worker answers
    // (DESIGN.md section 5: a status.get on the same uplink)

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void statusGet_onTheSameUplink_answersWithinItsTimeout_whileATwentyMibUploadRuns(Protocol protocol) {
        byte[] data = pattern(20 * MIB, 7);
        CompletableFuture<Void> gate = new CompletableFuture<>();
        CompletableFuture<byte[]> received = new CompletableFuture<>();
        AtomicLong read = new AtomicLong();
        seed.route("/big", request -> {
            BodySource b = requireNonNull(request.body());
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            readGated(b, out, read, 19L * MIB, gate, received);
            return received.thenApply(bytes -> new RelayedResponse(204, List.of(), null));
        });
        RecordingChannel wire = h.connect(protocol);
        CompletionStage<RelayedResponse> put = h.relay().relay(W1, call("PUT", "/big", new ArrayBody(data, MIB)));
        until(
                "the 20 MiB upload is under way (2 MiB sent: 8 relay.body calls, or DATA on v2)",
                WAIT,
                () -> protocol == Protocol.V2
                        ? wire.v2().seen(s -> s.sent() && s.isData()).stream()
                                        .mapToLong(V2FrameRecorder.Seen::length)
                                        .sum()
                                >= 8L * CHUNK
                        : wire.sent(RelayBody.OP).size() >= 8);

        long start = System.nanoTime();
        StatusReport status = done(
                h.link(W1).refresh(h.scheduler, Limits.STATUS_TIMEOUT),
                "status.get answers within the link's 10 s timeout while relay.body calls fill the uplink",
                WAIT);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(put.toCompletableFuture())
                .as("the 20 MiB relay still runs when status.get answers")
                .isNotDone();
        assertThat(status.activeRelays())
                .as("status.get counts the running 20 MiB relay")
                .isEqualTo(1);
        assertThat(tookMs)
                .as("status.get answered within its 10 s timeout (ms)")
                .isLessThan(10_000);
        assertThat(h.link(W1).misses()).as("no status.get miss").isZero();

        gate.complete(null);
        assertThat(done(put, "the upload ends", WAIT).status()).as("status").isEqualTo(204);
        assertThat(done(received, "the target's body", WAIT))
                .as("the whole 20 MiB arrives byte for byte")
                .isEqualTo(data);
    }

    /** Reads a body, pausing once {@code pauseAt} bytes are read until {@code gate} completes. */
    private static void readGated(
            BodySource b,
            ByteArrayOutputStream out,
            AtomicLong read,
            long pauseAt,
            CompletableFuture<Void> gate,
            CompletableFuture<byte[]> received) {
        CompletableFuture<Void> ready = read.get() >= pauseAt ? gate : CompletableFuture.completedFuture(null);
        ready.thenCompose(v -> b.next()).whenComplete((part, error) -> {
            if (error != null) {
                received.completeExceptionally(error);
            } else if (part == null) {
                received.complete(out.toByteArray());
            } else {
                byte[] bytes = bytesOf(part);
                out.writeBytes(bytes);
                read.addAndGet(bytes.length);
                readGated(b, out, read, pauseAt, gate, received);
            }
        });
    }

    // ---- seed: the gateway never has more than 4 relay.body calls unanswered, checked with a
    // target that reads its body slowly

    // v1 only: the window of 4 unanswered relay.body calls is v1's flow control; v2 has a credit
    // window per stream instead (section 9.5), whose bound the test after this one checks.
    @Test
    void upload_toATargetThatReadsSlowly_neverHasMoreThanFourRelayBodyCallsUnanswered() {
        byte[] data = pattern(4 * MIB, 3);
        CompletableFuture<Void> startReading = new CompletableFuture<>();
        CompletableFuture<byte[]> received = new CompletableFuture<>();
        slowRoute(startReading, received);
        RecordingChannel wire = h.connect();

        CompletionStage<RelayedResponse> put = h.relay().relay(W1, call("PUT", "/slow", new ArrayBody(data, CHUNK)));
        until(
                "the gateway fills its window of 4 relay.body calls while the target reads nothing",
                WAIT,
                () -> wire.unansweredBodies() == Limits.UNANSWERED_BODIES);
        startReading.complete(null);

        assertThat(done(put, "the slow upload ends", WAIT).status())
                .as("status")
                .isEqualTo(204);
        assertThat(done(received, "the target read the body", WAIT))
                .as("the body arrives whole")
                .isEqualTo(data);
        assertThat(wire.sent(RelayBody.OP))
                .as("16 chunks of 256 KiB and the end went out")
                .hasSize(17);
        assertThat(wire.maxUnansweredBodies())
                .as("relay.body calls unanswered at once, as the gateway sent and received them (window bound 4)")
                .isEqualTo(Limits.UNANSWERED_BODIES);
    }

    /**
     * v2's counterpart of the window of 4 (section 9.5): while the target reads nothing, the gateway
     * sends exactly the stream's initial window (256 KiB) and no byte more; once it reads slowly,
     * the whole body arrives.
     */
    @Test
    void v2Upload_toATargetThatReadsNothingThenSlowly_neverSendsPastTheStreamWindow_andTheBodyArrivesWhole() {
        byte[] data = pattern(4 * MIB, 3);
        CompletableFuture<Void> startReading = new CompletableFuture<>();
        CompletableFuture<byte[]> received = new CompletableFuture<>();
        slowRoute(startReading, received);
        RecordingChannel wire = h.connect(Protocol.V2);

        CompletionStage<RelayedResponse> put = h.relay().relay(W1, call("PUT", "/slow", new ArrayBody(data, CHUNK)));
        until(
                "the gateway fills the stream's window while the target reads nothing",
                WAIT,
                () -> wire.v2().opened()
                        && wire.v2().dataBytes(wire.v2().lastStreamId(), true) >= V2Limits.INITIAL_STREAM_WINDOW);
        int stream = wire.v2().lastStreamId();
        done(h.link(W1).admin().statusGet(), "a round trip on the link while the window is full", WAIT);
        assertThat(wire.v2().dataBytes(stream, true))
                .as("DATA the gateway sent while the target read nothing: exactly the initial stream window")
                .isEqualTo(V2Limits.INITIAL_STREAM_WINDOW);
        assertThat(put.toCompletableFuture())
                .as("the upload waits for credit, it does not fail")
                .isNotDone();
        startReading.complete(null);

        assertThat(done(put, "the slow upload ends", WAIT).status())
                .as("status")
                .isEqualTo(204);
        assertThat(done(received, "the target read the body", WAIT))
                .as("the body arrives whole")
                .isEqualTo(data);
        assertThat(wire.v2().dataBytes(stream, true))
                .as("DATA carried the body once")
                .isEqualTo(data.length);
    }

    /** Routes {@code /slow} to a target that starts reading its body slowly once {@code startReading} completes. */
    private void slowRoute(CompletableFuture<Void> startReading, CompletableFuture<byte[]> received) {
        seed.route("/slow", request -> {
            BodySource b = requireNonNull(request.body());
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            startReading.thenRun(() -> readSlowly(b, out, received));
            return received.thenApply(bytes -> new RelayedResponse(204, List.of(), null));
        });
    }

    /** Reads one part every 10 ms: a slow reader, timed by the scheduler (no sleep). */
    private void readSlowly(BodySource b, ByteArrayOutputStream out, CompletableFuture<byte[]> received) {
        b.next().whenComplete((part, error) -> {
            if (error != null) {
                received.completeExceptionally(error);
            } else if (part == null) {
                received.complete(out.toByteArray());
            } else {
                out.writeBytes(bytesOf(part));
                h.scheduler.schedule(() -> readSlowly(b, out, received), 10, TimeUnit.MILLISECONDS);
            }
        });
    }

    // ---- seed: a target that answers 401 without reading its body: the caller gets the 401,
    // every relay.body is answered, and the gateway stops reading the caller's body

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void targetAnswers401WithoutReading_callerGets401_everyRelayBodyAnswered_andTheCallersBodyNoLongerRead(
            Protocol protocol) {
        seed.route("/guarded", request -> respond(401, ArrayBody.of("no"), new Header("www-authenticate", "Bearer")));
        RecordingChannel wire = h.connect(protocol);
        ArrayBody upload = ArrayBody.endless(64 * KIB);

        RelayedResponse response = done(h.relay().relay(W1, call("POST", "/guarded", upload)), "the POST relays", WAIT);
        assertThat(response.status()).as("the caller gets the 401").isEqualTo(401);
        assertThat(text(done(readAll(body(response, "401")), "the 401 body", WAIT)))
                .as("its body")
                .isEqualTo("no");

        Throwable cancel =
                done(upload.cancelled(), "the gateway cancels the caller's body once the call settled", WAIT);
        assertThat(cancel).as("the cancel's reason").isNotNull();
        if (protocol == Protocol.V2) {
            // v2: no calls to answer; the response's END_STREAM ends the relay, and the gateway
            // resets the stream NO_ERROR to stop the upload (RFC 9113 section 8.1). What it read
            // is bounded by the stream's window, not by a count of calls.
            int stream = wire.v2().lastStreamId();
            until(
                    "v2: the gateway resets the stream to stop its upload",
                    WAIT,
                    () -> !wire.v2().resets(stream, true).isEmpty());
            assertThat(wire.v2().resets(stream, true)).containsExactly(V2ErrorCode.NO_ERROR);
            int v2Reads = upload.reads();
            done(h.link(W1).admin().statusGet(), "a round trip on the link after the relay ended", WAIT);
            assertThat(upload.reads())
                    .as("the gateway stopped reading the endless caller body: no read after the relay ended")
                    .isEqualTo(v2Reads);
            return;
        }
        long requestId = wire.requestId(wire.lastRelayId());
        assertThat(resultOf(answer(wire, requestId, "relay.request"), "relay.request"))
                .as("relay.request answers {} once the 401's body ended")
                .isEqualTo(RelayOutcome.COMPLETED.toJson());
        until("every relay.body the gateway sent is answered", WAIT, () -> wire.unansweredBodies() == 0);
        for (Seen body : wire.sent(RelayBody.OP)) {
            assertThat(resultOf(answer(wire, body.id(), "relay.body " + body.id()), "relay.body " + body.id()))
                    .as("relay.body %d is answered {} though the target never read it", body.id())
                    .isEqualTo(JSON.objectNode());
        }
        int reads = upload.reads();
        done(h.link(W1).admin().statusGet(), "a round trip on the uplink after the relay ended", WAIT);
        assertThat(upload.reads())
                .as("the gateway stopped reading the endless caller body: no read after the relay ended")
                .isEqualTo(reads);
        assertThat(reads)
                .as("parts read from the endless body, bounded by the window of 4 (not by the body)")
                .isLessThanOrEqualTo(3 * Limits.UNANSWERED_BODIES);
    }

    // ---- seed: a response the target streams in parts reaches the gateway caller part by part,
    // before the target's body ends

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void streamedResponse_reachesTheCallerPartByPart_beforeTheTargetsBodyEnds(Protocol protocol) {
        FedBody stream = new FedBody();
        seed.route("/stream", request -> respond(200, stream));
        RecordingChannel wire = h.connect(protocol);
        boolean v2 = protocol == Protocol.V2;
        stream.offer(utf8("part one"));

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/stream", null)), "the GET relays", WAIT);
        BodySource b = body(response, "/stream");
        assertThat(text(bytesOf(requireNonNull(done(b.next(), "the first part", WAIT)))))
                .as("the first part reaches the caller while the target's body has not ended")
                .isEqualTo("part one");
        long requestId = v2 ? 0 : wire.requestId(wire.lastRelayId());
        int streamId = v2 ? wire.v2().lastStreamId() : 0;
        java.util.function.Supplier<Boolean> ended = () -> v2
                ? wire.v2().received(streamId).stream().anyMatch(V2FrameRecorder.Seen::endStream)
                : wire.answer(requestId).isDone();
        assertThat(ended.get())
                .as("relay.request is not answered yet (v2: no END_STREAM from the worker yet)")
                .isFalse();

        CompletionStage<@Nullable ByteBuffer> second = b.next();
        take(stream.readsStarted, "the worker reads the target's first part", WAIT);
        take(stream.readsStarted, "the worker asks the target for its second part", WAIT);
        assertThat(second.toCompletableFuture())
                .as("the caller's second read waits for the target's second part")
                .isNotDone();
        stream.offer(utf8("part two"));
        assertThat(text(bytesOf(requireNonNull(done(second, "the second part", WAIT)))))
                .as("the second part follows once the target made it")
                .isEqualTo("part two");
        assertThat(ended.get())
                .as("relay.request is still not answered (v2: no END_STREAM yet)")
                .isFalse();

        stream.end();
        assertThat(done(b.next(), "the end", WAIT))
                .as("the body ends once the target's body ended")
                .isNull();
    }

    // ---- seed: a caller that reads nothing while the target streams 80 MiB slowly gets its body
    // stream errored, with a message saying the reader fell behind, once 64 MiB is buffered, and
    // the target's request signal aborts before it has sent all 80 MiB

    /*
     * Scaled 1:16 over the real uplink: the gateway's unread cap set to 4 MiB (of 64) and the
     * target streaming 5 MiB (of 80). Netty's PARANOID leak tracking records every access to a
     * buffer, and the worker's frames are masked int by int, so worker-to-gateway bytes cross at
     * about 1.5 MiB/s in tests: 64 MiB would take most of a minute. The cap is a constructor
     * option whose default is Limits.UNREAD_RELAY_BYTES; GatewayRelayTest runs 64 MiB at engine
     * level.
     */
    // v1 only: the cap on unread response bytes is v1's; on v2 a reader that stops reading holds
    // back its own stream (section 9.5), which the test after this one checks.
    @Test
    void
            callerReadsNothing_whileTheTargetStreamsSlowly_bodyErrorsFellBehindOnceTheCapIsBuffered_andTheTargetAbortsBeforeSendingAll() {
        long cap = Limits.UNREAD_RELAY_BYTES / 16; // 4 MiB
        long total = 80L * MIB / 16; // 5 MiB
        int part = CHUNK;
        AtomicLong served = new AtomicLong();
        AtomicLong servedAtAbort = new AtomicLong(-1);
        seed.route("/flood", request -> {
            request.signal().onAbort(reason -> servedAtAbort.compareAndSet(-1, served.get()));
            return respond(200, new BodySource() {
                @Override
                public CompletionStage<@Nullable ByteBuffer> next() {
                    long sent = served.get();
                    if (sent >= total || request.signal().isAborted()) {
                        return CompletableFuture.completedFuture(null);
                    }
                    CompletableFuture<@Nullable ByteBuffer> next = new CompletableFuture<>();
                    // Past the cap and one part the target is slow: a part every 5 s, so the rest
                    // would take 15 s more; the gateway, however far behind its socket, must abort
                    // it before.
                    long delayMs = sent < cap + part ? 0 : 5000;
                    h.scheduler.schedule(
                            () -> {
                                served.addAndGet(part);
                                next.complete(ByteBuffer.wrap(new byte[part]));
                            },
                            delayMs,
                            TimeUnit.MILLISECONDS);
                    return next;
                }

                @Override
                public void cancel(Throwable reason) {}
            });
        });
        RecordingChannel wire = h.connect();

        RelayedResponse response =
                done(h.relayWithUnreadCap(cap).relay(W1, call("GET", "/flood", null)), "the GET relays", WAIT);
        BodySource b = body(response, "/flood");
        done(seed.aborted("/flood"), "the target's request signal aborts once the caller fell behind", WAIT);
        until("the target notes how much it had sent when its signal aborted", WAIT, () -> servedAtAbort.get() != -1);

        long requestId = wire.requestId(wire.lastRelayId());
        // The gateway fails the body on its uplink's thread before it reads the worker's answer
        // to the cancel: once that answer is in, the body must read as failed.
        assertThat(resultOf(answer(wire, requestId, "relay.request"), "relay.request"))
                .as("relay.request answers {cancelled: true}")
                .isEqualTo(RelayOutcome.CANCELLED.toJson());
        Throwable error = failure(b.next(), "the caller's body errors", WAIT);
        SpectorException e = spector(error, ErrorCode.PAYLOAD_TOO_LARGE, "the caller's body");
        assertThat(e.getMessage()).as("the message says the reader fell behind").contains("fell behind");
        assertThat(e.details()).as("details name the cap").containsEntry("limitBytes", cap);
        assertThat(servedAtAbort.get())
                .as("bytes the target had sent when its signal aborted: past the cap, before all of it")
                .isGreaterThan(cap)
                .isLessThan(total);
        List<Seen> cancels = wire.sent(RelayCancel.OP);
        assertThat(cancels).as("one relay.cancel").hasSize(1);
        long cancelOrder = cancels.get(0).order();
        List<Seen> chunks = wire.received(requestId).stream()
                .filter(s -> s.name().equals(RelayChunk.PUSH))
                .toList();
        long bufferedAtCancel = chunks.stream()
                .filter(s -> s.order() < cancelOrder)
                .mapToLong(Seen::chunkBytes)
                .sum();
        assertThat(bufferedAtCancel)
                .as("relay-chunk bytes the gateway held unread when it sent relay.cancel: just past the cap")
                .isGreaterThan(cap)
                .isLessThanOrEqualTo(cap + part);
    }

    /**
     * v1's relays together (Limits.UNREAD_RELAY_BYTES_ALL): two callers that read nothing, each
     * under its own cap, fail once their unread bytes together pass the gateway's bound, and the
     * count returns to zero. Regression (the uplink review): eight relays per worker of 64 MiB
     * each ran a 256 MiB gateway out of heap.
     */
    @Test
    void v1CallersThatReadNothing_failOnceTheirUnreadBytesTogetherPassTheGatewaysBound() {
        long perRelay = 8 * MIB;
        long all = MIB;
        seed.route("/endless", request -> respond(200, ArrayBody.endless(32 * KIB)));
        RecordingChannel wire = h.connect();
        GatewayRelay relay = h.relayWithUnreadCaps(perRelay, all);
        BodySource first = body(done(relay.relay(W1, call("GET", "/endless", null)), "the first GET", WAIT), "first");
        BodySource second =
                body(done(relay.relay(W1, call("GET", "/endless", null)), "the second GET", WAIT), "second");
        until("both relays are cancelled", WAIT, () -> wire.sent(RelayCancel.OP).size() == 2);
        // The gateway sends relay.cancel, then fails the body, on its uplink's thread: the worker's
        // answer to each relay.request comes in on that thread after both (a flake in CI read a
        // queued part between the two), so once both answers are in, both bodies read as failed.
        for (Seen request : wire.sent(RelayRequest.OP)) {
            answer(wire, request.id(), "relay.request");
        }
        for (BodySource b : List.of(first, second)) {
            SpectorException e =
                    spector(failure(b.next(), "a caller's body errors", WAIT), ErrorCode.PAYLOAD_TOO_LARGE, "a body");
            assertThat(e.getMessage()).contains("fell behind").contains("together");
            assertThat(e.details()).containsEntry("limitBytes", all);
        }
        until("no v1 relay holds an unread byte", WAIT, () -> relay.unreadBytes() == 0);
    }

    /**
     * v2's counterpart of the unread cap (section 9.5): a caller that reads nothing holds the worker
     * at the stream's window (256 KiB sent, no byte more, nothing cancelled), and gets the whole
     * body once it reads.
     */
    @Test
    void v2CallerReadsNothing_holdsTheWorkerAtTheStreamWindow_nothingIsCancelled_andTheWholeBodyComesWhenItReads() {
        byte[] data = pattern(MIB, 13);
        seed.route("/flood", request -> respond(200, new ArrayBody(data, CHUNK)));
        RecordingChannel wire = h.connect(Protocol.V2);

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/flood", null)), "the GET relays", WAIT);
        int stream = wire.v2().lastStreamId();
        until(
                "the worker fills the gateway's stream window while the caller reads nothing",
                WAIT,
                () -> wire.v2().dataBytes(stream, false) >= V2Limits.INITIAL_STREAM_WINDOW);
        done(h.link(W1).admin().statusGet(), "a round trip on the link while the window is full", WAIT);
        assertThat(wire.v2().dataBytes(stream, false))
                .as("DATA the worker sent while the caller read nothing: exactly the stream window")
                .isEqualTo(V2Limits.INITIAL_STREAM_WINDOW);
        assertThat(seed.aborted("/flood"))
                .as("the target is not aborted for a slow reader")
                .isNotDone();
        assertThat(wire.v2().seen(s -> s.isReset() && s.streamId() == stream))
                .as("no RESET either way")
                .isEmpty();

        assertThat(done(readAll(body(response, "/flood")), "the whole body once the caller reads", WAIT))
                .isEqualTo(data);
    }

    // ---- seed: a relay.body frame sent right behind its relay.request frame is never dropped
    // (checked with seq 0 plus end sent back to back, 50 times)

    // v1 only: raw relay.body calls right behind their relay.request; on v2 the body is DATA on
    // the stream its HEADERS opened, checked by the test after this one.
    @Test
    void relayBodyRightBehindItsRelayRequest_isNeverDropped_fiftyTimesBackToBack() {
        seed.route(
                "/echo",
                request -> readAll(requireNonNull(request.body()))
                        .thenApply(bytes -> new RelayedResponse(200, List.of(), new ArrayBody(bytes, 64 * KIB))));
        h.connect();
        RealGatewayWorkerClient client = h.client(W1);

        for (int i = 0; i < 50; i++) {
            String relayId = "bb-" + i;
            List<RelayHead> heads = new CopyOnWriteArrayList<>();
            ByteArrayOutputStream echoed = new ByteArrayOutputStream();
            CompletionStage<RelayOutcome> relay =
                    client.relayRequest(wireRequest(relayId, "POST", "/echo", true), hooks(heads::add, chunk -> {
                        synchronized (echoed) {
                            echoed.writeBytes(bytesOf(chunk.chunk()));
                        }
                    }));
            CompletionStage<Void> chunk = client.relayBody(RelayBody.Chunk.of(relayId, 0, utf8("ping " + i)));
            CompletionStage<Void> end = client.relayBody(new RelayBody.End(relayId));
            done(chunk, "try " + i + ": seq 0 right behind relay.request is answered", WAIT);
            done(end, "try " + i + ": end is answered", WAIT);
            assertThat(done(relay, "try " + i + ": the relay ends", WAIT).cancelled())
                    .as("try %d: not cancelled", i)
                    .isFalse();
            assertThat(heads).as("try %d: one head", i).hasSize(1);
            synchronized (echoed) {
                assertThat(text(echoed.toByteArray()))
                        .as("try %d: the target got seq 0 (none dropped)", i)
                        .isEqualTo("ping " + i);
            }
        }
    }

    /** v2's counterpart: a body's DATA right behind the HEADERS that opened its stream is never dropped, 50 times. */
    @Test
    void v2BodyRightBehindItsHeaders_isNeverDropped_fiftyTimesBackToBack() {
        seed.route(
                "/echo",
                request -> readAll(requireNonNull(request.body()))
                        .thenApply(bytes -> new RelayedResponse(200, List.of(), new ArrayBody(bytes, 64 * KIB))));
        RecordingChannel wire = h.connect(Protocol.V2);

        for (int i = 0; i < 50; i++) {
            RelayedResponse response = done(
                    h.relay().relay(W1, call("POST", "/echo", ArrayBody.of("ping " + i))),
                    "try " + i + ": relays",
                    WAIT);
            assertThat(text(done(readAll(body(response, "echo")), "try " + i + ": the echo", WAIT)))
                    .as("try %d: the target got the body (none dropped)", i)
                    .isEqualTo("ping " + i);
            int stream = wire.v2().lastStreamId();
            assertThat(wire.v2().names(stream, true))
                    .as("try %d: HEADERS without END_STREAM, then the body's DATA and its end", i)
                    .startsWith("HEADERS")
                    .endsWith("DATA+END");
            assertThat(wire.v2().dataBytes(stream, true))
                    .as("try %d: the body crossed as DATA", i)
                    .isEqualTo(("ping " + i).length());
        }
    }

    /**
     * Section 9.5's credit, under a race the gateway once lost: the worker's head can arrive on the
     * link's loop before the thread that opened the stream has noted it, and a relay that missed
     * its stream then never returned credit, stalling at the first window (256 KiB). Thirty back
     * to back downloads, each four windows long, all complete.
     */
    @Test
    void v2BackToBackDownloads_eachPastTheStreamWindow_allComplete() {
        byte[] data = pattern(MIB, 7);
        seed.route("/blob", request -> respond(200, new ArrayBody(data, 64 * 1024)));
        h.connect(Protocol.V2);
        for (int i = 0; i < 30; i++) {
            RelayedResponse get = done(h.relay().relay(W1, call("GET", "/blob", null)), "GET " + i, WAIT);
            assertThat(Waits.done(readAll(body(get, "GET /blob")), "body " + i, Duration.ofSeconds(10)))
                    .as("download %d, byte for byte", i)
                    .isEqualTo(data);
        }
    }
}
