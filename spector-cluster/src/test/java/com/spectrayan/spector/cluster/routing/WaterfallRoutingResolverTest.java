package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.Waits;
import io.lettuce.core.RedisCommandTimeoutException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The waterfall's rules, with the L2 port scripted; {@code RedisRoutingTest} runs them on Redis. */
final class WaterfallRoutingResolverTest {
    private static final List<String> MEMBERS = List.of("owner-0", "owner-1", "owner-2");
    private static final RoutingKey KEY = RoutingKey.of("cell", "acme", "orders");

    private final AtomicLong nanos = new AtomicLong();
    private final OwnershipResolver ring = new OwnershipResolver(KetamaRing.of(1, MEMBERS));

    private WaterfallRoutingResolver withoutL2() {
        return WaterfallRoutingResolver.builder("cell", ring).ticker(nanos::get).build();
    }

    /** The bound on one resolution: 5 s, for an in-memory resolver. */
    private static final Duration WAIT = Duration.ofSeconds(5);

    private static Resolution await(CompletionStage<Resolution> stage) {
        return Waits.done(stage, "the key resolves", WAIT);
    }

    @Test
    void resolve_withoutL2_answersFromTheRingThenFromL1() throws Exception {
        WaterfallRoutingResolver resolver = withoutL2();
        String ringOwner = KetamaRing.of(1, MEMBERS).ownerOf("acme/orders");

        Resolution first = await(resolver.resolve(KEY));
        Resolution second = await(resolver.resolve(KEY));

        assertThat(first.level()).isEqualTo(Resolution.Level.L3);
        assertThat(first.entry()).isEqualTo(new RouteEntry(ringOwner, 1, RouteEntry.NO_FENCE));
        assertThat(second.level()).isEqualTo(Resolution.Level.L1);
        assertThat(resolver.metrics().l3Hits()).isEqualTo(1);
        assertThat(resolver.metrics().l1Hits()).isEqualTo(1);
    }

    @Test
    void l1_entryPastItsTtl_isAskedAgain() throws Exception {
        WaterfallRoutingResolver resolver = WaterfallRoutingResolver.builder("cell", ring)
                .ticker(nanos::get)
                .l1Ttl(Duration.ofSeconds(60))
                .build();
        await(resolver.resolve(KEY));

        nanos.addAndGet(Duration.ofSeconds(60).toNanos() - 1);
        assertThat(await(resolver.resolve(KEY)).level()).as("at the TTL").isEqualTo(Resolution.Level.L1);
        nanos.addAndGet(1);
        assertThat(await(resolver.resolve(KEY)).level()).as("one past the TTL").isEqualTo(Resolution.Level.L3);
    }

    @Test
    void l1_holdsAtMostMaxSizeEntries() throws Exception {
        WaterfallRoutingResolver resolver =
                WaterfallRoutingResolver.builder("cell", ring).l1MaxSize(1000).build();
        for (int i = 0; i < 1001; i++) {
            await(resolver.resolve(RoutingKey.ofUntenanted("cell", "ns-" + i)));
        }

        assertThat(resolver.l1Size()).as("L1 size after 1001 keys").isLessThanOrEqualTo(1000);
    }

    @Test
    void resolve_emptyRing_failsClosed() {
        WaterfallRoutingResolver resolver = WaterfallRoutingResolver.builder(
                        "cell", new OwnershipResolver(KetamaRing.of(1, List.of())))
                .build();

        assertThat(Waits.failure(resolver.resolve(KEY), "an empty ring fails closed", WAIT))
                .isInstanceOf(SpectorException.class)
                .satisfies(e -> assertThat(((SpectorException) e).code()).isEqualTo(ErrorCode.GATEWAY_ROUTING_FAILURE));
    }

    @Test
    void reportMisdirected_replacesTheRingAnswer_andAnOlderReportIsIgnored() throws Exception {
        WaterfallRoutingResolver resolver = withoutL2();
        await(resolver.resolve(KEY));

        Waits.done(resolver.reportMisdirected(KEY, "owner-9", 3, 7), "the epoch 3 report is applied", WAIT);
        Waits.done(resolver.reportMisdirected(KEY, "owner-old", 2, 99), "the older report is settled", WAIT);

        assertThat(await(resolver.resolve(KEY)).entry())
                .as("entries only move forward by epoch")
                .isEqualTo(new RouteEntry("owner-9", 3, 7));
    }

    @Test
    void onInvalidation_olderThanTheHeldEntry_isIgnored_andANewerOneEvicts() throws Exception {
        WaterfallRoutingResolver resolver = withoutL2();
        resolver.reportMisdirected(KEY, "owner-1", 5, 0);

        resolver.onInvalidation(new RouteInvalidation("other", "acme", "orders", "owner-2", 4, 0));
        assertThat(resolver.peek(KEY))
                .as("an older invalidation leaves the entry")
                .isNotNull();

        resolver.onInvalidation(new RouteInvalidation("other", "acme", "orders", "owner-2", 5, 0));
        assertThat(resolver.peek(KEY))
                .as("an invalidation at the entry's epoch evicts it")
                .isNull();
    }

    @Test
    void onInvalidation_ownMessage_isIgnored() throws Exception {
        WaterfallRoutingResolver resolver = withoutL2();
        await(resolver.resolve(KEY));

        resolver.onInvalidation(new RouteInvalidation(resolver.origin(), "acme", "orders", null, 9, 0));

        assertThat(resolver.peek(KEY)).isNotNull();
        assertThat(resolver.metrics().invalidationsReceived()).isZero();
    }

    @Test
    void onInvalidation_tellsTheRouteListenersAfterL1LetGo_butNotOfItsOwnMessages() throws Exception {
        WaterfallRoutingResolver resolver = withoutL2();
        await(resolver.resolve(KEY));
        List<String> told = new java.util.concurrent.CopyOnWriteArrayList<>();
        resolver.addRouteListener(k -> told.add(k + (resolver.peek(k) == null ? " evicted" : " still held")));

        resolver.onInvalidation(new RouteInvalidation(resolver.origin(), "acme", "orders", null, 9, 0));
        resolver.onInvalidation(new RouteInvalidation("other", "acme", "orders", "owner-2", 9, 0));

        assertThat(told).containsExactly("cell:acme/orders evicted");
    }

    @Test
    void invalidation_racingAnInFlightFill_wins() throws Exception {
        RecordingRoutingCache l2 = new RecordingRoutingCache();
        WaterfallRoutingResolver resolver =
                WaterfallRoutingResolver.builder("cell", ring).l2(l2).build();
        resolver.subscriptionRestored();

        CompletionStage<Resolution> inFlight = resolver.resolve(KEY);
        resolver.onInvalidation(new RouteInvalidation("other", "acme", "orders", "owner-2", 2, 0));
        l2.gets.get(0).complete(Optional.of(new RouteEntry("owner-1", 1, 0)));

        assertThat(await(inFlight).entry().owner())
                .as("the caller still gets an answer")
                .isEqualTo("owner-1");
        assertThat(resolver.peek(KEY))
                .as("the stale fill was not installed in L1")
                .isNull();
        assertThat(resolver.metrics().fillsDropped()).isEqualTo(1);
    }

    /**
     * An L2 entry naming no member of the ring (stale, or written by someone hostile) is not used
     * nor kept in L1: the ring answers, as for a 421 hint naming a stranger. Regression (the
     * routing review): it was kept in L1 and its key answered 503 for the entry's life.
     */
    @Test
    void l2EntryNamingAStranger_isNotUsedNorKept_andTheRingAnswers() throws Exception {
        RecordingRoutingCache l2 = new RecordingRoutingCache();
        WaterfallRoutingResolver resolver =
                WaterfallRoutingResolver.builder("cell", ring).l2(l2).build();
        resolver.subscriptionRestored();

        CompletionStage<Resolution> stage = resolver.resolve(KEY);
        l2.gets.get(0).complete(Optional.of(new RouteEntry("owner-9".repeat(1000), 7, 0)));

        Resolution r = await(stage);
        assertThat(r.level()).isEqualTo(Resolution.Level.L3);
        assertThat(r.entry().owner()).isEqualTo(KetamaRing.of(1, MEMBERS).ownerOf("acme/orders"));
        Resolution kept = resolver.peek(KEY);
        assertThat(kept).as("the ring's answer is what L1 keeps").isNotNull();
        assertThat(kept == null ? null : kept.entry().owner())
                .isEqualTo(r.entry().owner());
    }

    @Test
    void l2Failure_isCountedAndTheRingAnswers() throws Exception {
        RecordingRoutingCache l2 = new RecordingRoutingCache();
        WaterfallRoutingResolver resolver =
                WaterfallRoutingResolver.builder("cell", ring).l2(l2).build();

        CompletionStage<Resolution> stage = resolver.resolve(KEY);
        l2.gets.get(0).completeExceptionally(new RedisCommandTimeoutException("200 ms"));

        assertThat(await(stage).level()).isEqualTo(Resolution.Level.L3);
        assertThat(resolver.metrics().redisErrors()).isEqualTo(1);
    }

    @Test
    void l1_isBypassedUntilSubscribed_andClearedWhenTheSubscriptionDrops() throws Exception {
        RecordingRoutingCache l2 = new RecordingRoutingCache();
        WaterfallRoutingResolver resolver =
                WaterfallRoutingResolver.builder("cell", ring).l2(l2).build();
        assertThat(resolver.isL1Bypassed())
                .as("bypassed before the first subscription")
                .isTrue();

        resolver.subscriptionRestored();
        CompletionStage<Resolution> s = resolver.resolve(KEY);
        l2.gets.get(0).complete(Optional.empty());
        await(s);
        assertThat(resolver.peek(KEY)).as("filled while subscribed").isNotNull();

        resolver.subscriptionLost();
        assertThat(resolver.isL1Bypassed()).isTrue();
        assertThat(resolver.l1Size()).as("L1 cleared on loss").isZero();
        assertThat(resolver.metrics().l1Clears()).isEqualTo(1);
        CompletionStage<Resolution> bypassed = resolver.resolve(KEY);
        assertThat(l2.gets).as("a lookup while bypassed goes to L2").hasSize(2);
        l2.gets.get(1).complete(Optional.empty());
        assertThat(await(bypassed).level()).isEqualTo(Resolution.Level.L3);
        assertThat(resolver.peek(KEY)).as("nothing is filled while bypassed").isNull();
    }

    /**
     * Whether a report took in L1, which decides a client's {@code Retry-After}: not while L1 is
     * bypassed (Redis away), not when L1 holds a newer entry naming another owner; yes otherwise.
     */
    @Test
    void names_saysWhetherAReportTookInL1() {
        RecordingRoutingCache l2 = new RecordingRoutingCache();
        WaterfallRoutingResolver resolver =
                WaterfallRoutingResolver.builder("cell", ring).l2(l2).build();
        resolver.reportMisdirected(KEY, "owner-2", 4, 11);
        assertThat(resolver.names(KEY, "owner-2"))
                .as("bypassed: nothing learned")
                .isFalse();

        resolver.subscriptionRestored();
        resolver.reportMisdirected(KEY, "owner-2", 4, 11);
        assertThat(resolver.names(KEY, "owner-2")).isTrue();
        resolver.reportMisdirected(KEY, "owner-1", 3, 0);
        assertThat(resolver.names(KEY, "owner-1"))
                .as("older than what L1 holds")
                .isFalse();
        assertThat(resolver.names(KEY, "owner-2")).isTrue();
    }

    @Test
    void reportMisdirected_writesL2AndPublishesTheNewOwner() {
        RecordingRoutingCache l2 = new RecordingRoutingCache();
        WaterfallRoutingResolver resolver =
                WaterfallRoutingResolver.builder("cell", ring).l2(l2).build();

        resolver.reportMisdirected(KEY, "owner-2", 4, 11);

        assertThat(l2.puts).containsExactly(new RouteEntry("owner-2", 4, 11));
        assertThat(l2.published)
                .containsExactly(new RouteInvalidation(resolver.origin(), "acme", "orders", "owner-2", 4, 11));
        assertThat(resolver.metrics().misdirected()).isEqualTo(1);
    }

    @Test
    void builder_badSettings_areRefusedNamingThem() {
        assertThatThrownBy(() -> WaterfallRoutingResolver.builder("cell", ring).l1MaxSize(0))
                .hasMessage("l1MaxSize: 0 (expected: >= 1)");
        assertThatThrownBy(() -> WaterfallRoutingResolver.builder("cell", ring).l1Ttl(Duration.ZERO))
                .hasMessage("l1Ttl: PT0S (expected: > 0)");
    }
}
