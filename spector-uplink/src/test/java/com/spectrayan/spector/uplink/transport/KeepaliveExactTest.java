package com.spectrayan.spector.uplink.transport;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.testkit.FakeTicker;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.ReferenceCountUtil;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The uplink's keepalive, exact: both ends' real pipelines (the dialer's HTTP client, WebSocket
 * client, idle check and frames; the gateway's HTTP server codec and {@link UplinkAcceptor}) on two
 * {@link EmbeddedChannel}s that share one {@link FakeTicker}, with the test carrying the bytes
 * between them. Time moves only when the test says, so "open after three idle timeouts" and "closed
 * at the idle timeout, not a nanosecond before" are exact, where the real-socket {@link
 * UplinkKeepaliveTest} can only watch a window of wall-clock time.
 *
 * <p>The rules (PROTOCOL.md, keepalive): the worker pings every ping interval whatever else it
 * writes; each end closes a link that received nothing, pings and pongs included, for its idle
 * timeout; what an end writes does not keep its own idle check quiet.
 */
final class KeepaliveExactTest {
    private static final Duration PING = Duration.ofMillis(100);
    private static final Duration IDLE = Duration.ofSeconds(1);
    private static final Duration STEP = Duration.ofMillis(1);
    private static final String TOKEN = "s3cret-w1";

    private final FakeTicker time = new FakeTicker();
    /** The group a dialer must be built with; this test never starts one. */
    private final EventLoopGroup unused = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());

    private final List<RecordingReceiver> workerEnds = new ArrayList<>();
    private final List<RecordingReceiver> gatewayEnds = new ArrayList<>();
    private @Nullable EmbeddedChannel worker;
    private @Nullable EmbeddedChannel gateway;
    /** Whether bytes the worker writes reach the gateway, and the reverse. */
    private boolean toGateway = true;

    private boolean toWorker = true;

    @AfterEach
    void tearDown() {
        for (EmbeddedChannel ch : new EmbeddedChannel[] {worker, gateway}) {
            if (ch != null) {
                ch.finishAndReleaseAll();
            }
        }
        unused.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    }

    /** Dials: the handshake crosses, and both ends open at the current time. */
    private void connect(Duration workerPing, Duration workerIdle, Duration gatewayIdle) {
        UplinkDialer dialer = UplinkDialer.builder(
                        URI.create("ws://127.0.0.1:7070" + UplinkAcceptor.PATH), "w1", TOKEN, unused)
                .pingInterval(workerPing)
                .idleTimeout(workerIdle)
                .build(); // Never started: it lends its handshake and pipeline only.
        dialer.close();
        var config = dialer.handshakeConfig();
        worker = EmbeddedChannel.builder()
                .ticker(time)
                .handlers(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        WebSocketFrameChannel frames = new WebSocketFrameChannel(ch, opened -> {
                            Keepalive.pingEvery(
                                    workerPing, opened.channel(), opened::ping); // as the dialer does once connected
                            RecordingReceiver end = RecordingReceiver.of(opened);
                            workerEnds.add(end);
                            return end;
                        });
                        UplinkDialer.initPipeline(ch, config, workerIdle, frames);
                    }
                })
                .build();
        UplinkAcceptor acceptor = UplinkAcceptor.builder((id, token) -> TOKEN.equals(token), (id, slot, ch) -> {
                    RecordingReceiver end = RecordingReceiver.of(ch);
                    gatewayEnds.add(end);
                    return end;
                })
                .idleTimeout(gatewayIdle)
                .build();
        gateway = EmbeddedChannel.builder()
                .ticker(time)
                .handlers(new HttpServerCodec(), acceptor.newHandler())
                .build();
        carry();
        assertThat(workerEnds).as("the worker's end opened").hasSize(1);
        assertThat(gatewayEnds).as("the gateway's end opened").hasSize(1);
    }

    private EmbeddedChannel worker() {
        return java.util.Objects.requireNonNull(worker, "connect first");
    }

    private EmbeddedChannel gateway() {
        return java.util.Objects.requireNonNull(gateway, "connect first");
    }

    private RecordingReceiver workerEnd() {
        return workerEnds.get(0);
    }

    private RecordingReceiver gatewayEnd() {
        return gatewayEnds.get(0);
    }

    /** Carries bytes both ways until neither end writes more; a cut direction's bytes are lost. */
    private void carry() {
        boolean moved;
        do {
            boolean up = move(worker(), gateway(), toGateway);
            boolean down = move(gateway(), worker(), toWorker);
            moved = up || down;
        } while (moved);
    }

    private static boolean move(EmbeddedChannel from, EmbeddedChannel to, boolean deliver) {
        boolean any = false;
        for (Object m; (m = from.readOutbound()) != null; ) {
            any = true;
            if (deliver && to.isOpen()) {
                to.writeInbound(m);
            } else {
                ReferenceCountUtil.release(m);
            }
        }
        return any;
    }

    /** Moves time on by {@code d} in steps of {@link #STEP}, running both ends' timers and carrying. */
    private void run(Duration d) {
        for (Duration left = d; !left.isZero(); ) {
            Duration step = left.compareTo(STEP) < 0 ? left : STEP;
            time.advance(step);
            left = left.minus(step);
            worker().runPendingTasks();
            gateway().runPendingTasks();
            carry();
        }
    }

    private boolean workerOpen() {
        return worker().isOpen() && !workerEnd().closed.isDone();
    }

    private boolean gatewayOpen() {
        return gateway().isOpen() && !gatewayEnd().closed.isDone();
    }

    @Test
    void healthyIdleLink_isOpenAfterThreeIdleTimeouts_becausePingsAndPongsCount() {
        connect(PING, IDLE, IDLE);
        run(IDLE.multipliedBy(3));
        assertThat(workerOpen())
                .as("the worker's end after 3 s without a frame")
                .isTrue();
        assertThat(gatewayOpen())
                .as("the gateway's end after 3 s without a frame")
                .isTrue();
    }

    @Test
    void workerThatOnlyWrites_stillPings_soItsIdleCheckHearsPongs() {
        connect(PING, IDLE, IDLE);
        // The worker writes every 20 ms (a response streaming out); the gateway sends nothing but
        // the pongs to the worker's pings. Had the pings been sent only when the worker's writes
        // paused (writer-idle), no pong would come and the worker would close at 1 s.
        for (int i = 0; i < 150; i++) {
            workerEnd().channel.send(new Frame.Push(1, "test.noise", JsonNodeFactory.instance.objectNode()));
            run(Duration.ofMillis(20));
        }
        assertThat(gatewayEnd().frames).as("the noise crossed").hasSize(150);
        assertThat(workerOpen()).as("the worker's end after 3 s of writing").isTrue();
        assertThat(gatewayOpen()).as("the gateway's end").isTrue();
    }

    @Test
    void gatewayThatSendsNothing_isClosedByTheWorker_atExactlyItsIdleTimeout() {
        connect(PING, IDLE, Duration.ofSeconds(60));
        toWorker = false; // The worker's last read was the handshake's response, just now.
        run(IDLE.minus(STEP));
        time.advance(STEP.minusNanos(1));
        worker().runPendingTasks();
        assertThat(workerOpen()).as("1 ns before the worker's idle timeout").isTrue();
        time.advance(Duration.ofNanos(1));
        worker().runPendingTasks();
        carry();
        assertThat(workerEnd().closed).as("at the idle timeout").isDone();
        assertThat(String.valueOf(workerEnd().closed.join())).as("the cause").contains("nothing received for too long");
    }

    @Test
    void aPong_restartsTheWorkersIdleCheck() {
        connect(PING, IDLE, Duration.ofSeconds(60));
        run(Duration.ofMillis(500)); // The pong to the ping at 500 ms arrives at 500 ms.
        toWorker = false;
        run(IDLE.minus(STEP));
        assertThat(workerOpen()).as("999 ms after the last pong").isTrue();
        run(STEP);
        assertThat(workerEnd().closed)
                .as("1 s after the last pong, not after the handshake")
                .isDone();
    }

    @Test
    void workerThatStopsPinging_isClosedByTheGateway_atExactlyItsIdleTimeout() {
        connect(Duration.ofSeconds(30), Duration.ofSeconds(90), IDLE); // one ping per 30 s: silent
        run(IDLE.minus(STEP));
        time.advance(STEP.minusNanos(1));
        gateway().runPendingTasks();
        assertThat(gatewayOpen()).as("1 ns before the gateway's idle timeout").isTrue();
        time.advance(Duration.ofNanos(1));
        gateway().runPendingTasks();
        carry();
        assertThat(gatewayEnd().closed).as("at the idle timeout").isDone();
        assertThat(String.valueOf(gatewayEnd().closed.join()))
                .as("the gateway's cause")
                .contains("nothing received for too long");
        assertThat(workerEnd().closed).as("the close reached the worker").isDone();
    }
}
