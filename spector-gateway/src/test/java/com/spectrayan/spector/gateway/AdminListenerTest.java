package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.netty.util.concurrent.EventExecutor;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The admin listener ({@code spector.server.admin-port}, {@link AdminListener}) over raw sockets:
 * health and metrics answered on a thread of its own while every traffic loop is busy, the admin
 * routes only, keep-alive and HEAD (RFC 9112 §9.3, RFC 9110 §9.3.2), and each bound at its limit
 * and one past it.
 */
final class AdminListenerTest {
    private static final Duration WAIT = Duration.ofSeconds(15);

    private Cell cell;
    private int admin;

    @BeforeEach
    void start() throws IOException {
        cell = Cell.builder()
                .owners(1)
                .set("spector.server.admin-port", "0")
                .set("spector.server.header-timeout", "1s")
                .start();
        admin = cell.gateway.adminPort();
        assertThat(admin).isPositive().isNotEqualTo(cell.gateway.port());
    }

    @AfterEach
    void stop() {
        cell.close();
    }

    private static String get(String path) {
        return "GET " + path + " HTTP/1.1\r\nHost: gw\r\n\r\n";
    }

    /**
     * Pipelined {@code HEAD}s of the scrape share one render a second: 200 of them and a {@code GET}
     * on one connection are all answered, the scrape rendered a few times at most (the {@code GET}
     * renders its own). Regression (a review): each {@code HEAD} rendered the whole scrape and
     * dropped it, and its small answers never reached the connection's write limit, so one client
     * kept the admin thread rendering without pause.
     */
    @Test
    void pipelinedHeadsOfTheScrape_shareOneRenderASecond() throws Exception {
        long before = cell.gateway.localEndpoints().renders();
        StringBuilder pipelined = new StringBuilder();
        for (int i = 0; i < 200; i++) {
            pipelined.append("HEAD /actuator/prometheus HTTP/1.1\r\nHost: gw\r\n\r\n");
        }
        pipelined.append(get("/actuator/prometheus"));
        long started = System.nanoTime();
        try (WireClient c = new WireClient(admin)) {
            c.send(pipelined.toString());
            for (int i = 0; i < 200; i++) {
                assertThat(c.readForHead().status()).as("HEAD %d", i).isEqualTo(200);
            }
            WireClient.Response r = c.read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.text()).contains("spector_");
        }
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
        assertThat(cell.gateway.localEndpoints().renders() - before)
                .as("renders for 201 scrapes in about %d s", seconds)
                .isLessThanOrEqualTo(seconds + 3);
    }

    @Test
    void healthAndMetrics_areAnswered_whileEveryTrafficLoopIsBusy() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        List<CountDownLatch> held = new ArrayList<>();
        for (EventExecutor loop : cell.gateway.eventLoops()) {
            CountDownLatch entered = new CountDownLatch(1);
            held.add(entered);
            loop.execute(() -> {
                entered.countDown();
                try {
                    var unused = release.await(WAIT.toSeconds() * 2, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        try {
            for (CountDownLatch entered : held) {
                assertThat(entered.await(WAIT.toSeconds(), TimeUnit.SECONDS))
                        .as("a traffic loop is held")
                        .isTrue();
            }
            try (RawClient client = new RawClient(cell.gateway.port())) {
                client.send(get("/actuator/health"));
                client.setTimeoutMillis(500);
                assertThat(readTimesOut(client))
                        .as("the client port's health waits for its loop (what the admin port is for)")
                        .isTrue();
            }
            try (RawClient probe = new RawClient(admin)) {
                RawClient.Response health = probe.send(get("/actuator/health")).read();
                assertThat(health.status()).isEqualTo(200);
                assertThat(health.text()).contains("\"status\":\"UP\"").contains("\"ring\"");
                RawClient.Response metrics =
                        probe.send(get("/actuator/prometheus")).read();
                assertThat(metrics.status()).isEqualTo(200);
                assertThat(metrics.header("content-type")).startsWith("text/plain; version=0.0.4");
                assertThat(metrics.text()).contains("jvm_memory_used_bytes");
            }
        } finally {
            release.countDown();
        }
        RawClient.Response after = RawClient.exchange(cell.gateway.port(), get("/actuator/health/liveness"));
        assertThat(after.status()).as("the client port once its loop is free").isEqualTo(200);
    }

    private static boolean readTimesOut(RawClient client) throws IOException {
        try {
            client.read();
            return false;
        } catch (SocketTimeoutException e) {
            return true;
        }
    }

    /**
     * The admin port passes no upgrade (RFC 9110 §7.8: a server may ignore one) and keeps the
     * connection: a request with WebSocket's upgrade fields is answered as any, and the next
     * request on the connection too (a review found the second hanging until the head timer
     * closed the connection, the decoder held for a switch that never comes).
     */
    @Test
    void anUpgradeShapedRequest_isAnsweredAsAny_andTheNextOneToo() throws Exception {
        try (RawClient c = new RawClient(admin)) {
            c.send("GET /actuator/health/liveness HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\n"
                    + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\n\r\n"
                    + get("/actuator/health/readiness"));
            assertThat(c.read().status()).isEqualTo(200);
            RawClient.Response next = c.read();
            assertThat(next.status()).as("the request behind it").isEqualTo(200);
            assertThat(next.text()).isEqualTo("{\"status\":\"UP\"}");
        }
    }

    @Test
    void keepAlive_pipelinedRequests_areAnsweredInOrder_andHeadHasNoBody() throws Exception {
        try (RawClient c = new RawClient(admin)) {
            c.send(get("/actuator/health/liveness") + "HEAD /actuator/health/readiness HTTP/1.1\r\nHost: gw\r\n\r\n"
                    + get("/actuator/health/readiness?verbose=1"));
            RawClient.Response liveness = c.read();
            assertThat(liveness.status()).isEqualTo(200);
            assertThat(liveness.text()).isEqualTo("{\"status\":\"UP\"}");
            assertThat(liveness.header("content-type")).isEqualTo("application/vnd.spring-boot.actuator.v3+json");

            int headStatus = c.read200HeadOnly(); // RFC 9110 §9.3.2: the GET's head, no content
            assertThat(headStatus).isEqualTo(200);
            RawClient.Response readiness = c.read();
            assertThat(readiness.status())
                    .as("the answer after the HEAD's starts right after its head: no body was sent")
                    .isEqualTo(200);
            assertThat(readiness.text()).isEqualTo("{\"status\":\"UP\"}");
        }
    }

    @Test
    void http10_withoutKeepAlive_isClosedAfterItsAnswer_andWithItStaysOpen() throws Exception {
        try (RawClient c = new RawClient(admin)) {
            RawClient.Response r =
                    c.send("GET /actuator/health/liveness HTTP/1.0\r\n\r\n").read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.header("connection")).isEqualToIgnoringCase("close");
            assertThat(c.closedByServer())
                    .as("RFC 9112 §9.3: HTTP/1.0 closes by default")
                    .isTrue();
        }
        try (RawClient c = new RawClient(admin)) {
            RawClient.Response r = c.send("GET /actuator/health/liveness HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                    .read();
            assertThat(r.header("connection")).isEqualToIgnoringCase("keep-alive");
            assertThat(c.send(get("/actuator/health/liveness")).read().status())
                    .as("the same connection answers again")
                    .isEqualTo(200);
        }
    }

    @Test
    void otherPaths_are404_neverForwarded_andOtherMethods405WithAllow() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        for (String path : List.of(
                "/api/v1/namespaces/" + ns + "/echo",
                "/api/v1/health",
                "/gateway/v1/status",
                "/gateway/v1/workers",
                "/actuator/health/../prometheus",
                "/actuator/health/",
                "http://gw/actuator/health",
                "/relay/w1/t/x")) {
            RawClient.Response r = RawClient.exchange(
                    admin,
                    "GET " + path + " HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT)
                            + "\r\n\r\n");
            assertThat(r.status()).as(path).isEqualTo(404);
            assertThat(r.header("content-type")).isEqualTo("application/problem+json");
            assertThat(r.text()).contains("\"code\":\"NOT_FOUND\"");
        }
        assertThat(cell.recorded(ns))
                .as("the owner received nothing from the admin port")
                .isEmpty();

        RawClient.Response post =
                RawClient.exchange(admin, "POST /actuator/health HTTP/1.1\r\nHost: gw\r\nContent-Length: 0\r\n\r\n");
        assertThat(post.status()).isEqualTo(405);
        assertThat(post.header("allow")).as("RFC 9110 §15.5.6").isEqualTo("GET, HEAD");
        assertThat(post.text()).contains("\"code\":\"BAD_REQUEST\"").contains("\"status\":405");
    }

    @Test
    void pipelinedScrapesNeverRead_holdAtMostTheWaterMarkUnsent_andTheConnectionCloses() throws Exception {
        int requests = 2000; // about 20 MiB of answers, more than loopback's socket buffers take
        String scrape = get("/actuator/prometheus");
        try (RawClient c = new RawClient(admin)) {
            c.send(scrape.repeat(requests)); // 90 KiB, and nothing read
            AdminListener listener = requireNonNull(cell.gateway.admin());
            long[] held = {0};
            await("the listener closes the connection of a client that reads nothing")
                    .atMost(WAIT)
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> {
                        held[0] = Math.max(held[0], listener.unsentBytes());
                        return listener.connections().isEmpty();
                    });
            assertThat(held[0])
                    .as("the most answers it held unsent: the high water mark and one answer")
                    .isLessThanOrEqualTo(AdminListener.WATER_MARK.high() + 32 * 1024); // MiBs without the bound
            // Closed with requests it never read, so by a reset (RFC 9112 §9.6 warns of it): what the
            // client had not read may be lost with it. The read ends either way, within its bound.
            assertThat(c.drainToClose())
                    .as("a client that takes nothing is closed")
                    .isTrue();
        }
        assertThat(RawClient.exchange(admin, get("/actuator/health/liveness")).status())
                .isEqualTo(200);
    }

    @Test
    void aRequestBody_is413_andTheConnectionCloses() throws Exception {
        for (String framing : List.of("Content-Length: 5\r\n", "Transfer-Encoding: chunked\r\n")) {
            try (RawClient c = new RawClient(admin)) {
                c.send("POST /actuator/health HTTP/1.1\r\nHost: gw\r\n" + framing + "\r\nhello");
                RawClient.Response r = c.read();
                assertThat(r.status()).as(framing).isEqualTo(413);
                assertThat(r.text()).contains("\"code\":\"PAYLOAD_TOO_LARGE\"");
                assertThat(r.header("connection")).isEqualToIgnoringCase("close");
                assertThat(c.closedByServer())
                        .as("the unread body ends the connection")
                        .isTrue();
            }
        }
    }

    @Test
    void requestLine_atTheLimit_isRead_andOnePast_is414() throws Exception {
        // the limit counts the line without its CRLF: "GET " + target + " HTTP/1.1"
        String fixed = "GET /actuator/prometheus? HTTP/1.1";
        String atLimit = "/actuator/prometheus?" + "a".repeat(AdminListener.MAX_LINE_BYTES - fixed.length());
        RawClient.Response ok = RawClient.exchange(admin, "GET " + atLimit + " HTTP/1.1\r\nHost: gw\r\n\r\n");
        assertThat(ok.status())
                .as("a request line of exactly %d bytes", AdminListener.MAX_LINE_BYTES)
                .isEqualTo(200);

        try (RawClient c = new RawClient(admin)) {
            RawClient.Response r =
                    c.send("GET " + atLimit + "a HTTP/1.1\r\nHost: gw\r\n\r\n").read();
            assertThat(r.status()).as("one byte past").isEqualTo(414);
            assertThat(r.header("content-type")).isEqualTo("application/problem+json");
            assertThat(r.text())
                    .as("RFC 9457 §3.1.2: the problem's status is the one answered")
                    .contains("\"status\":414")
                    .contains("\"code\":\"BAD_REQUEST\"");
            assertThat(c.closedByServer()).isTrue();
        }
    }

    /** RFC 9112 §3.2: an HTTP/1.1 request without Host, or with two, is 400 and close; HTTP/1.0 needs none. */
    @Test
    void host_missingFromHttp11OrSentTwice_is400AndClose_http10WithoutOne_isServed() throws Exception {
        for (String head : List.of(
                "GET /actuator/health/liveness HTTP/1.1\r\n\r\n",
                "GET /actuator/health/liveness HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                "GET /actuator/health/liveness HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n")) {
            try (RawClient c = new RawClient(admin)) {
                RawClient.Response r = c.send(head).read();
                assertThat(r.status()).as(head).isEqualTo(400);
                assertThat(r.text()).as(head).contains("\"field\":\"Host\"");
                assertThat(c.closedByServer()).as(head).isTrue();
            }
        }
        assertThat(RawClient.exchange(admin, "GET /actuator/health/liveness HTTP/1.0\r\n\r\n")
                        .status())
                .isEqualTo(200);
    }

    /** RFC 9112 §2.3: a major version other than 1 is 505 and close, as on the client port. */
    @Test
    void version_otherThanHttp1_is505AndClose() throws Exception {
        try (RawClient c = new RawClient(admin)) {
            RawClient.Response r = c.send("GET /actuator/health/liveness HTTP/2.0\r\nHost: gw\r\n\r\n")
                    .read();
            assertThat(r.status()).isEqualTo(505);
            assertThat(c.closedByServer()).isTrue();
        }
    }

    @Test
    void requestHead_atTheLimit_isRead_andOnePast_is431() throws Exception {
        // the decoder counts each header line's bytes without its CRLF
        String name = "X-Pad: ";
        String line = get("/actuator/health/liveness").replace("\r\n\r\n", "\r\n");
        int hostLine = "Host: gw".length();
        String pad = "p".repeat(AdminListener.MAX_HEAD_BYTES - hostLine - name.length());
        RawClient.Response ok = RawClient.exchange(admin, line + name + pad + "\r\n\r\n");
        assertThat(ok.status())
                .as("header lines of exactly %d bytes", AdminListener.MAX_HEAD_BYTES)
                .isEqualTo(200);

        try (RawClient c = new RawClient(admin)) {
            RawClient.Response r = c.send(line + name + pad + "p\r\n\r\n").read();
            assertThat(r.status()).as("one byte past").isEqualTo(431);
            assertThat(r.text()).contains("\"status\":431");
            assertThat(c.closedByServer()).isTrue();
        }
    }

    @Test
    void connections_atTheLimit_areServed_andOnePastClosesTheOneWaitingLongest() throws Exception {
        List<RawClient> open = new ArrayList<>();
        try {
            for (int i = 0; i < AdminListener.MAX_CONNECTIONS; i++) {
                RawClient c = new RawClient(admin);
                open.add(c);
                assertThat(c.send(get("/actuator/health/liveness")).read().status())
                        .as("connection %d", i + 1)
                        .isEqualTo(200);
            }
            assertThat(open.get(1).send(get("/actuator/health/liveness")).read().status())
                    .as("the second asks again: the first is now the one waiting longest")
                    .isEqualTo(200);
            try (RawClient past = new RawClient(admin)) {
                assertThat(past.send(get("/actuator/health/liveness")).read().status())
                        .as("connection %d is served", AdminListener.MAX_CONNECTIONS + 1)
                        .isEqualTo(200);
            }
            assertThat(open.get(0).closedByServer())
                    .as("the one that waited longest for a head made room")
                    .isTrue();
            assertThat(open.get(1).send(get("/actuator/health/liveness")).read().status())
                    .as("the others still answer")
                    .isEqualTo(200);
        } finally {
            for (RawClient c : open) {
                c.close();
            }
        }
    }

    /**
     * Clients that hold every admin connection and send their heads a byte at a time (slowloris)
     * cannot keep a probe out: before, the 17th connection was closed as accepted, so a liveness
     * probe failed for as long as the header timeout (30 s by default; three failures restart a
     * pod), and an attacker could keep it so. The header timeout here is the default's, so only
     * the limit's rule can let the probe in.
     */
    @Test
    void slowHeadsHoldingEveryConnection_doNotKeepAProbeOut() throws Exception {
        try (Cell slow = Cell.builder()
                .owners(1)
                .set("spector.server.admin-port", "0")
                .set("spector.server.header-timeout", "30s")
                .start()) {
            int port = slow.gateway.adminPort();
            List<RawClient> dribbling = new ArrayList<>();
            try {
                for (int i = 0; i < AdminListener.MAX_CONNECTIONS; i++) {
                    RawClient c = new RawClient(port);
                    dribbling.add(c);
                    c.send("GET /actuator/hea".getBytes(StandardCharsets.US_ASCII));
                }
                List<RawClient> probes = new ArrayList<>();
                try {
                    for (int probe = 0; probe < 3; probe++) {
                        RawClient p = new RawClient(port); // each stays open: each one more past the limit
                        probes.add(p);
                        assertThat(p.send(get("/actuator/health/liveness"))
                                        .read()
                                        .status())
                                .as("probe %d", probe + 1)
                                .isEqualTo(200);
                    }
                } finally {
                    for (RawClient p : probes) {
                        p.close();
                    }
                }
                for (int i = 0; i < 3; i++) {
                    assertThat(dribbling.get(i).closedByServer())
                            .as("slow connection %d, among the three waiting longest, closed", i + 1)
                            .isTrue();
                }
                RawClient fourth = dribbling.get(3);
                fourth.send("lth/liveness HTTP/1.1\r\nHost: gw\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                assertThat(fourth.read().status())
                        .as("the others stay open: the fourth finishes its head and is answered")
                        .isEqualTo(200);
            } finally {
                for (RawClient c : dribbling) {
                    c.close();
                }
            }
        }
    }

    @Test
    void aHeadNotFinishedWithinTheHeaderTimeout_closesTheConnection_asDoesAnIdleKeepAlive() throws Exception {
        try (RawClient c = new RawClient(admin)) {
            c.send("GET /actuator/hea".getBytes(StandardCharsets.US_ASCII));
            long started = System.nanoTime();
            assertThat(c.closedByServer()).as("closed, no answer").isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - started))
                    .as("after the 1 s header timeout, bounded")
                    .isLessThan(WAIT);
        }
        try (RawClient c = new RawClient(admin)) {
            assertThat(c.send(get("/actuator/health/liveness")).read().status()).isEqualTo(200);
            assertThat(c.closedByServer())
                    .as("an idle keep-alive connection closes too")
                    .isTrue();
        }
    }
}
