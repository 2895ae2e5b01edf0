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

        assertThat(holds.tryHold(ORDERS, 0, () -> {})).isNotNull();
        assertThat(holds.tryHold(CARTS, 0, () -> {}))
                .as("the second: at the bound")
                .isNotNull();
        assertThat(holds.tryHold(ORDERS, 0, () -> {})).as("the third: one past").isNull();

        assertThat(holds.held()).isEqualTo(2);
    }

    @Test
    void tryHold_atTheBytesBound_holds_oneBytePast_isRefusedAndTakesNoSlot() {
        HandoffHolds holds = new HandoffHolds(10, 100);

        assertThat(holds.tryHold(ORDERS, 60, () -> {})).isNotNull();
        assertThat(holds.tryHold(ORDERS, 41, () -> {}))
                .as("101 bytes: one past")
                .isNull();
        assertThat(holds.tryHold(ORDERS, 40, () -> {}))
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
        holds.tryHold(ORDERS, 10, orders::incrementAndGet);
        holds.tryHold(ORDERS, 20, orders::incrementAndGet);
        holds.tryHold(CARTS, 30, carts::incrementAndGet);

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
        holds.tryHold(ORDERS, 0, () -> {});
        holds.tryHold(ORDERS, 0, () -> {});

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
        holds.tryHold(ORDERS, 0, () -> {});
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
        assertThat(new HandoffHolds(0, 1000).tryHold(ORDERS, 0, () -> {})).isNull();
    }

    private static HandoffHolds.Hold held(HandoffHolds holds, long bytes, Runnable wake) {
        HandoffHolds.Hold h = holds.tryHold(ORDERS, bytes, wake);
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

    /** A settable clock for the holds' ticker. */
    private static final class FakeTickerHolder {
        long now;

        long read() {
            return now;
        }
    }
}
