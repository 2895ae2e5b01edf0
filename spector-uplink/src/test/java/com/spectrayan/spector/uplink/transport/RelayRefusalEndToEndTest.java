package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.testing.TestBodies.pattern;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.testing.TestBodies.utf8;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.CHUNK;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.JSON;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.answer;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.errorOf;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.noHooks;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.requestInput;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.requireNonNull;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.resultOf;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.wireRequest;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Stream;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.transport.RecordingChannel.Seen;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Seed 000's Tests lines on bounds and refusals: sessions that are not the uplink, reused and unknown relay ids, relay.body out of order, the field bounds, the relay limits per connection and per worker, bad chunks: one test per line, end to end over
 * {@link RelaySeedFixture}. The session and the limits run over v1 and v2 ({@link Protocol}); relay ids,
 * relay.body seqs and base64 chunks are v1's own wire (v2 has stream ids, DATA and windows, whose
 * refusals are {@code V2ServedRelayTest}'s and {@code RelayV2ViolationEndToEndTest}'s).
 */
final class RelayRefusalEndToEndTest {
    @RegisterExtension
    final RelaySeedFixture seed = new RelaySeedFixture();

    private final RelayHarness h = seed.h;

    /**
     * Section 9.7: v1 carries no two-way stream, so an upgrade to a worker on a v1 link fails
     * NOT_IMPLEMENTED ({@code feature} relay-upgrade) before anything is sent: no relay.request,
     * the target never called.
     */
    @Test
    void upgrade_onAV1Link_notImplementedAndNothingSent() {
        seed.route("/ws", request -> respond(200, ArrayBody.of("not an upgrade")));
        RecordingChannel gatewayEnd = h.connect();
        com.spectrayan.spector.uplink.AbortSignal signal = new com.spectrayan.spector.uplink.AbortSignal();
        RelayedRequest upgrade = new RelayedRequest(
                "GET",
                java.net.URI.create("http://app.local/ws"),
                List.of(),
                "acme",
                null,
                ArrayBody.of(""),
                signal,
                "websocket");

        SpectorException refused = spector(
                h.relay().relay(W1, new com.spectrayan.spector.uplink.gateway.RelayCall("app", upgrade)),
                ErrorCode.NOT_IMPLEMENTED,
                "an upgrade over v1");
        assertThat(refused.details()).containsEntry("feature", "relay-upgrade");
        assertThat(h.targetCalls).isEmpty();
        assertThat(gatewayEnd.sent("relay.request")).as("nothing sent").isEmpty();
    }

    // ---- seed: relay.request, relay.body and relay.cancel from an admin session that is not the
    // gateway's uplink answer FORBIDDEN

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void relayRequestBodyAndCancel_fromASessionThatIsNotTheGatewaysUplink_answerForbidden(Protocol protocol) {
        seed.route("/hello", request -> respond(200, ArrayBody.of("hello")));
        h.connect(protocol);
        RecordingChannel adminWire = h.connect("w1-admin", UplinkSession.Role.LOCAL_ADMIN, protocol);
        RealGatewayWorkerClient admin = h.client("w1-admin");
        if (protocol == Protocol.V2) {
            // v2: no relay calls to send (section 9.8); a stream on the admin session is refused
            // RELAY_ERROR FORBIDDEN.
            assertThat(done(admin.statusGet(), "status.get on the admin session", WAIT)
                            .workerId())
                    .isEqualTo("w1-admin");
            spector(
                    h.relay().relay("w1-admin", call("GET", "/hello", null)),
                    ErrorCode.FORBIDDEN,
                    "GatewayRelay over the admin session");
            int stream = adminWire.v2().lastStreamId();
            assertThat(adminWire.v2().names(stream, false)).containsExactly("RESET RELAY_ERROR");
            assertThat(adminWire.v2().received(stream).get(0).text()).contains("FORBIDDEN");
            assertThat(h.targetCalls).as("the target saw nothing").isEmpty();
            return;
        }

        assertThat(done(admin.statusGet(), "status.get on the admin session", WAIT)
                        .workerId())
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

    // v1 only: relay ids are v1's; on v2 the gateway's link numbers its streams itself.
    @Test
    void relayRequestReusingAnActiveRelayId_failsBadRequest_andRelayBodyAndCancelForAnUnknownRelayId_answerEmpty() {
        seed.route("/hold", RelaySeedFixture::never);
        RecordingChannel wire = h.connect();
        RealGatewayWorkerClient client = h.client(W1);

        CompletionStage<RelayOutcome> first = client.relayRequest(wireRequest("r-1", "GET", "/hold", false), noHooks());
        take(h.targetCalls, "the first relay r-1 reaches the target", WAIT);
        SpectorException reused = spector(
                client.relayRequest(wireRequest("r-1", "GET", "/hold", false), noHooks()),
                ErrorCode.BAD_REQUEST,
                "a second relay.request with the active id r-1");
        assertThat(reused.details()).as("the refusal names the field").containsEntry("field", "relayId");
        assertThat(h.targetCalls).as("the reused id never reached the target").isEmpty();
        assertThat(first.toCompletableFuture()).as("the first r-1 still runs").isNotDone();

        done(client.relayBody(RelayBody.Chunk.of("nobody", 0, utf8("x"))), "relay.body for an unknown relay id", WAIT);
        done(client.relayBody(new RelayBody.End("nobody")), "relay.body end for an unknown relay id", WAIT);
        done(client.relayCancel("nobody"), "relay.cancel for an unknown relay id", WAIT);
        for (Seen call : wire.seen(s -> s.sent() && "nobody".equals(s.relayId()))) {
            assertThat(resultOf(answer(wire, call.id(), call.name()), call.name()))
                    .as("%s for an unknown relay id answers {}", call.name())
                    .isEqualTo(JSON.objectNode());
        }
        done(client.relayCancel("r-1"), "cancel r-1", WAIT);
        assertThat(done(first, "r-1 ends", WAIT).cancelled())
                .as("r-1 answers {cancelled: true}")
                .isTrue();
    }

    // ---- seed: a relay.body with a seq out of order, a repeated seq, a chunk after end, or any
    // chunk for a relay opened with hasBody: false fails BAD_REQUEST and aborts the target's
    // request

    // v1 only: seqs and relay.body calls are v1's; DATA after END_STREAM on v2 is reset STREAM_CLOSED
    // by the link (V2ConnectionTest).
    @Test
    void relayBodyOutOfOrder_repeated_afterEnd_orForAHasBodyFalseRelay_failsBadRequest_andAbortsTheTargetsRequest() {
        seed.route("/v/order", RelaySeedFixture::never);
        seed.route("/v/repeat", RelaySeedFixture::never);
        seed.route("/v/after-end", RelaySeedFixture::never);
        seed.route("/v/no-body", RelaySeedFixture::never);
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
            done(seed.aborted(c.path()), c.name() + ": the target's request signal aborts", WAIT);
            for (int i = 0; i < sent.size() - 1; i++) {
                done(sent.get(i), c.name() + ": the relay.body " + i + " before the breaking one is answered", WAIT);
            }
        }
    }

    // ---- seed: each bound in the field table is refused BAD_REQUEST one past its limit, and
    // passes at its limit (representative over the real uplink; RelayRequestTest has all at codec
    // level)

    // v1 here (raw relay.request inputs): v2's request head is read by the same checks
    // (RequestHead.parse through RelayRequest.parseExchange; RequestHeadTest), a refusal being
    // the stream's RESET PROTOCOL_ERROR; not yet run end to end over v2.
    @Test
    void relayRequestFields_oneBeyondTheirBoundAreRefusedBadRequest_andAtTheBoundPass() {
        seed.route("/ok", request -> respond(204, null));
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
            a.check().accept(take(h.targetCalls, a.what() + ": reaches the target", WAIT));
        }
    }

    private static RequestHead holdHead() {
        return new RequestHead("app", "GET", "http://app.local/hold", List.of(), "acme", null, null, -1);
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

    // ---- seed: a 17th relay on one connection fails BAD_REQUEST; the gateway's 9th relay to one
    // worker starts only after one of 8 ends

    @ParameterizedTest(name = "{0}")
    @EnumSource(Protocol.class)
    void
            seventeenthRelayOnOneConnection_failsBadRequest_andTheGatewaysNinthRelayToOneWorkerStartsOnlyAfterOneOfEightEnds(
                    Protocol protocol) {
        seed.route("/hold", RelaySeedFixture::never);
        BlockingQueue<CompletableFuture<RelayedResponse>> answers = new LinkedBlockingQueue<>();
        seed.route("/held", request -> {
            CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
            answers.add(answer);
            return answer;
        });
        RecordingChannel wire = h.connect(protocol);
        RealGatewayWorkerClient client = h.client(W1);
        boolean v2 = protocol == Protocol.V2;
        if (v2) {
            // v2 (section 9.4): the 17th open stream is reset REFUSED_STREAM.
            V2Connection link = requireNonNull(client.v2());
            List<V2Stream> open = new ArrayList<>();
            for (int i = 0; i < Limits.ACTIVE_RELAYS_PER_CONNECTION.max(); i++) {
                StreamProbe probe = new StreamProbe();
                open.add(link.openStream(holdHead(), true, probe));
            }
            for (int i = 0; i < 16; i++) {
                take(h.targetCalls, "open stream " + i + " of 16 reaches the target", WAIT);
            }
            StreamProbe seventeenth = new StreamProbe();
            link.openStream(holdHead(), true, seventeenth);
            assertThat(done(seventeenth.reset, "the 17th open stream is reset", WAIT)
                            .code())
                    .as("the 17th open stream on the link")
                    .isEqualTo(V2ErrorCode.REFUSED_STREAM);
            assertThat(h.targetCalls).as("the 17th never reached the target").isEmpty();
            for (V2Stream stream : open) {
                stream.reset(V2ErrorCode.CANCEL, null);
            }
        }

        List<CompletionStage<RelayOutcome>> sixteen = new ArrayList<>();
        if (!v2) {
            for (int i = 0; i < Limits.ACTIVE_RELAYS_PER_CONNECTION.max(); i++) {
                sixteen.add(client.relayRequest(wireRequest("c-" + i, "GET", "/hold", false), noHooks()));
            }
            for (int i = 0; i < 16; i++) {
                take(h.targetCalls, "active relay " + i + " of 16 reaches the target", WAIT);
            }
            spector(
                    client.relayRequest(wireRequest("c-16", "GET", "/hold", false), noHooks()),
                    ErrorCode.BAD_REQUEST,
                    "the 17th active relay on the connection");
            assertThat(h.targetCalls).as("the 17th never reached the target").isEmpty();
            for (int i = 0; i < 16; i++) {
                done(client.relayCancel("c-" + i), "cancel c-" + i, WAIT);
                assertThat(done(sixteen.get(i), "c-" + i + " ends", WAIT).cancelled())
                        .as("c-%d cancelled", i)
                        .isTrue();
            }
        }
        // A slot is freed once its target stopped, after the cancel (section 3).
        until(
                "the worker frees the 16 cancelled relays",
                WAIT,
                () -> done(client.statusGet(), "status.get", WAIT).activeRelays() == 0);

        GatewayRelay relay = h.relay();
        java.util.function.IntSupplier opened = () -> v2
                ? wire.v2().seen(f -> f.sent() && f.isHeaders()).size()
                : wire.sent(RelayRequest.OP).size();
        int before = opened.getAsInt();
        List<CompletionStage<RelayedResponse>> nine = new ArrayList<>();
        for (int i = 0; i < 9; i++) {
            nine.add(relay.relay(W1, call("GET", "/held", null)));
        }
        List<CompletableFuture<RelayedResponse>> eight = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            eight.add(take(answers, "gateway relay " + i + " of 8 reaches the target", WAIT));
        }
        assertThat(opened.getAsInt() - before)
                .as("relay.request frames (v2: streams) sent while 8 relays run (per-worker bound 8)")
                .isEqualTo(8);
        assertThat(relay.running(W1)).as("relays holding a slot").isEqualTo(8);
        assertThat(nine.get(8).toCompletableFuture()).as("the 9th waits").isNotDone();

        eight.get(0).complete(new RelayedResponse(204, List.of(), null));
        // The target's calls may arrive in any order, so the answered one is any of the first 8.
        done(
                CompletableFuture.anyOf(nine.subList(0, 8).stream()
                        .map(CompletionStage::toCompletableFuture)
                        .toArray(CompletableFuture[]::new)),
                "one of the 8 ends",
                WAIT);
        CompletableFuture<RelayedResponse> ninth =
                take(answers, "the 9th reaches the target once one of 8 ended", WAIT);
        assertThat(opened.getAsInt() - before)
                .as("the 9th relay.request (v2: stream) went out")
                .isEqualTo(9);
        ninth.complete(new RelayedResponse(204, List.of(), null));
        for (int i = 1; i < 8; i++) {
            eight.get(i).complete(new RelayedResponse(204, List.of(), null));
        }
        for (CompletionStage<RelayedResponse> r : nine) {
            assertThat(done(r, "each of the 9 ends", WAIT).status())
                    .as("status")
                    .isEqualTo(204);
        }
        until("every slot is free again", WAIT, () -> relay.running(W1) == 0);
    }

    // ---- seed: a chunk that is not standard base64, and one that decodes to 262 145 bytes, fail
    // BAD_REQUEST

    // v1 only: base64 chunks are v1's; v2's DATA carry raw bytes, bounded by the windows (the
    // window's worth and one past it: RelayV2ViolationEndToEndTest, V2ConnectionTest).
    @Test
    void relayBodyChunkNotStandardBase64_orDecodingTo262145Bytes_failsBadRequest_and262144BytesPass() {
        CompletableFuture<byte[]> received = new CompletableFuture<>();
        seed.route(
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
        done(client.relayBody(RelayBody.Chunk.of("b64", 0, largest)), "a chunk of exactly 256 KiB is answered", WAIT);
        done(client.relayBody(new RelayBody.End("b64")), "the end", WAIT);
        assertThat(done(relay, "the relay ends", WAIT).cancelled())
                .as("not cancelled")
                .isFalse();
        assertThat(done(received, "the target's body", WAIT))
                .as("the 256 KiB chunk arrives whole")
                .isEqualTo(largest);
    }
}
