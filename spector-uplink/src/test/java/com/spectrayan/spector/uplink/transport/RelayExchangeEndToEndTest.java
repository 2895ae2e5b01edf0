package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.uplink.testing.TestBodies.body;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.testing.TestBodies.text;
import static com.spectrayan.spector.uplink.testing.TestBodies.utf8;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.JSON;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.answer;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.requestInput;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.requireNonNull;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.resultOf;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.RelayCall;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import com.spectrayan.spector.uplink.wire.Header;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Seed 000's Tests lines on a relayed request and its response: what reaches the target, what comes back, whose pushes are whose, which headers are dropped: one test per line, end to end over
 * {@link RelaySeedFixture}. Each runs over v1 and over v2 ({@link Protocol}): what the target and the
 * caller see is asserted the same on both; what crosses the wire in each version's own frames.
 */
final class RelayExchangeEndToEndTest {
    @RegisterExtension
    final RelaySeedFixture seed = new RelaySeedFixture();

    private final RelayHarness h = seed.h;

    // ---- seed: a GET relayed to the fake target arrives with its URL (origin, path and query),
    // method, headers, tenant and lease id, and its status, headers and body come back unchanged

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void get_reachesTheTargetWithItsUrlMethodHeadersTenantAndLeaseId_andStatusHeadersAndBodyComeBackUnchanged(
            Protocol protocol) {
        List<Header> answerHeaders = List.of(
                new Header("content-type", "text/plain; charset=utf-8"),
                new Header("x-r", "1"),
                new Header("x-r", "2"),
                new Header("ETag", "\"v1\""));
        seed.route(
                "/a/b c",
                request -> respond(203, ArrayBody.of("hello from app"), answerHeaders.toArray(Header[]::new)));
        RecordingChannel wire = h.connect(protocol);
        List<Header> sentHeaders = List.of(
                new Header("accept", "text/plain"),
                new Header("x-b", "1"),
                new Header("x-b", "2"),
                new Header("X-Mixed-Case", "V a l"));
        URI url = URI.create("https://app.local:8443/a/b%20c?x=1&y=two%2Fthree");
        RelayedRequest sent = new RelayedRequest("GET", url, sentHeaders, "acme corp", "l-9", null, new AbortSignal());

        RelayedResponse response = done(h.relay().relay(W1, new RelayCall("app", sent)), "the GET relays", WAIT);

        RelayedRequest got = take(h.targetCalls, "the target gets the GET", WAIT);
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
        assertThat(text(done(readAll(body(response, "GET")), "the GET body", WAIT)))
                .as("the body comes back unchanged")
                .isEqualTo("hello from app");
        if (protocol == Protocol.V2) {
            int stream = wire.v2().lastStreamId();
            assertThat(wire.v2().names(stream, true))
                    .as("v2: the GET opened its stream with a HEADERS carrying END_STREAM (no body)")
                    .containsExactly("HEADERS+END");
            assertThat(wire.v2().received(stream).get(0).text())
                    .as("v2: the worker's response head")
                    .contains("\"status\":203");
            assertThat(wire.v2().dataBytes(stream, false))
                    .as("v2: the body travelled as DATA")
                    .isEqualTo("hello from app".length());
            assertThat(wire.sent(RelayRequest.OP))
                    .as("v2: no relay.request call")
                    .isEmpty();
        }
    }

    // ---- seed: 204, 205 and 304 answers and a HEAD answer reach the caller with a null body,
    // and the worker sends no relay-chunk for them

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void noBodyAnswers204_205_304_andHead_reachTheCallerWithANullBody_andNoRelayChunkCrossesTheUplink(
            Protocol protocol) {
        List<ArrayBody> offered = new CopyOnWriteArrayList<>();
        seed.route("/empty", request -> {
            int status = Integer.parseInt(request.url().getQuery().substring("s=".length()));
            ArrayBody wrongly = ArrayBody.of("a body the worker must not send");
            offered.add(wrongly);
            return respond(status, wrongly, new Header("x-s", String.valueOf(status)));
        });
        RecordingChannel wire = h.connect(protocol);

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
            RelayedResponse response = done(h.relay().relay(W1, relayCall), what, WAIT);
            assertThat(response.status()).as(what + ": status").isEqualTo(Integer.parseInt(c[1]));
            assertThat(response.headers()).as(what + ": headers").containsExactly(new Header("x-s", c[1]));
            assertThat(response.body()).as(what + ": a null body").isNull();
            if (protocol == Protocol.V2) {
                int stream = wire.v2().lastStreamId();
                done(h.link(W1).admin().statusGet(), what + ": a round trip on the link after the answer", WAIT);
                assertThat(wire.v2().names(stream, false))
                        .as(what + ": v2: one response HEADERS with END_STREAM, and no DATA on the wire")
                        .containsExactly("HEADERS+END");
                continue;
            }
            long requestId = wire.requestId(wire.lastRelayId());
            assertThat(resultOf(answer(wire, requestId, what), what))
                    .as(what + ": relay.request answers {}")
                    .isEqualTo(RelayOutcome.COMPLETED.toJson());
            assertThat(wire.received(requestId).stream().map(Seen::name).toList())
                    .as(what + ": one relay-head then the answer, and no relay-chunk on the wire")
                    .containsExactly(RelayHead.PUSH, "result");
        }
        for (ArrayBody b : offered) {
            done(b.cancelled(), "the worker cancels the body a no-body answer carried", WAIT);
        }
    }

    // ---- seed: a relay and a device.exec with output running at once on one worker each get only
    // their own pushes (DESIGN.md section 5: two relays at once)

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void twoRelaysAtOnceOnOneWorker_eachGetOnlyTheirOwnPushes(Protocol protocol) {
        int parts = 12;
        List<CompletableFuture<Void>> servedA = new ArrayList<>();
        List<CompletableFuture<Void>> servedB = new ArrayList<>();
        for (int i = 0; i < parts; i++) {
            servedA.add(new CompletableFuture<>());
            servedB.add(new CompletableFuture<>());
        }
        // A's part i waits for B's part i-1, B's part i for A's part i: the two interleave.
        seed.route(
                "/a",
                request -> respond(200, new PingPong('a', parts, servedA, i -> i == 0 ? null : servedB.get(i - 1))));
        seed.route("/b", request -> respond(200, new PingPong('b', parts, servedB, servedA::get)));
        RecordingChannel wire = h.connect(protocol);
        boolean v2 = protocol == Protocol.V2;

        RelayedResponse a = done(h.relay().relay(W1, call("GET", "/a", null)), "relay a's head", WAIT);
        String relayA = v2 ? "" : wire.lastRelayId();
        int streamA = v2 ? wire.v2().lastStreamId() : 0;
        RelayedResponse b = done(h.relay().relay(W1, call("GET", "/b", null)), "relay b's head", WAIT);
        String relayB = v2 ? "" : wire.lastRelayId();
        int streamB = v2 ? wire.v2().lastStreamId() : 0;
        byte[] gotA = done(readAll(body(a, "a")), "relay a's body", WAIT);
        byte[] gotB = done(readAll(body(b, "b")), "relay b's body", WAIT);

        assertThat(text(gotA)).as("relay a gets only its own parts, in order").isEqualTo(PingPong.expected('a', parts));
        assertThat(text(gotB)).as("relay b gets only its own parts, in order").isEqualTo(PingPong.expected('b', parts));
        if (v2) {
            assertThat(streamA).as("v2: two streams").isNotEqualTo(streamB);
            List<Integer> dataOwners = wire
                    .v2()
                    .seen(s -> !s.sent()
                            && s.isData()
                            && s.length() > 0
                            && (s.streamId() == streamA || s.streamId() == streamB))
                    .stream()
                    .map(V2FrameRecorder.Seen::streamId)
                    .toList();
            assertThat(switches(dataOwners))
                    .as("v2: the two streams' DATA interleaved on the one link (owner switches)")
                    .isGreaterThanOrEqualTo(2);
            return;
        }
        long idA = wire.requestId(relayA);
        long idB = wire.requestId(relayB);
        List<Long> pushOwners = wire.seen(s -> s.isPush() && (s.id() == idA || s.id() == idB)).stream()
                .map(Seen::id)
                .toList();
        assertThat(switches(pushOwners))
                .as("the two relays' pushes interleaved on the one uplink (owner switches)")
                .isGreaterThanOrEqualTo(2);
    }

    private static int switches(List<?> owners) {
        int switches = 0;
        for (int i = 1; i < owners.size(); i++) {
            if (!owners.get(i).equals(owners.get(i - 1))) {
                switches++;
            }
        }
        return switches;
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

    // ---- seed: the caller's authorization, x-agent-device-token, connection and
    // transfer-encoding headers never reach the target, and a target's content-length and
    // connection headers never reach the caller

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void
            callersAuthorizationTokenConnectionAndTransferEncoding_neverReachTheTarget_andTargetsContentLengthAndConnection_neverReachTheCaller(
                    Protocol protocol) {
        seed.route(
                "/h",
                request -> respond(
                        200,
                        ArrayBody.of("hello"),
                        new Header("Content-Length", "5"),
                        new Header("connection", "keep-alive"),
                        new Header("x-back", "1")));
        RecordingChannel wire = h.connect(protocol);
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
                "the POST relays",
                WAIT);
        RelayedRequest got = take(h.targetCalls, "the target gets the POST", WAIT);
        assertThat(got.headers())
                .as("only the end-to-end header reaches the target")
                .containsExactly(new Header("x-keep", "1"));
        assertThat(response.headers())
                .as("the target's content-length and connection never reach the caller")
                .containsExactly(new Header("x-back", "1"));
        assertThat(text(done(readAll(body(response, "/h")), "the body", WAIT)))
                .as("the body")
                .isEqualTo("hello");

        if (protocol == Protocol.V2) {
            // A raw request head carrying them anyway (its JSON changed on the way out, as a broken
            // gateway would write it): the worker filters on its side too.
            wire.v2().rewriteNextHead(head -> {
                ArrayNode rawHeaders = head.putArray("headers");
                for (Header header : sent) {
                    rawHeaders.addArray().add(header.name()).add(header.value());
                }
            });
            StreamProbe probe = new StreamProbe();
            probe.on(requireNonNull(h.client(W1).v2())
                    .openStream(
                            new com.spectrayan.spector.uplink.internal.v2.RequestHead(
                                    "app", "GET", "http://app.local/h", List.of(), "acme", null, null, -1),
                            true,
                            probe));
            assertThat(done(probe.head, "the raw head is answered", WAIT).status())
                    .as("v2: the raw head is served")
                    .isEqualTo(200);
            assertThat(take(h.targetCalls, "the raw relay reaches the target", WAIT)
                            .headers())
                    .as("v2: the worker drops them from a raw head too")
                    .containsExactly(new Header("x-keep", "1"));
            assertThat(wire.v2().sent(wire.v2().lastStreamId()).get(0).text())
                    .as("v2: the head on the wire did carry them")
                    .contains("x-agent-device-token");
            return;
        }
        // A raw relay.request carrying them anyway: the worker filters on its side too.
        ObjectNode raw = requestInput("raw-h", "/h");
        ArrayNode rawHeaders = JSON.arrayNode();
        for (Header header : sent) {
            rawHeaders.addArray().add(header.name()).add(header.value());
        }
        raw.set("headers", rawHeaders);
        long id = wire.call(RelayRequest.OP, raw);
        resultOf(answer(wire, id, "the raw relay.request"), "the raw relay.request");
        assertThat(take(h.targetCalls, "the raw relay reaches the target", WAIT).headers())
                .as("the worker drops them from a raw frame too")
                .containsExactly(new Header("x-keep", "1"));
    }
}
