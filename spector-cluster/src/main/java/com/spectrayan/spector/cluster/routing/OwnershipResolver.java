package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

/**
 * L3 of the waterfall: the owner a key hashes to on the current {@link CellRing}, at the ring's
 * epoch. The ring is swapped whole, as one snapshot, only for one that {@linkplain
 * CellRing#supersedes supersedes} it, so membership only moves forward.
 *
 * <p>Thread-safe: reads take the volatile snapshot without locks; swaps are serialised.
 */
public final class OwnershipResolver {
    private volatile CellRing current; // Guarded by this for writes.

    /**
     * Creates a resolver over an initial ring of ids alone, from configuration (it may be empty: it
     * then fails closed).
     */
    public OwnershipResolver(KetamaRing ring) {
        this(CellRing.ofIds(ring, CellRing.Source.CONFIG));
    }

    /** Creates a resolver over an initial snapshot. */
    public OwnershipResolver(CellRing ring) {
        this.current = requireNonNull(ring, "ring");
    }

    /** Returns the current hash ring. */
    public KetamaRing ring() {
        return current.ketama();
    }

    /** Returns the current snapshot: members with their URLs, epoch and source. */
    public CellRing snapshot() {
        return current;
    }

    /**
     * Swaps in {@code next} when it {@linkplain CellRing#supersedes supersedes} the current ring;
     * returns whether it did. An older ring, or one at the same epoch, is ignored.
     */
    public synchronized boolean offer(CellRing next) {
        requireNonNull(next, "next");
        if (!next.supersedes(current)) {
            return false;
        }
        current = next;
        return true;
    }

    /**
     * Returns the ring's owner of a key.
     *
     * @throws com.spectrayan.spector.contract.SpectorException GATEWAY_ROUTING_FAILURE on an empty
     *     ring
     */
    public RouteEntry resolve(RoutingKey key) {
        KetamaRing r = current.ketama();
        return new RouteEntry(r.ownerOf(key.ringKey()), r.epoch(), RouteEntry.NO_FENCE);
    }
}
