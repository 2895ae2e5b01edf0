package com.spectrayan.spector.bench;

import com.spectrayan.spector.gateway.GatewayServer;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.wire.StatusReport;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The latency of {@code status.get} and of a small relay while a large relay runs on the same
 * uplink (issue #4). One process: a reference owner as the worker's upstream, a gateway on a free
 * loopback port (edge auth off, one worker token), and a worker daemon dialling its {@code /uplink}
 * with an {@code http-forward} target {@code echo} to the upstream. It measures, each as
 * p50/p90/p99/max over {@code --samples} after {@code --warmup}:
 *
 * <ol>
 *   <li>{@code status.get} ({@link WorkerLink#refresh}) on the live link and a small relay (a GET of
 *       {@value #SMALL_BYTES} bytes through {@code /relay/}), alternating, with the uplink idle;
 *   <li>the same while a large relay download ({@code --bulk-mib}, restarted in a loop) runs on the
 *       same uplink. Idle and loaded blocks alternate ({@code --rounds}, 4 by default) so that the
 *       machine's other load falls on both alike;
 *   <li>the large relay's throughput meanwhile and alone, and the same download direct to the
 *       upstream (alone: the median of three downloads after one warm-up).
 * </ol>
 *
 * <p>{@code --protocol v2|v1} (default v2) sets the uplink protocol on both sides (the gateway's {@code
 * spector.uplink.v2} and the worker's offer), and {@code --uplinks N} (default {@value
 * #DEFAULT_UPLINKS}) the worker's links: with one, the bulk relay, the small relays and {@code
 * status.get} share one uplink. The last line checks issue 12's target: a loaded p99 at most
 * {@value #TARGET_P99_FACTOR} x the idle p99 plus {@value #TARGET_P99_SLACK_MS} ms.
 *
 * <p>{@code --bulk-only SECONDS} runs just the large relay download in a loop (for a profiler). Every
 * call has a timeout and the whole run is bounded by a watchdog ({@value #WATCHDOG_MINUTES} min).
 * Run it with {@code bench/uplink-latency.sh}.
 */
public final class UplinkLatencyMain {
    static final String WORKER = RelayStack.WORKER;
    static final String TARGET = RelayStack.TARGET;
    static final int SMALL_BYTES = 64;
    static final int BULK_CHUNK = 256 * 1024;
    static final long MIB = 1024 * 1024;
    static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);
    static final Duration READY_TIMEOUT = Duration.ofSeconds(30);
    static final long WATCHDOG_MINUTES = 10;
    /** Links the worker keeps unless {@code --uplinks} says otherwise: one, so that all share it. */
    static final int DEFAULT_UPLINKS = 1;
    /** Issue 12: a loaded p99 at most this factor times the idle p99 ... */
    static final double TARGET_P99_FACTOR = 1.5;
    /** ... plus this many milliseconds. */
    static final double TARGET_P99_SLACK_MS = 1.0;

    private UplinkLatencyMain() {}

    /**
     * Runs the bench and prints the table.
     *
     * @param args {@code [--samples N] [--warmup N] [--rounds N] [--bulk-mib N] [--protocol v2|v1]
     *     [--uplinks N] [--bulk-only SECONDS]}
     */
    public static void main(String[] args) throws Exception {
        int samples = 200;
        int warmup = 50;
        long bulkMib = 200;
        int rounds = 4;
        int bulkOnlySeconds = -1;
        String protocol = "v2";
        int uplinks = DEFAULT_UPLINKS;
        for (int i = 0; i < args.length; i += 2) {
            String value = i + 1 < args.length ? args[i + 1] : "";
            switch (args[i]) {
                case "--samples" -> samples = Integer.parseInt(value);
                case "--warmup" -> warmup = Integer.parseInt(value);
                case "--bulk-mib" -> bulkMib = Long.parseLong(value);
                case "--rounds" -> rounds = Integer.parseInt(value);
                case "--bulk-only" -> bulkOnlySeconds = Integer.parseInt(value);
                case "--protocol" -> protocol = value;
                case "--uplinks" -> uplinks = Integer.parseInt(value);
                default ->
                    throw new IllegalArgumentException("unknown argument " + args[i]
                            + " (expected --samples, --warmup, --rounds, --bulk-mib, --protocol, --uplinks,"
                            + " --bulk-only)");
            }
        }
        if (samples < 1 || warmup < 0 || bulkMib < 1 || samples > 100_000 || rounds < 1 || samples % rounds != 0) {
            throw new IllegalArgumentException(
                    "samples 1..100000 (a multiple of rounds), warmup >= 0, rounds >= 1, bulk-mib >= 1");
        }
        if (!protocol.equals("v2") && !protocol.equals("v1")) {
            throw new IllegalArgumentException("--protocol v2 or v1, not " + protocol);
        }
        if (uplinks < 1 || uplinks > WorkerDaemon.MAX_UPLINKS) {
            throw new IllegalArgumentException("--uplinks 1.." + WorkerDaemon.MAX_UPLINKS);
        }
        boolean v2 = protocol.equals("v2");

        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "bench-scheduler");
            t.setDaemon(true);
            return t;
        });
        var unused = scheduler.schedule(
                () -> {
                    System.err.println("watchdog: the run passed " + WATCHDOG_MINUTES + " minutes, exiting");
                    Runtime.getRuntime().halt(2);
                },
                WATCHDOG_MINUTES,
                TimeUnit.MINUTES);

        try (RelayStack stack = RelayStack.start(v2, uplinks)) {
            System.out.printf(Locale.ROOT, "uplink protocol %s, %d link(s)%n", protocol, uplinks);
            Bench bench = new Bench(stack, scheduler, bulkMib * MIB);
            bench.awaitReady();
            if (bulkOnlySeconds > 0) {
                bench.bulkOnly(bulkOnlySeconds);
            } else {
                bench.run(samples, warmup, rounds, bulkMib);
            }
        } finally {
            scheduler.shutdownNow();
        }
    }

    /** The measurements over one running gateway, worker and upstream. */
    private static final class Bench {
        private final GatewayServer gateway;
        private final WorkerDaemon worker;
        private final ScheduledExecutorService scheduler;
        private final long bulkBytes;
        private final URI smallRelay;
        private final URI bulkRelay;
        private final URI bulkDirect;
        private final HttpClient smallClient = client();
        private final HttpClient bulkClient = client();

        Bench(RelayStack stack, ScheduledExecutorService scheduler, long bulkBytes) {
            this.gateway = stack.gateway;
            this.worker = stack.worker;
            this.scheduler = scheduler;
            this.bulkBytes = bulkBytes;
            String relay = stack.relayBase();
            this.smallRelay = URI.create(relay + "/stream?bytes=" + SMALL_BYTES + "&chunk=" + SMALL_BYTES);
            String bulk = "/stream?bytes=" + bulkBytes + "&chunk=" + BULK_CHUNK;
            this.bulkRelay = URI.create(relay + bulk);
            this.bulkDirect = URI.create(stack.directBase() + bulk);
        }

        private static HttpClient client() {
            return HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(CALL_TIMEOUT)
                    .build();
        }

        /** Waits until the worker's link is live and a small relay answers. */
        void awaitReady() throws InterruptedException {
            long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
            @Nullable Exception last = null;
            while (System.nanoTime() < deadline) {
                if (worker.isConnected() && gateway.workerDirectory().live(WORKER) != null) {
                    try {
                        smallRelay();
                        return;
                    } catch (IOException | IllegalStateException e) {
                        last = e;
                    }
                }
                Thread.sleep(50);
            }
            throw new IllegalStateException("the worker was not relaying within " + READY_TIMEOUT, last);
        }

        void run(int samples, int warmup, int rounds, long bulkMib) throws Exception {
            System.out.printf(
                    Locale.ROOT,
                    "uplink latency: %d samples each in %d rounds (idle block, then loaded block) after %d"
                            + " warm-up; small relay %d B; large relay %d MiB in %d KiB chunks%n",
                    samples,
                    rounds,
                    warmup,
                    SMALL_BYTES,
                    bulkMib,
                    BULK_CHUNK / 1024);

            // Throughput alone: direct and relayed, the median of three after one warm-up download.
            double directMibs = medianDownload(bulkDirect);
            double relayAloneMibs = medianDownload(bulkRelay);

            // Idle and loaded blocks alternate, so the machine's other load falls on both alike.
            int block = samples / rounds;
            long[][] idle = {new long[samples], new long[samples]};
            long[][] loaded = {new long[samples], new long[samples]};
            long moved = 0;
            long loadedNanos = 0;
            int completed = 0;
            int failed = 0;
            for (int round = 0; round < rounds; round++) {
                awaitUplinkIdle();
                alternate(round == 0 ? warmup : 0, block, idle, round * block);
                BulkLoop loop = new BulkLoop(bulkRelay);
                Thread bulk = new Thread(loop, "bench-bulk");
                bulk.setDaemon(true);
                bulk.start();
                long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
                while (loop.bytes.get() < MIB && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                if (loop.bytes.get() < MIB) {
                    throw new IllegalStateException("the large relay did not start streaming within " + READY_TIMEOUT);
                }
                long bytes0 = loop.bytes.get();
                long t0 = System.nanoTime();
                alternate(round == 0 ? warmup : 0, block, loaded, round * block);
                loadedNanos += System.nanoTime() - t0;
                moved += loop.bytes.get() - bytes0;
                completed += loop.completed.get();
                failed += loop.failed.get();
                loop.stop = true;
                bulk.join(CALL_TIMEOUT.toMillis() * 3);
            }
            double seconds = loadedNanos / 1e9;
            double loadedMibs = moved / (double) MIB / seconds;

            System.out.println();
            System.out.printf(
                    Locale.ROOT, "%-26s %6s %8s %8s %8s %8s%n", "latency (ms)", "n", "p50", "p90", "p99", "max");
            row("status.get, idle", idle[0]);
            row("status.get, large relay", loaded[0]);
            row("small relay, idle", idle[1]);
            row("small relay, large relay", loaded[1]);
            System.out.println();
            System.out.printf(Locale.ROOT, "%-26s %8s %8s %8s %8s%n", "loaded / idle", "p50", "p90", "p99", "max");
            ratio("status.get", loaded[0], idle[0]);
            ratio("small relay", loaded[1], idle[1]);
            System.out.println();
            target("status.get", loaded[0], idle[0]);
            target("small relay", loaded[1], idle[1]);
            System.out.println();
            System.out.printf(
                    Locale.ROOT, "%-40s %8s %10s%n", "large download (" + bulkMib + " MiB)", "MiB/s", "x slower");
            mibs("direct to the upstream", directMibs, directMibs);
            mibs("uplink relay, alone", relayAloneMibs, directMibs);
            mibs("uplink relay, during the loaded samples", loadedMibs, directMibs);
            System.out.printf(
                    Locale.ROOT,
                    "(the loaded blocks: %.1f s, %.0f MiB relayed, %d downloads completed, %d failed)%n",
                    seconds,
                    moved / (double) MIB,
                    completed,
                    failed);
        }

        /** Just the large relay download, in a loop, for {@code seconds}. */
        void bulkOnly(int seconds) throws InterruptedException {
            BulkLoop loop = new BulkLoop(bulkRelay);
            Thread bulk = new Thread(loop, "bench-bulk");
            bulk.setDaemon(true);
            long t0 = System.nanoTime();
            bulk.start();
            Thread.sleep(seconds * 1000L);
            long moved = loop.bytes.get();
            double elapsed = (System.nanoTime() - t0) / 1e9;
            loop.stop = true;
            bulk.join(CALL_TIMEOUT.toMillis() * 3);
            System.out.printf(
                    Locale.ROOT,
                    "large relay alone: %.0f MiB in %.1f s = %.1f MiB/s (%d downloads completed, %d failed)%n",
                    moved / (double) MIB,
                    elapsed,
                    moved / (double) MIB / elapsed,
                    loop.completed.get(),
                    loop.failed.get());
        }

        /**
         * {@code warmup} then {@code count} samples of status.get and of the small relay, alternating,
         * stored in nanoseconds at {@code into[0][at..]} and {@code into[1][at..]}.
         */
        private void alternate(int warmup, int count, long[][] into, int at)
                throws InterruptedException, ExecutionException, TimeoutException, IOException {
            for (int i = -warmup; i < count; i++) {
                long t = statusGet();
                long s = smallRelay();
                if (i >= 0) {
                    into[0][at + i] = t;
                    into[1][at + i] = s;
                }
            }
        }

        /** Waits (bounded) until the worker has no relay running: a stopped large relay has ended. */
        private void awaitUplinkIdle() throws InterruptedException {
            long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
            while (worker.activeRelays() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            if (worker.activeRelays() > 0) {
                throw new IllegalStateException("the worker still runs relays after " + READY_TIMEOUT);
            }
            Thread.sleep(200); // what the aborted relay had in flight drains
        }

        /** One {@code status.get} over the live link, as the gateway's refresh sends it; nanoseconds. */
        private long statusGet() throws InterruptedException, ExecutionException, TimeoutException {
            WorkerLink link = gateway.workerDirectory().live(WORKER);
            if (link == null) {
                throw new IllegalStateException("worker " + WORKER + " has no live link");
            }
            long t0 = System.nanoTime();
            StatusReport report = link.refresh(scheduler, CALL_TIMEOUT)
                    .toCompletableFuture()
                    .get(CALL_TIMEOUT.toMillis() + 1000, TimeUnit.MILLISECONDS);
            long dt = System.nanoTime() - t0;
            if (!report.targets().contains(TARGET)) {
                throw new IllegalStateException("status.get answered without target " + TARGET + ": " + report);
            }
            return dt;
        }

        /** One small relay, its body read whole; nanoseconds. */
        private long smallRelay() throws IOException, InterruptedException {
            HttpRequest request =
                    HttpRequest.newBuilder(smallRelay).timeout(CALL_TIMEOUT).build();
            long t0 = System.nanoTime();
            HttpResponse<byte[]> r = smallClient.send(request, HttpResponse.BodyHandlers.ofByteArray());
            long dt = System.nanoTime() - t0;
            if (r.statusCode() != 200 || r.body().length != SMALL_BYTES) {
                throw new IllegalStateException(
                        "small relay: HTTP " + r.statusCode() + " with " + r.body().length + " bytes");
            }
            return dt;
        }

        /** MiB/s of downloading {@code uri}: the median of three, after one warm-up download. */
        private double medianDownload(URI uri) throws IOException, InterruptedException {
            download(uri, new AtomicLong(), null);
            double[] mibs = new double[3];
            for (int i = 0; i < mibs.length; i++) {
                long t0 = System.nanoTime();
                download(uri, new AtomicLong(), null);
                mibs[i] = bulkBytes / (double) MIB / ((System.nanoTime() - t0) / 1e9);
            }
            Arrays.sort(mibs);
            return mibs[1];
        }

        /**
         * Downloads {@code uri} whole, adding the bytes read to {@code counter}, and fails unless it
         * carried {@link #bulkBytes}; stops early (without failing) once {@code loop} is stopped.
         */
        void download(URI uri, AtomicLong counter, @Nullable BulkLoop loop) throws IOException, InterruptedException {
            HttpRequest request =
                    HttpRequest.newBuilder(uri).timeout(CALL_TIMEOUT).build();
            HttpResponse<InputStream> r = bulkClient.send(request, HttpResponse.BodyHandlers.ofInputStream());
            long read = 0;
            try (InputStream in = r.body()) {
                if (r.statusCode() != 200) {
                    throw new IllegalStateException("download " + uri + ": HTTP " + r.statusCode());
                }
                byte[] buffer = new byte[64 * 1024];
                int n;
                while ((n = in.read(buffer)) > 0) {
                    read += n;
                    counter.addAndGet(n);
                    if (loop != null && loop.stop) {
                        return;
                    }
                }
            }
            if (read != bulkBytes) {
                throw new IllegalStateException("download " + uri + ": " + read + " of " + bulkBytes + " bytes");
            }
        }

        /** The large relay download, restarted until stopped. */
        private final class BulkLoop implements Runnable {
            final URI uri;
            final AtomicLong bytes = new AtomicLong();
            final AtomicInteger completed = new AtomicInteger();
            final AtomicInteger failed = new AtomicInteger();
            volatile boolean stop;

            BulkLoop(URI uri) {
                this.uri = uri;
            }

            @Override
            public void run() {
                while (!stop) {
                    try {
                        download(uri, bytes, this);
                        if (!stop) {
                            completed.incrementAndGet();
                        }
                    } catch (IOException | RuntimeException e) {
                        failed.incrementAndGet();
                        System.err.println("large relay failed: " + e);
                        try {
                            Thread.sleep(100);
                        } catch (InterruptedException ie) {
                            Thread.currentThread().interrupt();
                            return;
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        }
    }

    private static void row(String name, long[] nanos) {
        long[] s = nanos.clone();
        Arrays.sort(s);
        System.out.printf(
                Locale.ROOT,
                "%-26s %6d %8.2f %8.2f %8.2f %8.2f%n",
                name,
                s.length,
                ms(percentile(s, 50)),
                ms(percentile(s, 90)),
                ms(percentile(s, 99)),
                ms(s[s.length - 1]));
    }

    private static void ratio(String name, long[] loaded, long[] idle) {
        long[] l = loaded.clone();
        long[] i = idle.clone();
        Arrays.sort(l);
        Arrays.sort(i);
        System.out.printf(
                Locale.ROOT,
                "%-26s %8.1f %8.1f %8.1f %8.1f%n",
                name,
                percentile(l, 50) / (double) percentile(i, 50),
                percentile(l, 90) / (double) percentile(i, 90),
                percentile(l, 99) / (double) percentile(i, 99),
                l[l.length - 1] / (double) i[i.length - 1]);
    }

    /** Issue 12's target: loaded p99 at most TARGET_P99_FACTOR x idle p99 + TARGET_P99_SLACK_MS. */
    private static void target(String name, long[] loaded, long[] idle) {
        long[] l = loaded.clone();
        long[] i = idle.clone();
        Arrays.sort(l);
        Arrays.sort(i);
        double bound = TARGET_P99_FACTOR * ms(percentile(i, 99)) + TARGET_P99_SLACK_MS;
        double p99 = ms(percentile(l, 99));
        System.out.printf(
                Locale.ROOT,
                "target %-12s loaded p99 %.2f ms <= %.1f x idle p99 + %.0f ms = %.2f ms: %s%n",
                name,
                p99,
                TARGET_P99_FACTOR,
                TARGET_P99_SLACK_MS,
                bound,
                p99 <= bound ? "met" : "NOT met");
    }

    private static void mibs(String name, double mibs, double direct) {
        System.out.printf(Locale.ROOT, "%-40s %8.1f %10.1f%n", name, mibs, direct / mibs);
    }

    /** The nearest-rank percentile of sorted values. */
    static long percentile(long[] sorted, int p) {
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length, rank) - 1)];
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }
}
