package com.spectrayan.spector.cluster.routing;

import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * L2 of the waterfall: the route cache every gateway of a cell shares, and the channel its
 * invalidations travel on. Every method is asynchronous and never blocks the calling thread; a
 * stage that fails (timeout, connection lost) is counted by the caller and routing falls to L3.
 */
public interface RoutingCache {
    /** Returns the entry held for a key, or empty. */
    CompletionStage<Optional<RouteEntry>> get(RoutingKey key);

    /**
     * Stores an entry unless the one held is newer (higher epoch, or same epoch and higher fence);
     * completes with whether it was stored.
     */
    CompletionStage<Boolean> putIfNotOlder(RoutingKey key, RouteEntry entry);

    /**
     * {@link #putIfNotOlder} for an owner's own route (a namespace move's, an ownership
     * override's): where the cache keeps the cell's epoch floor ({@link PublishedRing}), it is
     * raised to the entry's epoch too, so no ring is published that does not outrank it. Only an
     * owner calls it; a gateway's write of an owner's 421 hint never raises the floor.
     */
    default CompletionStage<Boolean> putOwned(RoutingKey key, RouteEntry entry) {
        return putIfNotOlder(key, entry);
    }

    /** Publishes an invalidation to every gateway of the cell; completes with how many received it. */
    CompletionStage<Long> publish(RouteInvalidation invalidation);
}
