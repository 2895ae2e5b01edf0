package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.FakeTicker;
import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The send-stall check, driven by a {@link FakeTicker} that is also the loop's clock: exact. */
final class RequestBodyPumpTest {
    private static final Duration STALL = Duration.ofSeconds(3);

    private final FakeTicker ticker = new FakeTicker();
    private final EmbeddedChannel channel =
            EmbeddedChannel.builder().ticker(ticker).build();
    private final RecordingRequestBody body = new RecordingRequestBody();
    private final List<String> stalls = new ArrayList<>();
    private final RequestBodyPump pump =
            new RequestBodyPump(body, channel.eventLoop(), ticker, STALL, () -> stalls.add("stalled"));

    @AfterEach
    void close() {
        channel.finishAndReleaseAll();
    }

    private void elapse(Duration d) {
        ticker.advance(d);
        channel.runScheduledPendingTasks();
    }

    @Test
    void pause_ownerTakesNothingForTheStallTimeout_stallsExactlyThen() {
        pump.start(NO_CONSUMER);
        pump.pause();

        elapse(STALL.minusNanos(1));
        assertThat(stalls).isEmpty();

        elapse(Duration.ofNanos(1));
        assertThat(stalls).containsExactly("stalled");
        assertThat(body.calls).containsExactly("start", "pause");
    }

    @Test
    void resume_beforeTheStallTimeout_cancelsTheCheck() {
        pump.start(NO_CONSUMER);
        pump.pause();
        elapse(STALL.minusMillis(1));

        pump.resume();
        elapse(STALL.multipliedBy(3));

        assertThat(stalls).isEmpty();
        assertThat(body.calls).containsExactly("start", "pause", "resume");
        assertThat(pump.isPaused()).isFalse();
    }

    @Test
    void pause_again_startsAFreshWindow() {
        pump.start(NO_CONSUMER);
        pump.pause();
        elapse(STALL.minusMillis(1));
        pump.resume();

        pump.pause();
        elapse(STALL.minusMillis(1));
        assertThat(stalls).isEmpty();

        elapse(Duration.ofMillis(1));
        assertThat(stalls).containsExactly("stalled");
    }

    @Test
    void checkStall_tickerBehindTheLoop_waitsForTheTickerToCatchUp() {
        FakeTicker own = new FakeTicker();
        RequestBodyPump p = new RequestBodyPump(body, channel.eventLoop(), own, STALL, () -> stalls.add("stalled"));
        p.start(NO_CONSUMER);
        p.pause();

        own.advance(Duration.ofSeconds(1));
        elapse(STALL); // the loop's timer fires; the pump's clock says 1 s
        assertThat(stalls).as("time is the ticker's").isEmpty();

        own.advance(Duration.ofSeconds(2));
        elapse(Duration.ofSeconds(2)); // the check was moved on by the 2 s still missing
        assertThat(stalls).containsExactly("stalled");
    }

    @Test
    void pause_twice_pausesTheClientOnce() {
        pump.start(NO_CONSUMER);

        pump.pause();
        pump.pause();
        elapse(STALL);

        assertThat(body.calls).containsExactly("start", "pause");
        assertThat(stalls).containsExactly("stalled");
    }

    @Test
    void pause_beforeStart_isANoOp() {
        pump.pause();
        elapse(STALL);

        assertThat(body.calls).isEmpty();
        assertThat(stalls).isEmpty();
    }

    @Test
    void pause_afterTheEnd_isANoOp() {
        pump.start(NO_CONSUMER);
        pump.ended();

        pump.pause();
        elapse(STALL);

        assertThat(body.calls).containsExactly("start");
        assertThat(stalls).isEmpty();
    }

    @Test
    void discard_whilePaused_dropsTheBodyAndTheCheck() {
        pump.start(NO_CONSUMER);
        pump.pause();

        pump.discard();
        elapse(STALL);

        assertThat(body.calls).containsExactly("start", "pause", "discard");
        assertThat(stalls).isEmpty();
    }

    @Test
    void discard_afterTheEnd_leavesTheBodyAlone() {
        pump.start(NO_CONSUMER);
        pump.ended();

        pump.discard();

        assertThat(body.calls).containsExactly("start");
    }

    @Test
    void pauseUntimed_noAttemptSends_pausesWithNoClock() {
        pump.start(NO_CONSUMER);
        pump.pauseUntimed();

        elapse(STALL.multipliedBy(3));

        assertThat(stalls).isEmpty();
        assertThat(pump.isPaused()).isTrue();
        assertThat(body.calls).containsExactly("start", "pause");
    }

    @Test
    void pause_afterAnUntimedPause_startsTheClockThen() {
        pump.start(NO_CONSUMER);
        pump.pauseUntimed();
        elapse(STALL.multipliedBy(2)); // a hold, a connect: no owner's time

        pump.pause(); // an attempt sends and takes no more
        elapse(STALL.minusNanos(1));
        assertThat(stalls).isEmpty();

        elapse(Duration.ofNanos(1));
        assertThat(stalls).containsExactly("stalled");
        assertThat(body.calls).as("one pause of the body").containsExactly("start", "pause");
    }

    @Test
    void stopClock_theAttemptIsGone_theBodyStaysPaused_andTheNextOwnerGetsAWholeWindow() {
        pump.start(NO_CONSUMER);
        pump.pause();
        elapse(STALL.minusMillis(1));

        pump.stopClock(); // a retarget: the next attempt connects
        elapse(STALL);
        assertThat(stalls).isEmpty();
        assertThat(pump.isPaused()).isTrue();

        pump.pause(); // the next owner takes no more
        elapse(STALL.minusNanos(1));
        assertThat(stalls).isEmpty();
        elapse(Duration.ofNanos(1));
        assertThat(stalls).containsExactly("stalled");
    }

    @Test
    void pause_whileTheClockRuns_keepsItsStart() {
        pump.start(NO_CONSUMER);
        pump.pause();
        elapse(STALL.minusMillis(1));

        pump.pause();
        elapse(Duration.ofMillis(1));

        assertThat(stalls).containsExactly("stalled");
    }

    private static final RequestBody.Consumer NO_CONSUMER = new RequestBody.Consumer() {
        @Override
        public void onChunk(ByteBuf chunk) {
            chunk.release();
        }

        @Override
        public void onEnd() {}

        @Override
        public void onError(Throwable error) {}
    };
}
