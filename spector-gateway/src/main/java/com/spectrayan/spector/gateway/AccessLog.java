package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.util.internal.PlatformDependent;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Queue;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The access log: one JSON line per exchange (forwarded, relayed, local), written off the event
 * loop.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Nothing blocks an event loop.</b> {@link #log} offers the exchange's {@link Entry} (a
 *       record of values, no formatting) to a bounded lock-free queue of {@link #QUEUE_ENTRIES}
 *       (many producers, one consumer: Netty's JCTools MPSC queue); when the queue is full the entry
 *       is dropped and counted ({@code spector_access_log_dropped_total}), as Envoy's and nginx's
 *       buffered logs would rather lose a line than stall traffic. No producer ever wakes the writer
 *       (a futex per request would cost more than the line): the writer drains the queue, flushes,
 *       and sleeps {@link #PARK_NANOS} when it finds it empty, so a line is written within about
 *       10 ms and at most 100 flushes a second reach the file. The queue holds {@value
 *       #QUEUE_ENTRIES} lines: 10 ms of 800 000 requests a second.
 *   <li><b>One writer thread</b> ({@code spector-access-log}) takes entries in batches, formats
 *       them (the time's text is made once per second), writes them through one buffered writer
 *       and flushes when the queue runs empty, so a burst costs one flush.
 *   <li><b>Destinations</b>: {@code stdout}, {@code off}, or a file path (appended; created).
 *       {@link #close} writes what is queued, waiting at most {@link #CLOSE_TIMEOUT}.
 * </ul>
 *
 * <p>Thread-safety: {@link #log} from any thread; the writer is confined to its thread.
 */
final class AccessLog implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AccessLog.class);

    /** How long the writer sleeps when it finds the queue empty: a line waits at most about this. */
    static final long PARK_NANOS = 10_000_000L;

    /** The entries the queue holds before it drops. */
    static final int QUEUE_ENTRIES = 8192;

    /** The most entries the writer takes per batch. */
    static final int BATCH = 256;

    /** The longest {@link #close} waits for the queue to be written. */
    static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(2);

    /** The value of {@code spector.server.access-log} that turns it off. */
    static final String OFF = "off";

    /** The value of {@code spector.server.access-log} that writes to standard output. */
    static final String STDOUT = "stdout";

    /** A log that writes nothing. */
    static final AccessLog NONE = new AccessLog();

    /**
     * What one exchange was, as its line shows it.
     *
     * @param startMillis when its head arrived, epoch milliseconds
     * @param requestId its {@code X-Request-Id}
     * @param client the client's address ({@code ip:port})
     * @param method the request method
     * @param path the normalized path, no query ({@code -} when the target could not be read)
     * @param status the status answered, 0 when none was
     * @param bytesIn request body bytes read
     * @param bytesOut response body bytes written
     * @param durationNanos from the head's arrival to the response's end
     * @param upstreamHeadNanos from the head's arrival to the upstream's response head, -1 when none
     * @param route the metrics route
     * @param upstream the owner or worker that answered, or null
     * @param attempts the upstream attempts (0 for a local answer)
     * @param retargets why it took more than one, comma-separated ({@code moved}, {@code ask},
     *     {@code stale-connection}, {@code fallback}), or null
     * @param tenant the tenant the exchange ran under, or null
     * @param outcome {@code completed}, {@code reset} (the gateway cut the response) or {@code
     *     client-gone}
     * @param error the problem's code when the gateway answered one, else null
     * @param traceId the W3C trace id from {@code traceparent}, or null
     */
    record Entry(
            long startMillis,
            String requestId,
            String client,
            String method,
            String path,
            int status,
            long bytesIn,
            long bytesOut,
            long durationNanos,
            long upstreamHeadNanos,
            String route,
            @Nullable String upstream,
            int attempts,
            @Nullable String retargets,
            @Nullable String tenant,
            String outcome,
            @Nullable String error,
            @Nullable String traceId) {}

    private final @Nullable Queue<Entry> queue;

    private final @Nullable Writer out;
    private final @Nullable Thread writer;
    private final @Nullable Counter dropped;
    private final boolean ownsOut;
    private volatile boolean closed;

    private AccessLog() {
        this.queue = null;
        this.out = null;
        this.writer = null;
        this.dropped = null;
        this.ownsOut = false;
    }

    private AccessLog(Writer out, boolean ownsOut, String name, MeterRegistry registry) {
        this.queue = PlatformDependent.newFixedMpscQueue(QUEUE_ENTRIES);
        this.out = out;
        this.ownsOut = ownsOut;
        this.dropped = Counter.builder("spector.access.log.dropped")
                .description("Access log lines dropped because the writer fell behind")
                .register(registry);
        Thread t = new Thread(this::run, "spector-access-log");
        t.setDaemon(true);
        this.writer = t;
        t.start();
        log.info("access log: {}", name);
    }

    /**
     * Opens the log {@code spector.server.access-log} names: {@code off}, {@code stdout} or a path.
     *
     * @throws IOException when the file cannot be opened for appending
     */
    static AccessLog open(String destination, MeterRegistry registry) throws IOException {
        requireNonNull(destination, "destination");
        if (destination.equals(OFF)) {
            return NONE;
        }
        if (destination.equals(STDOUT)) {
            return new AccessLog(writer(System.out), false, STDOUT, registry);
        }
        Path file = Path.of(destination);
        OutputStream stream = Files.newOutputStream(
                file, StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
        return new AccessLog(writer(stream), true, file.toAbsolutePath().toString(), registry);
    }

    /** A log writing to {@code out} (tests; the caller keeps {@code out}). */
    static AccessLog writingTo(Writer out, MeterRegistry registry) {
        return new AccessLog(out, false, "a writer", registry);
    }

    private static Writer writer(OutputStream stream) {
        return new BufferedWriter(new OutputStreamWriter(stream, StandardCharsets.UTF_8), 64 * 1024);
    }

    /** Answers whether lines are written: when not, callers skip building an {@link Entry}. */
    boolean enabled() {
        return queue != null && !closed;
    }

    /** Queues one exchange's line; drops and counts it when the queue is full. Never blocks. */
    void log(Entry entry) {
        Queue<Entry> q = queue;
        if (q == null || closed) {
            return;
        }
        if (!q.offer(entry)) {
            requireNonNull(dropped).increment();
        }
    }

    /** Returns the lines dropped so far. */
    long dropped() {
        Counter d = dropped;
        return d == null ? 0 : (long) d.count();
    }

    private void run() {
        Queue<Entry> q = requireNonNull(queue);
        Writer w = requireNonNull(out);
        StringBuilder line = new StringBuilder(512);
        Clock clock = new Clock();
        try {
            while (!closed || !q.isEmpty()) {
                Entry e = q.poll();
                if (e == null) {
                    w.flush();
                    if (!closed) {
                        LockSupport.parkNanos(this, PARK_NANOS);
                    }
                    continue;
                }
                for (int n = 0; e != null && n < BATCH; n++) {
                    line.setLength(0);
                    format(e, line, clock);
                    w.append(line);
                    e = n + 1 < BATCH ? q.poll() : null;
                }
            }
            w.flush();
        } catch (IOException | RuntimeException e) {
            log.error("access log writer failed; no more lines are written", e);
        }
    }

    /** Formats one line: a JSON object and a newline. */
    static void format(Entry e, StringBuilder b) {
        format(e, b, new Clock());
    }

    private static void format(Entry e, StringBuilder b, Clock clock) {
        b.append("{\"time\":\"");
        clock.append(e.startMillis(), b);
        b.append('"');
        string(b, "requestId", e.requestId());
        string(b, "client", e.client());
        string(b, "method", e.method());
        string(b, "path", e.path());
        b.append(",\"status\":").append(e.status());
        b.append(",\"bytesIn\":").append(e.bytesIn());
        b.append(",\"bytesOut\":").append(e.bytesOut());
        millis(b, "durationMs", e.durationNanos());
        if (e.upstreamHeadNanos() >= 0) {
            millis(b, "upstreamHeadMs", e.upstreamHeadNanos());
        }
        string(b, "route", e.route());
        if (e.upstream() != null) {
            string(b, "upstream", e.upstream());
        }
        b.append(",\"attempts\":").append(e.attempts());
        if (e.retargets() != null) {
            string(b, "retargets", e.retargets());
        }
        if (e.tenant() != null) {
            string(b, "tenant", e.tenant());
        }
        string(b, "outcome", e.outcome());
        if (e.error() != null) {
            string(b, "error", e.error());
        }
        if (e.traceId() != null) {
            string(b, "traceId", e.traceId());
        }
        b.append("}\n");
    }

    /**
     * Writes an instant as ISO-8601 UTC with milliseconds ({@code 2026-12-01T16:13:29.615Z}); the
     * text up to the seconds is made once per second. Confined to the writer thread.
     */
    private static final class Clock {
        private long second = Long.MIN_VALUE;
        private String prefix = "";

        void append(long epochMillis, StringBuilder b) {
            long s = Math.floorDiv(epochMillis, 1000);
            if (s != second) {
                String full = Instant.ofEpochSecond(s).toString(); // ...:29Z, no fraction
                prefix = full.substring(0, full.length() - 1);
                second = s;
            }
            long ms = Math.floorMod(epochMillis, 1000L);
            b.append(prefix).append('.');
            if (ms < 100) {
                b.append('0');
            }
            if (ms < 10) {
                b.append('0');
            }
            b.append(ms).append('Z');
        }
    }

    private static void millis(StringBuilder b, String name, long nanos) {
        long micros = nanos / 1000;
        b.append(",\"").append(name).append("\":").append(micros / 1000).append('.');
        long frac = micros % 1000;
        if (frac < 100) {
            b.append('0');
        }
        if (frac < 10) {
            b.append('0');
        }
        b.append(frac);
    }

    /** Appends {@code ,"name":"value"} with the value escaped as JSON (RFC 8259 section 7). */
    private static void string(StringBuilder b, String name, String value) {
        b.append(",\"").append(name).append("\":\"");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x7f || Character.isSurrogate(c)) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    /** Writes what is queued (at most {@link #CLOSE_TIMEOUT}) and stops the writer. */
    @Override
    public void close() {
        Thread t = writer;
        if (t == null || closed) {
            return;
        }
        closed = true;
        try {
            t.join(CLOSE_TIMEOUT.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Writer w = out;
        if (w != null) {
            try {
                if (ownsOut) {
                    w.close();
                } else {
                    w.flush(); // standard output stays open for the process's other output
                }
            } catch (IOException e) {
                log.warn("access log: final flush failed: {}", e.toString());
            }
        }
    }
}
