package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.RedisCommands;
import com.spectrayan.spector.testkit.RedisServerExtension;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The published ring on a real {@code redis-server}: the atomic publish (epochs only move
 * forward), the read, and a resolver following it through {@link RedisRouting#watchRing}
 * (announcement, hostile stored bytes, Redis stopped).
 */
final class PublishedRingTest {
    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private static final Duration WAIT = Duration.ofSeconds(5);
    private static final String CELL = "cell-r";
    private static final RoutingKey KEY = RoutingKey.of(CELL, "acme", "orders");

    private RedisRouting routing;
    private WaterfallRoutingResolver resolver;
    private final RingMetrics metrics = new RingMetrics();

    @BeforeEach
    void start() {
        routing = RedisRouting.connect(redis.uri(), CELL, Limits.L2_TTL, Limits.L2_TIMEOUT);
        resolver = WaterfallRoutingResolver.builder(CELL, new OwnershipResolver(ring(1, CellRing.Source.CONFIG, 3)))
                .build();
    }

    /** Closes at once, often with a connect still in flight: a close must not leak its channel. */
    @AfterEach
    void stop() {
        routing.close();
    }

    @Test
    void publish_thenRead_returnsTheRing() {
        CellRing ring = ring(2, CellRing.Source.REDIS, 4);

        long receivers = PublishedRing.publish(redis.uri(), CELL, ring, Clock.systemUTC());

        assertThat(receivers).as("nobody subscribed yet").isZero();
        PublishedRing.Stored stored = PublishedRing.read(redis.uri(), CELL).orElseThrow();
        assertThat(stored.ring().epoch()).isEqualTo(2);
        assertThat(stored.ring().urls()).containsExactlyEntriesOf(ring.urls());
        assertThat(stored.publishedAt()).isNotNull();
        assertThat(PublishedRing.read(redis.uri(), "other-cell")).isEmpty();
    }

    @Test
    void publish_anEpochNotHigherThanTheStoredOne_isRefusedAndChangesNothing() {
        PublishedRing.publish(redis.uri(), CELL, ring(5, CellRing.Source.REDIS, 3), Clock.systemUTC());

        for (long epoch : new long[] {5, 4}) {
            assertThatThrownBy(() -> PublishedRing.publish(
                            redis.uri(), CELL, ring(epoch, CellRing.Source.REDIS, 4), Clock.systemUTC()))
                    .isInstanceOfSatisfying(
                            SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST))
                    .hasMessageContaining("epoch: " + epoch + " (expected: > 5");
        }
        assertThat(PublishedRing.read(redis.uri(), CELL).orElseThrow().ring().urls())
                .hasSize(3);
    }

    /**
     * Defends review finding 2: a ring published at the epoch a namespace move gave its key (an L2
     * entry at that epoch) was taken, and the moved key then had two owners serving it (the
     * override's, which a ring at its own epoch does not outrank, and the new ring's).
     */
    @Test
    void publish_notAboveAnL2EntrysEpoch_isRefusedNamingTheFloor() {
        PublishedRing.publish(redis.uri(), CELL, ring(1, CellRing.Source.REDIS, 3), Clock.systemUTC());
        await("the routing cache is connected").atMost(WAIT).until(routing::isConnected);
        assertThat(routing.cache()
                        .putOwned(KEY, new RouteEntry("owner-1", 2, 2))
                        .toCompletableFuture()
                        .join())
                .isTrue();
        assertThat(floor()).as("the put raised the floor").isEqualTo(":2");

        assertThatThrownBy(() ->
                        PublishedRing.publish(redis.uri(), CELL, ring(2, CellRing.Source.REDIS, 4), Clock.systemUTC()))
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST))
                .hasMessageContaining("epoch: 2 (expected: > 2, the epoch a namespace move or ownership override")
                .hasMessageContaining("publish at 3 or higher");
        assertThat(PublishedRing.read(redis.uri(), CELL).orElseThrow().ring().epoch())
                .as("nothing written")
                .isEqualTo(1);

        PublishedRing.publish(redis.uri(), CELL, ring(3, CellRing.Source.REDIS, 4), Clock.systemUTC());
        assertThat(PublishedRing.read(redis.uri(), CELL).orElseThrow().ring().epoch())
                .isEqualTo(3);
    }

    @Test
    void putOwned_anOlderEntry_neverLowersTheFloor() {
        await("the routing cache is connected").atMost(WAIT).until(routing::isConnected);
        RoutingKey other = RoutingKey.of(CELL, "acme", "invoices");
        assertThat(routing.cache()
                        .putOwned(KEY, new RouteEntry("owner-1", 12, 12))
                        .toCompletableFuture()
                        .join())
                .isTrue();
        assertThat(routing.cache()
                        .putOwned(other, new RouteEntry("owner-2", 9, 9))
                        .toCompletableFuture()
                        .join())
                .isTrue();

        assertThat(floor()).as("compared as numbers, not as 9 > 12 in text").isEqualTo(":12");
    }

    /**
     * A gateway's write of what an owner's 421 said never raises the floor: a buggy or hostile
     * owner naming epoch 2^63-1 would otherwise refuse every later ring publish, the one that takes
     * it out of the ring included (found by a review).
     */
    @Test
    void putIfNotOlder_aGatewaysWrite_neverRaisesTheFloor() {
        String cell = "cell-hinted"; // a cell of its own: the other tests raise CELL's floor
        try (RedisRouting own = RedisRouting.connect(redis.uri(), cell, Limits.L2_TTL, Limits.L2_TIMEOUT)) {
            await("the routing cache is connected").atMost(WAIT).until(own::isConnected);
            assertThat(own.cache()
                            .putIfNotOlder(
                                    RoutingKey.of(cell, "acme", "orders"), new RouteEntry("owner-2", Long.MAX_VALUE, 0))
                            .toCompletableFuture()
                            .join())
                    .isTrue();
        }
        assertThat(RedisCommands.send(redis.server().port(), "EXISTS " + PublishedRing.floorKey(cell)))
                .isEqualTo(":0");
        PublishedRing.publish(redis.uri(), cell, ring(2, CellRing.Source.REDIS, 3), Clock.systemUTC());
        assertThat(PublishedRing.read(redis.uri(), cell).orElseThrow().ring().epoch())
                .isEqualTo(2);
    }

    /** Returns the cell's epoch floor as Redis answers an integer: {@code :N}. */
    private static String floor() {
        return RedisCommands.send(
                redis.server().port(),
                "EVAL \"return tonumber(redis.call('GET', KEYS[1]))\" 1 " + PublishedRing.floorKey(CELL));
    }

    @Test
    void publish_epochsAboveTwoToThe53_compareExactly() {
        long big = (1L << 53) + 1;
        PublishedRing.publish(redis.uri(), CELL, ring(big, CellRing.Source.REDIS, 3), Clock.systemUTC());

        assertThatThrownBy(() -> PublishedRing.publish(
                        redis.uri(), CELL, ring(big - 1, CellRing.Source.REDIS, 3), Clock.systemUTC()))
                .isInstanceOf(SpectorException.class);
        PublishedRing.publish(redis.uri(), CELL, ring(big + 1, CellRing.Source.REDIS, 3), Clock.systemUTC());
        assertThat(PublishedRing.read(redis.uri(), CELL).orElseThrow().ring().epoch())
                .isEqualTo(big + 1);
    }

    @Test
    void watchRing_publishedAfterStart_isSwappedInOnTheAnnouncement() throws Exception {
        watch();
        awaitSubscribed();
        assertThat(resolver.ownership().snapshot().source()).isEqualTo(CellRing.Source.CONFIG);

        CellRing four = ring(2, CellRing.Source.REDIS, 4);
        long receivers = PublishedRing.publish(redis.uri(), CELL, four, Clock.systemUTC());

        assertThat(receivers).isEqualTo(1);
        // the 1 s is LiveRingProcessesTest's; here a loaded machine gets the default bound
        await().atMost(WAIT).until(() -> resolver.ownership().snapshot().epoch() == 2);
        assertThat(resolver.ownership().snapshot().urls()).containsExactlyEntriesOf(four.urls());
        assertThat(resolver.ownership().snapshot().source()).isEqualTo(CellRing.Source.REDIS);
        assertThat(metrics.applied()).isEqualTo(1);
        assertThat(resolver.resolve(KEY)
                        .toCompletableFuture()
                        .get(5, TimeUnit.SECONDS)
                        .entry()
                        .epoch())
                .isEqualTo(2);
    }

    @Test
    void watchRing_aRingPublishedBeforeStart_isHeldWhenWatchRingReturns() {
        PublishedRing.publish(redis.uri(), CELL, ring(3, CellRing.Source.REDIS, 4), Clock.systemUTC());

        watch();

        assertThat(resolver.ownership().snapshot().epoch()).isEqualTo(3);
        assertThat(resolver.ownership().snapshot().source()).isEqualTo(CellRing.Source.REDIS);
    }

    @Test
    void watchRing_nothingPublished_keepsTheConfiguredRing() {
        watch();

        assertThat(resolver.ownership().snapshot().source()).isEqualTo(CellRing.Source.CONFIG);
        assertThat(metrics.malformed()).isZero();
    }

    @Test
    void watchRing_hostileStoredBytes_areIgnoredAndCounted_andTheHeldRingStays() {
        watch();
        awaitSubscribed();
        String key = PublishedRing.key(CELL);

        RedisCommands.send(redis.server().port(), "HSET " + key + " epoch 9 members not,a=ring");
        RedisCommands.send(redis.server().port(), "PUBLISH " + PublishedRing.channel(CELL) + " anything");
        await().atMost(WAIT).until(() -> metrics.malformed() >= 1);
        RedisCommands.send(redis.server().port(), "HSET " + key + " epoch -1 members a=http://h:1");
        RedisCommands.send(redis.server().port(), "PUBLISH " + PublishedRing.channel(CELL) + " 10");
        await().atMost(WAIT).until(() -> metrics.malformed() >= 2);

        assertThat(resolver.ownership().snapshot().epoch()).isEqualTo(1);
        assertThat(resolver.ownership().snapshot().source()).isEqualTo(CellRing.Source.CONFIG);
        assertThat(metrics.applied()).isZero();
    }

    @Test
    void watchRing_anOlderRingInRedis_isIgnored() {
        resolver.offerRing(ring(7, CellRing.Source.REDIS, 3));
        PublishedRing.publish(redis.uri(), CELL, ring(6, CellRing.Source.REDIS, 4), Clock.systemUTC());

        watch();

        assertThat(resolver.ownership().snapshot().epoch()).isEqualTo(7);
        assertThat(metrics.ignored())
                .as("the read on connect, and maybe the one on subscribe")
                .isBetween(1L, 2L);
        assertThat(metrics.applied()).isZero();
    }

    @Test
    void watchRing_redisStopped_keepsTheLastRing_andTakesTheNextOneWhenBack() {
        PublishedRing.publish(redis.uri(), CELL, ring(2, CellRing.Source.REDIS, 4), Clock.systemUTC());
        watch();
        assertThat(resolver.ownership().snapshot().epoch()).isEqualTo(2);

        redis.stop();
        long errors = metrics.readErrors();
        java.util.Objects.requireNonNull(routing.ringWatcher(), "watcher").read("test"); // as the 30 s refresh does
        await().atMost(WAIT).until(() -> metrics.readErrors() > errors);
        assertThat(resolver.ownership().snapshot().epoch()).isEqualTo(2);
        assertThat(resolver.ownership().ring().members()).hasSize(4);

        redis.start(); // empty: the data went with the process
        PublishedRing.publish(redis.uri(), CELL, ring(3, CellRing.Source.REDIS, 2), Clock.systemUTC());
        // the resubscribe (or the announcement, once resubscribed) reads it again
        await().atMost(Duration.ofSeconds(15))
                .until(() -> resolver.ownership().snapshot().epoch() == 3);
    }

    @Test
    void offerRing_dropsL1EntriesOlderThanTheNewRing() throws Exception {
        WaterfallRoutingResolver r = WaterfallRoutingResolver.builder(
                        CELL, new OwnershipResolver(ring(1, CellRing.Source.CONFIG, 3)))
                .build();
        RoutingKey other = RoutingKey.of(CELL, "acme", "other");
        r.resolve(KEY).toCompletableFuture().get(5, TimeUnit.SECONDS);
        r.reportMisdirected(other, "owner-2", 4, 1).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertThat(r.l1Size()).isEqualTo(2);

        assertThat(r.offerRing(ring(2, CellRing.Source.REDIS, 4))).isTrue();

        assertThat(r.peek(KEY)).as("the L3 answer of epoch 1 is gone").isNull();
        assertThat(r.peek(other)).as("what an owner reported at epoch 4 stays").isNotNull();
        assertThat(r.resolve(KEY)
                        .toCompletableFuture()
                        .get(5, TimeUnit.SECONDS)
                        .entry()
                        .epoch())
                .isEqualTo(2);
    }

    private void watch() {
        routing.watchRing(resolver::offerRing, metrics);
    }

    /** Waits until the watcher's subscription is confirmed: a PUBLISH on the channel reaches one subscriber. */
    private static void awaitSubscribed() {
        await().atMost(WAIT)
                .until(() -> RedisCommands.send(redis.server().port(), "PUBLISH " + PublishedRing.channel(CELL) + " 0")
                        .equals(":1"));
    }

    private static CellRing ring(long epoch, CellRing.Source source, int members) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < members; i++) {
            text.append(i == 0 ? "" : ",")
                    .append("owner-")
                    .append(i)
                    .append("=http://127.0.0.1:")
                    .append(7100 + i);
        }
        return CellRing.of(epoch, CellRing.parseMembers(text.toString()), source);
    }
}
