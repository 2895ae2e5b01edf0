package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.testkit.FakeTicker;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.net.URI;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One attempt over an {@link EmbeddedChannel} whose event loop runs on a {@link FakeTicker}, the
 * attempt's clock too: every timer is exact, no wall clock.
 */
final class AttemptTest {
    private static final Duration OWNER_TIMEOUT = Duration.ofSeconds(3);
    private static final Duration IDLE = Duration.ofSeconds(1);

    private final FakeTicker ticker = new FakeTicker();
    private final EmbeddedChannel channel =
            EmbeddedChannel.builder().ticker(ticker).build();
    private final UpstreamHttpTransport transport = new UpstreamHttpTransport(
            new TransportSpec(
                    Duration.ofSeconds(2), 1, 1, Duration.ofSeconds(2), Duration.ofSeconds(30), 16 * 1024, 8192),
            NioSocketChannel.class,
            NioDatagramChannel.class);
    private final RecordingEvents events = new RecordingEvents();
    private final Attempt attempt = new Attempt(
            new RouteEntry("owner-a", 5, 0),
            URI.create("http://owner-a:8081"),
            1,
            events,
            channel.eventLoop(),
            transport,
            ticker,
            OWNER_TIMEOUT);

    @AfterEach
    void close() {
        // The request's writes take the channel's void promise: left unflushed, the close would
        // fail them into the pipeline as an exception, which the embedded channel rethrows.
        if (channel.isOpen()) {
            channel.flushOutbound();
        }
        channel.finishAndReleaseAll();
        transport.close();
    }

    private void open() {
        attempt.onAcquired(channel.eventLoop().newSucceededFuture(channel));
        assertThat(attempt.state()).isEqualTo(Attempt.State.OPEN);
    }

    private void elapse(Duration d) {
        ticker.advance(d);
        channel.runScheduledPendingTasks();
    }

    @Test
    void onAcquired_current_holdsTheConnection() {
        open();

        assertThat(events.calls).containsExactly("connected");
        assertThat(attempt.isSending()).isTrue();
        assertThat(attempt.isReused()).isFalse();
    }

    @Test
    void onAcquired_noLongerCurrent_givesTheConnectionBackUnused() {
        events.current = false;

        attempt.onAcquired(channel.eventLoop().newSucceededFuture(channel));

        assertThat(events.calls).isEmpty();
        assertThat(attempt.state()).isEqualTo(Attempt.State.CONNECTING);
    }

    @Test
    void onAcquired_failed_failsTheAttempt() {
        attempt.onAcquired(channel.eventLoop().newFailedFuture(new ClosedChannelException()));

        assertThat(events.calls).containsExactly("failed ClosedChannelException");
    }

    @Test
    void headTimer_noHeadInOwnerTimeout_failsWithAHeadTimeout() {
        open();
        attempt.sendEnd();

        elapse(OWNER_TIMEOUT.minusNanos(1));
        assertThat(events.calls).containsExactly("connected");

        elapse(Duration.ofNanos(1));
        assertThat(events.calls).containsExactly("connected", "failed HeadTimeoutException");
    }

    /** A request with no body to send goes as one message, and its end starts the head timer. */
    @Test
    void sendWhole_writesOneMessage_andStartsTheHeadTimer() {
        open();
        attempt.sendWhole(new DefaultFullHttpRequest(
                HttpVersion.HTTP_1_1,
                HttpMethod.GET,
                "/x",
                Unpooled.EMPTY_BUFFER,
                new DefaultHttpHeaders().add("X-Kept", "yes"),
                EmptyHttpHeaders.INSTANCE));
        attempt.flush();

        Object written = channel.readOutbound();
        try {
            assertThat(written).isInstanceOf(FullHttpRequest.class);
            assertThat(((FullHttpRequest) written).headers().get("X-Kept")).isEqualTo("yes");
            assertThat(channel.<Object>readOutbound()).as("one message").isNull();
        } finally {
            ReferenceCountUtil.release(written);
        }
        elapse(OWNER_TIMEOUT.minusNanos(1));
        assertThat(events.calls).containsExactly("connected");
        elapse(Duration.ofNanos(1));
        assertThat(events.calls).containsExactly("connected", "failed HeadTimeoutException");
    }

    @Test
    void headTimer_beforeTheRequestEnds_neverRuns() {
        open();
        attempt.sendHead(new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/"));

        elapse(OWNER_TIMEOUT.multipliedBy(10));

        assertThat(events.calls).containsExactly("connected");
    }

    @Test
    void headTimer_headInTime_isCancelled() {
        open();
        attempt.sendEnd();
        elapse(OWNER_TIMEOUT.minusMillis(1));

        attempt.onMessage(new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK));
        elapse(OWNER_TIMEOUT);

        assertThat(events.calls).containsExactly("connected", "head 200");
        assertThat(attempt.responseStarted()).isTrue();
    }

    /** The head's read batch ends with the response incomplete: the idle timer counts from the head. */
    private void headReadEndsMidResponse(Duration sinceHead) {
        attempt.armIdle(IDLE);
        elapse(sinceHead);
        attempt.onReadComplete();
        events.calls.remove("read complete");
    }

    @Test
    void idleCheck_ownerQuietForTheIdleTimeout_failsExactlyThen() {
        open();
        headReadEndsMidResponse(Duration.ZERO);

        assertIdleExactlyAfter(IDLE);
    }

    @Test
    void idleCheck_theHeadsReadEndingLate_stillCountsFromTheHead() {
        open();
        headReadEndsMidResponse(Duration.ofMillis(400));

        assertIdleExactlyAfter(Duration.ofMillis(600));
    }

    /** The idle failure comes exactly {@code wait} from now: not a nanosecond sooner. */
    private void assertIdleExactlyAfter(Duration wait) {
        elapse(wait.minusNanos(1));
        assertThat(events.calls).containsExactly("connected");
        elapse(Duration.ofNanos(1));
        assertThat(events.calls).containsExactly("connected", "idle 1000 ms");
    }

    @Test
    void idleCheck_aResponseWholeInTheHeadsRead_schedulesNoTimer() {
        open();
        attempt.sendEnd();
        attempt.onMessage(new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK));
        attempt.armIdle(IDLE);
        attempt.onMessage(new DefaultLastHttpContent(Unpooled.wrappedBuffer(new byte[] {1})));
        attempt.onReadComplete();

        assertThat(channel.runScheduledPendingTasks())
                .as("the one task left is the owner-timeout queue's (FixedDelays), at 3 s: no idle timer at 1 s")
                .isEqualTo(OWNER_TIMEOUT.toNanos());
        elapse(IDLE.multipliedBy(5));
        assertThat(events.calls).containsExactly("connected", "head 200", "content 1 last", "read complete");
        assertThat(channel.runScheduledPendingTasks())
                .as("the queue's task found its deadline disarmed: nothing is scheduled again")
                .isEqualTo(-1);
    }

    @Test
    void idleCheck_aReadInsideTheWindow_movesTheTimeoutOn() {
        open();
        headReadEndsMidResponse(Duration.ZERO);
        elapse(Duration.ofMillis(999));
        attempt.onMessage(new DefaultHttpContent(Unpooled.wrappedBuffer(new byte[] {1})));

        elapse(Duration.ofMillis(1)); // the first check: quiet for 1 ms only
        elapse(Duration.ofMillis(998));
        assertThat(events.calls).containsExactly("connected", "content 1");

        elapse(Duration.ofMillis(1)); // 1 s after the read
        assertThat(events.calls).containsExactly("connected", "content 1", "idle 1000 ms");
    }

    @Test
    void idleCheck_whileTheClientPausedReading_neverFires() {
        open();
        headReadEndsMidResponse(Duration.ZERO);
        attempt.setReading(false);

        for (int i = 0; i < 10; i++) {
            elapse(IDLE);
        }
        assertThat(events.calls).containsExactly("connected");

        attempt.setReading(true);
        elapse(IDLE);
        assertThat(events.calls).containsExactly("connected", "idle 1000 ms");
    }

    @Test
    void idleCheck_afterFinish_neverFires() {
        open();
        headReadEndsMidResponse(Duration.ZERO);

        attempt.finish(false);
        elapse(IDLE.multipliedBy(5));

        assertThat(events.calls).containsExactly("connected");
        assertThat(attempt.state()).isEqualTo(Attempt.State.RELEASED);
    }

    @Test
    void onMessage_abandonedAttempt_releasesTheContent() {
        open();
        events.current = false;
        HttpContent late = new DefaultHttpContent(Unpooled.directBuffer().writeByte(1));

        attempt.onMessage(late);

        assertThat(late.refCnt()).isZero();
        assertThat(events.calls).containsExactly("connected");
    }

    @Test
    void onMessage_lastContent_marksTheResponseComplete() {
        open();
        attempt.onMessage(new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK));

        attempt.onMessage(LastHttpContent.EMPTY_LAST_CONTENT);

        assertThat(events.calls).containsExactly("connected", "head 200", "content 0 last");
    }

    @Test
    void onClosed_beforeTheResponseEnded_failsAndReleases() {
        open();

        attempt.onClosed();

        assertThat(events.calls).containsExactly("connected", "failed ClosedChannelException");
        assertThat(attempt.isDone()).isTrue();
    }

    @Test
    void handOver_open_letsGoWithoutClosing() {
        open();

        assertThat(attempt.handOver()).isSameAs(channel);

        assertThat(attempt.state()).isEqualTo(Attempt.State.HANDED_OVER);
        assertThat(channel.isOpen()).isTrue();
        attempt.finish(false);
        assertThat(channel.isOpen())
                .as("a handed-over connection is not the attempt's to close")
                .isTrue();
    }

    @Test
    void finish_requestCutOff_closesTheConnection() {
        open();

        attempt.finish(true);

        assertThat(channel.isOpen()).isFalse();
    }

    /**
     * Regression: Netty's client decoder ends an interim {@code 1xx} (a {@code 103 Early Hints},
     * say) with an empty {@code LastHttpContent}; the attempt passed that on as the end of the
     * response, so the exchange completed before the owner's real head (found when the exchange's
     * states became explicit: "response ended" before any head is an illegal transition).
     */
    @Test
    void onMessage_interim103ThenTheAnswer_passesOnlyTheAnswer() {
        open();
        EmbeddedChannel decoder = new EmbeddedChannel(new HttpClientCodec());
        decoder.writeOutbound(new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/"));
        decoder.releaseOutbound();

        decoder.writeInbound(Unpooled.copiedBuffer(
                "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
                        + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
                StandardCharsets.US_ASCII));
        for (Object m; (m = decoder.readInbound()) != null; ) {
            attempt.onMessage(m);
        }

        assertThat(events.calls).containsExactly("connected", "head 200", "content 2 last");
        assertThat(decoder.finishAndReleaseAll()).isFalse();
    }

    /** Records what the attempt tells its exchange and holds the connection as the exchange does. */
    private static final class RecordingEvents implements Attempt.Events {
        final List<String> calls = new ArrayList<>();
        boolean current = true;

        @Override
        public boolean isCurrent(Attempt a) {
            return current;
        }

        @Override
        public void onConnected(Attempt a) {
            calls.add("connected");
            a.hold();
        }

        @Override
        public void onFailed(Attempt a, Throwable cause) {
            calls.add("failed " + cause.getClass().getSimpleName());
        }

        @Override
        public void onResponseHead(Attempt a, HttpResponse head) {
            calls.add("head " + head.status().code());
        }

        @Override
        public void onContent(Attempt a, HttpContent content) {
            calls.add("content " + content.content().readableBytes()
                    + (content instanceof LastHttpContent ? " last" : ""));
            content.release();
        }

        @Override
        public void onReadComplete(Attempt a) {
            calls.add("read complete");
        }

        @Override
        public void onWritable(Attempt a) {
            calls.add("writable");
        }

        @Override
        public void onIdle(Attempt a, Duration idle) {
            calls.add("idle " + idle.toMillis() + " ms");
        }

        @Override
        public void onSpliced(Attempt a, int bytes) {
            calls.add("spliced " + bytes);
        }

        @Override
        public void onClientGone(Attempt a) {
            calls.add("client gone");
        }

        @Override
        public void onSpliceDraining(Attempt a) {
            calls.add("splice draining");
        }
    }
}
