package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.netty.util.concurrent.EventExecutor;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code /actuator/prometheus} on both ports over raw sockets ({@link ScrapeRenderer}): rendered
 * off the event loops, one render at a time, shared by the scrapes that wait together, never older
 * than the scrape, and nothing left behind by a client that leaves while it waits. A meter of the
 * test's, {@code test_scrape_held}, records the thread that reads it and can hold a render until
 * the test lets it go.
 */
final class ScrapeTest {
    private static final Duration WAIT = Duration.ofSeconds(15);

    /** How long a free event loop may take to run a task: far more than a render (about 1 ms). */
    private static final Duration PROMPT = Duration.ofSeconds(2);

    private static final Pattern HELD = Pattern.compile("(?m)^test_scrape_held (\\S+)$");

    private Cell cell;
    private int admin;

    /** The threads that read the test's meter, one per render. */
    private final Queue<String> renderThreads = new ConcurrentLinkedQueue<>();
    /** Non-null: the next read of the meter waits on it (once). */
    private final AtomicReference<@Nullable CountDownLatch> hold = new AtomicReference<>();
    /** Counted down when a held read began. */
    private volatile CountDownLatch entered = new CountDownLatch(1);
    /** What the meter reads, before any hold. */
    private volatile DoubleSupplier value = () -> 0;

    @BeforeEach
    void start() throws IOException {
        cell = Cell.builder().owners(1).set("spector.server.admin-port", "0").start();
        admin = cell.gateway.adminPort();
        Gauge.builder("test.scrape.held", this, ScrapeTest::read)
                .strongReference(true)
                .register(cell.gateway.metrics().registry());
    }

    @AfterEach
    void stop() {
        CountDownLatch held = hold.getAndSet(null);
        if (held != null) {
            held.countDown();
        }
        cell.close();
    }

    private double read() {
        renderThreads.add(Thread.currentThread().getName());
        double v = value.getAsDouble();
        CountDownLatch release = hold.getAndSet(null);
        if (release != null) {
            entered.countDown();
            try {
                var unused = release.await(WAIT.toSeconds() * 2, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return v;
    }

    /** Makes the next render wait in the test's meter until the returned latch is counted down. */
    private CountDownLatch holdNextRender() {
        entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        hold.set(release);
        return release;
    }

    private void awaitHeldRender() throws InterruptedException {
        assertThat(entered.await(WAIT.toSeconds(), TimeUnit.SECONDS))
                .as("a render reached the test's meter")
                .isTrue();
    }

    private static String get(String path) {
        return "GET " + path + " HTTP/1.1\r\nHost: gw\r\n\r\n";
    }

    private static WireClient scrape(int port) {
        return new WireClient(port).send(get("/actuator/prometheus"));
    }

    /** Waits until {@code n} more scrapes than {@code before} asked the renderer for a render. */
    private void awaitScrapes(long before, int n) {
        await("scrapes waiting for a render")
                .atMost(WAIT)
                .until(() -> cell.gateway.localEndpoints().scrapes() - before >= n);
    }

    /** The test's meter as a scrape rendered it. */
    private static double held(WireClient.Response scrape) {
        assertThat(scrape.status()).as("scrape: %s", scrape).isEqualTo(200);
        Matcher m = HELD.matcher(scrape.text());
        assertThat(m.find()).as("test_scrape_held in %s", scrape).isTrue();
        return Double.parseDouble(m.group(1));
    }

    /** The health exchanges the gateway counted, read from its registry (no scrape). */
    private long healthExchanges() {
        return cell
                .gateway
                .metrics()
                .registry()
                .find("spector.gateway.requests")
                .tag("route", "health")
                .timers()
                .stream()
                .mapToLong(Timer::count)
                .sum();
    }

    @Test
    void render_runsOnTheRenderThread_whileEveryEventLoopAndTheAdminThreadStayFree() throws Exception {
        CountDownLatch release = holdNextRender();
        try (WireClient client = scrape(cell.gateway.port())) {
            awaitHeldRender();
            assertThat(renderThreads.peek()).startsWith(ScrapeRenderer.THREAD_NAME + "-");
            for (EventExecutor loop : cell.gateway.eventLoops()) {
                assertThat(loop.submit(() -> {}).await(PROMPT.toMillis()))
                        .as("a traffic loop runs a task while a render is held")
                        .isTrue();
            }
            try (WireClient probe = new WireClient(admin).timeout(PROMPT)) {
                assertThat(probe.send(get("/actuator/health")).read().status())
                        .as("the admin thread answers health while a render is held")
                        .isEqualTo(200);
            }
            release.countDown();
            assertThat(held(client.read())).isZero();
        }
        assertThat(renderThreads).allMatch(t -> t.startsWith(ScrapeRenderer.THREAD_NAME + "-"));
    }

    @Test
    void scrape_whileARenderRuns_waitsForTheNextRender_andCountsWhatCompletedBefore() throws Exception {
        assertThat(RawClient.exchange(cell.gateway.port(), get("/actuator/health"))
                        .status())
                .isEqualTo(200);
        await().atMost(WAIT).until(() -> healthExchanges() == 1);
        value = this::healthExchanges; // read as a render begins, before it holds
        CountDownLatch release = holdNextRender();
        try (WireClient first = scrape(cell.gateway.port())) {
            awaitHeldRender(); // this render read 1 health exchange
            assertThat(RawClient.exchange(cell.gateway.port(), get("/actuator/health"))
                            .status())
                    .isEqualTo(200);
            await("the exchange counted").atMost(WAIT).until(() -> healthExchanges() == 2);
            long scrapes = cell.gateway.localEndpoints().scrapes();
            try (WireClient second = scrape(cell.gateway.port());
                    WireClient onAdmin = scrape(admin)) {
                awaitScrapes(scrapes, 2);
                release.countDown();
                assertThat(held(first.read())).as("the render that was running").isEqualTo(1);
                WireClient.Response fresh = second.read();
                assertThat(held(fresh)).as("a scrape that came while it ran").isEqualTo(2);
                assertThat(Cell.counter(fresh.text(), "spector_gateway_requests_seconds_count", "route", "health"))
                        .isEqualTo(2);
                assertThat(held(onAdmin.read()))
                        .as("the same, on the admin port")
                        .isEqualTo(2);
            }
        }
    }

    @Test
    void concurrentScrapes_onBothPorts_shareRenders() throws Exception {
        long renders = cell.gateway.localEndpoints().renders();
        long scrapes = cell.gateway.localEndpoints().scrapes();
        CountDownLatch release = holdNextRender();
        List<WireClient> clients = new ArrayList<>();
        try {
            clients.add(scrape(cell.gateway.port()));
            awaitHeldRender();
            for (int i = 0; i < 24; i++) {
                clients.add(scrape(i % 3 == 0 ? admin : cell.gateway.port()));
            }
            awaitScrapes(scrapes, clients.size());
            release.countDown();
            for (WireClient c : clients) {
                assertThat(c.read().status()).isEqualTo(200);
            }
        } finally {
            clients.forEach(WireClient::close);
        }
        assertThat(cell.gateway.localEndpoints().renders() - renders)
                .as("renders for %d scrapes: the held one, and one the others shared", clients.size())
                .isEqualTo(2);
    }

    @Test
    void clientThatClosesWhileItsScrapeWaits_isDroppedOnTheClientPort_andAnsweredLastOnTheAdminPort() throws Exception {
        long renders = cell.gateway.localEndpoints().renders();
        long scrapes = cell.gateway.localEndpoints().scrapes();
        CountDownLatch release = holdNextRender();
        try (WireClient first = scrape(cell.gateway.port())) {
            awaitHeldRender();
            int clientChannels = cell.gateway.clientChannels().size();
            AdminListener adminListener = requireNonNull(cell.gateway.admin());
            int adminChannels = adminListener.connections().size();
            WireClient leaving = scrape(cell.gateway.port());
            // behind its scrape: a request the admin port holds, and the start of one it leaves as bytes
            WireClient leavingAdmin = scrape(admin).send(get("/actuator/health") + "GET /actuator/hea");
            awaitScrapes(scrapes, 3);
            leaving.close();
            leavingAdmin.close();
            await("the client port closed the connection at the FIN, as for any exchange")
                    .atMost(WAIT)
                    .until(() -> cell.gateway.clientChannels().size() == clientChannels);
            assertThat(adminListener.connections().size())
                    .as("the admin port keeps it for the answer (a FIN may be a half close)")
                    .isEqualTo(adminChannels + 1);
            release.countDown();
            assertThat(first.read().status()).isEqualTo(200);
            await("the admin port closed it after the answer")
                    .atMost(WAIT)
                    .until(() -> adminListener.connections().size() == adminChannels);
        }
        assertThat(cell.gateway.localEndpoints().renders() - renders).isEqualTo(2);
        try (WireClient after = scrape(cell.gateway.port())) {
            WireClient.Response r = after.read();
            assertThat(Cell.counter(r.text(), "spector_gateway_requests_seconds_count", "status", "499"))
                    .as("the scrape whose client left, counted as any exchange whose client left")
                    .isEqualTo(1);
        }
        try (WireClient afterAdmin = scrape(admin)) {
            assertThat(afterAdmin.read().status()).isEqualTo(200);
        }
    }

    @Test
    void requestsPipelinedBehindAScrape_onBothPorts_areAnsweredInOrder() throws Exception {
        for (int port : new int[] {cell.gateway.port(), admin}) {
            CountDownLatch release = holdNextRender();
            try (WireClient c = scrape(port)) {
                awaitHeldRender();
                c.send(get("/actuator/health/liveness")
                        + "HEAD /actuator/prometheus HTTP/1.1\r\nHost: gw\r\n\r\n"
                        + get("/actuator/prometheus")
                        + get("/actuator/health/readiness"));
                release.countDown();
                assertThat(held(c.read())).as("port %d: the held scrape", port).isZero();
                assertThat(c.read().text()).isEqualTo("{\"status\":\"UP\"}");
                WireClient.Response head = c.readForHead();
                assertThat(head.status()).isEqualTo(200);
                assertThat(head.header("content-type")).startsWith("text/plain; version=0.0.4");
                assertThat(held(c.read())).isZero();
                assertThat(c.read().text()).contains("\"status\":\"UP\"");
            }
        }
    }

    @Test
    void scrapeOnTheAdminPort_clientHalfClosesWhileItWaits_getsTheAnswerThenTheClose() throws Exception {
        CountDownLatch release = holdNextRender();
        try (WireClient halfClosing = scrape(admin)) {
            awaitHeldRender();
            halfClosing.shutdownOutput();
            release.countDown();
            WireClient.Response r = halfClosing.read();
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.connectionHas("close")).isTrue(); // and WireClient saw the close follow
        }
    }
}
