package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

/**
 * Where a key is routed: the owner node, the epoch of the view that named it, and the last fencing
 * token learned for it ({@link #NO_FENCE} when none is known). The gateway never mints or bumps
 * epochs or fences; it carries what owners report.
 *
 * @param owner the owner's member id, as on the ring
 * @param epoch the epoch of the view that named the owner
 * @param fence the fencing token, or {@link #NO_FENCE}
 */
public record RouteEntry(String owner, long epoch, long fence) {
    /** The fence of an entry that carries none (fencing tokens start at 1). */
    public static final long NO_FENCE = 0;

    public RouteEntry {
        requireNonNull(owner, "owner");
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch: " + epoch + " (expected: >= 0)");
        }
        if (fence < 0) {
            throw new IllegalArgumentException("fence: " + fence + " (expected: >= 0)");
        }
    }

    /**
     * Answers whether this entry is older than {@code other}: a lower epoch, or the same epoch with a
     * lower fence. Caches replace an entry only with one that is not older (DESIGN.md section 4:
     * entries and invalidations only move forward).
     */
    public boolean isOlderThan(RouteEntry other) {
        return isOlder(epoch, fence, other.epoch, other.fence);
    }

    static boolean isOlder(long epoch, long fence, long otherEpoch, long otherFence) {
        return epoch < otherEpoch || (epoch == otherEpoch && fence < otherFence);
    }
}
