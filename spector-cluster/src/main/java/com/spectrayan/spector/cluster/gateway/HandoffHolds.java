package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import com.github.benmanes.caffeine.cache.Ticker;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The requests the whole gateway holds while their namespace is handed from one owner to another
 * (an owner's {@code 503} with {@code X-Spector-Handoff}), bounded in count ({@link
 * ForwarderSpec#handoffMaxHeld()}) and in body bytes ({@link ForwarderSpec#handoffMaxHeldBytes()}),
 * and indexed by routing key so that the end of a move releases every request of its key at once.
 *
 * <p>Design notes (after Vitess's buffering of a planned reparent: a bounded buffer, a window per
 * request, and a drain on completion):
 *
 * <ul>
 *   <li><b>Admission.</b> {@link #tryHold} reserves one slot and the request's kept body bytes, or
 *       nothing; a refused request is answered 503 at once (fail closed, never grow the buffer).
 *       A held body that grows ({@link Hold#grow}) reserves its new bytes the same way. Holds for
 *       an owner behind the ring ({@code owner-lagging}) may take at most a {@link #LAGGING_SHARE}
 *       of the slots: an owner that stops following the ring would otherwise fill every slot, and
 *       the real moves of every other namespace would be answered 503 (a review found that).
 *   <li><b>Drain.</b> {@link #wake} (a route invalidation for the key, or another request of the
 *       key that learned the new owner) takes the key's holds out of the index, gives back their
 *       slots and bytes, and runs each hold's wake-up once, on the caller's thread: the exchange
 *       hops to its own event loop and sends the request on.
 *   <li><b>Polling.</b> Each held exchange ticks every {@link #POLL_INTERVAL} on its own event
 *       loop (a lagging owner's sooner: {@link #nextLaggingPoll}); {@link #claimPoll} lets one
 *       tick per key per interval through, so a key with many held requests costs its old owner
 *       one request per interval, not one per held request.
 *   <li><b>A race.</b> The move may end while a 503 is on its way: {@link #wokenSince} remembers
 *       each key's last wake-up, so a request whose attempt went out before it is sent on at once.
 *   <li><b>The window</b> (the hold's time limit) and the timers are the exchange's; this class
 *       schedules nothing and reads time (for the wake-ups) from the injected ticker.
 * </ul>
 *
 * <p>Concurrency: thread-safe and lock-free for the counters; the index is a {@link
 * ConcurrentHashMap} whose per-key entries change only inside its atomic {@code compute} calls.
 * A hold's slot is given back exactly once (guarded by its {@code over} flag).
 */
final class HandoffHolds {
    /**
     * How often a held exchange asks the old owner whether the move completed, should the
     * invalidation be missed (Redis down, a message lost): 100 ms, the number.
     */
    static final Duration POLL_INTERVAL = Duration.ofMillis(100);

    /**
     * The first poll of an owner that answered {@code owner-lagging}: 10 ms. Such an owner reads
     * the ring the gateway already has, from the same Redis key and announcement, so it is
     * usually behind by a millisecond or two, not by a move's length; its polls double from here
     * up to {@link #POLL_INTERVAL} (Envoy's retry back-off, with a base of 10 ms instead of 25).
     */
    static final Duration LAGGING_FIRST_POLL = Duration.ofMillis(10);

    /**
     * Keys whose last wake-up is remembered: past it the ones older than {@link #RECENT_WAKE} are
     * forgotten. A wake-up that raced a hand-off 503 (the move ended while the 503 was on its way)
     * is then still seen, so that request goes on at once instead of at the next poll. The next
     * pruning comes when the map has doubled what the last one left (at least this many), so a
     * burst of wake-ups (a ring change invalidates thousands of keys a second) costs each wake-up
     * a constant share of the scans, not a scan of the map each (a review found that: above 1 024
     * keys woken within a second, every wake-up scanned them all).
     */
    static final int MAX_RECENT_WAKES = 1024;

    /** How long a wake-up is remembered at least: ten poll intervals. */
    static final Duration RECENT_WAKE = POLL_INTERVAL.multipliedBy(10);

    /** The share of the slots that holds for a lagging owner may take: one in four. */
    static final int LAGGING_SHARE = 4;

    private final int maxHeld;
    /** The slots holds for a lagging owner may take: {@code maxHeld / LAGGING_SHARE}, at least 1. */
    private final int maxLagging;

    private final long maxHeldBytes;
    private final AtomicInteger held = new AtomicInteger();
    private final AtomicInteger laggingHeld = new AtomicInteger();
    private final AtomicLong heldBytes = new AtomicLong();
    private final ConcurrentHashMap<RoutingKey, KeyHolds> byKey = new ConcurrentHashMap<>();
    /** When each key was last woken ({@link #wokenSince}); pruned past {@link #pruneAt}. */
    private final ConcurrentHashMap<RoutingKey, Long> lastWake = new ConcurrentHashMap<>();
    /**
     * The size of {@link #lastWake} that starts its next pruning: twice what the last one left, at
     * least {@link #MAX_RECENT_WAKES}; {@code Integer.MAX_VALUE} while one runs (one at a time).
     */
    private final AtomicInteger pruneAt = new AtomicInteger(MAX_RECENT_WAKES);
    /** The prunings run (tests: bursts of wake-ups prune a logarithmic number of times). */
    private final AtomicInteger prunings = new AtomicInteger();

    private final Ticker ticker;

    HandoffHolds(int maxHeld, long maxHeldBytes) {
        this(maxHeld, maxHeldBytes, Ticker.systemTicker());
    }

    HandoffHolds(int maxHeld, long maxHeldBytes, Ticker ticker) {
        this.ticker = requireNonNull(ticker, "ticker");
        if (maxHeld < 0) {
            throw new IllegalArgumentException("maxHeld: " + maxHeld + " (expected: >= 0)");
        }
        if (maxHeldBytes < 0) {
            throw new IllegalArgumentException("maxHeldBytes: " + maxHeldBytes + " (expected: >= 0)");
        }
        this.maxHeld = maxHeld;
        this.maxLagging = maxHeld == 0 ? 0 : Math.max(1, maxHeld / LAGGING_SHARE);
        this.maxHeldBytes = maxHeldBytes;
    }

    /**
     * Holds a request of {@code key} whose kept body is {@code bytes} long, or answers null when the
     * count or the bytes bound would be passed, or, for a {@code lagging} owner's request, its
     * share of the count ({@link #LAGGING_SHARE}). {@code wake} runs once when the key's move ends
     * ({@link #wake}), on that caller's thread; it does not run after {@link Hold#release}.
     */
    @Nullable
    Hold tryHold(RoutingKey key, long bytes, boolean lagging, Runnable wake) {
        requireNonNull(key, "key");
        requireNonNull(wake, "wake");
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        if (lagging && !reserve(laggingHeld, maxLagging)) {
            return null;
        }
        if (!reserve(held, maxHeld)) {
            if (lagging) {
                laggingHeld.decrementAndGet();
            }
            return null;
        }
        if (!reserveBytes(bytes)) {
            held.decrementAndGet();
            if (lagging) {
                laggingHeld.decrementAndGet();
            }
            return null;
        }
        Hold h = new Hold(key, bytes, lagging, wake);
        byKey.compute(key, (k, holds) -> {
            KeyHolds kh = holds != null ? holds : new KeyHolds();
            kh.holds.add(h);
            return kh;
        });
        return h;
    }

    /** Ends the holds of {@code key}: each gives back its slot and bytes, then its wake-up runs. */
    void wake(RoutingKey key) {
        long now = ticker.read();
        lastWake.put(key, now);
        int at = pruneAt.get();
        if (lastWake.size() > at && pruneAt.compareAndSet(at, Integer.MAX_VALUE)) {
            prunings.incrementAndGet();
            lastWake.values().removeIf(t -> now - t > RECENT_WAKE.toNanos());
            pruneAt.set((int) Math.min(Integer.MAX_VALUE - 1L, Math.max(MAX_RECENT_WAKES, 2L * lastWake.size())));
        }
        KeyHolds kh = byKey.remove(key);
        if (kh == null) {
            return;
        }
        for (Hold h : kh.holds) {
            if (h.giveBack()) {
                h.wake.run();
            }
        }
    }

    /**
     * Answers whether a held exchange of {@code key} may poll the old owner now ({@code nowNanos}):
     * true for the first tick at least {@code intervalNanos} ({@link #POLL_INTERVAL}, or a lagging
     * owner's back-off) after the key's last poll (or its first hold).
     */
    boolean claimPoll(RoutingKey key, long nowNanos, long intervalNanos) {
        KeyHolds kh = byKey.get(key);
        if (kh == null) {
            return false;
        }
        long last = kh.lastPollNanos.get();
        if (last != Long.MIN_VALUE && nowNanos - last < intervalNanos) {
            return false;
        }
        return kh.lastPollNanos.compareAndSet(last, nowNanos);
    }

    /**
     * Returns the wait before a lagging owner's next poll, in nanoseconds: {@link
     * #LAGGING_FIRST_POLL} after the first answer ({@code previousNanos} 0), then twice the
     * previous wait, at most {@link #POLL_INTERVAL}: 10, 20, 40, 80, 100, 100, ... ms.
     */
    static long nextLaggingPoll(long previousNanos) {
        return previousNanos <= 0 ? LAGGING_FIRST_POLL.toNanos() : Math.min(POLL_INTERVAL.toNanos(), 2 * previousNanos);
    }

    /** Answers whether {@code key} was woken at or after {@code sinceNanos} (the ticker's time). */
    boolean wokenSince(RoutingKey key, long sinceNanos) {
        Long t = lastWake.get(key);
        return t != null && t - sinceNanos >= 0;
    }

    /** Returns the prunings of the remembered wake-ups so far. */
    int prunings() {
        return prunings.get();
    }

    /** Returns the requests held now. */
    int held() {
        return held.get();
    }

    /** Returns the body bytes held now. */
    long heldBytes() {
        return heldBytes.get();
    }

    private static boolean reserve(AtomicInteger count, int max) {
        int n;
        do {
            n = count.get();
            if (n >= max) {
                return false;
            }
        } while (!count.compareAndSet(n, n + 1));
        return true;
    }

    private boolean reserveBytes(long bytes) {
        long n;
        do {
            n = heldBytes.get();
            if (n + bytes > maxHeldBytes) {
                return false;
            }
        } while (!heldBytes.compareAndSet(n, n + bytes));
        return true;
    }

    /** The holds of one key. */
    private static final class KeyHolds {
        final Set<Hold> holds = ConcurrentHashMap.newKeySet();
        /** The last poll's time, or {@link Long#MIN_VALUE} before the first (the first waits an interval). */
        final AtomicLong lastPollNanos = new AtomicLong(Long.MIN_VALUE);
    }

    /** One held request's slot and bytes. */
    final class Hold {
        private final RoutingKey key;
        private final Runnable wake;
        /** Taken for a lagging owner: gives back a {@link #laggingHeld} slot too. */
        private final boolean lagging;

        private final AtomicBoolean over = new AtomicBoolean();
        /** The bytes reserved; changed only by the owning exchange's loop, read by {@link #giveBack}. */
        private final AtomicLong bytes;

        private Hold(RoutingKey key, long bytes, boolean lagging, Runnable wake) {
            this.key = key;
            this.wake = wake;
            this.lagging = lagging;
            this.bytes = new AtomicLong(bytes);
        }

        /** Reserves {@code more} bytes for a body that grew while held; false (nothing taken) past the bound. */
        boolean grow(long more) {
            if (over.get()) {
                return true;
            }
            if (!reserveBytes(more)) {
                return false;
            }
            bytes.addAndGet(more);
            if (over.get()) {
                // given back meanwhile, without these bytes: give them back too
                heldBytes.addAndGet(-bytes.getAndSet(0));
            }
            return true;
        }

        /** Gives the slot and bytes back without waking the exchange (it ended, or it was woken). */
        void release() {
            if (giveBack()) {
                byKey.computeIfPresent(key, (k, kh) -> {
                    kh.holds.remove(this);
                    return kh.holds.isEmpty() ? null : kh;
                });
            }
        }

        /** Answers whether this call gave the slot back (the first one does). */
        private boolean giveBack() {
            if (!over.compareAndSet(false, true)) {
                return false;
            }
            held.decrementAndGet();
            if (lagging) {
                laggingHeld.decrementAndGet();
            }
            heldBytes.addAndGet(-bytes.getAndSet(0));
            return true;
        }
    }
}
