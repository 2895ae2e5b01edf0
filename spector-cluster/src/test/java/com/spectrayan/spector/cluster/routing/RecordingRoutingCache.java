package com.spectrayan.spector.cluster.routing;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * An L2 port double that records each call and leaves its completion to the test, so a race
 * (an invalidation landing while a lookup is in flight) is played in a chosen order. It stands for
 * the {@link RoutingCache} port, not for Redis: Redis itself is tested with a real server.
 */
final class RecordingRoutingCache implements RoutingCache {
    final List<CompletableFuture<Optional<RouteEntry>>> gets = new ArrayList<>();
    final List<RouteEntry> puts = new ArrayList<>();
    final List<RouteInvalidation> published = new ArrayList<>();

    @Override
    public synchronized CompletionStage<Optional<RouteEntry>> get(RoutingKey key) {
        CompletableFuture<Optional<RouteEntry>> f = new CompletableFuture<>();
        gets.add(f);
        return f;
    }

    @Override
    public synchronized CompletionStage<Boolean> putIfNotOlder(RoutingKey key, RouteEntry entry) {
        puts.add(entry);
        return CompletableFuture.completedFuture(true);
    }

    @Override
    public synchronized CompletionStage<Long> publish(RouteInvalidation invalidation) {
        published.add(invalidation);
        return CompletableFuture.completedFuture(1L);
    }
}
