package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a process on the cell's published ring ({@link PublishedRing}): it reads the ring hash
 * once connected, again on every announcement and on every (re)confirmed subscription, and every
 * {@link #REFRESH_INTERVAL} in case an announcement was lost, and offers each ring it decodes to a
 * sink (the resolver's swap, which keeps only a ring that supersedes the held one).
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>The hash is the truth, an announcement a hint.</b> Redis pub/sub is at-most-once, so a
 *       message only triggers a read; its content is never trusted. A missed one is made up by the
 *       read on resubscribe and by the refresh (as Envoy re-fetches on a reconnected xDS stream).
 *   <li><b>Reads coalesce.</b> At most one read is in flight; triggers meanwhile ask for one more,
 *       so a flood of announcements costs one read at a time, never a queue.
 *   <li><b>A failed read is tried again</b> after {@link #RETRY_AFTER_FAILURE} (one at a time), so
 *       a reader that reconnects after Redis came back catches up within a second even when the
 *       announcement was lost meanwhile.
 *   <li><b>Hostile bytes.</b> A stored ring that does not decode is ignored with a WARN (once per
 *       distinct reason) and {@link RingMetrics#malformed()}; the held ring stays. So does a read
 *       that fails: Redis down keeps the last ring.
 *   <li><b>Start.</b> {@link #awaitFirstRead} lets a process wait, bounded, for the first read so
 *       that it starts on the published ring (Envoy's {@code initial_fetch_timeout}); a failed
 *       first connect ends the wait at once, and the process starts on its configured ring.
 * </ul>
 *
 * <p>Concurrency: callbacks run on Lettuce's event loop and the refresh on its event executor;
 * neither blocks. The sink must not block either.
 */
final class RingWatcher implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RingWatcher.class);

    /** How often the ring hash is read again without an announcement (a lost one is made up). */
    static final Duration REFRESH_INTERVAL = Duration.ofSeconds(30);

    /**
     * How soon a failed read is tried again: a reconnect of the reader, whose announcement and
     * resubscribe read may have failed while it was still down, catches up within this.
     */
    static final Duration RETRY_AFTER_FAILURE = Duration.ofSeconds(1);

    private final String key;
    private final String channel;
    private final Predicate<CellRing> sink;
    private final RingMetrics metrics;
    private final RedisConnectLoop<StatefulRedisConnection<String, String>> commands;
    private final RedisConnectLoop<StatefulRedisPubSubConnection<String, String>> announcements;
    private final CompletableFuture<@Nullable Void> firstRead = new CompletableFuture<>();
    private final AtomicBoolean reading = new AtomicBoolean();
    private final AtomicBoolean again = new AtomicBoolean();
    private final AtomicBoolean retryScheduled = new AtomicBoolean();
    private final ScheduledExecutorService scheduler;
    private volatile @Nullable ScheduledFuture<?> refresh;
    private volatile @Nullable String lastProblem; // the last malformed ring's reason, logged once
    private volatile boolean reportedNone;
    private volatile boolean closed;

    private RingWatcher(
            RedisClient client, RedisURI uri, String cellId, Predicate<CellRing> sink, RingMetrics metrics) {
        this.key = PublishedRing.key(cellId);
        this.channel = PublishedRing.channel(cellId);
        this.sink = sink;
        this.metrics = metrics;
        this.scheduler = client.getResources().eventExecutorGroup();
        this.commands = new RedisConnectLoop<>(
                "ring-reader",
                () -> client.connectAsync(StringCodec.UTF8, uri),
                c -> read("connected"),
                e -> firstRead.complete(null),
                client.getResources().eventExecutorGroup());
        this.announcements = new RedisConnectLoop<>(
                "ring-announcements",
                () -> client.connectPubSubAsync(StringCodec.UTF8, uri),
                this::onSubscriberConnected,
                client.getResources().eventExecutorGroup());
    }

    /** Starts watching a cell's ring in the background, offering each decoded ring to {@code sink}. */
    static RingWatcher start(
            RedisClient client, RedisURI uri, String cellId, Predicate<CellRing> sink, RingMetrics metrics) {
        RingWatcher w = new RingWatcher(
                requireNonNull(client, "client"),
                requireNonNull(uri, "uri"),
                cellId,
                requireNonNull(sink, "sink"),
                requireNonNull(metrics, "metrics"));
        w.commands.start();
        w.announcements.start();
        long every = REFRESH_INTERVAL.toMillis();
        w.refresh = client.getResources()
                .eventExecutorGroup()
                .scheduleAtFixedRate(() -> w.read("refresh"), every, every, TimeUnit.MILLISECONDS);
        return w;
    }

    /**
     * Waits at most {@code timeout} for the first read of the ring hash to be applied (or to find
     * nothing), or for the first connect to fail.
     */
    void awaitFirstRead(Duration timeout) {
        try {
            firstRead.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // the process starts on the ring it holds; the watcher goes on in the background
        }
    }

    /** Reads the ring hash now, or once more after the read in flight. */
    void read(String why) {
        again.set(true);
        if (closed || !reading.compareAndSet(false, true)) {
            return;
        }
        again.set(false);
        StatefulRedisConnection<String, String> c = commands.connection();
        if (c == null || !c.isOpen()) {
            reading.set(false);
            metrics.readErrorOne();
            retryLater(); // the first connect's own read follows once it is made
            return;
        }
        CompletionStage<List<KeyValue<String, String>>> fields;
        try {
            fields = c.async().hmget(key, "epoch", "members", "published-at");
        } catch (RuntimeException e) { // a rejected command may throw rather than fail its future
            fields = CompletableFuture.failedFuture(e);
        }
        fields.whenComplete((stored, error) -> {
            try {
                if (error != null) {
                    metrics.readErrorOne();
                    log.debug("could not read {} ({}), keeping the held ring: {}", key, why, error.toString());
                    retryLater();
                } else {
                    apply(stored, why);
                }
            } finally {
                firstRead.complete(null);
                reading.set(false);
                if (again.get()) {
                    read("again");
                }
            }
        });
    }

    /** Schedules one read after {@link #RETRY_AFTER_FAILURE}, unless one is scheduled already. */
    private void retryLater() {
        if (closed || !retryScheduled.compareAndSet(false, true)) {
            return;
        }
        var unused = scheduler.schedule(
                () -> {
                    retryScheduled.set(false);
                    read("retry");
                },
                RETRY_AFTER_FAILURE.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    private void apply(List<KeyValue<String, String>> fields, String why) {
        Optional<PublishedRing.Stored> stored;
        try {
            stored = PublishedRing.decode(fields);
        } catch (RuntimeException e) {
            metrics.malformedOne();
            String problem = e.getMessage();
            if (!Objects.equals(problem, lastProblem)) {
                lastProblem = problem;
                log.warn("ignored the ring stored at {} ({}), keeping the held ring: {}", key, why, problem);
            }
            return;
        }
        lastProblem = null;
        if (stored.isEmpty()) {
            if (!reportedNone) {
                reportedNone = true;
                log.info("no ring published at {}: routing on the configured ring", key);
            }
            return;
        }
        reportedNone = false;
        CellRing ring = stored.get().ring();
        boolean taken;
        try {
            taken = sink.test(ring);
        } catch (RuntimeException e) {
            metrics.malformedOne();
            log.warn("could not swap in the ring stored at {} ({}): {}", key, why, e.toString());
            return;
        }
        if (taken) {
            metrics.appliedOne();
            log.info(
                    "ring epoch {} from {} ({}): {} members {}",
                    ring.epoch(),
                    key,
                    why,
                    ring.ketama().members().size(),
                    ring.ketama().members());
        } else {
            metrics.ignoredOne();
        }
    }

    private void onSubscriberConnected(StatefulRedisPubSubConnection<String, String> connection) {
        connection.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void subscribed(String subscribedChannel, long count) {
                if (channel.equals(subscribedChannel)) {
                    read("subscribed");
                }
            }

            @Override
            public void message(String fromChannel, String message) {
                if (channel.equals(fromChannel)) {
                    read("announced");
                }
            }
        });
        connection.async().subscribe(channel).whenComplete((ignored, error) -> {
            if (error != null) {
                log.warn(
                        "SUBSCRIBE {} failed; the ring is read every {} s until Lettuce resubscribes: {}",
                        channel,
                        REFRESH_INTERVAL.toSeconds(),
                        error.toString());
            }
        });
    }

    @Override
    public void close() {
        closed = true;
        ScheduledFuture<?> r = refresh;
        if (r != null) {
            r.cancel(false);
        }
        announcements.close();
        commands.close();
        firstRead.complete(null);
    }
}
