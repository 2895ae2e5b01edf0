package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.testkit.RedisCommands;
import com.spectrayan.spector.testkit.RedisServerExtension;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two gateways (two resolvers, each with its own Redis client) sharing a real {@code redis-server}:
 * the L2 entry, the invalidation channel, and what happens while Redis is down and after it comes
 * back.
 */
final class RedisRoutingTest {
    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final String CELL = "cell-a";
    private static final List<String> MEMBERS = List.of("owner-0", "owner-1", "owner-2");
    private static final RoutingKey KEY = RoutingKey.of(CELL, "acme", "orders");

    private Gateway a;
    private Gateway b;

    /** One gateway's routing: its own Redis client, L2 and subscriber, over a shared ring. */
    private record Gateway(RedisRouting redis, WaterfallRoutingResolver resolver) implements AutoCloseable {
        static Gateway start(String uri) {
            RedisRouting r = RedisRouting.connect(uri, CELL, Limits.L2_TTL, Limits.L2_TIMEOUT);
            WaterfallRoutingResolver resolver = WaterfallRoutingResolver.builder(
                            CELL, new OwnershipResolver(KetamaRing.of(1, MEMBERS)))
                    .l2(r.cache())
                    .build();
            r.subscribe(resolver);
            return new Gateway(r, resolver);
        }

        Resolution resolve(RoutingKey key) throws Exception {
            return resolver.resolve(key).toCompletableFuture().get(5, TimeUnit.SECONDS);
        }

        @Override
        public void close() {
            redis.close();
        }
    }

    @BeforeEach
    void startGateways() {
        a = Gateway.start(redis.uri());
        b = Gateway.start(redis.uri());
        await("both gateways subscribed")
                .atMost(WAIT)
                .until(() -> a.redis.isSubscribed() && b.redis.isSubscribed() && a.redis.isConnected());
    }

    @AfterEach
    void stopGateways() {
        a.close();
        b.close();
    }

    @Test
    void reportedOwner_isSharedThroughL2_withTheOtherGateway() throws Exception {
        a.resolver.reportMisdirected(KEY, "owner-2", 2, 7).toCompletableFuture().get(5, TimeUnit.SECONDS);
        // Let A's invalidation land first: one landing mid-lookup would (rightly) drop B's fill.
        await("B received A's invalidation")
                .atMost(WAIT)
                .until(() -> b.resolver.metrics().invalidationsReceived() == 1);

        Resolution atB = b.resolve(KEY);

        assertThat(atB.level()).as("B reads what A learned from L2").isEqualTo(Resolution.Level.L2);
        assertThat(atB.entry()).isEqualTo(new RouteEntry("owner-2", 2, 7));
        assertThat(b.resolve(KEY).level()).as("then from its own L1").isEqualTo(Resolution.Level.L1);
    }

    @Test
    void invalidationPublishedByOneGateway_evictsTheOthersL1WithinASecond() throws Exception {
        assertThat(b.resolve(KEY).level()).isEqualTo(Resolution.Level.L3);
        assertThat(b.resolver.peek(KEY)).as("B holds the ring's answer in L1").isNotNull();

        a.resolver.reportMisdirected(KEY, "owner-1", 2, 3);

        await("B's L1 entry evicted by A's invalidation")
                .atMost(Duration.ofSeconds(1))
                .until(() -> b.resolver.peek(KEY) == null);
        Resolution after = b.resolve(KEY);
        assertThat(after.level()).isEqualTo(Resolution.Level.L2);
        assertThat(after.entry().owner()).isEqualTo("owner-1");
        assertThat(b.resolver.metrics().invalidationsReceived()).isEqualTo(1);
    }

    @Test
    void l2_refusesAnEntryOlderThanTheOneHeld() throws Exception {
        RoutingCache l2 = a.redis.cache();

        assertThat(l2.putIfNotOlder(KEY, new RouteEntry("owner-1", 5, 2))
                        .toCompletableFuture()
                        .get(5, TimeUnit.SECONDS))
                .isTrue();
        assertThat(l2.putIfNotOlder(KEY, new RouteEntry("owner-0", 4, 9))
                        .toCompletableFuture()
                        .get(5, TimeUnit.SECONDS))
                .as("a lower epoch is refused")
                .isFalse();
        assertThat(l2.putIfNotOlder(KEY, new RouteEntry("owner-0", 5, 1))
                        .toCompletableFuture()
                        .get(5, TimeUnit.SECONDS))
                .as("the same epoch with a lower fence is refused")
                .isFalse();
        assertThat(l2.get(KEY).toCompletableFuture().get(5, TimeUnit.SECONDS))
                .isEqualTo(Optional.of(new RouteEntry("owner-1", 5, 2)));
        String ttl = RedisCommands.send(redis.server().port(), "PTTL spector:cell-a:route:acme/orders");
        assertThat(Long.parseLong(ttl.substring(1)))
                .as("the entry carries the L2 TTL")
                .isBetween(1L, Limits.L2_TTL.toMillis());
    }

    @Test
    void redisStopped_resolutionAnswersFromTheRingWithin250ms_andTheFailureIsCounted() throws Exception {
        a.resolve(RoutingKey.ofUntenanted(CELL, "warm-up"));
        long errorsBefore = a.resolver.metrics().redisErrors();

        redis.stop();
        long start = System.nanoTime();
        Resolution r = a.resolve(RoutingKey.ofUntenanted(CELL, "while-down"));
        long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        assertThat(r.level()).isEqualTo(Resolution.Level.L3);
        assertThat(elapsedMs)
                .as("resolution with Redis down took %d ms (bound: 250 ms)", elapsedMs)
                .isLessThan(250);
        assertThat(a.resolver.metrics().redisErrors())
                .as("the L2 failure is counted")
                .isGreaterThan(errorsBefore);
        await("L1 bypassed once the subscription is lost").atMost(WAIT).until(() -> a.resolver.isL1Bypassed());
    }

    @Test
    void redisRestarted_l2IsUsedAgain_andInvalidationsFlowAgain() throws Exception {
        redis.stop();
        await("both gateways see the loss")
                .atMost(WAIT)
                .until(() -> a.resolver.isL1Bypassed() && b.resolver.isL1Bypassed());

        redis.start();
        // The resolver clears its L1 bypass when told the subscription is back, just after the
        // subscription reports itself: wait for both, not only the first.
        await("both gateways resubscribed after the restart, and B trusts its L1 again")
                .atMost(WAIT)
                .until(() -> a.redis.isSubscribed()
                        && b.redis.isSubscribed()
                        && a.redis.isConnected()
                        && !b.resolver.isL1Bypassed());

        assertThat(b.resolve(KEY).level()).isEqualTo(Resolution.Level.L3);
        a.resolver.reportMisdirected(KEY, "owner-0", 3, 1).toCompletableFuture().get(5, TimeUnit.SECONDS);
        await("B's L1 evicted by an invalidation after the restart")
                .atMost(Duration.ofSeconds(1))
                .until(() -> b.resolver.peek(KEY) == null);
        Resolution after = b.resolve(KEY);
        assertThat(after.level()).as("L2 in use again").isEqualTo(Resolution.Level.L2);
        assertThat(after.entry().owner()).isEqualTo("owner-0");
    }

    @Test
    void malformedInvalidation_isIgnoredAndTheSubscriptionSurvives() throws Exception {
        assertThat(b.resolve(KEY).level()).isEqualTo(Resolution.Level.L3);

        RedisCommands.send(redis.server().port(), "PUBLISH spector:cell-a:route-invalidations not-json");
        a.resolver.reportMisdirected(KEY, "owner-2", 9, 0);

        await("a good message after a bad one still evicts")
                .atMost(Duration.ofSeconds(1))
                .until(() -> b.resolver.peek(KEY) == null);
        assertThat(b.redis.isSubscribed()).isTrue();
    }
}
