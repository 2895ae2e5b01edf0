package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.spectrayan.spector.gateway.WireClient.Response;
import com.spectrayan.spector.testkit.FakeWorker;
import com.spectrayan.spector.testkit.FakeWorker.Answer;
import com.spectrayan.spector.testkit.FakeWorker.Received;
import com.spectrayan.spector.testkit.FakeWorker.Relayed;
import com.spectrayan.spector.testkit.FakeWorker.Script;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import java.io.UncheckedIOException;
import java.net.SocketException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The gateway's relay against a worker it did not write: a {@link FakeWorker}, written from
 * {@code docs/PROTOCOL.md} alone, dials the real {@code /uplink} of an in-process cell, and a
 * raw-socket client ({@link WireClient}) calls {@code /relay/{worker}/app/...}. Each scenario
 * checks what the client got and what the worker received. Every worker has an id of its own.
 */
final class UplinkPeerTest {
    private static final String TOKEN = "uplink-peer-token-0123456789";

    /** Worker ids the cell knows the token of; each test takes the next. */
    private static final List<String> IDS =
            IntStream.rangeClosed(1, 64).mapToObj(i -> "peer-" + i).toList();

    /** The relay deadline of the cell that tests it: short, so the test waits little. */
    private static final Duration DEADLINE = Duration.ofMillis(500);

    private static final AtomicInteger nextId = new AtomicInteger();
    private static Cell cell;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        cell = cellWith(Cell.builder().owners(1));
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static Cell cellWith(Cell.Builder builder) throws Exception {
        return builder.set(
                        "spector.uplink.tokens",
                        IDS.stream()
                                .map(id -> id + "=" + TokenHashes.sha256Hex(TOKEN))
                                .collect(Collectors.joining(",")))
                .start();
    }

    /** Dials a fake worker with a fresh id into {@code into}, serving {@code app}; returns once the gateway lists it. */
    private static FakeWorker dial(Cell into, Script app) {
        String id = IDS.get(nextId.getAndIncrement());
        FakeWorker w = FakeWorker.dial(
                URI.create("ws://127.0.0.1:" + into.gateway.port() + "/uplink"), id, TOKEN, Map.of("app", app));
        Waits.until(
                "the gateway registers " + id + "'s uplink",
                () -> into.gateway.workerDirectory().live(id) != null);
        return w;
    }

    private static WireClient client(Cell of) {
        return new WireClient(of.gateway.port());
    }

    /**
     * RFC 9112 §6.2 both ways: a POST of 600 KiB (three relay.body chunks of at most 256 KiB)
     * reaches the worker byte for byte, with its headers filtered as PROTOCOL §5 says; the
     * worker's answer, with a declared length, reaches the client framed by that Content-Length.
     */
    @Test
    void shouldRelayAPostWhoseBodyTheWorkerReceivesByteForByte() {
        byte[] upload = new byte[600 * 1024];
        new Random(7).nextBytes(upload);
        String answer = "stored " + upload.length + " bytes";
        try (FakeWorker w = dial(
                        cell,
                        r -> Answer.of(201)
                                .header("Content-Type", "text/plain")
                                .header("X-Stored-By", "the fake worker")
                                .length(answer.length())
                                .body("stored ")
                                .body(upload.length + " bytes"));
                WireClient c = client(cell)) {
            Response r = c.send(WireClient.head(
                            "POST",
                            "/relay/" + w.workerId() + "/app/upload?x=1",
                            token,
                            "Content-Type: application/octet-stream",
                            "X-Trace: t-1",
                            "Content-Length: " + upload.length))
                    .send(upload)
                    .read();

            assertThat(r.status()).as("%s", r).isEqualTo(201);
            assertThat(r.framing())
                    .as("the declared length frames the response")
                    .isEqualTo(WireClient.Framing.LENGTH);
            assertThat(r.header("Content-Length")).isEqualTo(Integer.toString(answer.length()));
            assertThat(r.header("X-Stored-By")).isEqualTo("the fake worker");
            assertThat(r.text()).isEqualTo(answer);

            Relayed got = w.takeRelay();
            assertThat(got.method()).isEqualTo("POST");
            assertThat(got.target()).isEqualTo("app");
            assertThat(got.pathAndQuery()).isEqualTo("/upload?x=1");
            assertThat(got.tenant()).isEqualTo(Cell.TENANT);
            assertThat(got.hasBody()).isTrue();
            assertThat(got.body()).as("the request body, byte for byte").isEqualTo(upload);
            assertThat(got.chunks())
                    .as("relay.body chunks of at most 256 KiB (PROTOCOL §3)")
                    .allSatisfy(chunk -> assertThat(chunk.length).isBetween(1, FakeWorker.CHUNK_BYTES));
            assertThat(got.header("content-type")).isEqualTo("application/octet-stream");
            assertThat(got.header("x-trace")).isEqualTo("t-1");
            assertThat(List.of("authorization", "content-length", "host"))
                    .as("PROTOCOL §5: a worker never sees the credential, the length or the host")
                    .allSatisfy(name -> assertThat(got.header(name)).as(name).isNull());
            List<Received> bodies = w.calls("relay.body");
            assertThat(bodies.get(bodies.size() - 1).payload().path("end").asBoolean())
                    .as("the last relay.body is the end")
                    .isTrue();
            assertThat(w.calls("relay.cancel"))
                    .as("a relay that ended is never cancelled")
                    .isEmpty();
        }
    }

    /**
     * A worker's error frame answers the client with its code's problem (PROTOCOL §6), its message
     * as the detail; a code this gateway does not know reads as INTERNAL (PROTOCOL §2); a code of
     * kind transport means the uplink is lost (PROTOCOL §6), WORKER_UNREACHABLE in the gateway's
     * words.
     */
    @ParameterizedTest(name = "{0} -> {1} {2}")
    @CsvSource({
        "RELAY_TARGET_MISSING, 503, RELAY_TARGET_MISSING, true",
        "BAD_REQUEST, 400, BAD_REQUEST, true",
        "INTERNAL, 500, INTERNAL, true",
        "A_CODE_OF_A_LATER_VERSION, 500, INTERNAL, true",
        "DAEMON_STOPPING, 503, WORKER_UNREACHABLE, false",
        "DAEMON_CONNECTION_LOST, 503, WORKER_UNREACHABLE, false",
        "UNAUTHENTICATED, 401, UNAUTHENTICATED, true"
    })
    void shouldAnswerAWorkerErrorWithItsProblemCode(String sent, int status, String code, boolean workersDetail) {
        String message = "the fake worker refuses with " + sent;
        try (FakeWorker w = dial(cell, r -> Answer.error(sent, message));
                WireClient c = client(cell)) {
            Response r = c.send(WireClient.head("GET", "/relay/" + w.workerId() + "/app/refused", token))
                    .read();

            assertThat(r.status()).as("%s", r).isEqualTo(status);
            assertThat(r.header("Content-Type")).startsWith("application/problem+json");
            assertThat(r.code()).isEqualTo(code);
            if (status == 401) {
                assertThat(r.header("WWW-Authenticate"))
                        .as("RFC 9110 §15.5.2: a 401 carries a challenge")
                        .isNotNull();
            }
            assertThat(r.json().path("detail").asText())
                    .isEqualTo(
                            workersDetail ? message : "worker " + w.workerId() + " uplink was lost during the relay");

            Relayed got = w.takeRelay();
            assertThat(got.method()).isEqualTo("GET");
            assertThat(got.hasBody()).isFalse();
            assertThat(w.calls("relay.body")).as("a GET sends no relay.body").isEmpty();
            assertThat(w.calls("relay.cancel"))
                    .as("a relay the worker refused is not cancelled")
                    .isEmpty();
        }
    }

    /**
     * PROTOCOL §7: a worker that never answers is cancelled at the relay deadline, and the client
     * gets 503 WORKER_UNREACHABLE with the deadline's message.
     */
    @Test
    void shouldAnswerTheRelayDeadlineWhenTheWorkerNeverAnswers() throws Exception {
        try (Cell deadlined = cellWith(
                        Cell.builder().owners(1).set("spector.uplink.relay.deadline", DEADLINE.toMillis() + "ms"));
                FakeWorker w = dial(deadlined, r -> Answer.never());
                WireClient c = client(deadlined)) {
            long sent = System.nanoTime();
            Response r = c.send(WireClient.head("GET", "/relay/" + w.workerId() + "/app/silent", token))
                    .read();
            Duration took = Duration.ofNanos(System.nanoTime() - sent);

            assertThat(r.status()).as("%s", r).isEqualTo(503);
            assertThat(r.code()).isEqualTo("WORKER_UNREACHABLE");
            assertThat(r.json().path("detail").asText())
                    .isEqualTo("worker " + w.workerId() + " did not finish the relayed request within "
                            + DEADLINE.toMillis() + " ms");
            assertThat(took).as("answered no sooner than the deadline").isGreaterThanOrEqualTo(DEADLINE);

            Relayed got = w.takeRelay();
            Waits.until(
                    "the gateway cancels the relay past its deadline",
                    () -> w.calls("relay.cancel").stream()
                            .anyMatch(cancel -> cancel.field("relayId").equals(got.relayId())));
            Waits.until(
                    "the relay's slot is free again",
                    () -> deadlined.gateway.relay().running(w.workerId()) == 0);
        }
    }

    /**
     * PROTOCOL §4: a worker's head whose header value HTTP/1.1 cannot carry (RFC 9110 §5.5: a
     * control char, a DEL, a space first) fails the relay INTERNAL: the client gets a 500 at once,
     * and the relay's slot is free. Regression: the wire let these through, Netty's header map
     * then threw where the head was written, and the client waited with no answer and no deadline.
     */
    @ParameterizedTest
    @ValueSource(strings = {"\u0001", "a\u007fb", "\u001b[31m", " lead"})
    void shouldAnswer500_toAWorkerHeadThatHttp11CannotCarry(String value) {
        try (FakeWorker w = dial(
                        cell, r -> Answer.of(200).header("X-A", value).length(2).body("ok"));
                WireClient c = client(cell)) {
            Response r = c.send(WireClient.head("GET", "/relay/" + w.workerId() + "/app/bad-head", token))
                    .read();

            assertThat(r.status()).as("%s", r).isEqualTo(500);
            assertThat(r.code()).isEqualTo("INTERNAL");
            assertThat(w.takeRelay().pathAndQuery()).isEqualTo("/bad-head");
            Waits.until("the relay's slot is free", () -> cell.gateway.relay().running(w.workerId()) == 0);
        }
    }

    /**
     * RFC 9110 §15.2: a 1xx is interim, and a relay carries the final head alone (PROTOCOL §4):
     * a worker answering 100 or 103 fails the relay INTERNAL. Regression: the client got the 103
     * as the answer and waited for a final one until its idle timeout.
     */
    @ParameterizedTest
    @ValueSource(ints = {100, 103, 199})
    void shouldAnswer500_toAWorkerInterimStatus(int status) {
        try (FakeWorker w = dial(cell, r -> Answer.of(status).header("Link", "</x>; rel=preload"));
                WireClient c = client(cell)) {
            Response r = c.send(WireClient.head("GET", "/relay/" + w.workerId() + "/app/interim", token))
                    .read();

            assertThat(r.status()).as("%s", r).isEqualTo(500);
            assertThat(r.code()).isEqualTo("INTERNAL");
        }
    }

    /**
     * A worker never holds the gateway's credential (its token cookie is taken off the request)
     * nor plants one: a {@code Set-Cookie} of the token cookie's name is dropped from its answer,
     * every other cookie kept. Regression: a worker's page on the gateway's origin could set or
     * replace the cookie the gateway then takes as the user's bearer token.
     */
    @Test
    void shouldDropAWorkersSetCookieOfTheTokenCookie() throws Exception {
        try (Cell cookies =
                        cellWith(Cell.builder().owners(1).set("spector.security.jwt.cookie-name", "spector_token"));
                FakeWorker w = dial(
                        cookies,
                        r -> Answer.of(200)
                                .header("Set-Cookie", "spector_token=planted; Path=/")
                                .header("Set-Cookie", "theme=dark; Path=/")
                                .length(2)
                                .body("ok"));
                WireClient c = client(cookies)) {
            Response r = c.send(WireClient.head("GET", "/relay/" + w.workerId() + "/app/cookies", token))
                    .read();

            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.fields())
                    .filteredOn(f -> f.getKey().equalsIgnoreCase("Set-Cookie"))
                    .extracting(Map.Entry::getValue)
                    .containsExactly("theme=dark; Path=/");
        }
    }

    /** PROTOCOL §7: an uplink that closes before the head fails the relay, 503 WORKER_UNREACHABLE. */
    @Test
    void shouldAnswerWorkerUnreachableWhenTheLinkClosesBeforeTheHead() {
        try (FakeWorker w = dial(cell, r -> Answer.closeLink());
                WireClient c = client(cell)) {
            Response r = c.send(WireClient.head("GET", "/relay/" + w.workerId() + "/app/dropped", token))
                    .read();

            assertThat(r.status()).as("%s", r).isEqualTo(503);
            assertThat(r.code()).isEqualTo("WORKER_UNREACHABLE");

            assertThat(w.takeRelay().pathAndQuery()).isEqualTo("/dropped");
            FakeWorker.Closed closed = Waits.done(w.closed(), "the fake worker closed its link");
            assertThat(closed.byWorker()).isTrue();
            assertThat(closed.code()).isEqualTo(1000);
            Waits.until(
                    "the gateway drops the closed link",
                    () -> cell.gateway.workerDirectory().live(w.workerId()) == null);
        }
    }

    /**
     * PROTOCOL §4 and §7: an uplink that closes after the head and 3 of a declared 10 bytes never
     * reaches the client as a complete response: the head went out, so the gateway cuts the
     * client's connection (RFC 9112 §6.3: a Content-Length body closed short is incomplete).
     */
    @Test
    void shouldCutTheClientConnectionWhenTheLinkClosesAfterTheHead() {
        try (FakeWorker w =
                        dial(cell, r -> Answer.of(200).length(10).body("abc").thenCloseLink());
                WireClient c = client(cell)) {
            c.send(WireClient.head("GET", "/relay/" + w.workerId() + "/app/cut", token));

            Throwable cut = catchThrowable(c::read);
            assertThat(cut)
                    .as("the client sees the connection end inside the body (a close or a reset), not a timeout")
                    .satisfiesAnyOf(
                            t -> assertThat(t)
                                    .isInstanceOf(AssertionError.class)
                                    .hasMessageStartingWith("the server closed after"),
                            t -> assertThat(t)
                                    .isInstanceOf(UncheckedIOException.class)
                                    .hasCauseInstanceOf(SocketException.class));

            assertThat(w.takeRelay().pathAndQuery()).isEqualTo("/cut");
            assertThat(Waits.done(w.closed(), "the fake worker closed its link").byWorker())
                    .isTrue();
            Waits.until(
                    "the relay's slot is free again", () -> cell.gateway.relay().running(w.workerId()) == 0);
        }
    }

    /**
     * PROTOCOL §3 and §4 at the bounds of a relay-head's headers: 100 headers and a value of 8 192
     * chars reach the client; a 101st header or an 8 193rd char fails the relay INTERNAL, and the
     * gateway sends the worker relay.cancel (PROTOCOL §2).
     */
    @ParameterizedTest(name = "{0} headers of {1} chars")
    @CsvSource({"100, 1, 200", "101, 1, 500", "1, 8192, 200", "1, 8193, 500"})
    void shouldHoldARelayHeadToItsHeaderBounds(int count, int valueChars, int status) {
        String value = "v".repeat(valueChars);
        try (FakeWorker w = dial(cell, r -> {
                    Answer a = Answer.of(200);
                    for (int i = 0; i < count; i++) {
                        a.header("x-h-" + i, value);
                    }
                    return a.length(2).body("ok");
                });
                WireClient c = client(cell)) {
            Response r = c.send(WireClient.head("GET", "/relay/" + w.workerId() + "/app/heads", token))
                    .read();

            assertThat(r.status()).as("%s", r).isEqualTo(status);
            Relayed got = w.takeRelay();
            if (status == 200) {
                assertThat(r.text()).isEqualTo("ok");
                assertThat(r.fields().stream().filter(f -> f.getKey().startsWith("x-h-")))
                        .as("every header reaches the client")
                        .hasSize(count)
                        .allSatisfy(f -> assertThat(f.getValue()).hasSize(valueChars));
                assertThat(w.calls("relay.cancel")).isEmpty();
            } else {
                assertThat(r.code()).isEqualTo("INTERNAL");
                assertThat(r.json().path("detail").asText()).contains("worker " + w.workerId());
                Waits.until(
                        "the gateway cancels the relay whose head broke the bounds",
                        () -> w.calls("relay.cancel").stream()
                                .anyMatch(cancel -> cancel.field("relayId").equals(got.relayId())));
            }
        }
    }

    /** PROTOCOL §1: the gateway answers a worker's ping, and sends nothing the worker cannot read. */
    @Test
    void shouldAnswerTheWorkersPing() {
        try (FakeWorker w = dial(cell, r -> Answer.of(204))) {
            Waits.done(w.ping(), "the gateway answers the worker's ping with a pong");

            assertThat(w.received())
                    .as("every frame the gateway sent is one the fake could read")
                    .noneMatch(f -> f.kind().equals("corrupt"));
        }
    }
}
