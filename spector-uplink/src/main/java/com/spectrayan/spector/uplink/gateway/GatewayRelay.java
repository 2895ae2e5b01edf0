package com.spectrayan.spector.uplink.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.gateway.Failures;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;

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
 * response carries the length its worker declared ({@link RelayedResponse#contentLength()}), and
 * its body fails INTERNAL when the worker's chunks run past it or end short of it.
 */
public final class GatewayRelay {
    private final WorkerDirectory directory;
    private final Duration deadline;
    private final int maxPerWorker;
    private final long maxUnreadBytes;
    private final long maxUnreadAll;
    /** The response bytes every v1 relay holds unread now, together; bounded by {@link #maxUnreadAll}. */
    private final AtomicLong unreadAll = new AtomicLong();

    private final ScheduledExecutorService scheduler;
    private final ConcurrentHashMap<String, RelayLimiter> limiters = new ConcurrentHashMap<>();
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
        this.scheduler = requireNonNull(scheduler, "scheduler");
    }

    /**
     * Relays a call to a worker. The stage completes with the response once its head arrives (a
     * null body for a response without one: HEAD, 1xx, 204, 205, 304), or fails: {@code
     * WORKER_UNREACHABLE} when the worker has no live uplink (before anything is sent), when the
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
                deadline,
                maxUnreadBytes,
                unreadAll,
                maxUnreadAll,
                scheduler);
        exchange.start();
        return exchange.result();
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

    /** Returns the relays to a worker that hold a slot now (a v2 relay until its caller took its body). */
    public int running(String workerId) {
        RelayLimiter limiter = limiters.get(workerId);
        return limiter == null ? 0 : limiter.running();
    }

    /**
     * Returns how many workers this relay keeps a slot counter for: only those with a relay
     * running or waiting, so the state of a worker that is gone is dropped with its last relay.
     */
    public int trackedWorkers() {
        return limiters.size();
    }
}
