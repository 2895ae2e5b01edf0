package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.body;
import static com.spectrayan.spector.uplink.transport.RelayHarness.bytesOf;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelayHarness.pattern;
import static com.spectrayan.spector.uplink.transport.RelayHarness.readAll;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.RelayHarness.text;
import static com.spectrayan.spector.uplink.transport.RelayHarness.utf8;
import static com.spectrayan.spector.uplink.transport.Waits.done;
import static com.spectrayan.spector.uplink.transport.Waits.failure;
import static com.spectrayan.spector.uplink.transport.Waits.take;
import static com.spectrayan.spector.uplink.transport.Waits.until;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.gateway.RelayCall;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.gateway.RelayHooks;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import com.spectrayan.spector.uplink.transport.RelayHarness.ArrayBody;
import com.spectrayan.spector.uplink.transport.RelayHarness.EndlessBody;
import com.spectrayan.spector.uplink.transport.RelayHarness.FedBody;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.StatusReport;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Seed 000's Tests section, one test per line, end to end: a real gateway ({@link GatewayRelay}
 * over a {@link com.spectrayan.spector.uplink.gateway.WorkerDirectory} of real {@link
 * com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient}s) and a real worker ({@link
 * UplinkSession} behind {@link UplinkDialer}) over a real WebSocket uplink on loopback, with a fake
 * relay target through the worker's options (DESIGN.md section 5: the seed's {@code lease.renew}
 * is a {@code status.get}, its {@code device.exec} a second relay). What only a broken gateway would
 * send is written as raw frames (or raw {@code RealGatewayWorkerClient} calls) over that same uplink, and
 * the wire is observed by a {@link RecordingChannel} between the gateway's client and the real
 * WebSocket channel. The gateway-side protocol violations stay in {@code GatewayRelayTest}.
 */
final class RelaySeedEndToEndTest {
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private static final int CHUNK = (int) Limits.CHUNK_BYTES.max();
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private final RelayHarness h = new RelayHarness();
    private final Map<String, TargetRoute> routes = new ConcurrentHashMap<>();
    private final Map<String, CompletableFuture<Throwable>> aborts = new ConcurrentHashMap<>();

    /** What the fake target does for one path. */
    @FunctionalInterface
    private interface TargetRoute {
        CompletionStage<RelayedResponse> handle(RelayedRequest request) throws Exception;
    }

    RelaySeedEndToEndTest() {
        h.target(request -> {
            String path = request.url().getPath();
            request.signal().onAbort(aborted(path)::complete);
            TargetRoute route = routes.get(path);
            if (route == null) {
                return respond(404, null);
            }
            try {
                return route.handle(request);
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                return CompletableFuture.failedFuture(e);
            }
        });
    }

    @AfterEach
    void tearDown() {
        h.close();
    }

    private CompletableFuture<Throwable> aborted(String path) {
        return aborts.computeIfAbsent(path, p -> new CompletableFuture<>());
    }

    private void route(String path, TargetRoute route) {
        routes.put(path, route);
    }

    private static SpectorException spector(Throwable failure, ErrorCode code, String what) {
        assertThat(failure).as(what + ": fails with a SpectorException").isInstanceOf(SpectorException.class);
        SpectorException e = (SpectorException) failure;
        assertThat(e.code())
                .as(what + ": error code (message: " + e.getMessage() + ")")
                .isEqualTo(code);
        return e;
    }

    private static SpectorException spector(CompletionStage<?> stage, ErrorCode code, String what) {
        return spector(failure(stage, what), code, what);
    }

    private static Frame answer(RecordingChannel wire, long id, String what) {
        return done(wire.answer(id), what);
    }

    private static ObjectNode resultOf(Frame frame, String what) {
        assertThat(frame).as(what + ": answered with a result frame").isInstanceOf(Frame.Result.class);
        return ((Frame.Result) frame).output();
    }

    private static Frame.ErrorFrame errorOf(Frame frame, ErrorCode code, String what) {
        assertThat(frame).as(what + ": answered with an error frame").isInstanceOf(Frame.ErrorFrame.class);
        Frame.ErrorFrame error = (Frame.ErrorFrame) frame;
        assertThat(error.code())
                .as(what + ": error code (message: " + error.message() + ")")
                .isEqualTo(code);
        return error;
    }

    private static RelayHooks hooks(Consumer<RelayHead> heads, Consumer<RelayChunk> chunks) {
        return new RelayHooks() {
            @Override
            public void onRelayHead(RelayHead head) {
                heads.accept(head);
            }

            @Override
            public void onRelayChunk(RelayChunk chunk) {
                chunks.accept(chunk);
            }

            @Override
            public void onRelayInvalid(Throwable problem) {
                throw new AssertionError("the worker sent an invalid push", problem);
            }
        };
    }

    private static RelayHooks noHooks() {
        return hooks(head -> {}, chunk -> {});
    }

    private static RelayRequest wireRequest(String relayId, String method, String path, boolean hasBody) {
        return new RelayRequest(relayId, "app", method, "http://app.local" + path, List.of(), "acme", null, hasBody);
    }

    /** A relay.request input that passes every bound; tests change one field. */
    private static ObjectNode requestInput(String relayId, String path) {
        ObjectNode input = JSON.objectNode()
                .put("relayId", relayId)
                .put("target", "app")
                .put("method", "GET")
                .put("url", "http://app.local" + path)
                .put("tenant", "acme")
                .put("hasBody", false);
        input.putArray("headers");
        input.putNull("leaseId");
        return input;
    }

    /** The target reads nothing and never answers: it waits for its request's signal. */
    private static CompletionStage<RelayedResponse> never(RelayedRequest request) {
        return new CompletableFuture<>();
    }

    // ---- seed: a GET relayed to the fake target arrives with its URL (origin, path and query),
    // method, headers, tenant and lease id, and its status, headers and body come back unchanged

    @Test
    void get_reachesTheTargetWithItsUrlMethodHeadersTenantAndLeaseId_andStatusHeadersAndBodyComeBackUnchanged() {
        List<Header> answerHeaders = List.of(
                new Header("content-type", "text/plain; charset=utf-8"),
                new Header("x-r", "1"),
                new Header("x-r", "2"),
                new Header("ETag", "\"v1\""));
        route("/a/b c", request -> respond(203, ArrayBody.of("hello from app"), answerHeaders.toArray(Header[]::new)));
        h.connect();
        List<Header> sentHeaders = List.of(
                new Header("accept", "text/plain"),
                new Header("x-b", "1"),
                new Header("x-b", "2"),
                new Header("X-Mixed-Case", "V a l"));
        URI url = URI.create("https://app.local:8443/a/b%20c?x=1&y=two%2Fthree");
        RelayedRequest sent = new RelayedRequest("GET", url, sentHeaders, "acme corp", "l-9", null, new AbortSignal());

        RelayedResponse response = done(h.relay().relay(W1, new RelayCall("app", sent)), "the GET relays");

        RelayedRequest got = take(h.targetCalls, "the target gets the GET");
        assertThat(got.url())
                .as("the URL, origin, path and query, arrives unchanged")
                .isEqualTo(url);
        assertThat(got.url().getScheme() + "://" + got.url().getRawAuthority())
                .as("the origin")
                .isEqualTo("https://app.local:8443");
        assertThat(got.url().getRawPath()).as("the path").isEqualTo("/a/b%20c");
        assertThat(got.url().getRawQuery()).as("the query").isEqualTo("x=1&y=two%2Fthree");
        assertThat(got.method()).as("the method").isEqualTo("GET");
        assertThat(got.headers()).as("the headers, in order, repeats kept").isEqualTo(sentHeaders);
        assertThat(got.tenant()).as("the tenant").isEqualTo("acme corp");
        assertThat(got.leaseId()).as("the lease id").isEqualTo("l-9");
        assertThat(got.body()).as("a GET has no body").isNull();

        assertThat(response.status()).as("the status comes back unchanged").isEqualTo(203);
        assertThat(response.headers()).as("the headers come back unchanged").isEqualTo(answerHeaders);
        assertThat(text(done(readAll(body(response, "GET")), "the GET body")))
                .as("the body comes back unchanged")
                .isEqualTo("hello from app");
    }

    // ---- seed: a 20 MiB PUT body arrives at the target byte for byte, and a 20 MiB response
    // body comes back byte for byte in relay-chunk pushes of at most 256 KiB

    @Test
    void twentyMibPut_arrivesByteForByte_andTwentyMibGet_comesBackByteForByte_inRelayChunksOfAtMost256KiB() {
        byte[] data = pattern(20 * MIB, 0);
        CompletableFuture<byte[]> stored = new CompletableFuture<>();
        route("/blob", request -> {
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
        RecordingChannel wire = h.connect();

        RelayedResponse put =
                done(h.relay().relay(W1, call("PUT", "/blob", new ArrayBody(data, MIB))), "a 20 MiB PUT relays");
        assertThat(put.status()).as("PUT status").isEqualTo(204);
        assertThat(done(stored, "the target reads the PUT body"))
                .as("the target got the 20 MiB byte for byte")
                .isEqualTo(data);
        List<Seen> bodies = wire.sent(RelayBody.OP).stream()
                .filter(s -> s.chunkBytes() >= 0)
                .toList();
        assertThat(bodies.stream().mapToInt(Seen::chunkBytes).max().orElse(0))
                .as("the gateway cut the caller's 1 MiB parts into relay.body chunks of at most 256 KiB")
                .isEqualTo(CHUNK);
        assertThat(bodies.stream().mapToLong(Seen::chunkBytes).sum())
                .as("relay.body chunks carry the 20 MiB")
                .isEqualTo(data.length);

        RelayedResponse get = done(h.relay().relay(W1, call("GET", "/blob", null)), "a 20 MiB GET relays");
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

    // ---- seed: while a 20 MiB relay runs, a lease.renew forwarded to the same worker answers
    // (DESIGN.md section 5: a status.get on the same uplink)

    @Test
    void statusGet_onTheSameUplink_answersWithinItsTimeout_whileATwentyMibUploadRuns() {
        byte[] data = pattern(20 * MIB, 7);
        CompletableFuture<Void> gate = new CompletableFuture<>();
        CompletableFuture<byte[]> received = new CompletableFuture<>();
        AtomicLong read = new AtomicLong();
        route("/big", request -> {
            BodySource b = requireNonNull(request.body());
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            readGated(b, out, read, 19L * MIB, gate, received);
            return received.thenApply(bytes -> new RelayedResponse(204, List.of(), null));
        });
        RecordingChannel wire = h.connect();
        CompletionStage<RelayedResponse> put = h.relay().relay(W1, call("PUT", "/big", new ArrayBody(data, MIB)));
        until(() -> wire.sent(RelayBody.OP).size() >= 8, "the 20 MiB upload is under way");

        long start = System.nanoTime();
        StatusReport status = done(
                h.link(W1).refresh(h.scheduler, Limits.STATUS_TIMEOUT),
                "status.get answers within the link's 10 s timeout while relay.body calls fill the uplink");
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
        assertThat(done(put, "the upload ends").status()).as("status").isEqualTo(204);
        assertThat(done(received, "the target's body"))
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

    @Test
    void upload_toATargetThatReadsSlowly_neverHasMoreThanFourRelayBodyCallsUnanswered() {
        byte[] data = pattern(4 * MIB, 3);
        CompletableFuture<Void> startReading = new CompletableFuture<>();
        CompletableFuture<byte[]> received = new CompletableFuture<>();
        route("/slow", request -> {
            BodySource b = request.body();
            if (b == null) {
                throw new IllegalStateException("no body");
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            startReading.thenRun(() -> readSlowly(b, out, received));
            return received.thenApply(bytes -> new RelayedResponse(204, List.of(), null));
        });
        RecordingChannel wire = h.connect();

        CompletionStage<RelayedResponse> put = h.relay().relay(W1, call("PUT", "/slow", new ArrayBody(data, CHUNK)));
        until(
                () -> wire.unansweredBodies() == Limits.UNANSWERED_BODIES,
                "the gateway fills its window of 4 relay.body calls while the target reads nothing");
        startReading.complete(null);

        assertThat(done(put, "the slow upload ends").status()).as("status").isEqualTo(204);
        assertThat(done(received, "the target read the body"))
                .as("the body arrives whole")
                .isEqualTo(data);
        assertThat(wire.sent(RelayBody.OP))
                .as("16 chunks of 256 KiB and the end went out")
                .hasSize(17);
        assertThat(wire.maxUnansweredBodies())
                .as("relay.body calls unanswered at once, as the gateway sent and received them (window bound 4)")
                .isEqualTo(Limits.UNANSWERED_BODIES);
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

    @Test
    void targetAnswers401WithoutReading_callerGets401_everyRelayBodyAnswered_andTheCallersBodyNoLongerRead() {
        route("/guarded", request -> respond(401, ArrayBody.of("no"), new Header("www-authenticate", "Bearer")));
        RecordingChannel wire = h.connect();
        EndlessBody upload = new EndlessBody(64 * KIB);

        RelayedResponse response = done(h.relay().relay(W1, call("POST", "/guarded", upload)), "the POST relays");
        assertThat(response.status()).as("the caller gets the 401").isEqualTo(401);
        assertThat(text(done(readAll(body(response, "401")), "the 401 body")))
                .as("its body")
                .isEqualTo("no");

        Throwable cancel = done(upload.cancelled, "the gateway cancels the caller's body once the call settled");
        assertThat(cancel).as("the cancel's reason").isNotNull();
        long requestId = wire.requestId(wire.lastRelayId());
        assertThat(resultOf(answer(wire, requestId, "relay.request"), "relay.request"))
                .as("relay.request answers {} once the 401's body ended")
                .isEqualTo(RelayOutcome.COMPLETED.toJson());
        until(() -> wire.unansweredBodies() == 0, "every relay.body the gateway sent is answered");
        for (Seen body : wire.sent(RelayBody.OP)) {
            assertThat(resultOf(answer(wire, body.id(), "relay.body " + body.id()), "relay.body " + body.id()))
                    .as("relay.body %d is answered {} though the target never read it", body.id())
                    .isEqualTo(JSON.objectNode());
        }
        int reads = upload.reads.get();
        done(h.link(W1).admin().statusGet(), "a round trip on the uplink after the relay ended");
        assertThat(upload.reads.get())
                .as("the gateway stopped reading the endless caller body: no read after the relay ended")
                .isEqualTo(reads);
        assertThat(reads)
                .as("parts read from the endless body, bounded by the window of 4 (not by the body)")
                .isLessThanOrEqualTo(3 * Limits.UNANSWERED_BODIES);
    }

    // ---- seed: a response the target streams in parts reaches the gateway caller part by part,
    // before the target's body ends

    @Test
    void streamedResponse_reachesTheCallerPartByPart_beforeTheTargetsBodyEnds() {
        FedBody stream = new FedBody();
        route("/stream", request -> respond(200, stream));
        RecordingChannel wire = h.connect();
        stream.offer(utf8("part one"));

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/stream", null)), "the GET relays");
        BodySource b = body(response, "/stream");
        assertThat(text(bytesOf(requireNonNull(done(b.next(), "the first part")))))
                .as("the first part reaches the caller while the target's body has not ended")
                .isEqualTo("part one");
        long requestId = wire.requestId(wire.lastRelayId());
        assertThat(wire.answer(requestId))
                .as("relay.request is not answered yet")
                .isNotDone();

        CompletionStage<@Nullable ByteBuffer> second = b.next();
        take(stream.readsStarted, "the worker reads the target's first part");
        take(stream.readsStarted, "the worker asks the target for its second part");
        assertThat(second.toCompletableFuture())
                .as("the caller's second read waits for the target's second part")
                .isNotDone();
        stream.offer(utf8("part two"));
        assertThat(text(bytesOf(requireNonNull(done(second, "the second part")))))
                .as("the second part follows once the target made it")
                .isEqualTo("part two");
        assertThat(wire.answer(requestId))
                .as("relay.request is still not answered")
                .isNotDone();

        stream.end();
        assertThat(done(b.next(), "the end"))
                .as("the body ends once the target's body ended")
                .isNull();
    }

    // ---- seed: 204, 205 and 304 answers and a HEAD answer reach the caller with a null body,
    // and the worker sends no relay-chunk for them

    @Test
    void noBodyAnswers204_205_304_andHead_reachTheCallerWithANullBody_andNoRelayChunkCrossesTheUplink() {
        List<ArrayBody> offered = new CopyOnWriteArrayList<>();
        route("/empty", request -> {
            int status = Integer.parseInt(request.url().getQuery().substring("s=".length()));
            ArrayBody wrongly = ArrayBody.of("a body the worker must not send");
            offered.add(wrongly);
            return respond(status, wrongly, new Header("x-s", String.valueOf(status)));
        });
        RecordingChannel wire = h.connect();

        for (String[] c : new String[][] {{"GET", "204"}, {"GET", "205"}, {"GET", "304"}, {"HEAD", "200"}}) {
            String what = c[0] + " answered " + c[1];
            RelayCall relayCall = new RelayCall(
                    "app",
                    new RelayedRequest(
                            c[0],
                            URI.create("http://app.local/empty?s=" + c[1]),
                            List.of(),
                            "acme",
                            null,
                            null,
                            new AbortSignal()));
            RelayedResponse response = done(h.relay().relay(W1, relayCall), what);
            assertThat(response.status()).as(what + ": status").isEqualTo(Integer.parseInt(c[1]));
            assertThat(response.headers()).as(what + ": headers").containsExactly(new Header("x-s", c[1]));
            assertThat(response.body()).as(what + ": a null body").isNull();
            long requestId = wire.requestId(wire.lastRelayId());
            assertThat(resultOf(answer(wire, requestId, what), what))
                    .as(what + ": relay.request answers {}")
                    .isEqualTo(RelayOutcome.COMPLETED.toJson());
            assertThat(wire.received(requestId).stream().map(Seen::name).toList())
                    .as(what + ": one relay-head then the answer, and no relay-chunk on the wire")
                    .containsExactly(RelayHead.PUSH, "result");
        }
        for (ArrayBody b : offered) {
            done(b.cancelled, "the worker cancels the body a no-body answer carried");
        }
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
    @Test
    void
            callerReadsNothing_whileTheTargetStreamsSlowly_bodyErrorsFellBehindOnceTheCapIsBuffered_andTheTargetAbortsBeforeSendingAll() {
        long cap = Limits.UNREAD_RELAY_BYTES / 16; // 4 MiB
        long total = 80L * MIB / 16; // 5 MiB
        int part = CHUNK;
        AtomicLong served = new AtomicLong();
        AtomicLong servedAtAbort = new AtomicLong(-1);
        route("/flood", request -> {
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
                done(h.relayWithUnreadCap(cap).relay(W1, call("GET", "/flood", null)), "the GET relays");
        BodySource b = body(response, "/flood");
        done(aborted("/flood"), "the target's request signal aborts once the caller fell behind");
        until(() -> servedAtAbort.get() != -1, "the target notes how much it had sent when its signal aborted");

        long requestId = wire.requestId(wire.lastRelayId());
        // The gateway fails the body on its uplink's thread before it reads the worker's answer
        // to the cancel: once that answer is in, the body must read as failed.
        assertThat(resultOf(answer(wire, requestId, "relay.request"), "relay.request"))
                .as("relay.request answers {cancelled: true}")
                .isEqualTo(RelayOutcome.CANCELLED.toJson());
        Throwable error = failure(b.next(), "the caller's body errors");
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

    // ---- seed: aborting the caller's request signal before the head comes fails the call; after
    // the head, it errors the caller's body stream; either way the target's request signal aborts
    // and relay.request answers { cancelled: true } with no push after the cancel

    @Test
    void
            callerAbort_beforeHeadFailsTheCall_afterHeadErrorsTheBody_eitherWayTheTargetAborts_andRelayRequestAnswersCancelledWithNoPushAfter() {
        EndlessBody endless = new EndlessBody(32 * KIB);
        route("/hold", RelaySeedEndToEndTest::never);
        route("/endless", request -> respond(200, endless));
        RecordingChannel wire = h.connect();

        // Before the head.
        AbortSignal early = new AbortSignal();
        CompletionStage<RelayedResponse> held = h.relay().relay(W1, call("GET", "/hold", null, early));
        take(h.targetCalls, "the target gets the first relay");
        String heldRelay = wire.lastRelayId();
        CancellationException gone = new CancellationException("the caller went away");
        early.abort(gone);
        assertThat(failure(held, "the call aborted before its head"))
                .as("the call fails with the caller's abort reason")
                .isSameAs(gone);
        done(aborted("/hold"), "the target's request signal aborts (before the head)");
        long heldId = wire.requestId(heldRelay);
        assertThat(resultOf(answer(wire, heldId, "relay.request before head"), "relay.request before head"))
                .as("relay.request answers {cancelled: true} (before the head)")
                .isEqualTo(RelayOutcome.CANCELLED.toJson());
        assertThat(wire.received(heldId).stream().filter(Seen::isPush).toList())
                .as("no push for the relay cancelled before its head")
                .isEmpty();

        // After the head, while the target streams without end.
        AbortSignal late = new AbortSignal();
        RelayedResponse response =
                done(h.relay().relay(W1, call("GET", "/endless", null, late)), "the second relay gets its head");
        String streamRelay = wire.lastRelayId();
        BodySource b = body(response, "/endless");
        assertThat(done(b.next(), "a first part")).as("a first part").isNotNull();
        CancellationException left = new CancellationException("the caller left mid-body");
        late.abort(left);
        assertThat(failure(b.next(), "the body after the abort"))
                .as("the caller's body stream errors with the abort reason")
                .isSameAs(left);
        done(aborted("/endless"), "the target's request signal aborts (after the head)");
        done(endless.cancelled, "the worker stops the target's endless body");
        long streamId = wire.requestId(streamRelay);
        Frame answered = answer(wire, streamId, "relay.request after head");
        assertThat(resultOf(answered, "relay.request after head"))
                .as("relay.request answers {cancelled: true} (after the head)")
                .isEqualTo(RelayOutcome.CANCELLED.toJson());
        done(h.link(W1).admin().statusGet(), "a round trip on the uplink after the cancel");
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

    // ---- seed: a caller's request body that errors mid-upload aborts the target's request signal

    @Test
    void callerBodyErrorsMidUpload_abortsTheTargetsRequestSignal_andFailsTheCallWithTheError() {
        AtomicInteger partsRead = new AtomicInteger();
        route("/upload", request -> {
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
        RecordingChannel wire = h.connect();
        FedBody upload = new FedBody();
        upload.offer(pattern(100 * KIB, 1));

        CompletionStage<RelayedResponse> put = h.relay().relay(W1, call("PUT", "/upload", upload));
        until(() -> partsRead.get() == 1, "the target reads the first part of the upload");
        IOException broken = new IOException("the caller's connection broke mid-upload");
        upload.fail(broken);

        assertThat(failure(put, "the upload whose body failed"))
                .as("the call fails with the caller's body error (before the head)")
                .isSameAs(broken);
        done(aborted("/upload"), "the target's request signal aborts");
        assertThat(wire.sent(RelayCancel.OP))
                .as("the gateway sent relay.cancel")
                .hasSize(1);
    }

    // ---- seed: a target that never answers is cancelled after a 200 ms deadline, and the caller
    // gets WORKER_UNREACHABLE with message worker <id> did not finish the relayed request within
    // 200 ms; one that stalls after its head gets its body stream errored with that message

    @Test
    void deadline200ms_silentTargetIsCancelledAndTheCallerGetsWorkerUnreachable_andAStallAfterTheHeadErrorsTheBody() {
        FedBody stalling = new FedBody();
        stalling.offer(utf8("first and last part"));
        route("/hello", request -> respond(200, ArrayBody.of("hello")));
        route("/silent", RelaySeedEndToEndTest::never);
        route("/stall", request -> respond(200, stalling));
        RecordingChannel wire = h.connect();
        done(readAll(body(done(h.relay().relay(W1, call("GET", "/hello", null)), "warm-up"), "warm-up")), "warm-up");
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
        done(aborted("/silent"), "the silent target's request signal aborts: the gateway cancelled it");
        assertThat(wire.sent(RelayCancel.OP).stream().map(Seen::relayId))
                .as("relay.cancel was sent for the silent relay")
                .contains(wire.lastRelayId());

        RelayedResponse stalled = done(fast.relay(W1, call("GET", "/stall", null)), "the stalling target's head");
        BodySource b = body(stalled, "/stall");
        assertThat(text(bytesOf(requireNonNull(done(b.next(), "the part before the stall")))))
                .as("the part before the stall")
                .isEqualTo("first and last part");
        SpectorException stall = spector(b.next(), ErrorCode.WORKER_UNREACHABLE, "the stalled body");
        assertThat(stall.getMessage())
                .as("the stalled body's error is the deadline's exact message")
                .isEqualTo(expected);
        done(aborted("/stall"), "the stalling target's request signal aborts");
    }

    // ---- seed: closing the uplink mid-relay fails the caller with WORKER_UNREACHABLE, or errors
    // its body stream after the head, and aborts the target's request signal

    @Test
    void
            closingTheUplinkMidRelay_failsTheCallerBeforeTheHead_errorsTheBodyAfterIt_withWorkerUnreachable_andAbortsTheTargets() {
        FedBody stalling = new FedBody();
        stalling.offer(utf8("a part"));
        route("/hold", RelaySeedEndToEndTest::never);
        route("/stall", request -> respond(200, stalling));
        h.connect();

        CompletionStage<RelayedResponse> beforeHead = h.relay().relay(W1, call("GET", "/hold", null));
        RelayedResponse afterHead = done(h.relay().relay(W1, call("GET", "/stall", null)), "the second relay's head");
        BodySource b = body(afterHead, "/stall");
        assertThat(done(b.next(), "a part before the drop"))
                .as("a part before the drop")
                .isNotNull();
        until(() -> h.targetCalls.size() == 2, "both relays reached the target");

        h.workerEnd(W1).channel().close(); // The TCP connection drops: no WebSocket close.

        SpectorException before = spector(beforeHead, ErrorCode.WORKER_UNREACHABLE, "the relay before its head");
        assertThat(before.getMessage()).as("it names the worker").contains("w1");
        spector(b.next(), ErrorCode.WORKER_UNREACHABLE, "the body of the relay after its head");
        done(aborted("/hold"), "the target's signal of the relay before its head aborts");
        done(aborted("/stall"), "the target's signal of the relay after its head aborts");
    }

    // ---- seed: a relay to a worker with no uplink fails with WORKER_UNREACHABLE and the target
    // sees nothing

    @Test
    void relayToAWorkerWithNoUplink_failsWorkerUnreachable_andTheTargetSeesNothing() {
        route("/hello", request -> respond(200, ArrayBody.of("hello")));
        RecordingChannel wire = h.connect();
        h.stopWorker(W1);
        until(() -> h.directory.live(W1) == null, "the stopped worker's uplink leaves the directory");

        spector(h.relay().relay(W1, call("GET", "/hello", null)), ErrorCode.WORKER_UNREACHABLE, "a relay to w1");
        spector(h.relay().relay("w9", call("GET", "/hello", null)), ErrorCode.WORKER_UNREACHABLE, "a relay to w9");
        assertThat(h.targetCalls).as("the target saw nothing").isEmpty();
        assertThat(wire.sent(RelayRequest.OP)).as("no relay.request went out").isEmpty();
    }

    // ---- seed: a relay naming a target nobody registered fails with RELAY_TARGET_MISSING

    @Test
    void relayNamingATargetNobodyRegistered_failsRelayTargetMissing() {
        h.connect();
        RelayCall missing = new RelayCall(
                "nobody",
                new RelayedRequest(
                        "GET", URI.create("http://app.local/x"), List.of(), "acme", null, null, new AbortSignal()));
        SpectorException e =
                spector(h.relay().relay(W1, missing), ErrorCode.RELAY_TARGET_MISSING, "a relay to target nobody");
        assertThat(e.details()).as("details name the target").containsEntry("target", "nobody");
        assertThat(h.targetCalls).as("no registered target was called").isEmpty();
    }

    // ---- seed: a target that throws fails the call with INTERNAL and the worker logs its message;
    // a response body that errors after the head fails the call with INTERNAL after the chunks
    // already sent

    @Test
    void
            targetThrows_failsInternal_andTheWorkerLogsItsMessage_andABodyErrorAfterTheHead_failsInternalAfterTheChunksSent() {
        route("/throws", request -> {
            throw new IllegalStateException("the disk is on fire");
        });
        FedBody breaking = new FedBody();
        breaking.offer(utf8("one,"));
        breaking.offer(utf8("two,"));
        breaking.fail(new IllegalStateException("upstream reset"));
        route("/breaks", request -> respond(200, breaking));
        RecordingChannel wire = h.connect();

        try (LogCapture log = new LogCapture()) {
            SpectorException thrown = spector(
                    h.relay().relay(W1, call("GET", "/throws", null)), ErrorCode.INTERNAL, "a target that throws");
            assertThat(thrown.getMessage())
                    .as("the caller's error carries the target's message")
                    .contains("the disk is on fire");
            until(() -> log.text().contains("the disk is on fire"), "the worker logs the thrown error's message");
        }

        RelayedResponse response = done(h.relay().relay(W1, call("GET", "/breaks", null)), "the head comes");
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
        long requestId = wire.requestId(wire.lastRelayId());
        assertThat(wire.received(requestId).stream().map(Seen::name).toList())
                .as("on the wire: the head, the chunks already sent, then INTERNAL")
                .containsExactly(RelayHead.PUSH, RelayChunk.PUSH, RelayChunk.PUSH, ErrorCode.INTERNAL.name());
    }

    // ---- seed: a relay and a device.exec with output running at once on one worker each get only
    // their own pushes (DESIGN.md section 5: two relays at once)

    @Test
    void twoRelaysAtOnceOnOneWorker_eachGetOnlyTheirOwnPushes() {
        int parts = 12;
        List<CompletableFuture<Void>> servedA = new ArrayList<>();
        List<CompletableFuture<Void>> servedB = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            servedA.add(new CompletableFuture<>());
            servedB.add(new CompletableFuture<>());
        }
        // A's part i waits for B's part i-1, B's part i for A's part i: the two interleave.
        route(
                "/a",
                request -> respond(200, new PingPong('a', parts, servedA, i -> i == 0 ? null : servedB.get(i - 1))));
        route("/b", request -> respond(200, new PingPong('b', parts, servedB, servedA::get)));
        RecordingChannel wire = h.connect();

        RelayedResponse a = done(h.relay().relay(W1, call("GET", "/a", null)), "relay a's head");
        String relayA = wire.lastRelayId();
        RelayedResponse b = done(h.relay().relay(W1, call("GET", "/b", null)), "relay b's head");
        String relayB = wire.lastRelayId();
        byte[] gotA = done(readAll(body(a, "a")), "relay a's body");
        byte[] gotB = done(readAll(body(b, "b")), "relay b's body");

        assertThat(text(gotA)).as("relay a gets only its own parts, in order").isEqualTo(PingPong.expected('a', parts));
        assertThat(text(gotB)).as("relay b gets only its own parts, in order").isEqualTo(PingPong.expected('b', parts));
        long idA = wire.requestId(relayA);
        long idB = wire.requestId(relayB);
        List<Long> pushOwners = wire.seen(s -> s.isPush() && (s.id() == idA || s.id() == idB)).stream()
                .map(Seen::id)
                .toList();
        int switches = 0;
        for (int i = 1; i < pushOwners.size(); i++) {
            if (!pushOwners.get(i).equals(pushOwners.get(i - 1))) {
                switches++;
            }
        }
        assertThat(switches)
                .as("the two relays' pushes interleaved on the one uplink (owner switches)")
                .isGreaterThanOrEqualTo(2);
    }

    /** Parts "a0;a1;..." where part i waits for the other body's part (see the test). */
    private static final class PingPong implements BodySource {
        private final char name;
        private final int parts;
        private final List<CompletableFuture<Void>> served;
        private final java.util.function.IntFunction<@Nullable CompletableFuture<Void>> after;
        private int next; // Guarded by this.

        PingPong(
                char name,
                int parts,
                List<CompletableFuture<Void>> served,
                java.util.function.IntFunction<@Nullable CompletableFuture<Void>> after) {
            this.name = name;
            this.parts = parts;
            this.served = served;
            this.after = after;
        }

        static String expected(char name, int parts) {
            StringBuilder s = new StringBuilder();
            for (int i = 0; i < parts; i++) {
                s.append(name).append(i).append(';');
            }
            return s.toString();
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            int i;
            synchronized (this) {
                i = next++;
            }
            if (i >= parts) {
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> wait = after.apply(i);
            CompletableFuture<Void> ready = wait == null ? CompletableFuture.completedFuture(null) : wait;
            return ready.thenApply(v -> {
                served.get(i).complete(null);
                return ByteBuffer.wrap(utf8(String.valueOf(name) + i + ";"));
            });
        }

        @Override
        public void cancel(Throwable reason) {}
    }

    // ---- seed: relay.request, relay.body and relay.cancel from an admin session that is not the
    // gateway's uplink answer FORBIDDEN

    @Test
    void relayRequestBodyAndCancel_fromASessionThatIsNotTheGatewaysUplink_answerForbidden() {
        route("/hello", request -> respond(200, ArrayBody.of("hello")));
        h.connect();
        h.connect("w1-admin", UplinkSession.Role.LOCAL_ADMIN);
        RealGatewayWorkerClient admin = h.client("w1-admin");

        assertThat(done(admin.statusGet(), "status.get on the admin session").workerId())
                .as("the admin session serves status.get")
                .isEqualTo("w1-admin");
        spector(
                admin.relayRequest(wireRequest("r-1", "GET", "/hello", false), noHooks()),
                ErrorCode.FORBIDDEN,
                "relay.request on the admin session");
        spector(
                admin.relayBody(RelayBody.Chunk.of("r-1", 0, utf8("x"))),
                ErrorCode.FORBIDDEN,
                "relay.body on the admin session");
        spector(admin.relayCancel("r-1"), ErrorCode.FORBIDDEN, "relay.cancel on the admin session");
        spector(
                h.relay().relay("w1-admin", call("GET", "/hello", null)),
                ErrorCode.FORBIDDEN,
                "GatewayRelay over the admin session");
        assertThat(h.targetCalls).as("the target saw nothing").isEmpty();
    }

    // ---- seed: a relay.request reusing an active relayId fails BAD_REQUEST; a relay.body for an
    // unknown relay id answers {}; relay.cancel for an unknown relay id answers {}

    @Test
    void relayRequestReusingAnActiveRelayId_failsBadRequest_andRelayBodyAndCancelForAnUnknownRelayId_answerEmpty() {
        route("/hold", RelaySeedEndToEndTest::never);
        RecordingChannel wire = h.connect();
        RealGatewayWorkerClient client = h.client(W1);

        CompletionStage<RelayOutcome> first = client.relayRequest(wireRequest("r-1", "GET", "/hold", false), noHooks());
        take(h.targetCalls, "the first relay r-1 reaches the target");
        SpectorException reused = spector(
                client.relayRequest(wireRequest("r-1", "GET", "/hold", false), noHooks()),
                ErrorCode.BAD_REQUEST,
                "a second relay.request with the active id r-1");
        assertThat(reused.details()).as("the refusal names the field").containsEntry("field", "relayId");
        assertThat(h.targetCalls).as("the reused id never reached the target").isEmpty();
        assertThat(first.toCompletableFuture()).as("the first r-1 still runs").isNotDone();

        done(client.relayBody(RelayBody.Chunk.of("nobody", 0, utf8("x"))), "relay.body for an unknown relay id");
        done(client.relayBody(new RelayBody.End("nobody")), "relay.body end for an unknown relay id");
        done(client.relayCancel("nobody"), "relay.cancel for an unknown relay id");
        for (Seen call : wire.seen(s -> s.sent() && "nobody".equals(s.relayId()))) {
            assertThat(resultOf(answer(wire, call.id(), call.name()), call.name()))
                    .as("%s for an unknown relay id answers {}", call.name())
                    .isEqualTo(JSON.objectNode());
        }
        done(client.relayCancel("r-1"), "cancel r-1");
        assertThat(done(first, "r-1 ends").cancelled())
                .as("r-1 answers {cancelled: true}")
                .isTrue();
    }

    // ---- seed: a relay.body with a seq out of order, a repeated seq, a chunk after end, or any
    // chunk for a relay opened with hasBody: false fails BAD_REQUEST and aborts the target's
    // request

    @Test
    void relayBodyOutOfOrder_repeated_afterEnd_orForAHasBodyFalseRelay_failsBadRequest_andAbortsTheTargetsRequest() {
        route("/v/order", RelaySeedEndToEndTest::never);
        route("/v/repeat", RelaySeedEndToEndTest::never);
        route("/v/after-end", RelaySeedEndToEndTest::never);
        route("/v/no-body", RelaySeedEndToEndTest::never);
        h.connect();
        RealGatewayWorkerClient client = h.client(W1);
        byte[] x = utf8("x");

        record Case(String name, String path, boolean hasBody, List<RelayBody> frames) {}
        List<Case> cases = List.of(
                new Case("seq out of order", "/v/order", true, List.of(RelayBody.Chunk.of("v-1", 1, x))),
                new Case(
                        "a repeated seq",
                        "/v/repeat",
                        true,
                        List.of(RelayBody.Chunk.of("v-2", 0, x), RelayBody.Chunk.of("v-2", 0, x))),
                new Case(
                        "a chunk after end",
                        "/v/after-end",
                        true,
                        List.of(
                                RelayBody.Chunk.of("v-3", 0, x),
                                new RelayBody.End("v-3"),
                                RelayBody.Chunk.of("v-3", 1, x))),
                new Case("a chunk for hasBody: false", "/v/no-body", false, List.of(RelayBody.Chunk.of("v-4", 0, x))));
        int n = 0;
        for (Case c : cases) {
            String relayId = "v-" + ++n;
            CompletionStage<RelayOutcome> relay =
                    client.relayRequest(wireRequest(relayId, "POST", c.path(), c.hasBody()), noHooks());
            List<CompletionStage<Void>> sent = new ArrayList<>();
            for (RelayBody frame : c.frames()) {
                sent.add(client.relayBody(frame));
            }
            spector(sent.get(sent.size() - 1), ErrorCode.BAD_REQUEST, c.name() + ": the breaking relay.body");
            SpectorException aborted = spector(relay, ErrorCode.BAD_REQUEST, c.name() + ": its relay.request");
            assertThat(aborted.getMessage())
                    .as(c.name() + ": the relay says it was aborted")
                    .contains("aborted");
            done(aborted(c.path()), c.name() + ": the target's request signal aborts");
            for (int i = 0; i < sent.size() - 1; i++) {
                done(sent.get(i), c.name() + ": the relay.body " + i + " before the breaking one is answered");
            }
        }
    }

    // ---- seed: each bound in the field table is refused BAD_REQUEST one past its limit, and
    // passes at its limit (representative over the real uplink; RelayRequestTest has all at codec
    // level)

    @Test
    void relayRequestFields_oneBeyondTheirBoundAreRefusedBadRequest_andAtTheBoundPass() {
        route("/ok", request -> respond(204, null));
        RecordingChannel wire = h.connect();
        int ids = 0;

        record Past(String what, String field, Consumer<ObjectNode> change) {}
        List<Past> past = List.of(
                new Past("a 65-char relay id", "relayId", in -> in.put("relayId", "r".repeat(65))),
                new Past("an upper-case target", "target", in -> in.put("target", "App")),
                new Past("an unknown method", "method", in -> in.put("method", "FETCH")),
                new Past("a relative URL", "url", in -> in.put("url", "/ok")),
                new Past("a file: URL", "url", in -> in.put("url", "file:///etc/passwd")),
                new Past("a 4097-char URL", "url", in -> in.put("url", longUrl(4097))),
                new Past("101 headers", "headers", in -> in.set("headers", headers(101, 1))),
                new Past("a header name with a space", "headers[0].name", in -> in.set("headers", header("x a", "v"))),
                new Past("a value with a newline", "headers[0].value", in -> in.set("headers", header("x-a", "v\nw"))),
                new Past(
                        "an 8193-char value",
                        "headers[0].value",
                        in -> in.set("headers", header("x-a", "v".repeat(8193)))),
                new Past("a 301-char tenant", "tenant", in -> in.put("tenant", "t".repeat(301))),
                new Past("a bad lease id", "leaseId", in -> in.put("leaseId", "lease 9")),
                new Past("a 129-char lease id", "leaseId", in -> in.put("leaseId", "l".repeat(129))),
                new Past("GET with hasBody", "hasBody", in -> in.put("hasBody", true)));
        for (Past p : past) {
            ObjectNode input = requestInput("p-" + ++ids, "/ok");
            p.change().accept(input);
            long id = wire.call(RelayRequest.OP, input);
            Frame.ErrorFrame error = errorOf(answer(wire, id, p.what()), ErrorCode.BAD_REQUEST, p.what());
            assertThat(error.details().path("field").asText())
                    .as(p.what() + ": the refusal names the field")
                    .isEqualTo(p.field());
        }
        assertThat(h.targetCalls).as("no refused relay reached the target").isEmpty();

        record At(String what, Consumer<ObjectNode> change, Consumer<RelayedRequest> check) {}
        List<At> at = List.of(
                new At("a 64-char relay id", in -> in.put("relayId", "r".repeat(64)), r -> {}),
                new At("a 64-char target", in -> in.put("target", RelayHarness.LONGEST_TARGET), r -> {}),
                new At(
                        "a 4096-char URL",
                        in -> in.put("url", longUrl(4096)),
                        r -> assertThat(r.url().toString())
                                .as("the 4096-char URL")
                                .hasSize(4096)),
                new At(
                        "100 headers",
                        in -> in.set("headers", headers(100, 1)),
                        r -> assertThat(r.headers()).as("100 headers").hasSize(100)),
                new At(
                        "a 256-char header name and an 8192-char value",
                        in -> in.set("headers", header("n".repeat(256), "v".repeat(8192))),
                        r -> assertThat(r.headers())
                                .as("the longest name and value")
                                .containsExactly(new Header("n".repeat(256), "v".repeat(8192)))),
                new At(
                        "a 300-char tenant",
                        in -> in.put("tenant", "t".repeat(300)),
                        r -> assertThat(r.tenant()).as("the 300-char tenant").hasSize(300)),
                new At(
                        "a 128-char lease id",
                        in -> in.put("leaseId", "l".repeat(128)),
                        r -> assertThat(r.leaseId()).as("the 128-char lease id").hasSize(128)),
                new At(
                        "each method",
                        in -> in.put("method", "OPTIONS"),
                        r -> assertThat(r.method()).as("method").isEqualTo("OPTIONS")));
        for (At a : at) {
            ObjectNode input = requestInput("a-" + ++ids, "/ok");
            a.change().accept(input);
            long id = wire.call(RelayRequest.OP, input);
            assertThat(resultOf(answer(wire, id, a.what()), a.what()))
                    .as(a.what() + ": passes, and relay.request answers {}")
                    .isEqualTo(RelayOutcome.COMPLETED.toJson());
            a.check().accept(take(h.targetCalls, a.what() + ": reaches the target"));
        }
    }

    private static String longUrl(int chars) {
        String head = "http://app.local/ok?q=";
        return head + "a".repeat(chars - head.length());
    }

    private static ArrayNode headers(int count, int valueChars) {
        ArrayNode array = JSON.arrayNode();
        for (int i = 0; i < count; i++) {
            array.addArray().add("x-h" + i).add("v".repeat(valueChars));
        }
        return array;
    }

    private static ArrayNode header(String name, String value) {
        ArrayNode array = JSON.arrayNode();
        array.addArray().add(name).add(value);
        return array;
    }

    // ---- seed: the caller's authorization, x-agent-device-token, connection and
    // transfer-encoding headers never reach the target, and a target's content-length and
    // connection headers never reach the caller

    @Test
    void
            callersAuthorizationTokenConnectionAndTransferEncoding_neverReachTheTarget_andTargetsContentLengthAndConnection_neverReachTheCaller() {
        route(
                "/h",
                request -> respond(
                        200,
                        ArrayBody.of("hello"),
                        new Header("Content-Length", "5"),
                        new Header("connection", "keep-alive"),
                        new Header("x-back", "1")));
        RecordingChannel wire = h.connect();
        List<Header> sent = List.of(
                new Header("Authorization", "Bearer gateway-secret"),
                new Header("x-agent-device-token", "device-secret"),
                new Header("Connection", "close"),
                new Header("transfer-encoding", "chunked"),
                new Header("x-keep", "1"));
        RelayedResponse response = done(
                h.relay()
                        .relay(
                                W1,
                                new RelayCall(
                                        "app",
                                        new RelayedRequest(
                                                "POST",
                                                URI.create("http://app.local/h"),
                                                sent,
                                                "acme",
                                                null,
                                                ArrayBody.of("body"),
                                                new AbortSignal()))),
                "the POST relays");
        RelayedRequest got = take(h.targetCalls, "the target gets the POST");
        assertThat(got.headers())
                .as("only the end-to-end header reaches the target")
                .containsExactly(new Header("x-keep", "1"));
        assertThat(response.headers())
                .as("the target's content-length and connection never reach the caller")
                .containsExactly(new Header("x-back", "1"));
        assertThat(text(done(readAll(body(response, "/h")), "the body")))
                .as("the body")
                .isEqualTo("hello");

        // A raw relay.request carrying them anyway: the worker filters on its side too.
        ObjectNode raw = requestInput("raw-h", "/h");
        ArrayNode rawHeaders = JSON.arrayNode();
        for (Header header : sent) {
            rawHeaders.addArray().add(header.name()).add(header.value());
        }
        raw.set("headers", rawHeaders);
        long id = wire.call(RelayRequest.OP, raw);
        resultOf(answer(wire, id, "the raw relay.request"), "the raw relay.request");
        assertThat(take(h.targetCalls, "the raw relay reaches the target").headers())
                .as("the worker drops them from a raw frame too")
                .containsExactly(new Header("x-keep", "1"));
    }

    // ---- seed: a target answering 101 headers fails the call with INTERNAL, and the worker logs
    // it

    @Test
    void targetAnswering101Headers_failsTheCallInternal_andTheWorkerLogsTheBound() {
        List<Header> many = new ArrayList<>();
        for (int i = 0; i < 101; i++) {
            many.add(new Header("x-h" + i, "v"));
        }
        route("/many", request -> respond(200, ArrayBody.of("never sent"), many.toArray(Header[]::new)));
        RecordingChannel wire = h.connect();
        try (LogCapture log = new LogCapture()) {
            SpectorException e = spector(
                    h.relay().relay(W1, call("GET", "/many", null)), ErrorCode.INTERNAL, "101 response headers");
            assertThat(e.getMessage()).as("the caller's error names the bound").contains("101");
            until(
                    () -> log.text().contains("outside the relay's bounds")
                            && log.text().contains("101 headers"),
                    "the worker logs which bound the response broke");
        }
        long requestId = wire.requestId(wire.lastRelayId());
        assertThat(wire.received(requestId).stream().filter(Seen::isPush).toList())
                .as("no relay-head for a response out of bounds")
                .isEmpty();
    }

    // ---- seed: a 17th relay on one connection fails BAD_REQUEST; the gateway's 9th relay to one
    // worker starts only after one of 8 ends

    @Test
    void
            seventeenthRelayOnOneConnection_failsBadRequest_andTheGatewaysNinthRelayToOneWorkerStartsOnlyAfterOneOfEightEnds() {
        route("/hold", RelaySeedEndToEndTest::never);
        BlockingQueue<CompletableFuture<RelayedResponse>> answers = new LinkedBlockingQueue<>();
        route("/held", request -> {
            CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
            answers.add(answer);
            return answer;
        });
        RecordingChannel wire = h.connect();
        RealGatewayWorkerClient client = h.client(W1);

        List<CompletionStage<RelayOutcome>> sixteen = new ArrayList<>();
        for (int i = 0; i < Limits.ACTIVE_RELAYS_PER_CONNECTION.max(); i++) {
            sixteen.add(client.relayRequest(wireRequest("c-" + i, "GET", "/hold", false), noHooks()));
        }
        for (int i = 0; i < 16; i++) {
            take(h.targetCalls, "active relay " + i + " of 16 reaches the target");
        }
        spector(
                client.relayRequest(wireRequest("c-16", "GET", "/hold", false), noHooks()),
                ErrorCode.BAD_REQUEST,
                "the 17th active relay on the connection");
        assertThat(h.targetCalls).as("the 17th never reached the target").isEmpty();
        for (int i = 0; i < 16; i++) {
            done(client.relayCancel("c-" + i), "cancel c-" + i);
            assertThat(done(sixteen.get(i), "c-" + i + " ends").cancelled())
                    .as("c-%d cancelled", i)
                    .isTrue();
        }

        GatewayRelay relay = h.relay();
        int before = wire.sent(RelayRequest.OP).size();
        List<CompletionStage<RelayedResponse>> nine = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            nine.add(relay.relay(W1, call("GET", "/held", null)));
        }
        List<CompletableFuture<RelayedResponse>> eight = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            eight.add(take(answers, "gateway relay " + i + " of 8 reaches the target"));
        }
        assertThat(wire.sent(RelayRequest.OP).size() - before)
                .as("relay.request frames sent while 8 relays run (per-worker bound 8)")
                .isEqualTo(8);
        assertThat(relay.running(W1)).as("relays holding a slot").isEqualTo(8);
        assertThat(nine.get(8).toCompletableFuture()).as("the 9th waits").isNotDone();

        eight.get(0).complete(new RelayedResponse(204, List.of(), null));
        // The target's calls may arrive in any order, so the answered one is any of the first 8.
        done(
                CompletableFuture.anyOf(nine.subList(0, 8).stream()
                        .map(CompletionStage::toCompletableFuture)
                        .toArray(CompletableFuture[]::new)),
                "one of the 8 ends");
        CompletableFuture<RelayedResponse> ninth = take(answers, "the 9th reaches the target once one of 8 ended");
        assertThat(wire.sent(RelayRequest.OP).size() - before)
                .as("the 9th relay.request went out")
                .isEqualTo(9);
        ninth.complete(new RelayedResponse(204, List.of(), null));
        for (int i = 1; i < 8; i++) {
            eight.get(i).complete(new RelayedResponse(204, List.of(), null));
        }
        for (CompletionStage<RelayedResponse> r : nine) {
            assertThat(done(r, "each of the 9 ends").status()).as("status").isEqualTo(204);
        }
        until(() -> relay.running(W1) == 0, "every slot is free again");
    }

    // ---- seed: a relay.body frame sent right behind its relay.request frame is never dropped
    // (checked with seq 0 plus end sent back to back, 50 times)

    @Test
    void relayBodyRightBehindItsRelayRequest_isNeverDropped_fiftyTimesBackToBack() {
        route(
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
            done(chunk, "try " + i + ": seq 0 right behind relay.request is answered");
            done(end, "try " + i + ": end is answered");
            assertThat(done(relay, "try " + i + ": the relay ends").cancelled())
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

    // ---- seed: a chunk that is not standard base64, and one that decodes to 262 145 bytes, fail
    // BAD_REQUEST

    @Test
    void relayBodyChunkNotStandardBase64_orDecodingTo262145Bytes_failsBadRequest_and262144BytesPass() {
        CompletableFuture<byte[]> received = new CompletableFuture<>();
        route(
                "/sink",
                request -> readAll(requireNonNull(request.body())).thenApply(bytes -> {
                    received.complete(bytes);
                    return new RelayedResponse(204, List.of(), null);
                }));
        RecordingChannel wire = h.connect();
        RealGatewayWorkerClient client = h.client(W1);
        CompletionStage<RelayOutcome> relay = client.relayRequest(wireRequest("b64", "PUT", "/sink", true), noHooks());

        Map<String, String> bad = Map.of(
                "unpadded", "aGVsbG8",
                "URL-safe alphabet", "-_-_",
                "a line break", "aGVs\nbG8=",
                "262 145 bytes", Base64.getEncoder().encodeToString(new byte[CHUNK + 1]));
        for (Map.Entry<String, String> b : bad.entrySet()) {
            ObjectNode input =
                    JSON.objectNode().put("relayId", "b64").put("seq", 0).put("chunk", b.getValue());
            long id = wire.call(RelayBody.OP, input);
            Frame.ErrorFrame error = errorOf(answer(wire, id, b.getKey()), ErrorCode.BAD_REQUEST, b.getKey());
            assertThat(error.details().path("field").asText())
                    .as(b.getKey() + ": the refusal names the chunk")
                    .isEqualTo("chunk");
        }

        byte[] largest = pattern(CHUNK, 5);
        done(client.relayBody(RelayBody.Chunk.of("b64", 0, largest)), "a chunk of exactly 256 KiB is answered");
        done(client.relayBody(new RelayBody.End("b64")), "the end");
        assertThat(done(relay, "the relay ends").cancelled())
                .as("not cancelled")
                .isFalse();
        assertThat(done(received, "the target's body"))
                .as("the 256 KiB chunk arrives whole")
                .isEqualTo(largest);
    }

    private static <T> T requireNonNull(@Nullable T value) {
        if (value == null) {
            throw new AssertionError("expected a value, got null");
        }
        return value;
    }
}
