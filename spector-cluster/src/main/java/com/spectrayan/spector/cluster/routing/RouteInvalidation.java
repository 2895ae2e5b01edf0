package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import org.jspecify.annotations.Nullable;

/**
 * A message on the cell's invalidation channel: the entry for {@code (tenant, namespace)} changed.
 * Receivers evict their L1 entry unless it is newer than {@code (epoch, fence)}, and read L2 next.
 *
 * @param origin the id of the process that published it; a process ignores its own messages
 * @param tenant the key's tenant, or null for an untenanted key
 * @param namespace the key's namespace
 * @param owner the new owner, when the publisher knows it
 * @param epoch the epoch of the new view
 * @param fence the fencing token of the new view, or {@link RouteEntry#NO_FENCE}
 */
public record RouteInvalidation(
        String origin,
        @Nullable String tenant,
        String namespace,
        @Nullable String owner,
        long epoch,
        long fence) {
    public RouteInvalidation {
        requireNonNull(origin, "origin");
        requireNonNull(namespace, "namespace");
    }

    /** Returns the key this invalidation names, in a cell. */
    public RoutingKey key(String cellId) {
        return RoutingKey.of(cellId, tenant, namespace);
    }
}
