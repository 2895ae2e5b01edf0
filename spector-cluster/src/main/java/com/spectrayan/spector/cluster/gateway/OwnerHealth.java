package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Passive health per owner: an owner that fails {@link ForwarderSpec#ownerDownAfter()} attempts in
 * a row (no connection, or the connection closed or reset before its response head) is marked
 * down for a backoff, and its requests are answered at once ({@code 503 OWNER_UNREACHABLE} with
 * {@code Retry-After}) instead of each one waiting for the connect timeout. Single-writer ownership
 * means there is no other node to fail over to: failing fast is the kindness. After the backoff one
 * request at a time goes through as a probe; its response head (any status) marks the owner up,
 * its failure doubles the backoff, up to {@link ForwarderSpec#ownerDownBackoffMax()}. Envoy's
 * outlier detection ejects a host the same way, but for a pool with other hosts; twemproxy's
 * {@code server_failure_limit} is the single-host version of it.
 *
 * <pre>
 *   UP ──N failures in a row──> DOWN(until = now + backoff)
 *   DOWN ──a request after until──> PROBING (that request goes through; the others are refused)
 *   PROBING ──its head──> UP (failures 0, backoff reset)
 *   PROBING ──its failure──> DOWN(backoff x 2, capped)
 *   PROBING ──it ended without either (cancelled, timed out)──> DOWN(until = now): the next request probes
 * </pre>
 *
 * <p>An owner has an entry only once it failed. When a new entry is made, the entries of owners
 * the ring no longer names are dropped ({@code isMember}), so the map holds the current ring's
 * failing owners plus at most the one just added, however often the ring changes; an owner
 * removed and added back starts up.
 *
 * <p>Thread-safety: each owner's state is guarded by its own monitor; exchanges of every event loop
 * call in. A timeout is not a failure here: a slow owner is alive.
 */
final class OwnerHealth {
    private static final Logger log = LoggerFactory.getLogger(OwnerHealth.class);

    /** What an attempt may do. */
    enum Admission {
        /** The owner is up: go. */
        GO,
        /** The owner was down and its backoff passed: go, as the one probe. */
        PROBE,
        /** The owner is down: answer at once. */
        REFUSE
    }

    private final int failuresToDown;
    private final long backoffNanos;
    private final long maxBackoffNanos;
    private final Ticker ticker;
    private final Predicate<String> isMember;
    private final ConcurrentHashMap<String, State> owners = new ConcurrentHashMap<>();

    /**
     * @param isMember answers whether the current ring names an owner: an entry of one it does not
     *     is dropped when the next entry is made
     */
    OwnerHealth(ForwarderSpec spec, Ticker ticker, Predicate<String> isMember) {
        this.failuresToDown = spec.ownerDownAfter();
        this.backoffNanos = spec.ownerDownBackoff().toNanos();
        this.maxBackoffNanos = spec.ownerDownBackoffMax().toNanos();
        this.ticker = requireNonNull(ticker, "ticker");
        this.isMember = requireNonNull(isMember, "isMember");
    }

    private State state(String owner) {
        State s = owners.get(owner);
        if (s != null) {
            return s;
        }
        owners.keySet().removeIf(o -> !o.equals(owner) && !isMember.test(o)); // owners the ring dropped
        return owners.computeIfAbsent(owner, o -> new State());
    }

    /** Returns how many owners have an entry (test hook: the bound above). */
    int tracked() {
        return owners.size();
    }

    /** Answers whether an attempt to {@code owner} may go now. */
    Admission admit(String owner) {
        if (failuresToDown == 0 || owners.isEmpty()) { // no owner failed: the usual request
            return Admission.GO;
        }
        State s = owners.get(owner);
        if (s == null) {
            return Admission.GO;
        }
        synchronized (s) {
            if (!s.down) {
                return Admission.GO;
            }
            if (s.probing || ticker.read() - s.downUntil < 0) {
                return Admission.REFUSE;
            }
            s.probing = true;
            return Admission.PROBE;
        }
    }

    /** Returns how long {@code owner} stays down from now (0 when it is up or may be probed). */
    Duration downFor(String owner) {
        State s = owners.get(owner);
        if (s == null) {
            return Duration.ZERO;
        }
        synchronized (s) {
            long left = s.downUntil - ticker.read();
            return s.down && left > 0 ? Duration.ofNanos(left) : Duration.ZERO;
        }
    }

    /** Answers whether {@code owner} is marked down. */
    boolean isDown(String owner) {
        State s = owners.get(owner);
        if (s == null) {
            return false;
        }
        synchronized (s) {
            return s.down;
        }
    }

    /** An attempt to {@code owner} got a response head: it is up. */
    void succeeded(String owner) {
        if (failuresToDown == 0) {
            return;
        }
        State s = owners.get(owner);
        if (s == null) {
            return;
        }
        boolean wasDown;
        synchronized (s) {
            wasDown = s.down;
            s.failures = 0;
            s.down = false;
            s.probing = false;
            s.backoff = 0;
        }
        if (wasDown) {
            log.info("owner {} answered again: marked up", owner);
        }
    }

    /** An attempt to {@code owner} had no connection, or lost it before the response head. */
    void failed(String owner, boolean probe) {
        if (failuresToDown == 0) {
            return;
        }
        State s = state(owner);
        long downForNanos;
        synchronized (s) {
            if (s.down && !probe) {
                return; // an attempt admitted before the owner went down
            }
            if (!s.down) {
                s.failures++;
                if (s.failures < failuresToDown) {
                    return;
                }
                s.down = true;
                s.backoff = backoffNanos;
            } else {
                s.backoff = Math.min(maxBackoffNanos, s.backoff * 2);
            }
            s.probing = false;
            s.downUntil = ticker.read() + s.backoff;
            downForNanos = s.backoff;
        }
        log.warn(
                "owner {} failed {}: marked down for {} ms, its requests are answered 503 at once meanwhile",
                owner,
                probe ? "its probe" : failuresToDown + " attempts in a row",
                downForNanos / 1_000_000);
    }

    /** The probe to {@code owner} ended with no verdict (cancelled, timed out): the next request probes. */
    void probeEnded(String owner) {
        State s = owners.get(owner);
        if (s == null) {
            return;
        }
        synchronized (s) {
            if (s.probing) {
                s.probing = false;
                s.downUntil = ticker.read();
            }
        }
    }

    /** One owner's state; every field guarded by the instance's monitor. */
    private static final class State {
        int failures;
        boolean down;
        boolean probing;
        long downUntil;
        long backoff;
    }
}
