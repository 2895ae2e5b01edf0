package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.UplinkHolders;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes this replica's uplinks in the cell's {@link UplinkHolders}: a worker's field (this
 * replica's peer address, its link count) is written when the count changes, refreshed every
 * {@link UplinkHolders#REFRESH_INTERVAL}, removed when the last link of the worker here closes, and
 * every field is removed at {@link #close} (a stop without a drain).
 *
 * <p>At a drain, {@link #withdraw} comes first: from then on every field of this replica is a
 * {@link UplinkHolders#moving} one (no holder: the drain is sending the links away, and their
 * workers re-dial them elsewhere at once), written again when a worker's last link here closes,
 * which is when its worker re-dials, and then left to expire ({@link UplinkHolders#MOVING_TTL}).
 *
 * <pre>
 *   PUBLISHING --withdraw--> WITHDRAWING --close--> CLOSED
 *   PUBLISHING --close--> CLOSED (fields removed)
 * </pre>
 *
 * <p>A write that fails (Redis down) is not retried on its own: the next refresh writes every
 * worker again, and tries every failed removal again (the worker stays in {@code published} until
 * its removal succeeded), so the registry is right again at most one interval after Redis is back.
 *
 * <p>Threading: every decision runs on one {@link EventExecutor}, which confines {@code published}
 * (the workers this replica has a field for); Lettuce keeps one connection's commands in order,
 * so a later count is never overwritten by an earlier one.
 */
final class UplinkRegistry implements WorkerDirectory.Listener, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(UplinkRegistry.class);

    /** How long {@link #close} waits for this replica's fields to be removed. */
    static final Duration WITHDRAW_TIMEOUT = Duration.ofSeconds(1);

    private final UplinkHolders holders;
    private final WorkerDirectory directory;
    private final String self;
    private final EventExecutor executor;
    private final Set<String> published = new HashSet<>(); // confined to executor
    private volatile boolean withdrawing; // written on the drain's thread, read on executor
    private volatile boolean closed;
    private final ScheduledFuture<?> refresh;

    UplinkRegistry(UplinkHolders holders, WorkerDirectory directory, String self, EventExecutor executor) {
        this.holders = requireNonNull(holders, "holders");
        this.directory = requireNonNull(directory, "directory");
        this.self = requireNonNull(self, "self");
        this.executor = requireNonNull(executor, "executor");
        long every = UplinkHolders.REFRESH_INTERVAL.toNanos();
        directory.addListener(this);
        this.refresh = executor.scheduleAtFixedRate(this::refreshAll, 0, every, TimeUnit.NANOSECONDS);
    }

    @Override
    public void linksChanged(String workerId) {
        if (!closed) {
            executor.execute(() -> publish(workerId));
        }
    }

    private void refreshAll() {
        Set<String> ids = new HashSet<>(directory.workerIds());
        ids.addAll(published);
        for (String id : ids) {
            publish(id);
        }
    }

    private void publish(String workerId) {
        if (closed) {
            return;
        }
        int links = directory.links(workerId).size();
        if (withdrawing) {
            if (published.contains(workerId) || links > 0) {
                holders.moving(workerId, self).whenComplete((v, e) -> failed("moving", workerId, e));
            }
            if (links == 0) {
                published.remove(workerId); // its worker re-dials now; the field expires on its own
            } else {
                published.add(workerId);
            }
            return;
        }
        if (links > 0) {
            published.add(workerId);
            holders.put(workerId, self, links).whenComplete((v, e) -> failed("write", workerId, e));
        } else if (published.remove(workerId)) {
            holders.remove(workerId, self).whenComplete((v, e) -> {
                if (e != null) {
                    failed("remove", workerId, e);
                    executor.execute(() -> removeAgain(workerId));
                }
            });
        }
    }

    /**
     * A removal failed (Redis down, or refused it): the worker is published again, so the next
     * refresh tries the removal once more (or writes its links, if one came back meanwhile).
     * Regression: the worker was forgotten before the removal succeeded, and its stale field stood
     * until its own expiry, {@link UplinkHolders#FIELD_TTL}.
     */
    private void removeAgain(String workerId) {
        if (!closed) {
            published.add(workerId);
        }
    }

    private static void failed(String what, String workerId, Throwable e) {
        if (e != null) {
            log.debug(
                    "uplink registry: {} for worker {} failed (the next refresh writes it again): {}",
                    what,
                    workerId,
                    e.toString());
        }
    }

    /**
     * Turns every field of this replica into a moving one (the drain's first step), waiting at most
     * {@link #WITHDRAW_TIMEOUT} for the writes. Idempotent.
     */
    void withdraw() {
        if (closed || withdrawing) {
            return;
        }
        withdrawing = true;
        CompletableFuture<Void> written = new CompletableFuture<>();
        executor.execute(() -> {
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (String id : published) {
                all.add(holders.moving(id, self).toCompletableFuture());
            }
            CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]))
                    .whenComplete((v, e) -> written.complete(null));
        });
        await(written, "marked as moving");
    }

    /**
     * Stops refreshing; without a {@link #withdraw} first, removes every field of this replica,
     * waiting at most {@link #WITHDRAW_TIMEOUT} (after one, its moving fields expire on their own).
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        refresh.cancel(false);
        if (withdrawing) {
            return;
        }
        CompletableFuture<Void> removed = new CompletableFuture<>();
        executor.execute(() -> {
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (String id : published) {
                all.add(holders.remove(id, self).toCompletableFuture());
            }
            published.clear();
            CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]))
                    .whenComplete((v, e) -> removed.complete(null));
        });
        await(removed, "removed");
    }

    private static void await(CompletableFuture<Void> writes, String what) {
        try {
            writes.get(WITHDRAW_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException | ExecutionException e) {
            log.warn(
                    "uplink registry: this replica's fields were not all {} within {} ms; they expire by their until",
                    what,
                    WITHDRAW_TIMEOUT.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
