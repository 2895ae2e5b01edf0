package com.spectrayan.spector.uplink.gateway;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.get;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.spectorFailure;
import static org.assertj.core.api.Assertions.assertThat;

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
    void directory_secondLinkForSameId_replacesAndClosesTheFirst() {
        RelayFixture newer = new RelayFixture(directory);
        Waits.until("replace: the old link closes", () -> !w1.link.isOpen());
        assertThat(directory.live("w1")).as("replace: the newer link is live").isSameAs(newer.link);
        assertThat(directory.liveLinks())
                .as("one live link per worker: the replaced one is not listed")
                .containsExactly(newer.link);
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
}
