package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

final class HandoffHoldsTest {
    private static final RoutingKey ORDERS = RoutingKey.of("cell", "acme", "orders");
    private static final RoutingKey CARTS = RoutingKey.of("cell", "acme", "carts");
    private static final long INTERVAL = HandoffHolds.POLL_INTERVAL.toNanos();

    @Test
    void pollInterval_isTheIssues100ms() {
        assertThat(HandoffHolds.POLL_INTERVAL).isEqualTo(Duration.ofMillis(100));
    }

    @Test
    void tryHold_atTheCountBound_holds_onePast_isRefused() {
        HandoffHolds holds = new HandoffHolds(2, 1000);

        assertThat(holds.tryHold(ORDERS, 0, false, () -> {})).isNotNull();
        assertThat(holds.tryHold(CARTS, 0, false, () -> {}))
                .as("the second: at the bound")
                .isNotNull();
        assertThat(holds.tryHold(ORDERS, 0, false, () -> {}))
                .as("the third: one past")
                .isNull();

        assertThat(holds.held()).isEqualTo(2);
    }

    @Test
    void tryHold_atTheBytesBound_holds_oneBytePast_isRefusedAndTakesNoSlot() {
        HandoffHolds holds = new HandoffHolds(10, 100);

        assertThat(holds.tryHold(ORDERS, 60, false, () -> {})).isNotNull();
        assertThat(holds.tryHold(ORDERS, 41, false, () -> {}))
                .as("101 bytes: one past")
                .isNull();
        assertThat(holds.tryHold(ORDERS, 40, false, () -> {}))
                .as("100 bytes: at the bound")
                .isNotNull();

        assertThat(holds.held()).isEqualTo(2);
        assertThat(holds.heldBytes()).isEqualTo(100);
    }

    @Test
    void grow_pastTheBytesBound_refusesAndKeepsWhatWasHeld() {
        HandoffHolds holds = new HandoffHolds(10, 100);
        HandoffHolds.Hold h = held(holds, 50, () -> {});

        assertThat(h.grow(50)).as("to the bound").isTrue();
        assertThat(h.grow(1)).as("one past").isFalse();

        assertThat(holds.heldBytes()).isEqualTo(100);
    }

    @Test
    void wake_runsEachHoldOfTheKeyOnce_andGivesBackTheirSlotsAndBytes() {
        HandoffHolds holds = new HandoffHolds(10, 1000);
        AtomicInteger orders = new AtomicInteger();
        AtomicInteger carts = new AtomicInteger();
        holds.tryHold(ORDERS, 10, false, orders::incrementAndGet);
        holds.tryHold(ORDERS, 20, false, orders::incrementAndGet);
        holds.tryHold(CARTS, 30, false, carts::incrementAndGet);

        holds.wake(ORDERS);
        holds.wake(ORDERS);

        assertThat(orders).hasValue(2);
        assertThat(carts).as("another key is not woken").hasValue(0);
        assertThat(holds.held()).isEqualTo(1);
        assertThat(holds.heldBytes()).isEqualTo(30);
    }

    @Test
    void release_givesBackOnce_andTheWakeUpNeverRuns() {
        HandoffHolds holds = new HandoffHolds(10, 1000);
        AtomicInteger woken = new AtomicInteger();
        HandoffHolds.Hold h = held(holds, 10, woken::incrementAndGet);

        h.release();
        h.release();
        holds.wake(ORDERS);

        assertThat(woken).hasValue(0);
        assertThat(holds.held()).isZero();
        assertThat(holds.heldBytes()).isZero();
    }

    @Test
    void grow_afterTheHoldEnded_takesNothing() {
        HandoffHolds holds = new HandoffHolds(10, 1000);
        HandoffHolds.Hold h = held(holds, 10, () -> {});
        holds.wake(ORDERS);

        assertThat(h.grow(500)).isTrue();

        assertThat(holds.heldBytes()).isZero();
    }

    @Test
    void claimPoll_letsOneTickPerKeyPerIntervalThrough() {
        HandoffHolds holds = new HandoffHolds(10, 1000);
        holds.tryHold(ORDERS, 0, false, () -> {});
        holds.tryHold(ORDERS, 0, false, () -> {});

        assertThat(holds.claimPoll(ORDERS, 1_000, INTERVAL))
                .as("the first tick")
                .isTrue();
        assertThat(holds.claimPoll(ORDERS, 1_000 + INTERVAL - 1, INTERVAL))
                .as("within the interval")
                .isFalse();
        assertThat(holds.claimPoll(ORDERS, 1_000 + INTERVAL, INTERVAL))
                .as("an interval later")
                .isTrue();
        assertThat(holds.claimPoll(CARTS, 1_000, INTERVAL))
                .as("a key with no holds")
                .isFalse();
    }

    @Test
    void claimPoll_ofALaggingOwner_usesTheShorterInterval() {
        HandoffHolds holds = new HandoffHolds(10, 1000);
        holds.tryHold(ORDERS, 0, false, () -> {});
        long first = HandoffHolds.LAGGING_FIRST_POLL.toNanos();

        assertThat(holds.claimPoll(ORDERS, 1_000, first)).isTrue();
        assertThat(holds.claimPoll(ORDERS, 1_000 + first - 1, first))
                .as("within it")
                .isFalse();
        assertThat(holds.claimPoll(ORDERS, 1_000 + first, first))
                .as("one back-off later")
                .isTrue();
    }

    @Test
    void nextLaggingPoll_doublesFromTheFirstPollUpToThePollInterval() {
        long wait = 0;
        List<Long> waits = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            wait = HandoffHolds.nextLaggingPoll(wait);
            waits.add(wait / 1_000_000);
        }

        assertThat(waits).containsExactly(10L, 20L, 40L, 80L, 100L, 100L, 100L);
        assertThat(HandoffHolds.nextLaggingPoll(HandoffHolds.POLL_INTERVAL.toNanos() - 1))
                .as("one under the cap, doubled: the cap")
                .isEqualTo(HandoffHolds.POLL_INTERVAL.toNanos());
    }

    @Test
    void constructor_negativeBounds_refused() {
        assertThatThrownBy(() -> new HandoffHolds(-1, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxHeld: -1 (expected: >= 0)");
        assertThatThrownBy(() -> new HandoffHolds(0, -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("maxHeldBytes: -1 (expected: >= 0)");
    }

    @Test
    void zeroBounds_holdNothing() {
        assertThat(new HandoffHolds(0, 1000).tryHold(ORDERS, 0, false, () -> {}))
                .isNull();
    }

    private static HandoffHolds.Hold held(HandoffHolds holds, long bytes, Runnable wake) {
        HandoffHolds.Hold h = holds.tryHold(ORDERS, bytes, false, wake);
        assertThat(h).isNotNull();
        return java.util.Objects.requireNonNull(h);
    }

    @Test
    void wokenSince_remembersTheLastWakeUpOfAKey_evenWithNoHolds() {
        FakeTickerHolder t = new FakeTickerHolder();
        HandoffHolds holds = new HandoffHolds(10, 1000, t::read);
        t.now = 5_000;

        holds.wake(ORDERS);

        assertThat(holds.wokenSince(ORDERS, 5_000)).as("at the wake-up").isTrue();
        assertThat(holds.wokenSince(ORDERS, 5_001)).as("an attempt after it").isFalse();
        assertThat(holds.wokenSince(CARTS, 0)).isFalse();
    }

    @Test
    void wake_pastMaxRecentWakes_forgetsTheOldOnes() {
        FakeTickerHolder t = new FakeTickerHolder();
        HandoffHolds holds = new HandoffHolds(10, 1000, t::read);
        for (int i = 0; i < HandoffHolds.MAX_RECENT_WAKES; i++) {
            holds.wake(RoutingKey.of("cell", "acme", "ns-" + i));
        }
        assertThat(holds.wokenSince(RoutingKey.of("cell", "acme", "ns-0"), 0))
                .as("at the bound: kept")
                .isTrue();
        t.now = HandoffHolds.RECENT_WAKE.toNanos() + 1;

        holds.wake(ORDERS); // one past the bound

        assertThat(holds.wokenSince(RoutingKey.of("cell", "acme", "ns-0"), 0))
                .as("old: forgotten")
                .isFalse();
        assertThat(holds.wokenSince(ORDERS, 0)).isTrue();
    }

    /**
     * A burst of wake-ups of distinct keys within {@link HandoffHolds#RECENT_WAKE} (a ring change)
     * prunes the remembered ones a logarithmic number of times, not once per wake-up past {@link
     * HandoffHolds#MAX_RECENT_WAKES}; each key is still remembered, and the old ones go once the
     * time passed. Regression: above 1 024 keys woken within a second every wake-up scanned them all.
     */
    @Test
    void wake_aBurstOfDistinctKeys_prunesLogarithmically() {
        FakeTickerHolder t = new FakeTickerHolder();
        HandoffHolds holds = new HandoffHolds(10, 1000, t::read);
        int keys = 16 * HandoffHolds.MAX_RECENT_WAKES;
        for (int i = 0; i < keys; i++) {
            holds.wake(RoutingKey.of("cell", "acme", "ns-" + i));
        }

        assertThat(holds.prunings())
                .as("one per doubling: 1 024, 2 048, ... 8 192")
                .isEqualTo(4);
        assertThat(holds.wokenSince(RoutingKey.of("cell", "acme", "ns-0"), 0))
                .as("recent: kept")
                .isTrue();

        t.now = HandoffHolds.RECENT_WAKE.toNanos() + 1;
        for (int i = 0; i < keys; i++) {
            holds.wake(RoutingKey.of("cell", "acme", "later-" + i));
        }
        assertThat(holds.wokenSince(RoutingKey.of("cell", "acme", "ns-0"), 0))
                .as("old: forgotten")
                .isFalse();
        assertThat(holds.prunings())
                .as("the second burst: the old keys went at its first pruning, then one per doubling again")
                .isEqualTo(4 + 1 + 4);
    }

    /**
     * Holds for an owner behind the ring take at most a quarter of the slots ({@link
     * HandoffHolds#LAGGING_SHARE}), at the share and one past it; the rest stay for real moves,
     * and a lagging hold given back frees its share. Regression: one owner that stopped following
     * the ring could fill every slot, and every other namespace's move was answered 503.
     */
    @Test
    void tryHold_forALaggingOwner_takesAtMostItsShare() {
        HandoffHolds holds = new HandoffHolds(8, 1000);
        HandoffHolds.Hold first = holds.tryHold(ORDERS, 0, true, () -> {});
        assertThat(first).as("the first lagging hold").isNotNull();
        assertThat(holds.tryHold(CARTS, 0, true, () -> {}))
                .as("the second: at the share of 8")
                .isNotNull();
        assertThat(holds.tryHold(CARTS, 0, true, () -> {}))
                .as("the third: one past")
                .isNull();
        for (int i = 0; i < 6; i++) {
            assertThat(holds.tryHold(CARTS, 0, false, () -> {}))
                    .as("a move's hold %s", i)
                    .isNotNull();
        }
        assertThat(holds.held()).isEqualTo(8);

        java.util.Objects.requireNonNull(first).release();
        assertThat(holds.tryHold(ORDERS, 0, true, () -> {}))
                .as("a lagging hold given back makes room for another")
                .isNotNull();
        assertThat(new HandoffHolds(1, 1000).tryHold(ORDERS, 0, true, () -> {}))
                .as("one slot: a lagging hold may take it")
                .isNotNull();
    }

    /** A lagging hold refused for its bytes gives its share back. */
    @Test
    void tryHold_forALaggingOwner_refusedForItsBytes_givesItsShareBack() {
        HandoffHolds holds = new HandoffHolds(4, 100);
        assertThat(holds.tryHold(ORDERS, 101, true, () -> {})).isNull();
        assertThat(holds.tryHold(ORDERS, 100, true, () -> {}))
                .as("the one lagging slot is free")
                .isNotNull();
        assertThat(holds.held()).isEqualTo(1);
    }

    /** A settable clock for the holds' ticker. */
    private static final class FakeTickerHolder {
        long now;

        long read() {
            return now;
        }
    }
}
