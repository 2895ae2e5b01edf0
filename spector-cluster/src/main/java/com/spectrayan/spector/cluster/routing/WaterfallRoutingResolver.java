package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import com.spectrayan.spector.contract.Limits;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Resolves a {@link RoutingKey} to its owner: L1 (Caffeine), then L2 (a shared {@link
 * RoutingCache}, Redis), then L3 (the ring through {@link OwnershipResolver}).
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Never blocks.</b> {@link #resolve} answers an L1 hit at once and otherwise returns a
 *       stage completed by the L2 client's thread (or at once without L2). An L2 failure or
 *       timeout is counted and the ring answers; a Redis outage is not a routing outage.
 *   <li><b>Forward only.</b> An entry replaces a held one only if it is not older ({@link
 *       RouteEntry#isOlderThan}); an invalidation older than the held entry is ignored.
 *   <li><b>Invalidation beats a racing fill.</b> A fill (an L2 or L3 answer being cached) captures
 *       a stamp before it asks L2: the global generation and its key's stripe generation. An
 *       invalidation bumps the stripe before it evicts. The fill installs inside {@code
 *       compute} only if the stamp is unchanged, so whichever order the two run in, the
 *       invalidation wins. Stripes bound the memory; a collision only drops a fill.
 *   <li><b>Pub/sub is lossy.</b> With L2 configured, L1 starts bypassed and is used only while the
 *       invalidation subscription is confirmed ({@link #subscriptionRestored}). When it drops
 *       ({@link #subscriptionLost}), L1 is cleared and bypassed: a missed invalidation can then
 *       serve nothing stale.
 *   <li>L3 answers are cached in L1 too (not in L2: L2 holds only what owners reported), so a hot
 *       key costs no Redis round trip.
 *   <li><b>The live ring.</b> {@link #offerRing} swaps the ring (one {@link CellRing} snapshot)
 *       forward only, bumps the generation (a fill computed on the old ring is dropped) and drops
 *       the L1 entries older than the new epoch; an L2 entry older than the ring is not used (the
 *       ring answers), as the owners let a newer ring outrank an older override.
 * </ul>
 *
 * <p>Concurrency: thread-safe; callable from any event loop.
 */
public final class WaterfallRoutingResolver {
    private static final Logger log = LoggerFactory.getLogger(WaterfallRoutingResolver.class);

    /** Invalidation stripes: a power of two; two keys sharing one only cost a dropped fill. */
    static final int STRIPES = 1024;

    private final String origin = UUID.randomUUID().toString();
    private final String cellId;
    private final OwnershipResolver ring;
    private final @Nullable RoutingCache l2;
    private final Cache<RoutingKey, Resolution> l1;
    private final RoutingMetrics metrics;
    private final AtomicLongArray stripes = new AtomicLongArray(STRIPES);
    private final AtomicLong generation = new AtomicLong();
    private volatile boolean l1Bypassed;
    /** Told of every key another process invalidated; copy-on-write, so calls need no lock. */
    private final List<Consumer<RoutingKey>> routeListeners = new CopyOnWriteArrayList<>();

    private WaterfallRoutingResolver(Builder b) {
        this.cellId = b.cellId;
        this.ring = b.ring;
        this.l2 = b.l2;
        this.metrics = b.metrics;
        this.l1 = Caffeine.newBuilder()
                .maximumSize(b.l1MaxSize)
                .expireAfterWrite(b.l1Ttl)
                .ticker(b.ticker)
                .executor(Runnable::run)
                .build();
        this.l1Bypassed = b.l2 != null;
    }

    /** Starts a resolver for a cell over the ring; L2 is off until {@link Builder#l2} is set. */
    public static Builder builder(String cellId, OwnershipResolver ring) {
        return new Builder(cellId, ring);
    }

    /**
     * Returns the owner of a key. The stage fails with a {@link
     * com.spectrayan.spector.contract.SpectorException} GATEWAY_ROUTING_FAILURE (possibly wrapped
     * in a {@link java.util.concurrent.CompletionException}) only when the ring is empty.
     */
    public CompletionStage<Resolution> resolve(RoutingKey key) {
        Resolution cached = peek(key);
        if (cached != null) {
            return CompletableFuture.completedFuture(cached);
        }
        int stripe = stripe(key);
        long gen = generation.get();
        long stripeGen = stripes.get(stripe);
        RoutingCache cache = l2;
        if (cache == null) {
            try {
                return CompletableFuture.completedFuture(fromRing(key, gen, stripe, stripeGen));
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
        }
        CompletionStage<Optional<RouteEntry>> lookup;
        try {
            lookup = cache.get(key);
        } catch (RuntimeException e) {
            lookup = CompletableFuture.failedFuture(e);
        }
        return lookup.handle((found, error) -> {
            if (error == null && found.isPresent() && !isBehindRing(found.get()) && isMember(found.get())) {
                RouteEntry entry = found.get();
                fill(key, entry, gen, stripe, stripeGen);
                metrics.resolved(Resolution.Level.L2);
                return new Resolution(entry, Resolution.Level.L2);
            }
            if (error != null) {
                metrics.redisError();
                log.debug("L2 lookup of {} failed, answering from the ring: {}", key, error.toString());
            }
            return fromRing(key, gen, stripe, stripeGen);
        });
    }

    /**
     * Swaps in a ring published for the cell when it {@linkplain CellRing#supersedes supersedes}
     * the held one, and then drops what L1 learned at an older epoch (racing fills of the old ring
     * are dropped too); returns whether the ring was taken. Called on Lettuce's thread; the sweep
     * of L1 is bounded by its size ({@code spector.routing.caffeine.max-size}).
     */
    public boolean offerRing(CellRing next) {
        if (!ring.offer(next)) {
            return false;
        }
        generation.incrementAndGet();
        long epoch = next.epoch();
        l1.asMap().values().removeIf(r -> r.entry().epoch() < epoch);
        return true;
    }

    /** Answers whether an entry names an epoch older than the ring's: the ring has moved past it. */
    private boolean isBehindRing(RouteEntry entry) {
        return entry.epoch() < ring.snapshot().epoch();
    }

    /**
     * Answers whether an L2 entry names a member of the ring: one that does not (a stale or
     * hostile value in Redis) is not used, nor kept in L1, and the ring answers instead, as a 421
     * hint naming a stranger is not followed. Before, it was kept in L1 and the key answered 503
     * for the L1 entry's life (the routing review).
     */
    private boolean isMember(RouteEntry entry) {
        if (ring.snapshot().contains(entry.owner())) {
            return true;
        }
        log.debug("L2 names '{}', not a ring member: answering from the ring", cut(entry.owner()));
        return false;
    }

    private static String cut(String text) {
        return text.length() > 64 ? text.substring(0, 64) + "..." : text;
    }

    /**
     * Answers whether the next {@link #resolve} of {@code key} names {@code owner} from L1: after a
     * {@link #reportMisdirected}, whether it took (L1 bypassed while Redis is away, or holding a
     * newer entry, it did not). A client told to retry at once ({@code Retry-After: 0}) must find
     * the owner it was turned away for; else it met the same 421 again (found by a review).
     */
    public boolean names(RoutingKey key, String owner) {
        if (l1Bypassed) {
            return false;
        }
        Resolution r = l1.getIfPresent(key);
        return r != null && r.entry().owner().equals(owner);
    }

    /** Returns the L1 answer for a key without any I/O, or null on a miss or while L1 is bypassed. */
    public @Nullable Resolution peek(RoutingKey key) {
        if (l1Bypassed) {
            return null;
        }
        Resolution hit = l1.getIfPresent(key);
        if (hit != null) {
            metrics.resolved(Resolution.Level.L1);
        }
        return hit;
    }

    /**
     * Records an owner's 421: the key belongs to {@code reportedOwner} at {@code (epoch, fence)}.
     * Fixes L1 at once, then L2 (unless it holds a newer entry), then publishes an invalidation so
     * every other gateway evicts its L1. The stage completes normally even when Redis is down (the
     * failure is counted): the caller's retarget does not wait on it.
     */
    public CompletionStage<Void> reportMisdirected(RoutingKey key, String reportedOwner, long epoch, long fence) {
        RouteEntry entry = new RouteEntry(reportedOwner, epoch, fence);
        metrics.misdirectedReported();
        stripes.incrementAndGet(stripe(key)); // racing fills of the old view are dropped
        if (!l1Bypassed) {
            l1.asMap()
                    .compute(
                            key,
                            (k, old) -> old != null && entry.isOlderThan(old.entry())
                                    ? old
                                    : new Resolution(entry, Resolution.Level.L1));
        }
        RoutingCache cache = l2;
        if (cache == null) {
            return CompletableFuture.completedFuture(null);
        }
        RouteInvalidation invalidation =
                new RouteInvalidation(origin, key.tenant(), key.namespace(), reportedOwner, epoch, fence);
        return cache.putIfNotOlder(key, entry)
                .thenCompose(stored -> stored
                        ? cache.publish(invalidation).thenApply(receivers -> {
                            metrics.invalidationPublished();
                            return null;
                        })
                        : CompletableFuture.<@Nullable Void>completedFuture(null))
                .handle((ignored, error) -> {
                    if (error != null) {
                        metrics.redisError();
                        log.debug("could not record {} -> {} in L2: {}", key, reportedOwner, error.toString());
                    }
                    return null;
                });
    }

    /**
     * Forgets what L1 holds for a key when it names {@code owner}: that owner answered 421 without
     * saying who owns the key, so the next {@link #resolve} asks L2 and the ring again (DESIGN.md
     * section 4, "else re-resolve"). Racing fills of the old view are dropped, as after a report.
     */
    public void forget(RoutingKey key, String owner) {
        stripes.incrementAndGet(stripe(key));
        l1.asMap().computeIfPresent(key, (k, old) -> old.entry().owner().equals(owner) ? null : old);
    }

    /** Applies an invalidation received from the cell's channel (ignoring this process's own). */
    void onInvalidation(RouteInvalidation invalidation) {
        if (invalidation.origin().equals(origin)) {
            return;
        }
        metrics.invalidationReceived();
        RoutingKey key = invalidation.key(cellId);
        stripes.incrementAndGet(stripe(key));
        l1.asMap()
                .computeIfPresent(
                        key,
                        (k, old) -> RouteEntry.isOlder(
                                        invalidation.epoch(),
                                        invalidation.fence(),
                                        old.entry().epoch(),
                                        old.entry().fence())
                                ? old
                                : null);
        for (Consumer<RoutingKey> listener : routeListeners) {
            try {
                listener.accept(key);
            } catch (RuntimeException e) {
                log.warn("a route listener failed on {}: {}", key, e.toString(), e);
            }
        }
    }

    /**
     * Tells {@code listener} of every key whose route another process invalidated, after L1 let
     * go of it, on the subscription's thread (Lettuce's): it must not block. The forwarder uses
     * it to release the requests it holds during a hand-off.
     */
    public void addRouteListener(Consumer<RoutingKey> listener) {
        routeListeners.add(requireNonNull(listener, "listener"));
    }

    /** The invalidation subscription dropped: clear L1 and bypass it until it is back. */
    void subscriptionLost() {
        boolean wasUsingL1 = !l1Bypassed;
        l1Bypassed = true;
        generation.incrementAndGet();
        l1.invalidateAll();
        if (wasUsingL1) {
            metrics.l1Cleared();
            log.warn("route invalidation subscription lost: L1 cleared and bypassed until it is back");
        }
    }

    /** The invalidation subscription is confirmed: L1 may be used again, starting empty. */
    void subscriptionRestored() {
        generation.incrementAndGet();
        l1.invalidateAll();
        if (l1Bypassed) {
            log.info("route invalidation subscription confirmed: L1 in use");
        }
        l1Bypassed = false;
    }

    /** Answers whether L1 is bypassed (L2 configured and no confirmed subscription). */
    public boolean isL1Bypassed() {
        return l1Bypassed;
    }

    /** Returns the id this process publishes invalidations under. */
    String origin() {
        return origin;
    }

    /** Returns the cell this resolver routes for. */
    public String cellId() {
        return cellId;
    }

    /** Returns the counters. */
    public RoutingMetrics metrics() {
        return metrics;
    }

    /** Returns the number of entries L1 holds (approximate). */
    public long l1Size() {
        return l1.estimatedSize();
    }

    /** Returns the L3 resolver. */
    public OwnershipResolver ownership() {
        return ring;
    }

    private Resolution fromRing(RoutingKey key, long gen, int stripe, long stripeGen) {
        RouteEntry entry = ring.resolve(key);
        fill(key, entry, gen, stripe, stripeGen);
        metrics.resolved(Resolution.Level.L3);
        return new Resolution(entry, Resolution.Level.L3);
    }

    private void fill(RoutingKey key, RouteEntry entry, long gen, int stripe, long stripeGen) {
        if (l1Bypassed) {
            return;
        }
        l1.asMap().compute(key, (k, old) -> {
            if (generation.get() != gen || stripes.get(stripe) != stripeGen) {
                metrics.fillDropped();
                return old;
            }
            return old != null && entry.isOlderThan(old.entry()) ? old : new Resolution(entry, Resolution.Level.L1);
        });
    }

    private static int stripe(RoutingKey key) {
        int h = key.hashCode();
        return (h ^ (h >>> 16)) & (STRIPES - 1);
    }

    /** Builds a {@link WaterfallRoutingResolver}; defaults are the design's. */
    public static final class Builder {
        private final String cellId;
        private final OwnershipResolver ring;
        private @Nullable RoutingCache l2;
        private Duration l1Ttl = Limits.L1_TTL;
        private long l1MaxSize = Limits.L1_MAX_ENTRIES;
        private Ticker ticker = Ticker.systemTicker();
        private RoutingMetrics metrics = new RoutingMetrics();

        private Builder(String cellId, OwnershipResolver ring) {
            this.cellId = RoutingKey.checkName("cellId", cellId);
            this.ring = requireNonNull(ring, "ring");
        }

        /** Sets L2, the shared cache; a subscriber must then confirm before L1 is used. */
        public Builder l2(RoutingCache l2) {
            this.l2 = requireNonNull(l2, "l2");
            return this;
        }

        /** Sets L1's time to live ({@code spector.routing.caffeine.ttl-seconds}). */
        public Builder l1Ttl(Duration ttl) {
            if (ttl.isNegative() || ttl.isZero()) {
                throw new IllegalArgumentException("l1Ttl: " + ttl + " (expected: > 0)");
            }
            this.l1Ttl = ttl;
            return this;
        }

        /** Sets L1's size ({@code spector.routing.caffeine.max-size}). */
        public Builder l1MaxSize(long maxSize) {
            if (maxSize < 1) {
                throw new IllegalArgumentException("l1MaxSize: " + maxSize + " (expected: >= 1)");
            }
            this.l1MaxSize = maxSize;
            return this;
        }

        /** Sets the time source of L1's expiry (tests pass a fake one). */
        public Builder ticker(Ticker ticker) {
            this.ticker = requireNonNull(ticker, "ticker");
            return this;
        }

        /** Sets the counters to update (the gateway shares one set with its metrics). */
        public Builder metrics(RoutingMetrics metrics) {
            this.metrics = requireNonNull(metrics, "metrics");
            return this;
        }

        /** Builds the resolver. */
        public WaterfallRoutingResolver build() {
            return new WaterfallRoutingResolver(this);
        }
    }
}
