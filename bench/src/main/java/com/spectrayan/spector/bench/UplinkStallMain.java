package com.spectrayan.spector.bench;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * Two bulk relays on one uplink, one of them with a reader that stops reading (issue 12: "the other
 * keeps at least 90 % of its solo throughput, and the stalled one resumes when its reader does").
 * One process, as {@link UplinkLatencyMain}: a reference owner as the upstream, a gateway and a
 * worker with one link of {@code --protocol v2|v1}.
 *
 * <p>After {@value #WARMUP_RUNS} unmeasured downloads, {@value #RUNS} rounds, each:
 *
 * <ol>
 *   <li>relay A ({@code --mib} MiB download) alone;
 *   <li>relay B (the same download) is read for {@value #STALL_AFTER_BYTES} bytes, then its reader
 *       stops; A runs once beside it; B's reader resumes {@value #HOLD_AFTER_A_MS} ms after A ended
 *       (at most {@code --stall-max-seconds} after it stopped) and reads to the end.
 * </ol>
 *
 * <p>Prints A's MiB/s solo and beside the stalled B (medians over the rounds), their
 * ratio against the 90 % target, and what became of B: completed with every byte after its reader
 * resumed, or how it failed (protocol v1 cancels a relay whose reader fell 64 MiB behind). Bounded:
 * every request has a timeout, B's stall has a cap, and a watchdog ends the run after {@value
 * #WATCHDOG_MINUTES} minutes. Run it with {@code bench/uplink-stall.sh}.
 */
public final class UplinkStallMain {
    static final int RUNS = 5;
    /** Unmeasured downloads first (A's and B's clients alternately): the JIT warms up. */
    static final int WARMUP_RUNS = 4;
    /** B's reader stays stopped this long after A's run beside it ended. */
    static final long HOLD_AFTER_A_MS = 500;

    static final long STALL_AFTER_BYTES = 1024 * 1024;
    static final double TARGET_SHARE = 0.90;
    static final int READ_BUFFER = 64 * 1024;
    static final long WATCHDOG_MINUTES = 10;
    static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
    static final Duration READY_TIMEOUT = Duration.ofSeconds(30);
    /** A download that brings no byte for this long is reported as stuck and closed. */
    static final Duration NO_PROGRESS = Duration.ofSeconds(15);

    private static final ScheduledExecutorService PROGRESS = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "bench-progress");
        t.setDaemon(true);
        return t;
    });

    private UplinkStallMain() {}

    /**
     * Runs the bench and prints the result.
     *
     * @param args {@code [--protocol v2|v1] [--mib N] [--stall-max-seconds N]}
     */
    public static void main(String[] args) throws Exception {
        String protocol = "v2";
        long mib = 200;
        int stallMaxSeconds = 60;
        for (int i = 0; i < args.length; i += 2) {
            String value = i + 1 < args.length ? args[i + 1] : "";
            switch (args[i]) {
                case "--protocol" -> protocol = value;
                case "--mib" -> mib = Long.parseLong(value);
                case "--stall-max-seconds" -> stallMaxSeconds = Integer.parseInt(value);
                default ->
                    throw new IllegalArgumentException(
                            "unknown argument " + args[i] + " (expected --protocol, --mib, --stall-max-seconds)");
            }
        }
        if ((!protocol.equals("v2") && !protocol.equals("v1"))
                || mib < 2
                || mib > 4096
                || stallMaxSeconds < 1
                || stallMaxSeconds > 300) {
            throw new IllegalArgumentException("--protocol v2|v1, --mib 2..4096, --stall-max-seconds 1..300");
        }
        boolean v2 = protocol.equals("v2");
        RelayStack.watchdog(WATCHDOG_MINUTES);
        try (RelayStack stack = RelayStack.start(v2, 1)) {
            long bytes = mib * UplinkLatencyMain.MIB;
            URI uri =
                    URI.create(stack.relayBase() + "/stream?bytes=" + bytes + "&chunk=" + UplinkLatencyMain.BULK_CHUNK);
            run(uri, bytes, mib, protocol, stallMaxSeconds);
        }
    }

    private static void run(URI uri, long bytes, long mib, String protocol, int stallMaxSeconds) throws Exception {
        HttpClient clientA = client();
        HttpClient clientB = client();
        System.out.printf(
                Locale.ROOT,
                "uplink %s, one link: relay A and B each %d MiB in %d KiB chunks; B's reader stops after %d KiB;"
                        + " %d rounds of (A solo, A beside a stalled B, B resumed)%n",
                protocol,
                mib,
                UplinkLatencyMain.BULK_CHUNK / 1024,
                STALL_AFTER_BYTES / 1024,
                RUNS);
        for (int i = 0; i < WARMUP_RUNS; i++) {
            download(i % 2 == 0 ? clientA : clientB, uri, bytes);
        }
        double[] solo = new double[RUNS];
        double[] beside = new double[RUNS];
        String[] outcomes = new String[RUNS];
        int completedB = 0;
        int failedA = 0;
        for (int round = 0; round < RUNS; round++) {
            solo[round] = timedOrZero(clientA, uri, bytes, mib, "round " + (round + 1) + ": relay A alone");
            if (solo[round] == 0) {
                failedA++;
                awaitRelay(clientA, uri);
            }

            long directBefore = nettyDirect();
            StalledReader b = new StalledReader(clientB, uri, bytes);
            Thread reader = new Thread(b, "bench-stalled-reader");
            reader.setDaemon(true);
            long stallStart = System.nanoTime();
            reader.start();
            if (!b.stalled.await(CALL_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                throw new IllegalStateException(
                        "relay B did not deliver " + STALL_AFTER_BYTES + " bytes: " + b.error.get());
            }
            beside[round] = timedOrZero(clientA, uri, bytes, mib, "round " + (round + 1) + ": relay A beside B");
            if (beside[round] == 0) {
                failedA++;
            }
            // Hold B's reader a little longer than A took, within the cap.
            long holdUntil = Math.min(
                    stallStart + TimeUnit.SECONDS.toNanos(stallMaxSeconds),
                    System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(HOLD_AFTER_A_MS));
            while (System.nanoTime() < holdUntil) {
                Thread.sleep(10);
            }
            double stalledSeconds = (System.nanoTime() - stallStart) / 1e9;
            long readWhenResumed = b.read.get();
            long directStalled = nettyDirect();
            long resume = System.nanoTime();
            b.resume.countDown();
            reader.join(TimeUnit.MINUTES.toMillis(3));
            double afterResume = (System.nanoTime() - resume) / 1e9;
            Throwable error = b.error.get();
            String head = String.format(
                    Locale.ROOT,
                    "round %d: B stopped at %d KiB for %.1f s (had %d KiB when it resumed; Netty direct memory"
                            + " %.0f MiB before B, %.0f MiB at the resume); ",
                    round + 1,
                    b.readAtStall / 1024,
                    stalledSeconds,
                    readWhenResumed / 1024,
                    directBefore / (double) UplinkLatencyMain.MIB,
                    directStalled / (double) UplinkLatencyMain.MIB);
            if (reader.isAlive()) {
                outcomes[round] = head + "still running 3 min after its reader resumed: NOT completed";
            } else if (error == null) {
                completedB++;
                outcomes[round] = head
                        + String.format(
                                Locale.ROOT,
                                "resumed and completed, all %d bytes, %.2f s after the resume (%.0f MiB/s)",
                                b.read.get(),
                                afterResume,
                                (bytes - readWhenResumed) / (double) UplinkLatencyMain.MIB / afterResume);
            } else {
                outcomes[round] = head
                        + String.format(
                                Locale.ROOT,
                                "FAILED after %d of %d bytes (HTTP %d), %.2f s after the resume: %s",
                                b.read.get(),
                                bytes,
                                b.status,
                                afterResume,
                                error);
            }
            if (error != null || beside[round] == 0) {
                awaitRelay(clientA, uri);
            }
        }
        double soloMedian = median(solo);
        double besideMedian = median(beside);
        System.out.println();
        System.out.printf(Locale.ROOT, "%-36s %8s   %s%n", "relay A", "MiB/s", "each round");
        System.out.printf(Locale.ROOT, "%-36s %8.1f   %s%n", "solo", soloMedian, list(solo));
        System.out.printf(
                Locale.ROOT, "%-36s %8.1f   %s%n", "beside B, whose reader stopped", besideMedian, list(beside));
        double share = besideMedian / soloMedian;
        System.out.printf(
                Locale.ROOT,
                "target A keeps >= %.0f %% of its solo rate (medians): %.0f %%: %s%n",
                TARGET_SHARE * 100,
                share * 100,
                share >= TARGET_SHARE ? "met" : "NOT met");
        if (failedA > 0) {
            System.out.printf(Locale.ROOT, "relay A failed in %d of %d runs (counted as 0 MiB/s)%n", failedA, 2 * RUNS);
        }
        System.out.println();
        for (String o : outcomes) {
            System.out.println(o);
        }
        System.out.printf(
                Locale.ROOT,
                "target B resumes and completes when its reader does: %d of %d rounds: %s%n",
                completedB,
                RUNS,
                completedB == RUNS ? "met" : "NOT met");
    }

    /**
     * The direct memory Netty's default allocator holds in this process (gateway, worker and upstream
     * together; pooled chunks stay held after release, so it shows a high-water mark), or -1.
     */
    private static long nettyDirect() {
        return ByteBufAllocator.DEFAULT instanceof ByteBufAllocatorMetricProvider p
                ? p.metric().usedDirectMemory()
                : -1;
    }

    /** Waits (bounded) until a small relay through the same target answers 200 again. */
    private static void awaitRelay(HttpClient client, URI bulk) throws InterruptedException {
        URI small = bulk.resolve("stream?bytes=64&chunk=64");
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            try {
                HttpResponse<byte[]> r = client.send(
                        HttpRequest.newBuilder(small).timeout(CALL_TIMEOUT).build(),
                        HttpResponse.BodyHandlers.ofByteArray());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // the link is being re-dialled
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("no relay answered within " + READY_TIMEOUT + " after a failure");
    }

    private static HttpClient client() {
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(CALL_TIMEOUT)
                .build();
    }

    private static double timed(HttpClient client, URI uri, long bytes, long mib)
            throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        download(client, uri, bytes);
        return mib / ((System.nanoTime() - t0) / 1e9);
    }

    /** As {@link #timed}, but a failed download prints {@code what} and the error and counts 0 MiB/s. */
    private static double timedOrZero(HttpClient client, URI uri, long bytes, long mib, String what)
            throws InterruptedException {
        try {
            return timed(client, uri, bytes, mib);
        } catch (IOException | IllegalStateException e) {
            System.out.println(what + " failed: " + e);
            return 0;
        }
    }

    /**
     * Downloads {@code uri} whole and fails unless it carried {@code bytes}; a body that brings no
     * byte for {@link #NO_PROGRESS} is closed and reported as stuck (well before the relay's
     * deadline, so a relay held back by another stream shows as such, and the run stays short).
     */
    private static void download(HttpClient client, URI uri, long bytes) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(CALL_TIMEOUT).build();
        HttpResponse<InputStream> r = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
        AtomicLong read = new AtomicLong();
        AtomicLong lastProgress = new AtomicLong(System.nanoTime());
        AtomicReference<@Nullable String> stuck = new AtomicReference<>();
        InputStream in = r.body();
        try {
            ScheduledFuture<?> check = PROGRESS.scheduleWithFixedDelay(
                    () -> {
                        if (System.nanoTime() - lastProgress.get() > NO_PROGRESS.toNanos() && stuck.get() == null) {
                            stuck.set("stuck: no byte for " + NO_PROGRESS.toSeconds() + " s after " + read.get()
                                    + " of " + bytes + " bytes");
                            try {
                                in.close();
                            } catch (IOException e) {
                                // the read below ends either way
                            }
                        }
                    },
                    1,
                    1,
                    TimeUnit.SECONDS);
            try {
                if (r.statusCode() != 200) {
                    throw new IllegalStateException("HTTP " + r.statusCode());
                }
                byte[] buffer = new byte[READ_BUFFER];
                int n;
                while ((n = in.read(buffer)) > 0) {
                    read.addAndGet(n);
                    lastProgress.set(System.nanoTime());
                }
            } catch (IOException e) {
                String why = stuck.get();
                throw why == null ? e : new IOException(why, e);
            } finally {
                check.cancel(false);
            }
        } finally {
            in.close();
        }
        String why = stuck.get();
        if (why != null) {
            throw new IllegalStateException(why);
        }
        if (read.get() != bytes) {
            throw new IllegalStateException(read.get() + " of " + bytes + " bytes");
        }
    }

    private static double median(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static String list(double[] values) {
        StringBuilder b = new StringBuilder();
        for (double v : values) {
            b.append(b.length() == 0 ? "" : " ").append(String.format(Locale.ROOT, "%.0f", v));
        }
        return b.toString();
    }

    /** A download whose reader stops after {@link #STALL_AFTER_BYTES} until {@link #resume} opens. */
    private static final class StalledReader implements Runnable {
        final HttpClient client;
        final URI uri;
        final long bytes;
        final AtomicLong read = new AtomicLong();
        final CountDownLatch stalled = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);
        final AtomicReference<@Nullable Throwable> error = new AtomicReference<>();
        volatile long readAtStall;
        volatile int status;

        StalledReader(HttpClient client, URI uri, long bytes) {
            this.client = client;
            this.uri = uri;
            this.bytes = bytes;
        }

        @Override
        public void run() {
            try {
                HttpRequest request =
                        HttpRequest.newBuilder(uri).timeout(CALL_TIMEOUT).build();
                HttpResponse<InputStream> r = client.send(request, HttpResponse.BodyHandlers.ofInputStream());
                status = r.statusCode();
                try (InputStream in = r.body()) {
                    byte[] buffer = new byte[READ_BUFFER];
                    int n;
                    boolean paused = false;
                    while ((n = in.read(
                                    buffer,
                                    0,
                                    paused
                                            ? buffer.length
                                            : (int) Math.min(
                                                    buffer.length, Math.max(1, STALL_AFTER_BYTES - read.get()))))
                            > 0) {
                        long total = read.addAndGet(n);
                        if (!paused && total >= STALL_AFTER_BYTES) {
                            paused = true;
                            readAtStall = total;
                            stalled.countDown();
                            if (!resume.await(10, TimeUnit.MINUTES)) {
                                throw new IllegalStateException("never resumed");
                            }
                        }
                    }
                }
                if (read.get() != bytes) {
                    throw new IllegalStateException(read.get() + " of " + bytes + " bytes (HTTP " + status + ")");
                }
            } catch (IOException | RuntimeException e) {
                error.set(e);
            } catch (InterruptedException e) {
                error.set(e);
                Thread.currentThread().interrupt();
            } finally {
                stalled.countDown();
            }
        }
    }
}
