package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.PropertyLeaks;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.AfterFailureMode;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.jspecify.annotations.Nullable;

/**
 * Hostile bytes on the admin port ({@link AdminListener}): generated client requests (the edge
 * fuzz's, {@link EdgeRequests}) and admin-shaped ones with broken methods, targets, versions,
 * framing and field lines, each on a fresh connection, half-closed after its bytes. After each
 * try:
 *
 * <ol>
 *   <li><b>bounded</b>: the listener closes within {@link #READ_BOUND};
 *   <li><b>well-formed</b>: what it sent parses strictly as responses ({@link StrictResponses}), at
 *       most one per request sent (RFC 9112 §9.3: in order);
 *   <li><b>its statuses only</b>: 200 for {@code GET} or {@code HEAD} of an admin route, else one of
 *       400, 404, 405, 413, 414, 431 or 505, each a problem+json;
 *   <li><b>never upstream</b>: no owner received anything;
 *   <li><b>still serving</b>: a new connection gets the liveness answer;
 *   <li><b>no leak</b>: Netty's detector (PARANOID) reports no buffer after the properties.
 * </ol>
 */
final class AdminFuzzTest {
    /** The longest a try may take to be answered and closed: the header timeout, and room. */
    static final Duration READ_BOUND = Duration.ofSeconds(6);

    private static final Set<Integer> REFUSALS = Set.of(400, 404, 405, 413, 414, 431, 505);
    private static final List<String> ROUTES = List.of(
            "/actuator/health", "/actuator/health/liveness", "/actuator/health/readiness", "/actuator/prometheus");

    private static @Nullable Cell cell;

    @BeforeContainer
    static void start() throws IOException {
        PropertyLeaks.paranoid();
        cell = Cell.builder()
                .owners(1)
                .set("spector.server.admin-port", "0")
                .set("spector.server.header-timeout", "1s")
                .start();
    }

    @AfterContainer
    static void stop() {
        Cell c = cell;
        if (c != null) {
            c.close();
        }
        PropertyLeaks.noLeak("6 (no leak) after the admin fuzz");
    }

    private static Cell cell() {
        Cell c = cell;
        if (c == null) {
            throw new IllegalStateException("no cell: @BeforeContainer did not run");
        }
        return c;
    }

    /**
     * The bytes of one try and the requests they were meant to be; {@code mustAnswer} when its first
     * head is complete (its lines end in CRLF or LF), so the server owes it an answer, a refusal at
     * least, before it closes.
     */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Try(byte[] bytes, List<StrictResponses.Asked> asked, boolean mustAnswer) {
        @Override
        public String toString() {
            return new String(bytes, StandardCharsets.ISO_8859_1)
                    .replace("\r", "\\r")
                    .replace("\n", "\\n\n");
        }
    }

    @Provide
    Arbitrary<Try> edgeTries() {
        return EdgeRequests.tries().map(spec -> {
            Cell c = cell();
            var ctx = new EdgeRequests.Context(
                    c.gateway.adminPort(),
                    Cell.token(Cell.TENANT),
                    Cell.token(
                            Cell.TENANT, Instant.now().plusSeconds(3600), "another-secret-0123456789-0123456789-012"));
            EdgeRequests.Rendered r = spec.render(0, ctx, false);
            return new Try(r.bytes(), r.asked(), false); // mutations may cut the head short
        });
    }

    @Provide
    Arbitrary<Try> adminTries() {
        Arbitrary<String> method = Arbitraries.of("GET", "HEAD", "POST", "PUT", "OPTIONS", "DELETE", "get", "G ET", "");
        Arbitrary<String> target = Arbitraries.oneOf(
                Arbitraries.of(ROUTES),
                Arbitraries.of(ROUTES).map(p -> p + "?x=1"),
                Arbitraries.of(
                        "/actuator/health/../prometheus",
                        "/actuator/%68ealth",
                        "//actuator/health",
                        "/ACTUATOR/HEALTH",
                        "*",
                        "http://gw/actuator/health",
                        "/actuator/health\u0000",
                        "/actuator/health#f",
                        "/api/v1/namespaces/a/echo",
                        "/gateway/v1/status",
                        ""),
                Arbitraries.integers()
                        .between(AdminListener.MAX_LINE_BYTES - 40, AdminListener.MAX_LINE_BYTES + 10)
                        .map(n -> "/actuator/prometheus?" + "a".repeat(n)));
        Arbitrary<String> version =
                Arbitraries.of("HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/1.2", "HTTP/2.0", "HTTP/1", "");
        Arbitrary<String> field = Arbitraries.of(
                "Host: gw",
                "Host: gw",
                "Connection: close",
                "Connection: keep-alive",
                "Content-Length: 0",
                "Content-Length: 5",
                "Content-Length: -1",
                "Content-Length: 1, 1",
                "Content-Length: 99999999999999999999",
                "Transfer-Encoding: chunked",
                "Transfer-Encoding: gzip",
                "Expect: 100-continue",
                " folded",
                "No-Colon",
                "Bad Name: x",
                "X-Nul: a\u0000b",
                "X-High: \u00ff\u00fe",
                "X-Pad: " + "p".repeat(AdminListener.MAX_HEAD_BYTES / 2));
        Arbitrary<String> eol = Arbitraries.of("\r\n", "\r\n", "\r\n", "\n", "\r");
        Arbitrary<Req> request = Combinators.combine(
                        method,
                        target,
                        version,
                        field.list().ofMaxSize(4),
                        eol,
                        Arbitraries.of("", "hello", "5\r\nhello\r\n0\r\n\r\n"))
                .as((m, t, v, fields, nl, body) -> {
                    StringBuilder sb = new StringBuilder(m)
                            .append(' ')
                            .append(t)
                            .append(' ')
                            .append(v)
                            .append(nl);
                    for (String f : fields) {
                        sb.append(f).append(nl);
                    }
                    sb.append(nl).append(body);
                    // A request line the server cannot read leaves it no method: it answers as to a
                    // GET (nginx, Netty), so the client's HEAD is not one the answer can honour.
                    boolean lineReadable = nl.equals("\r\n")
                            && m.length() + t.length() + v.length() + 2 <= AdminListener.MAX_LINE_BYTES
                            && !t.isEmpty()
                            && t.indexOf(' ') < 0 // a NUL or a byte above 0x7f is read as part of it
                            && v.matches("HTTP/\\d\\.\\d");
                    return new Req(
                            sb.toString(),
                            m.equals("HEAD") && lineReadable,
                            v.equals("HTTP/1.0"),
                            body.isEmpty(),
                            !nl.equals("\r"));
                });
        return request.list().ofMinSize(1).ofMaxSize(3).map(list -> {
            List<StrictResponses.Asked> asked = new ArrayList<>();
            StringBuilder bytes = new StringBuilder();
            boolean aligned = true; // no body before this request that the server may read as its start
            for (Req r : list) {
                asked.add(new StrictResponses.Asked(aligned && r.head() ? "HEAD" : "GET", r.http10()));
                bytes.append(r.text());
                aligned &= r.bodyless();
            }
            return new Try(
                    bytes.toString().getBytes(StandardCharsets.ISO_8859_1),
                    asked,
                    list.get(0).complete());
        });
    }

    /**
     * One generated request's text; {@code head} when the server can read it as a HEAD, {@code
     * bodyless} when no body bytes follow its head (framed or not, they may begin the next request),
     * {@code complete} when its head ends where HTTP/1.1 says (a bare CR ends no line).
     */
    record Req(String text, boolean head, boolean http10, boolean bodyless, boolean complete) {}

    @Property(
            tries = 150,
            afterFailure = AfterFailureMode.SAMPLE_FIRST,
            shrinking = ShrinkingMode.BOUNDED,
            edgeCases = EdgeCasesMode.NONE)
    void edgeRequests_onTheAdminPort_areRefusedOrAnswered_neverForwarded(@ForAll("edgeTries") Try t)
            throws IOException {
        check(t);
    }

    @Property(
            tries = 500,
            afterFailure = AfterFailureMode.SAMPLE_FIRST,
            shrinking = ShrinkingMode.BOUNDED,
            edgeCases = EdgeCasesMode.NONE)
    void adminShapedRequests_areAnsweredWithTheAdminStatusesOnly(@ForAll("adminTries") Try t) throws IOException {
        check(t);
    }

    private static void check(Try t) throws IOException {
        Cell c = cell();
        int before = c.owners.get(0).requests().size();
        long started = System.nanoTime();
        Received got = exchange(c.gateway.adminPort(), t.bytes());
        assertThat(got.timedOut())
                .as("1 (bounded): closed within %s", READ_BOUND)
                .isFalse();
        StrictResponses.Result parsed = StrictResponses.parse(got.bytes(), got.reset(), t.asked(), 1);
        assertThat(parsed.violations()).as("2 (well-formed)").isEmpty();
        if (t.mustAnswer()) {
            assertThat(parsed.responses())
                    .as("2: a complete head is answered before the close (a refusal at least)")
                    .isNotEmpty();
        }
        for (StrictResponses.Response r : parsed.responses()) {
            if (r.status() == 200) {
                assertThat(r.header("content-type"))
                        .as("3: a 200 is a route's answer")
                        .isIn(
                                "application/vnd.spring-boot.actuator.v3+json",
                                "text/plain; version=0.0.4; charset=utf-8");
                continue;
            }
            assertThat(REFUSALS).as("3 (its statuses only): %d", r.status()).contains(r.status());
            assertThat(r.header("content-type")).as("3: a refusal is a problem").isEqualTo("application/problem+json");
        }
        assertThat(c.owners.get(0).requests()).as("4 (never upstream)").hasSize(before);
        RawClient.Response live =
                RawClient.exchange(c.gateway.adminPort(), "GET /actuator/health/liveness HTTP/1.1\r\nHost: gw\r\n\r\n");
        assertThat(live.status()).as("5 (still serving)").isEqualTo(200);
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(READ_BOUND.multipliedBy(2));
    }

    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Received(byte[] bytes, boolean reset, boolean timedOut) {}

    /** Sends {@code bytes} on a fresh connection, half-closes it, and reads to its end (bounded). */
    private static Received exchange(int port, byte[] bytes) throws IOException {
        long deadline = System.nanoTime() + READ_BOUND.toNanos();
        ByteArrayOutputStream in = new ByteArrayOutputStream();
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2000);
            try {
                s.getOutputStream().write(bytes);
                s.shutdownOutput();
            } catch (SocketException e) {
                // closed while we wrote (a refusal before the rest): read what it sent
            }
            InputStream is = s.getInputStream();
            byte[] buf = new byte[16 * 1024];
            while (true) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    s.setSoLinger(true, 0);
                    return new Received(in.toByteArray(), false, true);
                }
                s.setSoTimeout((int) left);
                int n;
                try {
                    n = is.read(buf);
                } catch (SocketTimeoutException e) {
                    continue; // the deadline check above ends it
                } catch (SocketException e) {
                    return new Received(in.toByteArray(), true, false);
                }
                if (n < 0) {
                    return new Received(in.toByteArray(), false, false);
                }
                in.write(buf, 0, n);
            }
        }
    }
}
