package com.spectrayan.spector.uplink.gateway;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.get;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.spectorFailure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.internal.wire.StatusGet;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

final class WorkerLinkTest {
    private static final Duration SHORT = Duration.ofMillis(50);

    private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2);
    private final WorkerDirectory directory = new WorkerDirectory();
    private final RelayFixture w1 = new RelayFixture(directory);

    @AfterEach
    void tearDown() {
        w1.client.close("test over");
        scheduler.shutdownNow();
    }

    private static StatusReport report() {
        return new StatusReport("w1", List.of("app"), 0, Instant.EPOCH);
    }

    @Test
    void oneMiss_thenAnAnswer_keepsTheLinkOpenAndResetsTheCount() {
        Throwable miss = failure(w1.link.refresh(scheduler, SHORT), "first status.get");
        assertThat(miss).isInstanceOf(TimeoutException.class);
        assertThat(w1.link.misses()).as("one miss counted").isEqualTo(1);
        assertThat(w1.link.isOpen()).as("one miss does not close the link").isTrue();

        CompletionStage<StatusReport> second = w1.link.refresh(scheduler, Duration.ofSeconds(10));
        Frame.Call late = w1.worker.take(StatusGet.OP);
        Frame.Call call = w1.worker.take(StatusGet.OP);
        w1.worker.result(call.id(), report().toJson());
        assertThat(done(second, "second status.get")).isEqualTo(report());
        assertThat(w1.link.misses()).as("an answer resets the misses").isZero();
        assertThat(w1.link.lastStatus()).isEqualTo(report());
        assertThat(late.id()).isNotEqualTo(call.id());
    }

    @Test
    void twoMissesInARow_closeTheLink_failTheRelayUnreachable_andLeaveTheDirectory() {
        GatewayRelay relay = new GatewayRelay(directory, scheduler);
        CompletionStage<RelayedResponse> stage = relay.relay("w1", get());
        w1.worker.take(RelayRequest.OP);

        w1.link.startRefresh(scheduler, Duration.ofMillis(10), SHORT);

        spectorFailure(stage, ErrorCode.WORKER_UNREACHABLE, "status misses: the relay on the closed link");
        Waits.until("status misses: the link closes", () -> !w1.link.isOpen());
        assertThat(w1.link.misses()).as("closed at two misses").isEqualTo(2);
        Waits.until("status misses: the link leaves the directory", () -> directory.live("w1") == null);
        assertThat(w1.worker.seen(StatusGet.OP)).as("two reads were sent").hasSizeGreaterThanOrEqualTo(2);
    }

    @Test
    void goAway_takesTheLinkOutOfServiceAtOnce_butClosesItOnlyWhenItsRelayEnded() {
        RelayFixture second = new RelayFixture(directory, 1);
        GatewayRelay relay = new GatewayRelay(directory, scheduler);
        CompletionStage<RelayedResponse> running = relay.relay("w1", get());
        RawWorker carrying = w1.worker.waiting(RelayRequest.OP).isEmpty() ? second.worker : w1.worker;
        WorkerLink busy = carrying == w1.worker ? w1.link : second.link;
        WorkerLink idle = busy == w1.link ? second.link : w1.link;
        Frame.Call request = carrying.take(RelayRequest.OP);

        directory.goAway("gateway draining: reconnect");
        Waits.until("the idle link closes at once", () -> !idle.isOpen());
        assertThat(busy.isOpen()).as("the link carrying a relay stays open").isTrue();
        assertThat(busy.isGoingAway()).isTrue();
        assertThat(directory.live("w1"))
                .as("no new relay picks a link that is going away")
                .isNull();

        carrying.head(request.id(), 200);
        carrying.result(request.id(), RawWorker.empty());
        assertThat(done(running, "the relay on the busy link").status())
                .as("the relay that was running finishes")
                .isEqualTo(200);
        Waits.until("the busy link closes once its relay ended", () -> !busy.isOpen());
        second.close();
    }

    @Test
    void directory_aLinkInTheSameSlot_replacesAndClosesTheHeldOne() {
        RelayFixture newer = new RelayFixture(directory); // slot 0 again: the worker re-dialled it
        Waits.until("replace: the old link closes", () -> !w1.link.isOpen());
        assertThat(directory.live("w1")).as("replace: the newer link is live").isSameAs(newer.link);
        assertThat(directory.liveLinks()).as("the replaced link is not listed").containsExactly(newer.link);
        w1.client.close("again");
        assertThat(directory.live("w1"))
                .as("the old link's close does not remove the newer one")
                .isSameAs(newer.link);
        newer.client.close("test over");
        Waits.until(
                "a closed link leaves the directory",
                () -> directory.workerIds().isEmpty());
        assertThat(directory.liveLinks()).as("no live link once closed").isEmpty();
    }

    @Test
    void directory_aLinkInAnotherSlot_joins_andEachLeavesAlone() {
        RelayFixture second = new RelayFixture(directory, 1);
        assertThat(directory.links("w1")).as("both links, by slot").containsExactly(w1.link, second.link);
        assertThat(w1.link.isOpen()).as("the first link stays open").isTrue();

        w1.client.close("link 0 lost");
        Waits.until("link 0 leaves", () -> directory.links("w1").size() == 1);
        assertThat(directory.live("w1")).as("link 1 carries on").isSameAs(second.link);
        second.client.close("test over");
    }

    @Test
    void directory_atTheLinkLimit_refusesANewSlot_butTakesARedialOfAHeldOne() {
        WorkerDirectory two = new WorkerDirectory(2);
        RelayFixture a = new RelayFixture(two, 0);
        RelayFixture b = new RelayFixture(two, 1);
        assertThat(two.refusal("w1", 1))
                .as("a re-dial of a held slot is taken at the limit")
                .isNull();
        assertThat(two.refusal("w1", 2))
                .as("slot 2 is past a limit of 2")
                .contains("outside 0..1")
                .contains("spector.uplink.max-links-per-worker");
        assertThat(two.refusal("w2", 1)).as("another worker is not counted").isNull();

        RelayFixture c = new RelayFixture(two, 2); // as when two handshakes race past the check
        Waits.until("the link over the limit is closed at register", () -> !c.link.isOpen());
        assertThat(two.links("w1")).containsExactly(a.link, b.link);
        for (RelayFixture f : List.of(a, b, c)) {
            f.close();
        }
    }

    @Test
    void directory_listener_hearsEachJoinReplaceAndLeave_withTheLinksAlreadyChanged() {
        WorkerDirectory d = new WorkerDirectory();
        List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
        d.addListener(id -> heard.add(id + "=" + d.links(id).size()));

        RelayFixture a = new RelayFixture(d, 0);
        RelayFixture b = new RelayFixture(d, 1);
        RelayFixture again = new RelayFixture(d, 1); // re-dial of slot 1: replaces b
        Waits.until("the replaced link closes", () -> !b.link.isOpen());
        a.close();
        Waits.until("link 0 leaves", () -> heard.size() == 4);
        again.close();
        Waits.until("the last link leaves", () -> heard.size() == 5);

        assertThat(heard)
                .as("one change each, the replaced link's own close not counted twice")
                .containsExactly("w1=1", "w1=2", "w1=2", "w1=1", "w1=0");
    }

    @Test
    void directory_limitOutOfBounds_isRefused() {
        assertThatThrownBy(() -> new WorkerDirectory(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new WorkerDirectory(WorkerDirectory.MAX_LINKS_PER_WORKER + 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(new WorkerDirectory(WorkerDirectory.MAX_LINKS_PER_WORKER).maxLinksPerWorker())
                .isEqualTo(WorkerDirectory.MAX_LINKS_PER_WORKER);
    }
}
