package com.spectrayan.spector.bench;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.Resolution;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import org.jspecify.annotations.Nullable;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Setup;

/** An L1 hit: what every request after the first costs, through the async API and the peek. */
public class WaterfallResolveBenchmark extends NanoBenchmark {
    private WaterfallRoutingResolver resolver = WaterfallRoutingResolver.builder(
                    "cell", new OwnershipResolver(KetamaRing.of(1, List.of("x"))))
            .build();
    private RoutingKey[] keys = new RoutingKey[0];
    private int next;

    /** Fills L1 with 256 keys (within its 1000 entries). */
    @Setup
    public void setUp() throws InterruptedException, ExecutionException {
        resolver = WaterfallRoutingResolver.builder(
                        "cell", new OwnershipResolver(KetamaRing.of(1, List.of("owner-0", "owner-1", "owner-2"))))
                .build();
        keys = new RoutingKey[256];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = RoutingKey.of("cell", "tenant-" + (i % 7), "namespace-" + i);
            resolver.resolve(keys[i]).toCompletableFuture().get();
        }
    }

    /** {@code resolve()} answered from L1: a completed stage. */
    @Benchmark
    public CompletionStage<Resolution> resolveL1Hit() {
        return resolver.resolve(keys[next++ & (keys.length - 1)]);
    }

    /** {@code peek()}: the L1 lookup alone, no stage. */
    @Benchmark
    public @Nullable Resolution peekL1Hit() {
        return resolver.peek(keys[next++ & (keys.length - 1)]);
    }

    /** Extracting the routing key from a request's header, path and claims. */
    @Benchmark
    public RoutingKey extractAndBuildKey() {
        return ROUTING.extract(null, null, "/api/v1/namespaces/orders/objects/42", java.util.Map.of());
    }

    private static final com.spectrayan.spector.cluster.routing.RoutingKeyExtractor ROUTING =
            new com.spectrayan.spector.cluster.routing.RoutingKeyExtractor("cell");
}
