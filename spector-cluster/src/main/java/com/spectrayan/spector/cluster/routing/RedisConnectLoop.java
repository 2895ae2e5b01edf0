package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes the first connection to Redis, retrying with backoff until it succeeds or is closed.
 * Lettuce reconnects an established connection by itself but does not retry a first connect that
 * failed, and a gateway must start (and route from the ring) while Redis is down.
 *
 * <p>Concurrency: attempts run one at a time on the scheduler; {@link #connection()} is safe from
 * any thread.
 */
final class RedisConnectLoop<C extends StatefulConnection<?, ?>> implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(RedisConnectLoop.class);

    /** First delay after a failed connect; doubled per failure up to {@link #MAX_BACKOFF}. */
    static final Duration MIN_BACKOFF = Duration.ofMillis(250);

    /** Longest delay between two connect attempts. */
    static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

    /** Longest wait of {@link #close()} for the connection to close. */
    static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(1);

    private final String name;
    private final Supplier<CompletionStage<C>> connect;
    private final Consumer<C> onConnected;
    private final Consumer<Throwable> onFailed;
    private final ScheduledExecutorService scheduler;
    private volatile @Nullable C connection;
    private volatile @Nullable CompletableFuture<C> pending; // the last connect attempt
    private final AtomicReference<@Nullable CompletableFuture<@Nullable Void>> closing = new AtomicReference<>();
    private volatile boolean closed;

    RedisConnectLoop(
            String name,
            Supplier<CompletionStage<C>> connect,
            Consumer<C> onConnected,
            ScheduledExecutorService scheduler) {
        this(name, connect, onConnected, e -> {}, scheduler);
    }

    /** A loop that also tells {@code onFailed} of each failed attempt (before the retry is scheduled). */
    RedisConnectLoop(
            String name,
            Supplier<CompletionStage<C>> connect,
            Consumer<C> onConnected,
            Consumer<Throwable> onFailed,
            ScheduledExecutorService scheduler) {
        this.name = requireNonNull(name, "name");
        this.connect = requireNonNull(connect, "connect");
        this.onConnected = requireNonNull(onConnected, "onConnected");
        this.onFailed = requireNonNull(onFailed, "onFailed");
        this.scheduler = requireNonNull(scheduler, "scheduler");
    }

    /** A loop for a plain UTF-8 command connection of {@code client}, on the client's own scheduler. */
    static RedisConnectLoop<StatefulRedisConnection<String, String>> commands(
            String name, RedisClient client, RedisURI uri) {
        return new RedisConnectLoop<>(
                name,
                () -> client.connectAsync(StringCodec.UTF8, uri),
                c -> {},
                client.getResources().eventExecutorGroup());
    }

    /** Starts the first attempt. */
    void start() {
        attempt(MIN_BACKOFF);
    }

    /** Returns the connection once made (Lettuce keeps it reconnecting after that), or null. */
    @Nullable
    C connection() {
        return connection;
    }

    private void attempt(Duration nextBackoff) {
        if (closed) {
            return;
        }
        CompletableFuture<C> stage;
        try {
            stage = connect.get().toCompletableFuture();
        } catch (RuntimeException e) {
            retry(nextBackoff, e);
            return;
        }
        pending = stage;
        stage.whenComplete((c, error) -> {
            if (error != null) {
                retry(nextBackoff, error);
            } else if (closed) {
                var unused = closeOnce(c);
            } else {
                connection = c;
                log.info("Redis {} connection established", name);
                onConnected.accept(c);
            }
        });
    }

    private void retry(Duration backoff, Throwable error) {
        if (closed) {
            return;
        }
        onFailed.accept(error);
        log.warn("Redis {} connection failed, retrying in {} ms: {}", name, backoff.toMillis(), error.toString());
        Duration next = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
        var unused = scheduler.schedule(() -> attempt(next), backoff.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * Stops retrying and closes the connection, waiting at most {@link #CLOSE_TIMEOUT} for a
     * connect in flight and as long again for the close: the client's event loops may stop right
     * after, and a channel still open or closing then never releases its read buffer. Must not be
     * called on one of the client's event loops.
     */
    @Override
    public void close() {
        closed = true;
        C c = connection;
        connection = null;
        CompletableFuture<C> p = pending;
        try {
            if (c == null && p != null) {
                c = p.get(CLOSE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
            if (c != null) {
                closeOnce(c).get(CLOSE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            log.debug(
                    "Redis {} connection: no clean close within {} ms: {}",
                    name,
                    CLOSE_TIMEOUT.toMillis(),
                    e.toString());
        }
    }

    /** Closes the loop's one connection once, however many callers ask; completes when it is closed. */
    private CompletableFuture<@Nullable Void> closeOnce(StatefulConnection<?, ?> c) {
        CompletableFuture<@Nullable Void> mine = new CompletableFuture<>();
        if (!closing.compareAndSet(null, mine)) {
            return requireNonNull(closing.get(), "closing");
        }
        c.closeAsync().whenComplete((ignored, error) -> mine.complete(null));
        return mine;
    }
}
