package com.spectrayan.spector.uplink.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.internal.gateway.Failures;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.wire.StatusReport;
import io.netty.channel.EventLoop;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * One of a worker's live uplinks as the gateway holds it: the client, the link's slot (the
 * worker's own number for it, {@code X-Spector-Link}), the relays running on it, and the {@code
 * status.get} refresh. A read not answered within its timeout is a miss; {@link
 * Limits#STATUS_MISSES_TO_CLOSE} misses in a row close the link, which fails every call on it
 * (relays included) with {@code WORKER_UNREACHABLE}.
 *
 * <p>Going away (a drain): {@link #goAway} takes the link out of {@link WorkerDirectory#live} at
 * once, so no new relay picks it, and closes it with WebSocket's 1001 (the worker re-dials at once)
 * as soon as no relay runs on it, now when none does. A relay that picked the link in the
 * nanoseconds before {@code goAway} and counts itself after it may find the link closed; it fails
 * {@code WORKER_UNREACHABLE} like any relay on a link that went.
 */
public final class WorkerLink {
    private static final AtomicLong IDS = new AtomicLong();

    private final String workerId;
    private final int slot;
    private final long id = IDS.incrementAndGet();
    private final String remote;
    private final Instant connectedAt;
    private final RealGatewayWorkerClient client;
    /** Relays that picked this link and have not ended; {@link WorkerDirectory#live} reads it. */
    private final AtomicInteger activeRelays = new AtomicInteger();

    /** Why the link is going away, once {@link #goAway} was called; null before. */
    private volatile @Nullable String goingAway;

    private final AtomicInteger misses = new AtomicInteger();
    private volatile @Nullable StatusReport lastStatus;

    /**
     * Creates the link of worker {@code workerId} over its client, one from {@link
     * GatewayWorkerClient#over} (the relay runs over that client's uplink).
     *
     * @throws IllegalArgumentException when the client is another implementation
     */
    public WorkerLink(String workerId, GatewayWorkerClient client) {
        this(workerId, 0, "in-memory", Instant.now(), client);
    }

    /**
     * Creates link {@code slot} of worker {@code workerId}, connected from {@code remote} at
     * {@code connectedAt}, over its client (one from {@link GatewayWorkerClient#over}).
     *
     * @throws IllegalArgumentException when the client is another implementation, or the slot is
     *     negative
     */
    public WorkerLink(String workerId, int slot, String remote, Instant connectedAt, GatewayWorkerClient client) {
        this.workerId = requireNonNull(workerId, "workerId");
        if (slot < 0) {
            throw new IllegalArgumentException("slot " + slot + " is negative");
        }
        this.slot = slot;
        this.remote = requireNonNull(remote, "remote");
        this.connectedAt = requireNonNull(connectedAt, "connectedAt");
        requireNonNull(client, "client");
        if (!(client instanceof RealGatewayWorkerClient real)) {
            throw new IllegalArgumentException("client: a " + client.getClass().getName()
                    + " (expected: a client from GatewayWorkerClient.over, the only one a relay runs over)");
        }
        this.client = real;
    }

    /** Returns the worker's id. */
    public String workerId() {
        return workerId;
    }

    /** Returns the worker's number for this link: a re-dial of the same slot replaces it. */
    public int slot() {
        return slot;
    }

    /** Returns this gateway's id for the link, unique while the process lives. */
    public long id() {
        return id;
    }

    /** Returns where the link was dialled from. */
    public String remote() {
        return remote;
    }

    /** Returns when the link was accepted. */
    public Instant connectedAt() {
        return connectedAt;
    }

    /** Returns the relays running on this link now. */
    public int activeRelays() {
        return activeRelays.get();
    }

    /** A relay picked this link. */
    void relayStarted() {
        activeRelays.incrementAndGet();
    }

    /** A relay that picked this link ended: the last one closes a link that is going away. */
    void relayEnded() {
        String reason = goingAway;
        if (activeRelays.decrementAndGet() == 0 && reason != null) {
            client.goAway(reason);
        }
    }

    /**
     * Takes the link out of service: no new relay picks it, and it closes with 1001 Going Away and
     * {@code reason} once the relays running on it ended (now when none does). A v2 link is told at
     * once with a GOAWAY (PROTOCOL.md section 9.8), so its worker dials the slot again (to another
     * replica: a draining gateway accepts no uplink) while this link finishes its relays, instead
     * of after the close: the worker stays reachable through the cell the whole drain. Idempotent.
     */
    public void goAway(String reason) {
        requireNonNull(reason, "reason");
        if (goingAway == null) {
            goingAway = reason;
            if (activeRelays.get() > 0) {
                client.announceGoAway(reason);
            }
        }
        if (activeRelays.get() == 0) {
            client.goAway(goingAway);
        }
    }

    /**
     * Closes the link now with 1001 Going Away and {@code reason}, relays on it or not (they fail
     * {@code WORKER_UNREACHABLE}): the end of a drain's timeout.
     */
    public void goAwayNow(String reason) {
        requireNonNull(reason, "reason");
        if (goingAway == null) {
            goingAway = reason;
        }
        client.goAway(reason);
    }

    /** Answers whether {@link #goAway} was called: the link takes no new relay. */
    public boolean isGoingAway() {
        return goingAway != null;
    }

    /**
     * Answers whether a new relay may pick this link: it is open, this gateway did not send it
     * away, and the worker did not either (its GOAWAY on a v2 link, section 9.8: every stream
     * opened after it would be refused).
     */
    boolean takesNewRelays() {
        if (goingAway != null || !client.isOpen()) {
            return false;
        }
        V2Connection v2 = client.v2();
        return v2 == null || v2.opensStreams();
    }

    /** Returns the worker's client. */
    public GatewayWorkerClient client() {
        return client;
    }

    /**
     * Returns the event loop the link's channel runs on when it speaks v2 (its streams live there),
     * or null for a v1 link.
     */
    public @Nullable EventLoop eventLoop() {
        V2Connection v2 = client.v2();
        return v2 == null ? null : v2.channel().eventLoop();
    }

    /** Returns the client with its relay operations, for {@link GatewayRelay}. */
    RealGatewayWorkerClient relayClient() {
        return client;
    }

    /** Returns the client admin code uses: it has no relay operations. */
    public WorkerAdminClient admin() {
        GatewayWorkerClient c = client;
        return new WorkerAdminClient() {
            @Override
            public CompletionStage<StatusReport> statusGet() {
                return c.statusGet();
            }
        };
    }

    /** Answers whether the link is open. */
    public boolean isOpen() {
        return client.isOpen();
    }

    /** Closes the link; its calls fail {@code WORKER_UNREACHABLE}. */
    public void close(String reason) {
        client.close(reason);
    }

    /** Returns a stage that completes once the link is closed. */
    public CompletionStage<Void> closed() {
        return client.closed();
    }

    /** Returns the last status the worker reported, or null before the first answer. */
    public @Nullable StatusReport lastStatus() {
        return lastStatus;
    }

    /** Returns the misses in a row so far. */
    public int misses() {
        return misses.get();
    }

    /**
     * Starts the refresh: a {@code status.get} every {@code interval} after the previous one
     * settled, each waited for at most {@code timeout}, until the link closes.
     */
    public void startRefresh(ScheduledExecutorService scheduler, Duration interval, Duration timeout) {
        if (!isOpen()) {
            return;
        }
        scheduler.schedule(
                () -> refresh(scheduler, timeout)
                        .whenComplete((report, error) -> startRefresh(scheduler, interval, timeout)),
                interval.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    /** Starts the refresh with {@link Limits#STATUS_TIMEOUT} as the timeout. */
    public void startRefresh(ScheduledExecutorService scheduler, Duration interval) {
        startRefresh(scheduler, interval, Limits.STATUS_TIMEOUT);
    }

    /**
     * Reads the status once, waiting at most {@code timeout}. A timeout counts as a miss, and the
     * link closes at {@link Limits#STATUS_MISSES_TO_CLOSE} misses in a row; an answer resets the
     * count.
     */
    public CompletionStage<StatusReport> refresh(ScheduledExecutorService scheduler, Duration timeout) {
        CompletableFuture<StatusReport> bounded = new CompletableFuture<>();
        ScheduledFuture<?> timer = scheduler.schedule(
                () -> bounded.completeExceptionally(new TimeoutException(
                        "worker " + workerId + " did not answer status.get within " + timeout.toMillis() + " ms")),
                timeout.toMillis(),
                TimeUnit.MILLISECONDS);
        client.statusGet().whenComplete((report, error) -> {
            timer.cancel(false);
            if (error != null) {
                bounded.completeExceptionally(Failures.unwrap(error));
            } else {
                bounded.complete(report);
            }
        });
        return bounded.whenComplete((report, error) -> {
            if (error == null) {
                misses.set(0);
                lastStatus = report;
            } else if (Failures.unwrap(error) instanceof TimeoutException
                    && misses.incrementAndGet() >= Limits.STATUS_MISSES_TO_CLOSE) {
                close("worker " + workerId + " missed " + Limits.STATUS_MISSES_TO_CLOSE + " status.get reads in a row");
            }
        });
    }
}
