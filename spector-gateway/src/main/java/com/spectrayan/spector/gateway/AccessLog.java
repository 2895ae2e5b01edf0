package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.util.internal.PlatformDependent;
import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Queue;
import java.util.concurrent.atomic.AtomicBoolean;
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
 *       buffered logs would rather lose a line than stall traffic. While traffic flows no producer
 *       wakes the writer (a futex per request would cost more than the line): the writer drains
 *       the queue, flushes, and sleeps {@link #PARK_NANOS} when it finds it empty, so a line is
 *       written within about 10 ms and at most 100 flushes a second reach the file. The queue holds
 *       {@value #QUEUE_ENTRIES} lines: 10 ms of 800 000 requests a second.
 *   <li><b>Idle costs nothing.</b> After {@link #IDLE_ROUNDS} empty sleeps in a row (about 100 ms
 *       without a line) the writer says it is {@code asleep} and parks until woken; the first
 *       producer that finds it asleep wakes it (one {@code unpark}, then none until it sleeps
 *       again). Without this an idle gateway woke 100 times a second (0.6 % of a core). The
 *       handshake: the writer sets {@code asleep} and then looks at the queue; a producer puts its
 *       entry in and then looks at {@code asleep}. Both are volatile, so at least one of them sees
 *       the other's write: the writer finds the entry and does not park, or the producer finds it
 *       asleep and wakes it.
 *   <li><b>One writer thread</b> ({@code spector-access-log}) takes entries in batches, formats
 *       them (the time's text is made once per second), writes them through one buffered writer
 *       and flushes when the queue runs empty, so a burst costs one flush.
 *   <li><b>Destinations</b>: {@code stdout}, {@code off}, or a file path (appended; created).
 *       {@link #close} writes what is queued, waiting at most {@link #CLOSE_TIMEOUT}; a writer
 *       still blocked then (a standard output nobody reads) is left to the process's end, and the
 *       stream untouched, so a stop never hangs on it. A line offered after the close is counted
 *       as dropped.
 *   <li><b>A failed write is not the end.</b> A full disk or a closed pipe fails a write: the lines
 *       not yet flushed are counted as dropped, their bytes let go (a new buffer), a WARN says so
 *       (at most once per {@link #RETRY_AFTER}), and the writer tries again after {@link
 *       #RETRY_AFTER}, dropping what comes meanwhile as a full queue does; the log resumes when the
 *       destination takes bytes again. It ended for good at the first failure before (found by a
 *       review), with the next 8 192 lines queued and never counted.
 * </ul>
 *
 * <p>Thread-safety: {@link #log} from any thread; the writer is confined to its thread.
 */
final class AccessLog implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AccessLog.class);

    /** How long the writer sleeps when it finds the queue empty: a line waits at most about this. */
    static final long PARK_NANOS = 10_000_000L;

    /** Empty sleeps of {@link #PARK_NANOS} in a row after which the writer parks until a producer wakes it. */
    static final int IDLE_ROUNDS = 10;

    /** The entries the queue holds before it drops. */
    static final int QUEUE_ENTRIES = 8192;

    /** The most entries the writer takes per batch. */
    static final int BATCH = 256;

    /** The longest {@link #close} waits for the queue to be written. */
    static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(2);

    /** How long the writer waits after a failed write before it writes again. */
    static final Duration RETRY_AFTER = Duration.ofSeconds(1);

    /** The output buffer: lines are written through it and flushed when the queue runs empty. */
    static final int BUFFER_BYTES = 64 * 1024;

    /** The value of {@code spector.server.access-log} that turns it off. */
    static final String OFF = "off";

    /** The value of {@code spector.server.access-log} that writes to standard output. */
    static final String STDOUT = "stdout";

    /** A log that writes nothing. */
    static final AccessLog NONE = new AccessLog();

    /**
     * The longest path or method a line carries: a longer one is cut to this and ends with {@link
     * #CUT}. Each queued entry holds its path until written, so the queue's memory is bounded by
     * its entries times this, whatever {@code max-initial-line-length} allows (8 192 entries of
     * 64 KiB paths were 512 MiB behind a slow destination, found by a review).
     */
    static final int FIELD_CHARS = 1024;

    /** What ends a field cut to {@link #FIELD_CHARS}. */
    static final String CUT = "...";

    /**
     * What one exchange was, as its line shows it.
     *
     * @param startMillis when its head arrived, epoch milliseconds
     * @param requestId its {@code X-Request-Id}
     * @param client the client's address ({@code ip:port})
     * @param method the request method (cut to {@link #FIELD_CHARS})
     * @param path the normalized path, no query ({@code -} when the target could not be read), cut to
     *     {@link #FIELD_CHARS}
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
            @Nullable String traceId) {
        Entry {
            method = cut(method);
            path = cut(path);
        }

        private static String cut(String field) {
            return field.length() <= FIELD_CHARS ? field : field.substring(0, FIELD_CHARS - CUT.length()) + CUT;
        }
    }

    private final @Nullable Queue<Entry> queue;

    private final @Nullable OutputStream out;
    private final @Nullable Thread writer;
    private final @Nullable Counter dropped;
    private final boolean ownsOut;
    private volatile boolean closed;
    /** The writer parks until woken (see "Idle costs nothing"); cleared by the one producer that wakes it. */
    private final AtomicBoolean asleep = new AtomicBoolean();

    private AccessLog() {
        this.queue = null;
        this.out = null;
        this.writer = null;
        this.dropped = null;
        this.ownsOut = false;
    }

    private AccessLog(OutputStream out, boolean ownsOut, String name, MeterRegistry registry) {
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
            // fd 1 itself, not System.out: its PrintStream takes a lock and encodes per call
            return new AccessLog(new FileOutputStream(FileDescriptor.out), false, STDOUT, registry);
        }
        Path file = Path.of(destination);
        OutputStream stream = Files.newOutputStream(
                file, StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
        return new AccessLog(stream, true, file.toAbsolutePath().toString(), registry);
    }

    /** A log writing to {@code out} (tests; the caller keeps {@code out}). */
    static AccessLog writingTo(OutputStream out, MeterRegistry registry) {
        return new AccessLog(out, false, "a writer", registry);
    }

    /** Answers whether lines are written: when not, callers skip building an {@link Entry}. */
    boolean enabled() {
        return queue != null && !closed;
    }

    /** Queues one exchange's line; drops and counts it when the queue is full. Never blocks. */
    void log(Entry entry) {
        Queue<Entry> q = queue;
        if (q == null) {
            return;
        }
        if (closed || !q.offer(entry)) {
            requireNonNull(dropped).increment();
        } else if (asleep.get() && asleep.compareAndSet(true, false)) {
            LockSupport.unpark(writer);
        }
    }

    /** Answers whether the writer is parked until a line comes (tests). */
    boolean isAsleep() {
        return asleep.get() && requireNonNull(writer).getState() == Thread.State.WAITING;
    }

    /** Returns the lines dropped so far. */
    long dropped() {
        Counter d = dropped;
        return d == null ? 0 : (long) d.count();
    }

    private void run() {
        Queue<Entry> q = requireNonNull(queue);
        OutputStream raw = requireNonNull(out);
        OutputStream w = new BufferedOutputStream(raw, BUFFER_BYTES);
        Line line = new Line();
        Clock clock = new Clock();
        int unflushed = 0; // lines written into the buffer since its last flush
        long failedSince = 0; // when the last failure was said, 0: none said yet
        int empty = 0;
        while (!closed || !q.isEmpty()) {
            try {
                Entry e = q.poll();
                if (e == null) {
                    w.flush();
                    unflushed = 0;
                    if (closed) {
                        continue;
                    }
                    if (++empty < IDLE_ROUNDS) {
                        LockSupport.parkNanos(this, PARK_NANOS);
                        continue;
                    }
                    asleep.set(true);
                    if (q.isEmpty() && !closed) {
                        LockSupport.park(this); // until a producer or close wakes it (or spuriously)
                    }
                    asleep.set(false);
                    empty = 0;
                    continue;
                }
                empty = 0;
                for (int n = 0; e != null && n < BATCH; n++) {
                    line.reset();
                    format(e, line, clock);
                    unflushed++;
                    w.write(line.bytes, 0, line.length);
                    e = n + 1 < BATCH ? q.poll() : null;
                }
            } catch (IOException | RuntimeException failure) {
                requireNonNull(dropped).increment(unflushed);
                long now = System.nanoTime();
                if (failedSince == 0 || now - failedSince >= RETRY_AFTER.toNanos()) {
                    failedSince = now;
                    log.warn(
                            "access log write failed, {} line(s) lost; writing again in {} ms (lost lines are"
                                    + " counted in spector_access_log_dropped_total): {}",
                            unflushed,
                            RETRY_AFTER.toMillis(),
                            failure.toString());
                }
                unflushed = 0;
                w = new BufferedOutputStream(raw, BUFFER_BYTES); // the failed bytes are let go
                if (!closed) {
                    LockSupport.parkNanos(this, RETRY_AFTER.toNanos());
                } else {
                    // Closing: what is left is dropped, not retried past the close's wait, and
                    // counted (it was lost uncounted, found by a review).
                    long left = 0;
                    while (q.poll() != null) {
                        left++;
                    }
                    requireNonNull(dropped).increment((double) left);
                    break;
                }
            }
        }
        try {
            w.flush();
        } catch (IOException e) {
            requireNonNull(dropped).increment(unflushed);
        }
    }

    /** Formats one line, a JSON object and a newline, as text (tests). */
    static String format(Entry e) {
        Line line = new Line();
        format(e, line, new Clock());
        return new String(line.bytes, 0, line.length, StandardCharsets.UTF_8);
    }

    static void format(Entry e, Line b, Clock clock) {
        b.ascii("{\"time\":\"");
        clock.append(e.startMillis(), b);
        b.ascii("\"");
        b.string("requestId", e.requestId());
        b.string("client", e.client());
        b.string("method", e.method());
        b.string("path", e.path());
        b.number("status", e.status());
        b.number("bytesIn", e.bytesIn());
        b.number("bytesOut", e.bytesOut());
        b.millis("durationMs", e.durationNanos());
        if (e.upstreamHeadNanos() >= 0) {
            b.millis("upstreamHeadMs", e.upstreamHeadNanos());
        }
        b.string("route", e.route());
        if (e.upstream() != null) {
            b.string("upstream", e.upstream());
        }
        b.number("attempts", e.attempts());
        if (e.retargets() != null) {
            b.string("retargets", e.retargets());
        }
        if (e.tenant() != null) {
            b.string("tenant", e.tenant());
        }
        b.string("outcome", e.outcome());
        if (e.error() != null) {
            b.string("error", e.error());
        }
        if (e.traceId() != null) {
            b.string("traceId", e.traceId());
        }
        b.ascii("}\n");
    }

    /**
     * Writes an instant as ISO-8601 UTC with milliseconds ({@code 2026-12-01T16:13:29.615Z}); the
     * text up to the seconds is made once per second. Confined to the writer thread.
     */
    static final class Clock {
        private long second = Long.MIN_VALUE;
        private String prefix = "";

        void append(long epochMillis, Line b) {
            long s = Math.floorDiv(epochMillis, 1000);
            if (s != second) {
                String full = Instant.ofEpochSecond(s).toString(); // ...:29Z, no fraction
                prefix = full.substring(0, full.length() - 1);
                second = s;
            }
            b.ascii(prefix);
            b.ascii(".");
            b.digits(Math.floorMod(epochMillis, 1000L), 3);
            b.ascii("Z");
        }
    }

    /**
     * One line's UTF-8 bytes, written straight into a reused array (no {@code String}, no encoder):
     * JSON strings escaped as RFC 8259 section 7 says, every char below U+0020, DEL and a lone or
     * paired surrogate as {@code \\uXXXX} (so the line is always valid UTF-8), others as their
     * UTF-8 bytes. Confined to the writer thread.
     */
    static final class Line {
        byte[] bytes = new byte[1024];
        int length;

        void reset() {
            length = 0;
        }

        private void room(int n) {
            if (length + n > bytes.length) {
                bytes = java.util.Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + n));
            }
        }

        /** Appends text known to be ASCII and free of anything JSON must escape. */
        void ascii(String s) {
            int n = s.length();
            room(n);
            for (int i = 0; i < n; i++) {
                bytes[length++] = (byte) s.charAt(i);
            }
        }

        /** Appends {@code ,"name":"value"} with the value escaped. */
        void string(String name, String value) {
            ascii(",\"");
            ascii(name);
            ascii("\":\"");
            int n = value.length();
            room(n * 6);
            for (int i = 0; i < n; i++) {
                char c = value.charAt(i);
                if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
                    bytes[length++] = (byte) c;
                } else if (c == '"' || c == '\\') {
                    bytes[length++] = '\\';
                    bytes[length++] = (byte) c;
                } else if (c == '\n') {
                    bytes[length++] = '\\';
                    bytes[length++] = 'n';
                } else if (c == '\r') {
                    bytes[length++] = '\\';
                    bytes[length++] = 'r';
                } else if (c == '\t') {
                    bytes[length++] = '\\';
                    bytes[length++] = 't';
                } else if (c < 0x20 || c == 0x7f || Character.isSurrogate(c)) {
                    bytes[length++] = '\\';
                    bytes[length++] = 'u';
                    for (int shift = 12; shift >= 0; shift -= 4) {
                        bytes[length++] = (byte) Character.forDigit((c >> shift) & 0xf, 16);
                    }
                } else if (c < 0x800) {
                    bytes[length++] = (byte) (0xc0 | (c >> 6));
                    bytes[length++] = (byte) (0x80 | (c & 0x3f));
                } else {
                    bytes[length++] = (byte) (0xe0 | (c >> 12));
                    bytes[length++] = (byte) (0x80 | ((c >> 6) & 0x3f));
                    bytes[length++] = (byte) (0x80 | (c & 0x3f));
                }
            }
            bytes[length++] = '"';
        }

        /** Appends {@code ,"name":n}. */
        void number(String name, long n) {
            ascii(",\"");
            ascii(name);
            ascii("\":");
            if (n < 0) {
                ascii("-");
                n = -n;
            }
            digits(n, 1);
        }

        /** Appends {@code ,"name":m.uuu}: nanoseconds as milliseconds with three decimals. */
        void millis(String name, long nanos) {
            long micros = nanos / 1000;
            ascii(",\"");
            ascii(name);
            ascii("\":");
            digits(micros / 1000, 1);
            ascii(".");
            digits(micros % 1000, 3);
        }

        /** Appends {@code n >= 0} in decimal, padded with zeros to {@code width} digits. */
        void digits(long n, int width) {
            room(20);
            int start = length;
            do {
                bytes[length++] = (byte) ('0' + (n % 10));
                n /= 10;
            } while (n > 0);
            while (length - start < width) {
                bytes[length++] = '0';
            }
            for (int i = start, j = length - 1; i < j; i++, j--) {
                byte t = bytes[i];
                bytes[i] = bytes[j];
                bytes[j] = t;
            }
        }
    }

    /** Writes what is queued (at most {@link #CLOSE_TIMEOUT}) and stops the writer. */
    @Override
    public void close() {
        Thread t = writer;
        if (t == null || closed) {
            return;
        }
        closed = true;
        LockSupport.unpark(t); // a writer asleep wakes to write what is left and stop
        try {
            t.join(CLOSE_TIMEOUT.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (t.isAlive()) {
            // Blocked in a write (a standard output nobody reads): touching the stream would wait
            // on the same lock, and the stop with it. The daemon thread ends with the process.
            log.warn(
                    "access log: the writer is still blocked in a write after {} ms; its last lines may be lost",
                    CLOSE_TIMEOUT.toMillis());
            return;
        }
        OutputStream w = out;
        if (w != null && ownsOut) { // the writer flushed on its way out; standard output stays open
            try {
                w.close();
            } catch (IOException e) {
                log.warn("access log: close failed: {}", e.toString());
            }
        }
    }
}
