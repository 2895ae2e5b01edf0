package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The hand-off hold (issue 13, "Moves with zero client errors"), over raw sockets to two scripted
 * owners: the old one answers {@code 503} with {@code X-Spector-Handoff} while a path's namespace
 * "moves", then {@code 421} moved; the new one serves. A held request is never answered with the
 * 503 (RFC 9110 section 15.6.4 allows the gateway to retry it) unless the hold cannot go on: the
 * window ran out, the body is too large to replay, or the gateway's count bound is passed; each is
 * a 503 problem with {@code Retry-After} (RFC 9110 section 10.2.3).
 */
final class HandoffHoldTest {
    /** The hold window of this cell: long enough for two held requests and a third to arrive. */
    private static final Duration HOLD = Duration.ofSeconds(1);

    /** The gateway's count bound in this cell. */
    private static final int MAX_HELD = 2;

    private static final int REPLAY_BYTES = 4096;

    @TempDir
    static Path dir;

    private static Path log;
    private static MockOwner oldOwner;
    private static MockOwner newOwner;
    private static Cell cell;
    private static String token;
    /** The paths whose namespace is still being handed off by the old owner. */
    private static final Set<String> moving = ConcurrentHashMap.newKeySet();
    /** The paths the old owner answers owner-lagging for: its ring is behind the request's epoch. */
    private static final Set<String> lagging = ConcurrentHashMap.newKeySet();
    /** The paths the old owner answers owner-lagging for that many more times, then serves. */
    private static final Map<String, AtomicInteger> laggingTimes = new ConcurrentHashMap<>();
    /** The paths the old owner answers with a 503 of its own (an application's, not a refusal). */
    private static final Set<String> busy = ConcurrentHashMap.newKeySet();
    /** The paths the old owner serves (once it caught up): they stay its own. */
    private static final Set<String> served = ConcurrentHashMap.newKeySet();

    @BeforeAll
    static void start() throws Exception {
        log = dir.resolve("access.log");
        oldOwner = MockOwner.start(r -> lagging.contains(r.path()) || stillLagging(r.path())
                ? laggingAnswer(r)
                : busy.contains(r.path())
                        ? MockOwner.response(503, "Service Unavailable", "{\"code\":\"APP_BUSY\"}", "Retry-After: 7")
                        : served.contains(r.path())
                                ? MockOwner.response(
                                        200,
                                        "OK",
                                        "old owner got " + r.body().length + " bytes",
                                        "Content-Type: text/plain")
                                : moving.contains(r.path())
                                        ? MockOwner.response(
                                                503,
                                                "Service Unavailable",
                                                "{\"code\":\"HANDING_OFF\"}",
                                                "X-Spector-Handoff: mock-new",
                                                "Content-Type: application/problem+json")
                                        : MockOwner.response(
                                                421,
                                                "Misdirected Request",
                                                "",
                                                "X-Spector-Owner: mock-new",
                                                "X-Spector-Epoch: 2",
                                                "X-Spector-Redirect: moved"));
        newOwner = MockOwner.start(r -> MockOwner.response(
                200, "OK", "new owner got " + r.body().length + " bytes", "Content-Type: text/plain"));
        cell = Cell.builder()
                .owners(1)
                .member("mock-old", oldOwner.baseUri())
                .member("mock-new", newOwner.baseUri())
                .set("spector.server.access-log", log.toString())
                .set("spector.routing.gateway.handoff-hold", HOLD.toMillis() + "ms")
                .set("spector.routing.gateway.handoff-max-held", String.valueOf(MAX_HELD))
                .set("spector.routing.gateway.replay-buffer-bytes", String.valueOf(REPLAY_BYTES))
                .start();
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable c : List.<AutoCloseable>of(cell, oldOwner, newOwner)) {
            try {
                c.close();
            } catch (Exception e) {
                throw new IllegalStateException("closing " + c, e);
            }
        }
    }

    @Test
    void shouldHoldTheRequestAndSendItToTheNewOwnerWhenTheMoveEnds() {
        String path = movingPath("ends");
        byte[] body = "x".repeat(1000).getBytes(StandardCharsets.US_ASCII);
        try (WireClient c = new WireClient(cell.gateway.port())) {
            c.send(put(path, body.length)).send(body);
            Waits.until("the gateway polled the old owner at least once", () -> seen(oldOwner, path) >= 2);
            assertThat(cell.gateway.forwarder().handoffHeld()).isEqualTo(1);
            moving.remove(path); // the move ends: the old owner says 421 moved

            WireClient.Response r = c.read();

            assertThat(r.status()).isEqualTo(200);
            assertThat(r.text()).isEqualTo("new owner got 1000 bytes");
        }
        assertThat(newOwner.requestsEndingWith(path))
                .singleElement()
                .satisfies(q -> assertThat(q.body()).isEqualTo(body));
        assertThat(cell.gateway.forwarder().handoffHeld()).isZero();
        Waits.untilAsserted(() -> assertThat(Cell.accessLogLines(log, path))
                .as("the access log names the hold as a retarget cause")
                .singleElement()
                .satisfies(l -> assertThat(l).contains("\"attempts\":2,\"retargets\":\"handoff,moved\"")));
    }

    @Test
    void shouldAnswer503WithRetryAfterWhenTheHoldRunsOut() {
        String path = movingPath("stuck");
        Timed t = putAbc(path);
        WireClient.Response r = t.response();
        long tookMs = t.ms();

        assertThat(r.status()).isEqualTo(503);
        assertThat(r.header("Retry-After")).isEqualTo("1");
        assertThat(r.header("Content-Type")).startsWith("application/problem+json");
        assertThat(r.code()).isEqualTo("GATEWAY_ROUTING_FAILURE");
        assertThat(r.json().at("/details/reason").asText()).isEqualTo("handoff-hold-expired");
        assertThat(tookMs).as("held for the window, %d ms", tookMs).isBetween(HOLD.toMillis(), HOLD.toMillis() + 1500);
        assertThat(newOwner.requestsEndingWith(path)).isEmpty();
        Waits.untilAsserted(() -> assertThat(Cell.accessLogLines(log, path))
                .singleElement()
                .satisfies(l -> assertThat(l).contains("\"status\":503").contains("\"retargets\":\"handoff\"")));
    }

    @Test
    void shouldAnswer503AtOnceForABodyLargerThanTheReplayBuffer() {
        String path = movingPath("large");
        byte[] body = new byte[REPLAY_BYTES + 1];
        long start = System.nanoTime();
        WireClient.Response r;
        try (WireClient c = new WireClient(cell.gateway.port())) {
            r = c.send(put(path, body.length)).send(body).read();
        }
        long tookMs = (System.nanoTime() - start) / 1_000_000;

        assertThat(r.status()).isEqualTo(503);
        assertThat(r.header("Retry-After")).isEqualTo("1");
        assertThat(r.json().at("/details/reason").asText()).isEqualTo("body-too-large-to-replay");
        assertThat(tookMs).as("at once, %d ms", tookMs).isLessThan(HOLD.toMillis());
        assertThat(newOwner.requestsEndingWith(path)).isEmpty();
    }

    @Test
    void shouldHoldUpToTheCountBound_andAnswerTheOnePast503AtOnce() throws Exception {
        List<String> paths = List.of(movingPath("bound-1"), movingPath("bound-2"), movingPath("bound-3"));
        try (WireClient first = new WireClient(cell.gateway.port());
                WireClient second = new WireClient(cell.gateway.port());
                WireClient third = new WireClient(cell.gateway.port())) {
            first.send(put(paths.get(0), 1)).send(new byte[] {'a'});
            Waits.until("one held", () -> cell.gateway.forwarder().handoffHeld() == 1);
            second.send(put(paths.get(1), 1)).send(new byte[] {'b'});
            Waits.until("two held: at the bound", () -> cell.gateway.forwarder().handoffHeld() == MAX_HELD);
            CompletableFuture<WireClient.Response> heldAnswer = CompletableFuture.supplyAsync(first::read);

            long start = System.nanoTime();
            WireClient.Response past =
                    third.send(put(paths.get(2), 1)).send(new byte[] {'c'}).read();
            long tookMs = (System.nanoTime() - start) / 1_000_000;

            assertThat(past.status()).isEqualTo(503);
            assertThat(past.header("Retry-After")).isEqualTo("1");
            assertThat(past.json().at("/details/reason").asText()).isEqualTo("handoff-holds-full");
            assertThat(tookMs).as("one past the bound: at once, %d ms", tookMs).isLessThan(HOLD.toMillis());
            assertThat(cell.gateway.forwarder().handoffHeld())
                    .as("the two stay held")
                    .isEqualTo(MAX_HELD);
            moving.remove(paths.get(0));
            moving.remove(paths.get(1));
            assertThat(Waits.done(heldAnswer, "the first held request's answer").status())
                    .isEqualTo(200);
            assertThat(second.read().status())
                    .as("the second, held at the bound")
                    .isEqualTo(200);
        }
    }

    @Test
    void shouldReleaseTheHoldWhenTheClientGoesAway_andTheNewOwnerGetsNothing() {
        String path = movingPath("gone");
        try (WireClient c = new WireClient(cell.gateway.port())) {
            c.send(put(path, 5)).send("hello".getBytes(StandardCharsets.US_ASCII));
            Waits.until("held", () -> cell.gateway.forwarder().handoffHeld() == 1);
        }
        Waits.until("the hold is released", () -> cell.gateway.forwarder().handoffHeld() == 0);
        assertThat(cell.gateway.forwarder().handoffHeldBytes()).isZero();
        int polls = seen(oldOwner, path);
        moving.remove(path);

        try (WireClient c = new WireClient(cell.gateway.port())) {
            String other = movingPath("after-gone");
            moving.remove(other);
            assertThat(c.send(put(other, 1)).send(new byte[] {'z'}).read().status())
                    .as("a later request of another namespace runs normally")
                    .isEqualTo(200);
        }
        assertThat(newOwner.requestsEndingWith(path))
                .as("the new owner never saw it")
                .isEmpty();
        assertThat(seen(oldOwner, path)).as("no poll after the client went").isEqualTo(polls);
        assertThat(cell.gateway.forwarder().replayBudgetAvailable())
                .as("every replay byte back")
                .isEqualTo(64L * 1024 * 1024);
    }

    /**
     * The reference owner's rule 3 (DESIGN.md section 4): a request whose epoch is newer than the
     * owner's view gets 503 owner-lagging, with the owner's (older) epoch and Retry-After.
     */
    private static String laggingAnswer(MockOwner.Request r) {
        String sent = r.header("X-Spector-Epoch");
        long older = sent == null ? 0 : Long.parseLong(sent) - 1;
        return MockOwner.response(
                503,
                "Service Unavailable",
                "{\"code\":\"GATEWAY_ROUTING_FAILURE\",\"details\":{\"reason\":\"owner-lagging\"}}",
                "X-Spector-Epoch: " + older,
                "Retry-After: 1",
                "Cache-Control: no-store",
                "Content-Type: application/problem+json");
    }

    /**
     * Issue 13 (a ring change reaches the gateway before the owner): the owner's 503
     * owner-lagging, whose X-Spector-Epoch is older than the request's, is held and re-sent to the
     * same owner until it caught up, as a hand-off's is; the client gets the owner's 200, never the
     * 503 (RFC 9110 section 15.6.4 lets the gateway retry it), and the owner got the same body each
     * time.
     */
    @Test
    void shouldHoldALaggingOwnersAnswer_andResendToItOnceItCaughtUp() {
        String path = laggingPath("caught-up");
        byte[] body = "y".repeat(500).getBytes(StandardCharsets.US_ASCII);
        try (WireClient c = new WireClient(cell.gateway.port())) {
            c.send(put(path, body.length)).send(body);
            Waits.until("the gateway re-sent to the lagging owner at least once", () -> seen(oldOwner, path) >= 2);
            lagging.remove(path); // the owner read the new ring

            WireClient.Response r = c.read();

            assertThat(r.status()).isEqualTo(200);
            assertThat(r.text()).isEqualTo("old owner got 500 bytes");
        }
        assertThat(oldOwner.requestsEndingWith(path))
                .as("each attempt carried the whole body and the same epoch")
                .allSatisfy(q -> assertThat(q.body()).isEqualTo(body))
                .extracting(q -> q.header("X-Spector-Epoch"))
                .containsOnly(oldOwner.requestsEndingWith(path).get(0).header("X-Spector-Epoch"));
        assertThat(newOwner.requestsEndingWith(path)).isEmpty();
        Waits.untilAsserted(() -> assertThat(Cell.accessLogLines(log, path))
                .singleElement()
                .satisfies(l -> assertThat(l).contains("\"status\":200").contains("\"retargets\":\"lagging\"")));
    }

    /**
     * A lagging owner is polled with a back-off from 10 ms (10, 20, 40 ms, then up to the 100 ms of
     * a hand-off's poll), since it reads the ring the gateway already has: one that catches up
     * after three lagging answers serves the request well within the three 100 ms polls a
     * hand-off's hold would have taken.
     */
    @Test
    void shouldPollALaggingOwnerSoonerThanAHandoffsOldOwner() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-old") + "/lag-soon";
        served.add(path);
        laggingTimes.put(path, new AtomicInteger(3));
        Timed t = putAbc(path);
        WireClient.Response r = t.response();
        long tookMs = t.ms();

        assertThat(r.status()).isEqualTo(200);
        assertThat(r.text()).isEqualTo("old owner got 3 bytes");
        assertThat(seen(oldOwner, path))
                .as("three lagging answers, then the served one")
                .isEqualTo(4);
        assertThat(tookMs).as("served after %d ms", tookMs).isLessThan(3 * 100);
    }

    /** A response and how long the client waited for it. */
    private record Timed(WireClient.Response response, long ms) {}

    /** Sends a 3-byte PUT of {@code path} on a new connection and times its response. */
    private static Timed putAbc(String path) {
        long start = System.nanoTime();
        try (WireClient c = new WireClient(cell.gateway.port())) {
            WireClient.Response r = c.send(put(path, 3))
                    .send("abc".getBytes(StandardCharsets.US_ASCII))
                    .read();
            return new Timed(r, (System.nanoTime() - start) / 1_000_000);
        }
    }

    private static boolean stillLagging(String path) {
        AtomicInteger left = laggingTimes.get(path);
        return left != null && left.getAndDecrement() > 0;
    }

    /**
     * An owner that stays behind past the hold window: the gateway answers 503 with Retry-After
     * (RFC 9110 section 10.2.3) after the window, as for a hand-off that does not end.
     */
    @Test
    void shouldAnswer503WithRetryAfter_whenTheOwnerStaysLaggingPastTheHold() {
        String path = laggingPath("stuck");
        Timed t = putAbc(path);
        WireClient.Response r = t.response();
        long tookMs = t.ms();

        assertThat(r.status()).isEqualTo(503);
        assertThat(r.header("Retry-After")).isEqualTo("1");
        assertThat(r.code()).isEqualTo("GATEWAY_ROUTING_FAILURE");
        assertThat(r.json().at("/details/reason").asText()).isEqualTo("handoff-hold-expired");
        assertThat(tookMs).as("held for the window, %d ms", tookMs).isBetween(HOLD.toMillis(), HOLD.toMillis() + 1500);
        assertThat(seen(oldOwner, path)).as("polled while it lagged").isGreaterThanOrEqualTo(2);
    }

    /**
     * A 503 of the owner's own (no X-Spector-Epoch, no X-Spector-Handoff) is its answer: it
     * reaches the client at once with its Retry-After, and the owner saw the request once.
     */
    @Test
    void shouldPassAnOwnersOwn503_withoutHolding() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-old") + "/busy";
        busy.add(path);
        WireClient.Response r;
        try (WireClient c = new WireClient(cell.gateway.port())) {
            r = c.send(put(path, 1)).send(new byte[] {'z'}).read();
        }
        assertThat(r.status()).isEqualTo(503);
        assertThat(r.header("Retry-After")).isEqualTo("7");
        assertThat(seen(oldOwner, path)).isEqualTo(1);
    }

    private static String laggingPath(String name) {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-old") + "/lag-" + name;
        lagging.add(path);
        served.add(path);
        return path;
    }

    private static String movingPath(String name) {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("mock-old") + "/" + name;
        moving.add(path);
        return path;
    }

    private static int seen(MockOwner owner, String path) {
        return owner.requestsEndingWith(path).size();
    }

    private static String put(String path, int length) {
        return WireClient.head("PUT", path, token, "Content-Length: " + length, "Content-Type: text/plain");
    }
}
