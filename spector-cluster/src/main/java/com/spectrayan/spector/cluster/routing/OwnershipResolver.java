package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

/**
 * L3 of the waterfall: the owner a key hashes to on the current {@link KetamaRing}, at the ring's
 * epoch. The ring can be replaced by a newer one (a higher or equal epoch); an older ring is
 * ignored, so membership only moves forward.
 *
 * <p>Thread-safe: reads take the volatile ring without locks; updates are serialised.
 */
public final class OwnershipResolver {
    private volatile KetamaRing ring; // Guarded by this for writes.

    /** Creates a resolver over an initial ring (which may be empty: it then fails closed). */
    public OwnershipResolver(KetamaRing ring) {
        this.ring = requireNonNull(ring, "ring");
    }

    /** Returns the current ring. */
    public KetamaRing ring() {
        return ring;
    }

    /** Replaces the ring unless it is older than the current one; returns whether it was taken. */
    public synchronized boolean update(KetamaRing next) {
        requireNonNull(next, "next");
        if (next.epoch() < ring.epoch()) {
            return false;
        }
        ring = next;
        return true;
    }

    /**
     * Returns the ring's owner of a key.
     *
     * @throws com.spectrayan.spector.contract.SpectorException GATEWAY_ROUTING_FAILURE on an empty
     *     ring
     */
    public RouteEntry resolve(RoutingKey key) {
        KetamaRing r = ring;
        return new RouteEntry(r.ownerOf(key.ringKey()), r.epoch(), RouteEntry.NO_FENCE);
    }
}
