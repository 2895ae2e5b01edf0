package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

/**
 * The answer of a resolve: the entry and the level that gave it.
 *
 * @param entry the owner, epoch and fence
 * @param level where the entry came from
 */
public record Resolution(RouteEntry entry, Level level) {
    /** The levels of the waterfall, in the order they are asked. */
    public enum Level {
        /** In-process Caffeine cache. */
        L1,
        /** Redis, shared by every gateway of the cell. */
        L2,
        /** The Ketama ring over the configured members. */
        L3
    }

    public Resolution {
        requireNonNull(entry, "entry");
        requireNonNull(level, "level");
    }
}
