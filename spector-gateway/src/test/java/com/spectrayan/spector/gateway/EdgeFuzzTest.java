package com.spectrayan.spector.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.gateway.EdgeRequests.Rendered;
import com.spectrayan.spector.gateway.EdgeRequests.Sent;
import com.spectrayan.spector.gateway.EdgeRequests.Tag;
import com.spectrayan.spector.gateway.EdgeRequests.TrySpec;
import com.spectrayan.spector.gateway.StrictResponses.Response;
import com.spectrayan.spector.owner.RecordedRequest;
import com.spectrayan.spector.owner.ReferenceOwner;
import com.spectrayan.spector.testkit.NettyLeakExtension;
import com.spectrayan.spector.testkit.PropertyLeaks;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.AfterFailureMode;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.lifecycle.AddLifecycleHook;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.AroundPropertyHook;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.lifecycle.PropertyExecutionResult;
import net.jqwik.api.lifecycle.PropertyExecutor;
import net.jqwik.api.lifecycle.PropertyLifecycleContext;
import net.jqwik.api.statistics.Statistics;
import org.jspecify.annotations.Nullable;

/**
 * Generated and mutated request bytes, sent on raw sockets to one real gateway in front of three
 * reference owners, must never break the edge's invariants (issue 9 §6, DESIGN.md §10). Each try
 * opens a fresh connection, sends its bytes, half-closes (or, in the slow property, waits), and
 * reads everything until the gateway closes. Checked after each try, numbered as in failure
 * messages:
 *
 * <ol>
 *   <li><b>bounded</b>: the gateway answers or closes within {@link #READ_BOUND};
 *   <li><b>well-formed</b>: every byte it sent parses strictly as responses ({@link
 *       StrictResponses}), at most one per request, in order;
 *   <li><b>no more upstream</b>: each request reaches the owners at most once, and a head hidden
 *       in a body never does (unless a byte mutation took away the framing that hid it);
 *   <li><b>normalized</b>: every path an owner got is under {@code /api/v1/} with no dot-segment,
 *       empty segment or encoded dot, slash or backslash; an owner's 2xx means the path it got is
 *       the {@link ExpectedPath} of the one sent (and the query is unchanged);
 *   <li><b>no leak</b>: Netty's detector (PARANOID) reports no buffer after the property;
 *   <li><b>refused stays refused</b>: a request the gateway refused with its own problem (4xx,
 *       with a {@code code}, decided on the head) never reached an owner;
 *   <li><b>RFC 9112 and design MUSTs</b> (for requests whose bytes the test still knows, i.e. not
 *       byte-mutated): a request every correct gateway refuses (bad Content-Length, a final coding
 *       other than chunked, whitespace before a colon, Host missing, repeated or invalid, a path
 *       climbing above the root, no valid token) never reaches an owner and is answered with the
 *       right status; a body that cannot complete (truncated, malformed chunks) is never answered
 *       2xx by an owner; an owner's 2xx saw exactly the body the client framed; after a request
 *       that ends the connection (CL with TE, a framing error, {@code Connection: close}, HTTP/1.0)
 *       nothing is answered or forwarded; no forwarded field carries NUL, CR or LF; a request
 *       the gateway must refuse is answered, not met with a bare close;
 *   <li><b>served</b>: a plainly valid echo request (a valid token, one Host, clean framing, a path
 *       that normalizes to the echo's, origin- or absolute-form) is answered 200 by its owner, so
 *       a gateway that refuses too much fails too.
 * </ol>
 *
 * <p>Rows that reach an owner's log after their try ended are checked when seen, against their own
 * try, and reported when the property ends. Longer runs: {@code -Dspector.fuzz.tries=200000}
 * (bench/README.md).
 */
final class EdgeFuzzTest {
    /** How long one try may take from connect to the gateway's close: above every server timeout. */
    static final Duration READ_BOUND = Duration.ofSeconds(6);

    /** The tries of the main property in {@code verify}; {@code -Dspector.fuzz.tries} overrides. */
    static final int DEFAULT_TRIES = 10_000;

    /** The tries of the slow property (each runs {@link #SLOW_BATCH} connections at once). */
    static final int DEFAULT_SLOW_TRIES = 3;

    /**
     * How long a try waits for the gateway before it half-closes: a request the gateway still
     * waits on (a cut head, a short body) then ends at once, not at a server timeout.
     */
    static final Duration QUIET = Duration.ofMillis(50);

    /** Connections of one slow try, run in parallel because each waits for a server timeout. */
    static final int SLOW_BATCH = 6;

    /**
     * The statuses that correctly refuse a head a MUST makes a 400: 400 itself, or a limit the
     * decoder hit first. A refusal for a missing token may be any 4xx the gateway decided first.
     */
    static final Set<Integer> REFUSALS_OF_A_BAD_HEAD = Set.of(400, 413, 414, 431);

    /**
     * With {@code -Dspector.fuzz.survey=true} no try fails: each kind of violation is counted, and
     * its first report printed when the property ends (to see every kind a gateway breaks at once).
     */
    static final boolean SURVEY = Boolean.getBoolean("spector.fuzz.survey");

    private static final Map<String, Survey> SURVEYED = Collections.synchronizedMap(new LinkedHashMap<>());

    /** One kind of violation: how often it was seen, and its first report. */
    static final class Survey {
        int count;
        final String first;

        Survey(String first) {
            this.first = first;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final AtomicLong IDS = new AtomicLong();
    private static final List<String> LATE = Collections.synchronizedList(new ArrayList<>());

    private static @Nullable Cell cell;
    private static EdgeRequests.@Nullable Context context;
    private static @Nullable ExecutorService pool;
    private static final Upstream UPSTREAM = new Upstream();

    /**
     * A fuzz property: jqwik's {@link Property} with the settings both share, run by {@link
     * FuzzRun}, which sets its tries from a system property (so a long run needs no code change).
     * Edge cases are off: mixed into a product of 30 generators they would be a quarter of all tries.
     */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.METHOD)
    @Property(
            afterFailure = AfterFailureMode.SAMPLE_FIRST,
            shrinking = ShrinkingMode.BOUNDED,
            edgeCases = EdgeCasesMode.NONE)
    @AddLifecycleHook(FuzzRun.class)
    @interface FuzzProperty {
        /** The system property that overrides {@link #tries}. */
        String triesProperty();

        int tries();
    }

    @BeforeContainer
    static void start() throws IOException {
        PropertyLeaks.paranoid(); // the recording detector, before any buffer class loads
        Cell c = Cell.builder()
                .owners(3)
                .set("spector.server.header-timeout", "2s")
                .set("spector.server.body-timeout", "2s")
                .set("spector.server.idle-timeout", "3s")
                .set("spector.routing.gateway.owner-timeout", "2s")
                .start();
        cell = c;
        context = new EdgeRequests.Context(
                c.gateway.port(),
                Cell.token(Cell.TENANT),
                Cell.token(Cell.TENANT, Instant.now().plusSeconds(3600), "another-secret-0123456789-0123456789-012"));
        pool = Executors.newFixedThreadPool(SLOW_BATCH);
    }

    @AfterContainer
    static void stop() {
        ExecutorService p = pool;
        if (p != null) {
            p.shutdownNow();
        }
        Cell c = cell;
        if (c != null) {
            c.close();
        }
        List<String> leaks = NettyLeakExtension.collectLeaks();
        if (!leaks.isEmpty()) {
            throw new AssertionError("5 (no leak): Netty buffers never released after the fuzz properties ("
                    + leaks.size() + "):\n" + String.join("\n", leaks));
        }
    }

    @Provide
    Arbitrary<TrySpec> tries() {
        return EdgeRequests.tries();
    }

    @FuzzProperty(triesProperty = "spector.fuzz.tries", tries = DEFAULT_TRIES)
    void shouldKeepTheEdgeInvariantsForAnyRequestBytes(@ForAll("tries") TrySpec spec) throws Exception {
        Rendered r = spec.render(IDS.incrementAndGet(), context(), true);
        Outcome o = Outcome.of(r, exchange(r.bytes(), r.truncated() ? Duration.ZERO : QUIET));
        fail(check(List.of(o)));
        statistics(o);
    }

    @FuzzProperty(triesProperty = "spector.fuzz.slow-tries", tries = DEFAULT_SLOW_TRIES)
    void shouldCloseWithinItsTimeoutsWhenTheClientNeitherFinishesNorCloses(
            @ForAll @Size(SLOW_BATCH) List<@From("tries") TrySpec> specs) throws Exception {
        ExecutorService p = pool;
        if (p == null) {
            throw new IllegalStateException("container not started");
        }
        List<Rendered> rendered = new ArrayList<>();
        List<Future<Received>> pending = new ArrayList<>();
        for (TrySpec spec : specs) {
            Rendered r = spec.render(IDS.incrementAndGet(), context(), false);
            rendered.add(r);
            pending.add(p.submit(() -> exchange(r.bytes(), null)));
        }
        List<Outcome> outcomes = new ArrayList<>();
        for (int i = 0; i < rendered.size(); i++) {
            outcomes.add(Outcome.of(rendered.get(i), pending.get(i).get(READ_BOUND.toSeconds() * 2, TimeUnit.SECONDS)));
        }
        fail(check(outcomes));
    }

    /** Counts what was tried and how it ended, printed by jqwik after the property. */
    private static void statistics(Outcome o) {
        Sent first = o.rendered.requests().get(0);
        Statistics.label("shape")
                .collect(
                        o.rendered.requests().size() == 2 ? "pipelined pair" : "single",
                        o.rendered.mutated() ? "byte-mutated" : o.rendered.truncated() ? "truncated" : "as built");
        Statistics.label("target")
                .collect(
                        first.target().startsWith("/")
                                ? "origin"
                                : first.target().startsWith("http") ? "absolute" : first.target());
        Statistics.label("rules")
                .collect(
                        !first.mustRefuse().isEmpty()
                                ? "must refuse"
                                : first.mustClose() != null
                                        ? "must close"
                                        : first.incomplete() != null ? "incomplete body" : "none");
        Response r = o.response(0);
        Statistics.label("first answer")
                .collect(
                        r == null
                                ? "none (" + (o.received.reset() ? "reset" : "closed") + ")"
                                : (r.header("x-spector-node") == null ? "gateway " : "owner ") + r.status());
    }

    private static EdgeRequests.Context context() {
        EdgeRequests.Context c = context;
        if (c == null) {
            throw new IllegalStateException("container not started");
        }
        return c;
    }

    private static void fail(List<String> reports) {
        if (reports.isEmpty()) {
            return;
        }
        if (!SURVEY) {
            throw new AssertionError(String.join("\n", reports));
        }
        for (String report : reports) {
            for (String line : report.split("\n", -1)) {
                if (line.startsWith("3 (")) { // a row no try sent
                    line = "  - " + line;
                }
                if (line.startsWith("  - ")) {
                    String kind = line.substring(4)
                            .replaceAll("owner-\\d+ \\S+ .*? -> \\d+", "<row>")
                            .replaceAll("'[^']*'", "'…'")
                            .replaceAll("\\[[^\\]]*\\]", "[…]")
                            .replaceAll("\\(target[^)]*\\)", "")
                            .replaceAll("\\(sha256 [0-9a-f]+\\)", "")
                            .replaceAll("\\d+", "#");
                    kind = kind.substring(0, Math.min(kind.length(), 110));
                    SURVEYED.computeIfAbsent(kind, k -> new Survey(report)).count++;
                }
            }
        }
    }

    // ---- one connection ----

    /** What the gateway sent on one connection, and how the connection ended. */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Received(
            byte[] bytes,
            boolean reset,
            boolean timedOut,
            long halfClosedMs,
            long millis,
            @Nullable String writeError,
            int localPort) {
        String ending() {
            return (timedOut ? "still open at the bound" : reset ? "reset" : "FIN") + " after " + millis + " ms"
                    + (halfClosedMs < 0 ? "" : ", our half-close at " + halfClosedMs + " ms")
                    + (writeError == null ? "" : "; our write failed: " + writeError) + "; client port " + localPort;
        }
    }

    /**
     * Sends the bytes on a fresh connection and reads until the gateway closes or the bound passes.
     * When the gateway has been silent for {@code quiet}, the client half-closes (at once for
     * zero), telling it no more bytes come; null never half-closes.
     */
    static Received exchange(byte[] bytes, @Nullable Duration quiet) {
        try {
            return exchangeOnce(bytes, quiet);
        } catch (IOException | RuntimeException e) {
            return new Received(new byte[0], false, false, -1, 0, "the connection failed: " + e, 0);
        }
    }

    private static Received exchangeOnce(byte[] bytes, @Nullable Duration quiet) throws IOException {
        long start = System.nanoTime();
        long deadline = start + READ_BOUND.toNanos();
        ByteArrayOutputStream in = new ByteArrayOutputStream();
        boolean reset = false;
        boolean timedOut = false;
        long halfClosed = -1;
        String writeError = null;
        int localPort;
        try (Socket s = new Socket()) {
            s.connect(
                    new InetSocketAddress(
                            InetAddress.getLoopbackAddress(), context().port()),
                    2000);
            s.setTcpNoDelay(true);
            localPort = s.getLocalPort();
            try {
                s.getOutputStream().write(bytes);
                s.getOutputStream().flush();
            } catch (IOException e) {
                writeError = e.toString();
            }
            long quietMs = quiet == null ? -1 : quiet.toMillis();
            boolean open = quietMs >= 0;
            if (quietMs == 0) {
                s.shutdownOutput();
                open = false;
                halfClosed = 0;
            }
            InputStream is = s.getInputStream();
            byte[] buf = new byte[16 * 1024];
            while (true) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    timedOut = true;
                    break;
                }
                boolean waitingQuietly = open && quietMs < left;
                s.setSoTimeout((int) (waitingQuietly ? quietMs : left));
                int n;
                try {
                    n = is.read(buf);
                } catch (SocketTimeoutException e) {
                    if (waitingQuietly) {
                        s.shutdownOutput(); // the gateway waits for more: tell it nothing comes
                        open = false;
                        halfClosed = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                        continue;
                    }
                    timedOut = true;
                    break;
                } catch (SocketException e) {
                    reset = true;
                    break;
                }
                if (n < 0) {
                    break;
                }
                in.write(buf, 0, n);
            }
            if (timedOut) {
                s.setSoLinger(true, 0);
            }
        }
        return new Received(
                in.toByteArray(),
                reset,
                timedOut,
                halfClosed,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start),
                writeError,
                localPort);
    }

    // ---- the checks ----

    /** A try's bytes, what came back, and what the owners recorded for it so far. */
    static final class Outcome {
        final Rendered rendered;
        final Received received;
        final StrictResponses.Result parsed;
        final int[] rows;
        final List<String> seen = new ArrayList<>();

        private Outcome(Rendered rendered, Received received) {
            this.rendered = rendered;
            this.received = received;
            // A byte mutation can take away the framing that hid a head in a body (a
            // Transfer-Encoding name garbled, a Content-Length left): the hidden head is then a
            // request, and what the chunked body still had (its "0" line) one more, answered 400
            // with the close. So up to two responses past those asked, for mutated bytes only.
            this.parsed = StrictResponses.parse(
                    received.bytes(), received.reset(), rendered.asked(), rendered.mutated() ? 2 : 0);
            this.rows = new int[rendered.requests().size()];
        }

        static Outcome of(Rendered rendered, Received received) {
            return new Outcome(rendered, received);
        }

        @Nullable
        Response response(int index) {
            return index < parsed.responses().size() ? parsed.responses().get(index) : null;
        }

        String report(List<String> violations) {
            StringBuilder sb = new StringBuilder();
            sb.append("try ")
                    .append(rendered.id())
                    .append(" broke ")
                    .append(violations.size())
                    .append(" invariant(s):");
            for (String v : violations) {
                sb.append("\n  - ").append(v);
            }
            sb.append("\n  sent (")
                    .append(rendered.bytes().length)
                    .append(" bytes")
                    .append(rendered.mutated() ? ", byte-mutated" : "")
                    .append(rendered.truncated() ? ", the last body cut short" : "")
                    .append("): \"")
                    .append(Bytes.show(rendered.bytes(), 0, 3000))
                    .append('"');
            sb.append("\n  received (")
                    .append(received.bytes().length)
                    .append(" bytes, ")
                    .append(received.ending())
                    .append("): \"")
                    .append(Bytes.show(received.bytes(), 0, 3000))
                    .append('"');
            sb.append("\n  owners recorded: ").append(seen.isEmpty() ? "nothing" : String.join("; ", seen));
            return sb.toString();
        }
    }

    /** Checks the tries of one property call; returns one report per broken try. */
    private static List<String> check(List<Outcome> outcomes) {
        Map<Long, List<String>> found = new LinkedHashMap<>();
        for (Outcome o : outcomes) {
            UPSTREAM.register(o);
            found.put(o.rendered.id(), new ArrayList<>(responses(o)));
        }
        UPSTREAM.scan(found);
        List<String> reports = new ArrayList<>();
        for (Outcome o : outcomes) {
            List<String> v = found.get(o.rendered.id());
            if (v != null && !v.isEmpty()) {
                reports.add(o.report(v));
            }
        }
        return reports;
    }

    /** Invariants 1, 2 and the response side of 4 and 7. */
    private static List<String> responses(Outcome o) {
        List<String> v = new ArrayList<>();
        Rendered r = o.rendered;
        if (o.received.timedOut()) {
            v.add("1 (bounded): the gateway neither answered nor closed within " + READ_BOUND.toSeconds() + " s");
        }
        String error = o.received.writeError();
        if (error != null && error.startsWith("the connection failed")) {
            v.add("1 (bounded): " + error);
        }
        for (String x : o.parsed.violations()) {
            v.add("2 (well-formed): " + x);
        }
        List<Sent> sent = r.requests();
        Sent first = sent.get(0);
        boolean bareClose = o.parsed.responses().isEmpty()
                && !o.received.reset()
                && !o.received.timedOut()
                && o.received.halfClosedMs() < 0
                && !r.mutated()
                && !r.truncated()
                && error == null;
        if (bareClose && !first.mustRefuse().isEmpty()) {
            v.add("7 (MUST refuse): the gateway closed without answering request 0, which it must answer with "
                    + first.refuseStatus() + ": " + first.mustRefuse());
        } else if (bareClose && first.incomplete() == null) {
            v.add("1 (answers): the gateway closed without answering a whole request 0, and the client had not"
                    + " half-closed");
        }
        for (Response resp : o.parsed.responses()) {
            if (resp.index() >= sent.size()) {
                continue;
            }
            Sent s = sent.get(resp.index());
            String what = "response " + resp.index() + " (" + resp.status() + ")";
            JsonNode problem = problem(resp, v);
            boolean generated = resp.header("x-spector-node") == null;
            if (!s.mustRefuse().isEmpty()) {
                if (!generated || resp.status() < 400) {
                    v.add("7 (MUST refuse): " + what + " from " + node(resp) + " answers request " + s.index()
                            + ", which must be refused: " + s.mustRefuse());
                } else if (s.refuseStatus() == 400 && !REFUSALS_OF_A_BAD_HEAD.contains(resp.status())) {
                    v.add("7 (MUST refuse): " + what + " refuses request " + s.index() + " with " + resp.status()
                            + " " + (problem == null ? "" : problem.path("code").asText()) + ", expected "
                            + s.refuseStatus() + ": " + s.mustRefuse());
                }
            }
            if (s.served() && (generated || resp.status() != 200)) {
                v.add("8 (served): " + what + " from " + node(resp) + " answers request " + s.index()
                        + ", a plainly valid echo request every correct gateway forwards (its owner answers 200)"
                        + (problem == null ? "" : ": " + problem.path("detail").asText()));
            }
            if (s.mustClose() != null && !resp.closes()) {
                v.add("7 (MUST close): " + what + " does not say Connection: close, though " + s.mustClose());
            }
            if (resp.status() >= 200 && resp.status() < 300 && !generated) {
                served(s, resp, v);
            }
        }
        for (Sent s : sent) {
            Response later = o.response(s.index() + 1);
            if (s.mustClose() != null && later != null) {
                v.add("7 (MUST close): request " + s.index() + " ends the connection (" + s.mustClose()
                        + "), yet response " + later.index() + " (" + later.status() + ") follows");
            }
        }
        return v;
    }

    /** Checks an owner's 2xx as the client got it: its echo's tag, path, query and body. */
    private static void served(Sent s, Response resp, List<String> v) {
        JsonNode json;
        try {
            json = JSON.readTree(resp.body());
        } catch (IOException e) {
            return; // not an echo or an object answer (a HEAD has no body)
        }
        if (json == null || !json.isObject()) {
            return;
        }
        String what = "response " + resp.index() + " (" + resp.status() + " from " + node(resp) + ")";
        if (json.has("bodySha256")) {
            String tag = null;
            JsonNode headers = json.path("headers");
            for (Map.Entry<String, JsonNode> e : headers.properties()) {
                if (e.getKey().equalsIgnoreCase("x-fuzz") && e.getValue().size() > 0) {
                    tag = e.getValue().get(0).asText();
                }
            }
            Tag parsed = Tag.parse(tag);
            Tag expected = Tag.parse(s.tag());
            if (parsed == null || !parsed.equals(expected)) {
                v.add("2 (in order): " + what + " answers request " + s.index() + " (" + s.tag() + ") with the echo of "
                        + tag);
                return;
            }
            String uri = json.path("uri").asText();
            int q = uri.indexOf('?');
            String rawPath = q < 0 ? uri : uri.substring(0, q);
            String query = q < 0 ? "" : uri.substring(q + 1);
            ExpectedPath.Outcome path = s.path();
            if (path != null && !path.accepts(rawPath)) {
                v.add("4 (normalized): " + what + ": the owner got path '" + rawPath + "' for target '" + s.target()
                        + "', expected " + (path.mustRefuse() ? "a 400 (design §2)" : "one of " + path.paths()));
            }
            String bad = unnormalized(rawPath);
            if (bad != null) {
                v.add("4 (normalized): " + what + ": the owner got path '" + rawPath + "' with " + bad);
            }
            if (s.query() != null && !query.equals(s.query())) {
                v.add("4 (normalized): " + what + ": the query became '" + query + "', sent '" + s.query() + "'");
            }
            body(s, json.path("bodyBytes").asLong(-1), json.path("bodySha256").asText(), what, v);
        } else if (json.has("sha256") && json.has("bytes") && s.method().equals("PUT")) {
            body(s, json.path("bytes").asLong(-1), json.path("sha256").asText(), what, v);
        }
    }

    private static void body(Sent s, long bytes, String sha256, String what, List<String> v) {
        byte[] body = s.body();
        if (body == null) {
            return;
        }
        String expected = sha256(body);
        if (bytes != body.length || !expected.equals(sha256)) {
            v.add("7 (§3 bodies end well or not at all): " + what + ": the owner stored or echoed " + bytes
                    + " bytes (sha256 " + sha256 + "), the client framed " + body.length + " (sha256 " + expected
                    + ")");
        }
    }

    /** Returns the problem+json body of a response, or null; a problem that is not JSON is a violation. */
    private static @Nullable JsonNode problem(Response resp, List<String> v) {
        String type = resp.header("content-type");
        if (type == null || !type.toLowerCase(Locale.ROOT).startsWith("application/problem+json")) {
            return null;
        }
        if (resp.body().length == 0) {
            return null; // a HEAD's answer
        }
        try {
            JsonNode n = JSON.readTree(resp.body());
            if (n == null || !n.isObject() || !n.has("code")) {
                v.add("2 (well-formed): response " + resp.index() + " is problem+json without a code: " + resp.text());
                return null;
            }
            return n;
        } catch (IOException e) {
            v.add("2 (well-formed): response " + resp.index() + " is problem+json but not JSON: " + resp.text());
            return null;
        }
    }

    /** Answers whether a gateway problem is about the body (decided after forwarding began). */
    private static boolean aboutTheBody(JsonNode problem) {
        JsonNode details = problem.path("details");
        return "body".equals(details.path("field").asText())
                || "body".equals(details.path("phase").asText());
    }

    private static String node(Response resp) {
        String n = resp.header("x-spector-node");
        return n == null ? "the gateway" : n;
    }

    /** Returns what makes a forwarded path not normalized, or null. */
    static @Nullable String unnormalized(String path) {
        if (!path.startsWith("/api/v1/")) {
            return "a path outside /api/v1/";
        }
        if (path.contains("//")) {
            return "an empty segment (//)";
        }
        for (String seg : path.split("/", -1)) {
            if (seg.equals(".") || seg.equals("..")) {
                return "a dot-segment '" + seg + "'";
            }
        }
        String lower = path.toLowerCase(Locale.ROOT);
        for (String esc : new String[] {"%2e", "%2f", "%5c"}) {
            if (lower.contains(esc)) {
                return "an encoded " + esc;
            }
        }
        return null;
    }

    /** Invariants 3, 4, 6 and 7 for one row of an owner's log. */
    static void row(Outcome o, String owner, RecordedRequest row, Tag tag, List<String> v) {
        String line = owner + " " + row.method() + " " + Bytes.escape(row.path()) + " -> " + row.status();
        o.seen.add(line + " [" + row.header("X-Fuzz") + "]");
        List<Sent> sent = o.rendered.requests();
        if (tag.smuggled()) {
            String bad = unnormalized(row.path());
            if (!o.rendered.mutated()) {
                v.add("3 (no more upstream): a request head hidden in the body of request " + tag.index()
                        + " reached an owner as a request: " + line);
            } else if (bad != null) {
                v.add("4 (normalized): " + line + ": the forwarded path has " + bad);
            }
            // Byte-mutated, the framing that hid the head may be gone (a Content-Length merged into
            // the value before it): the head is then the next request on the connection, rightly
            // served (seen at try 5112 of seed 207254186456319198).
            return;
        }
        if (tag.index() >= sent.size()) {
            v.add("3 (no more upstream): " + line + " is tagged as request " + tag.index() + " of " + sent.size());
            return;
        }
        Sent s = sent.get(tag.index());
        if (++o.rows[tag.index()] > 1) {
            v.add("3 (no more upstream): request " + s.index() + " reached the owners " + o.rows[tag.index()]
                    + " times, the last: " + line);
        }
        String bad = unnormalized(row.path());
        if (bad != null) {
            v.add("4 (normalized): " + line + ": the forwarded path has " + bad + " (target '" + s.target() + "')");
        }
        boolean ok = row.status() >= 200 && row.status() < 300;
        ExpectedPath.Outcome path = s.path();
        if (ok && path != null && !path.acceptsDecoded(row.path())) {
            v.add("4 (normalized): " + line + " answered 2xx for target '" + s.target() + "', expected "
                    + (path.mustRefuse() ? "a 400 (design §2)" : "one of " + path.paths()));
        }
        Response resp = o.response(s.index());
        if (resp != null && resp.header("x-spector-node") == null && resp.status() >= 400 && resp.status() < 500) {
            JsonNode problem = problem(resp, new ArrayList<>());
            if (problem != null && !aboutTheBody(problem)) {
                v.add("6 (refused stays refused): the gateway refused request " + s.index() + " with " + resp.status()
                        + " " + problem.path("code").asText() + ", yet " + line);
            } else if (problem != null && ok) {
                v.add("7 (§3 bodies end well or not at all): the gateway failed the body of request " + s.index() + " ("
                        + resp.status() + " " + problem.path("code").asText() + "), yet " + line);
            }
        }
        if (!s.mustRefuse().isEmpty()) {
            v.add("7 (MUST refuse): request " + s.index() + " must be refused (" + s.mustRefuse() + "), yet " + line);
        }
        if (s.incomplete() != null && ok) {
            v.add("7 (§3 bodies end well or not at all): " + s.incomplete() + ", yet " + line);
        }
        for (int j = 0; j < s.index(); j++) {
            String why = sent.get(j).mustClose();
            if (why != null) {
                v.add("7 (MUST close): request " + s.index() + " came after request " + j + ", which ends the"
                        + " connection (" + why + "), yet " + line);
            }
        }
        for (Map.Entry<String, List<String>> h : row.headers().entrySet()) {
            for (String value : h.getValue()) {
                if (value.indexOf('\0') >= 0 || value.indexOf('\r') >= 0 || value.indexOf('\n') >= 0) {
                    v.add("7 (RFC 9110 §5.5): " + line + ": forwarded field " + h.getKey() + " carries NUL, CR or"
                            + " LF: '" + Bytes.escape(value) + "'");
                }
            }
        }
    }

    static String sha256(byte[] b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The owners' request logs, read as a stream: each row is seen once, matched to its try by its
     * tag, and checked against it. Test thread only.
     */
    static final class Upstream {
        /** Tries kept for rows that arrive late; far more than the owners' logs hold. */
        static final int KEPT_TRIES = 5000;

        private final Map<Long, Outcome> tries = new LinkedHashMap<>(16, 0.75f, false) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Outcome> eldest) {
                return size() > KEPT_TRIES;
            }
        };

        private Set<RecordedRequest> seen = Collections.newSetFromMap(new IdentityHashMap<>());

        void register(Outcome o) {
            tries.put(o.rendered.id(), o);
        }

        /**
         * Checks the rows that arrived since the last scan: those of the tries in {@code current}
         * into their lists, those of earlier tries into {@link #LATE}.
         */
        void scan(Map<Long, List<String>> current) {
            Cell c = cell;
            if (c == null) {
                return;
            }
            Set<RecordedRequest> now = Collections.newSetFromMap(new IdentityHashMap<>());
            for (ReferenceOwner owner : c.owners) {
                for (RecordedRequest row : owner.requests()) {
                    now.add(row);
                    if (seen.contains(row)) {
                        continue;
                    }
                    Tag tag = Tag.parse(row.header("X-Fuzz"));
                    Outcome o = tag == null ? null : tries.get(tag.id());
                    if (tag == null || o == null) {
                        String line = owner.nodeId() + " " + row.method() + " " + Bytes.escape(row.path()) + " -> "
                                + row.status();
                        LATE.add("3 (no more upstream): a request no try of this test sent reached an owner: " + line
                                + " " + row.headers());
                        continue;
                    }
                    List<String> v = current.get(tag.id());
                    if (v != null) {
                        row(o, owner.nodeId(), row, tag, v);
                    } else {
                        List<String> late = new ArrayList<>();
                        row(o, owner.nodeId(), row, tag, late);
                        if (!late.isEmpty()) {
                            LATE.add("(a row that arrived after its try ended) " + o.report(late));
                        }
                    }
                }
            }
            seen = now;
        }
    }

    /** Sets the tries from the system property, and fails the property on late rows and leaks. */
    static final class FuzzRun implements AroundPropertyHook {
        @Override
        public PropertyExecutionResult aroundProperty(PropertyLifecycleContext context, PropertyExecutor property)
                throws Throwable {
            context.findAnnotation(FuzzProperty.class)
                    .ifPresent(t -> context.attributes().setTries(Integer.getInteger(t.triesProperty(), t.tries())));
            String seed = System.getProperty("spector.fuzz.seed");
            if (seed != null) {
                context.attributes().setSeed(seed); // replays a long run's generation
            }
            NettyLeakExtension.collectLeaks(); // what earlier tests left is theirs
            LATE.clear();
            long started = System.nanoTime();
            PropertyExecutionResult result = property.execute();
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            Thread.sleep(500); // rows an owner records after the last try's connection closed
            UPSTREAM.scan(Map.of());
            System.out.printf(
                    "%s: %d tries in %d ms (%.0f tries/s)%n",
                    context.label(), result.countTries(), ms, result.countTries() * 1000.0 / Math.max(1, ms));
            if (SURVEY) {
                fail(List.copyOf(LATE)); // surveyed too, with the rest
                LATE.clear();
            }
            if (!SURVEYED.isEmpty()) {
                StringBuilder sb = new StringBuilder("survey of " + context.label() + ":");
                SURVEYED.forEach((kind, found) ->
                        sb.append("\n").append(found.count).append(" x ").append(kind));
                SURVEYED.forEach((kind, found) ->
                        sb.append("\n\n=== ").append(kind).append("\n").append(found.first));
                System.out.println(sb);
                SURVEYED.clear();
            }
            List<String> problems = new ArrayList<>(LATE);
            List<String> leaks = NettyLeakExtension.collectLeaks();
            if (!leaks.isEmpty()) {
                problems.add("5 (no leak): Netty buffers never released (" + leaks.size() + "):\n"
                        + String.join("\n", leaks));
            }
            if (problems.isEmpty()) {
                return result;
            }
            if (result.status() != PropertyExecutionResult.Status.SUCCESSFUL) {
                System.out.println("also found:\n" + String.join("\n", problems));
                return result;
            }
            return result.mapToFailed(String.join("\n", problems));
        }
    }
}
