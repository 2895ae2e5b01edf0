package com.spectrayan.spector.uplink.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.gateway.Failures;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * Relays one HTTP exchange to a worker over its uplink (DESIGN.md section 5, docs/PROTOCOL.md):
 * {@code relay.request}, the request body as {@code relay.body} calls (at most {@link
 * Limits#UNANSWERED_BODIES} unanswered, parts of at most {@link Limits#CHUNK_BYTES}), and the
 * response from {@code relay-head} and {@code relay-chunk} pushes, with at most {@link
 * Limits#UNREAD_RELAY_BYTES} unread. At most {@code maxPerWorker} relays run at once per worker,
 * a v2 relay with a body holding its slot until its caller took that body (read it whole,
 * cancelled it, or aborted), not only until the worker ended it, so a worker's slots bound what
 * its ended streams leave unread here as its open streams' windows do; a deadline covers the whole
 * exchange from {@link #relay}, the wait for a slot and that body included. A
 * relayed upgrade (docs/PROTOCOL.md section 9.7) also takes, before anything is sent and without
 * waiting, one of its worker's {@code maxUpgradesPerWorker} upgrade permits ({@link
 * Limits#RELAY_UPGRADES_PER_WORKER}), or fails at once {@code GATEWAY_ROUTING_FAILURE} (503,
 * {@code Retry-After: 1}); it waits for a slot as any relay while its request is set up, gives
 * the slot back at its {@code 101} and keeps only the permit while it is switched, so long-lived
 * WebSockets never hold the slots ordinary relays wait for (as Envoy and HAProxy count long-lived
 * streams apart from requests). A non-{@code 101} answer keeps both until it ends as an ordinary
 * relay. Slots and share together ({@code 8 + 4} by default) stay within the streams a worker
 * takes on one link ({@link Limits#ACTIVE_RELAYS_PER_CONNECTION}, 16). A
 * response carries the length its worker declared ({@link RelayedResponse#contentLength()}), and
 * its body fails INTERNAL when the worker's chunks run past it or end short of it.
 */
public final class GatewayRelay {
    private final WorkerDirectory directory;
    private final Duration deadline;
    private final int maxPerWorker;
    private final int maxUpgradesPerWorker;
    private final long maxUnreadBytes;
    private final long maxUnreadAll;
    /** The response bytes every v1 relay holds unread now, together; bounded by {@link #maxUnreadAll}. */
    private final AtomicLong unreadAll = new AtomicLong();

    private final ScheduledExecutorService scheduler;
    private final ConcurrentHashMap<String, RelayLimiter> limiters = new ConcurrentHashMap<>();
    /** Each worker's share of switched upgrades, taken only with {@link RelayLimiter#tryAcquire}. */
    private final ConcurrentHashMap<String, RelayLimiter> upgradeLimiters = new ConcurrentHashMap<>();

    private final AtomicLong relayIds = new AtomicLong();

    /** Creates a relay with the default deadline and per-worker limit. */
    public GatewayRelay(WorkerDirectory directory, ScheduledExecutorService scheduler) {
        this(directory, Limits.RELAY_DEADLINE, Limits.RELAYS_PER_WORKER, scheduler);
    }

    /**
     * Creates a relay.
     *
     * @param directory the live worker links
     * @param deadline the deadline of one whole exchange
     * @param maxPerWorker the relays at once per worker
     * @param scheduler runs the deadlines
     */
    public GatewayRelay(
            WorkerDirectory directory, Duration deadline, int maxPerWorker, ScheduledExecutorService scheduler) {
        this(directory, deadline, maxPerWorker, Limits.UNREAD_RELAY_BYTES, scheduler);
    }

    /**
     * Creates a relay with a bound on the response bytes buffered for a caller that does not read
     * ({@link Limits#UNREAD_RELAY_BYTES} in the other constructors).
     *
     * @param directory the live worker links
     * @param deadline the deadline of one whole exchange
     * @param maxPerWorker the relays at once per worker
     * @param maxUnreadBytes the response bytes one relay buffers unread before it fails
     * @param scheduler runs the deadlines
     */
    public GatewayRelay(
            WorkerDirectory directory,
            Duration deadline,
            int maxPerWorker,
            long maxUnreadBytes,
            ScheduledExecutorService scheduler) {
        this(directory, deadline, maxPerWorker, maxUnreadBytes, Limits.UNREAD_RELAY_BYTES_ALL, scheduler);
    }

    /**
     * Creates a relay with bounds on the response bytes buffered for callers that do not read: one
     * relay's, and every v1 relay's together ({@link Limits#UNREAD_RELAY_BYTES_ALL} in the other
     * constructors).
     *
     * @param maxUnreadAll the response bytes every v1 relay together buffers unread before the one
     *     whose reader fell behind fails
     */
    public GatewayRelay(
            WorkerDirectory directory,
            Duration deadline,
            int maxPerWorker,
            long maxUnreadBytes,
            long maxUnreadAll,
            ScheduledExecutorService scheduler) {
        this(
                directory,
                deadline,
                maxPerWorker,
                Limits.RELAY_UPGRADES_PER_WORKER,
                maxUnreadBytes,
                maxUnreadAll,
                scheduler);
    }

    /**
     * Creates a relay with every bound given.
     *
     * @param directory the live worker links
     * @param deadline the deadline of one whole exchange
     * @param maxPerWorker the relays at once per worker
     * @param maxUpgradesPerWorker the relayed upgrades switched at once per worker, apart from
     *     {@code maxPerWorker}; past it an upgrade is refused at once
     * @param maxUnreadBytes the response bytes one relay buffers unread before it fails
     * @param maxUnreadAll the response bytes every v1 relay together buffers unread
     * @param scheduler runs the deadlines
     */
    public GatewayRelay(
            WorkerDirectory directory,
            Duration deadline,
            int maxPerWorker,
            int maxUpgradesPerWorker,
            long maxUnreadBytes,
            long maxUnreadAll,
            ScheduledExecutorService scheduler) {
        if (maxUnreadBytes < 1) {
            throw new IllegalArgumentException("maxUnreadBytes: " + maxUnreadBytes + " (expected: at least 1)");
        }
        if (maxUnreadAll < 1) {
            throw new IllegalArgumentException("maxUnreadAll: " + maxUnreadAll + " (expected: at least 1)");
        }
        this.maxUnreadBytes = maxUnreadBytes;
        this.maxUnreadAll = maxUnreadAll;
        this.directory = requireNonNull(directory, "directory");
        this.deadline = requireNonNull(deadline, "deadline");
        if (deadline.isNegative() || deadline.isZero()) {
            throw new IllegalArgumentException("deadline: " + deadline + " (expected: positive)");
        }
        if (maxPerWorker < 1) {
            throw new IllegalArgumentException("maxPerWorker: " + maxPerWorker + " (expected: at least 1)");
        }
        this.maxPerWorker = maxPerWorker;
        if (maxUpgradesPerWorker < 1) {
            throw new IllegalArgumentException(
                    "maxUpgradesPerWorker: " + maxUpgradesPerWorker + " (expected: at least 1)");
        }
        this.maxUpgradesPerWorker = maxUpgradesPerWorker;
        this.scheduler = requireNonNull(scheduler, "scheduler");
    }

    /**
     * Relays a call to a worker. The stage completes with the response once its head arrives (a
     * null body for a response without one: HEAD, 1xx, 204, 205, 304), or fails: {@code
     * WORKER_UNREACHABLE} when the worker has no live uplink (before anything is sent), {@code
     * GATEWAY_ROUTING_FAILURE} for an upgrade past its worker's share (before anything is sent), when the
     * uplink is lost, or when the deadline passes; the caller's abort reason or body error; {@code
     * INTERNAL} when the worker breaks the protocol (a body past or short of its declared length
     * included); else the worker's error. After the head, those failures fail the body instead.
     */
    public CompletionStage<RelayedResponse> relay(String workerId, RelayCall call) {
        requireNonNull(workerId, "workerId");
        requireNonNull(call, "call");
        if (directory.live(workerId) == null) {
            return CompletableFuture.failedFuture(Failures.noLink(workerId));
        }
        RelayLimiter upgrades = null;
        if (call.request().upgrade() != null) {
            upgrades = upgradePermit(workerId);
            if (upgrades == null) {
                return CompletableFuture.failedFuture(Failures.upgradesFull(workerId, maxUpgradesPerWorker));
            }
        }
        RelayLimiter limiter;
        CompletableFuture<Void> permit;
        do {
            limiter = limiters.computeIfAbsent(
                    workerId, id -> new RelayLimiter(maxPerWorker, retired -> limiters.remove(id, retired)));
            permit = limiter.acquire();
            if (permit == null) {
                limiters.remove(workerId, limiter); // It retired after the lookup: take a new one.
            }
        } while (permit == null);
        RelayExchange exchange = new RelayExchange(
                workerId,
                "g" + relayIds.incrementAndGet(),
                call,
                directory,
                limiter,
                permit,
                upgrades,
                deadline,
                maxUnreadBytes,
                unreadAll,
                maxUnreadAll,
                scheduler);
        exchange.start();
        return exchange.result();
    }

    /**
     * Takes one of the worker's upgrade permits without waiting: the limiter it is to go back to,
     * or null when the share is full.
     */
    private @Nullable RelayLimiter upgradePermit(String workerId) {
        while (true) {
            RelayLimiter upgrades = upgradeLimiters.computeIfAbsent(
                    workerId,
                    id -> new RelayLimiter(maxUpgradesPerWorker, retired -> upgradeLimiters.remove(id, retired)));
            RelayLimiter.Try taken = upgrades.tryAcquire();
            if (taken == RelayLimiter.Try.HELD) {
                return upgrades;
            }
            if (taken == RelayLimiter.Try.FULL) {
                return null;
            }
            upgradeLimiters.remove(workerId, upgrades); // It retired after the lookup: take a new one.
        }
    }

    /** Returns the response bytes every v1 relay holds unread now, together. */
    public long unreadBytes() {
        return unreadAll.get();
    }

    /**
     * Answers whether a relay failed because its worker had no live link when it was about to
     * start: nothing reached the worker nor was read of the request body, so the caller may take
     * the request to another replica that holds one.
     */
    public static boolean isNoLink(Throwable failure) {
        return Failures.isNoLink(failure);
    }

    /**
     * Returns the relays to a worker that hold a slot now (a v2 relay until its caller took its
     * body; a switched upgrade holds none).
     */
    public int running(String workerId) {
        RelayLimiter limiter = limiters.get(workerId);
        return limiter == null ? 0 : limiter.running();
    }

    /**
     * Returns the relayed upgrades to a worker that hold one of its upgrade permits now: from
     * before the request goes out until the relay ends (a switched one, and one with a body, until
     * its caller took that body too).
     */
    public int upgrades(String workerId) {
        RelayLimiter upgrades = upgradeLimiters.get(workerId);
        return upgrades == null ? 0 : upgrades.running();
    }

    /**
     * Returns how many workers this relay keeps a slot or upgrade counter for: only those with a
     * relay running or waiting, so the state of a worker that is gone is dropped with its last relay.
     */
    public int trackedWorkers() {
        Set<String> tracked = new HashSet<>(limiters.keySet());
        tracked.addAll(upgradeLimiters.keySet());
        return tracked.size();
    }
}
