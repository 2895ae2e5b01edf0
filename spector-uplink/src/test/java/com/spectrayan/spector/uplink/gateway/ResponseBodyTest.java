package com.spectrayan.spector.uplink.gateway;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * When a relayed response body is done (ended or failed, nothing queued): {@code onDone} runs
 * once, and only then, whichever way the body got there. A v2 relay keeps its worker's slot until
 * it does ({@link RelayExchange}), so running it early lets a worker's unread answers pile up, and
 * never running it wedges the slot.
 */
final class ResponseBodyTest {
    private final AtomicInteger done = new AtomicInteger();
    private final List<Throwable> readerCancels = new ArrayList<>();
    private final List<ByteBuf> offered = new ArrayList<>();
    private final ResponseBody body = new ResponseBody(readerCancels::add, taken -> {}, null, done::incrementAndGet);

    @AfterEach
    void everyPartReleased() {
        assertThat(offered)
                .as("every part offered was released (taken parts by the test, the rest by the body)")
                .allMatch(b -> b.refCnt() == 0);
    }

    private void offer(String text) {
        ByteBuf part = Unpooled.copiedBuffer(text, StandardCharsets.UTF_8);
        offered.add(part);
        body.offer(part);
    }

    /** Reads one part, as the gateway's client side does, and lets it go. */
    private @Nullable String read() {
        ByteBuf part = done(body.nextBuf(), "a read of the body");
        if (part == null) {
            return null;
        }
        try {
            return part.toString(StandardCharsets.UTF_8);
        } finally {
            part.release();
        }
    }

    @Test
    void end_withNothingQueued_isDoneAtOnce() {
        offer("ab");
        assertThat(read()).isEqualTo("ab");
        assertThat(done).as("not before the end").hasValue(0);

        body.end();

        assertThat(done).hasValue(1);
        assertThat(read()).as("the end still reads as the end").isNull();
        assertThat(done).as("once").hasValue(1);
    }

    @Test
    void end_withPartsQueued_isDoneOnlyWhenTheReaderTookTheLast() {
        offer("a");
        offer("b".repeat(ResponseBody.MAX_COALESCED_BYTES)); // not coalesced with the first
        body.end();
        assertThat(done).as("two parts unread").hasValue(0);

        assertThat(read()).isEqualTo("a");
        assertThat(done).as("one part unread").hasValue(0);
        assertThat(read()).hasSize(ResponseBody.MAX_COALESCED_BYTES);

        assertThat(done).as("the last part taken: nothing held").hasValue(1);
        assertThat(read()).isNull();
        assertThat(done).hasValue(1);
    }

    @Test
    void fail_dropsTheQueuedParts_andIsDoneAtOnce() {
        offer("a");
        body.fail(new IllegalStateException("the link was lost"));

        assertThat(done).hasValue(1);
        assertThat(failure(body.nextBuf(), "a read after the failure")).hasMessage("the link was lost");
    }

    @Test
    void failAfterQueued_isDoneOnlyWhenTheReaderTookTheQueuedParts() {
        offer("a");
        body.failAfterQueued(new IllegalStateException("the worker's error"));
        assertThat(done).as("a part still queued ahead of the failure").hasValue(0);

        assertThat(read()).isEqualTo("a");

        assertThat(done).hasValue(1);
        assertThat(failure(body.nextBuf(), "the failure behind the part")).hasMessage("the worker's error");
    }

    @Test
    void cancel_afterTheEnd_dropsWhatIsQueued_andIsDoneWithoutTellingTheRelay() {
        offer("a");
        body.end();

        body.cancel(new IllegalStateException("the client went away"));

        assertThat(done).hasValue(1);
        assertThat(readerCancels).as("an ended relay has nothing to cancel").isEmpty();
    }

    @Test
    void cancel_beforeTheEnd_isDone_andTellsTheRelay() {
        offer("a");

        body.cancel(new IllegalStateException("the client went away"));

        assertThat(done).hasValue(1);
        assertThat(readerCancels).hasSize(1);
    }

    @Test
    void abandon_afterTheEnd_dropsWhatIsQueued_andTheReaderReadsTheFailureNotAnEnd() {
        offer("a");
        body.end();

        body.abandon(new IllegalStateException("the deadline passed"));

        assertThat(done).hasValue(1);
        assertThat(failure(body.nextBuf(), "a read after the body was abandoned"))
                .as("never a short body read as whole")
                .hasMessage("the deadline passed");
        assertThat(readerCancels).isEmpty();
    }

    @Test
    void abandon_behindAFailureStillQueued_dropsTheParts_andKeepsTheFirstFailure() {
        offer("a");
        body.failAfterQueued(new IllegalStateException("the worker's error"));

        body.abandon(new IllegalStateException("the deadline passed"));

        assertThat(done).hasValue(1);
        assertThat(failure(body.nextBuf(), "a read")).hasMessage("the worker's error");
    }

    @Test
    void abandon_withAReaderWaiting_failsTheRead() {
        CompletionStage<@Nullable ByteBuf> waiting = body.nextBuf();

        body.abandon(new IllegalStateException("the caller aborted"));

        assertThat(failure(waiting, "the waiting read")).hasMessage("the caller aborted");
        assertThat(done).hasValue(1);
    }

    @Test
    void abandon_onceDone_doesNothing() {
        offer("a");
        body.end();
        assertThat(read()).isEqualTo("a");
        assertThat(done).hasValue(1);

        body.abandon(new IllegalStateException("the deadline passed"));

        assertThat(done).as("once").hasValue(1);
        assertThat(read())
                .as("the reader took it whole: it still reads the end")
                .isNull();
    }

    @Test
    void offer_afterDone_isReleased_andDoneStaysOnce() {
        body.end();
        assertThat(done).hasValue(1);

        offer("late");
        body.fail(new IllegalStateException("late"));
        body.cancel(new IllegalStateException("late"));

        assertThat(done).hasValue(1);
    }
}
