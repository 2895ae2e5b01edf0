package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.EventLoopGroup;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The uplink's timers over real loopback sockets, with short injected intervals: the worker pings
 * every ping interval and closes (then re-dials) an uplink that received nothing, pongs included,
 * for its idle timeout; the gateway closes an uplink that sent nothing, pings included, for its
 * own idle timeout. These are the close paths over real sockets, with the re-dial that follows;
 * that a healthy link stays open (an absence) is proven exactly, on virtual time, by {@link
 * KeepaliveExactTest} over the same pipelines.
 */
final class UplinkKeepaliveTest {
    private static final Duration PING = Duration.ofMillis(100);
    private static final Duration IDLE = Duration.ofSeconds(1);

    @RegisterExtension
    final Closing closing = new Closing();

    private final EventLoopGroup group = closing.group;
    private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(1);
    private final BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();

    UplinkKeepaliveTest() {
        closing.add(scheduler::shutdownNow); // closed last, after the gateways and dialers
    }

    private TestGateway gateway(Duration idleTimeout) {
        TestGateway g = new TestGateway(group, 0, null, idleTimeout);
        closing.add(g);
        return g;
    }

    private UplinkDialer dialer(TestGateway g, Duration ping, @Nullable Duration idle) {
        UplinkDialer.Builder b = UplinkDialer.builder(g.uri(), "w1", TestGateway.TOKEN, group)
                .reconnect(Duration.ofMillis(100), Duration.ofMillis(400))
                .pingInterval(ping)
                .onConnected(channel -> {
                    RecordingReceiver end = RecordingReceiver.of(channel);
                    connected.add(end);
                    return end;
                });
        if (idle != null) {
            b.idleTimeout(idle);
        }
        UplinkDialer d = b.build();
        closing.add(d);
        d.start();
        return d;
    }

    @Test
    void gatewayThatStopsReading_isClosedByTheWorkerAfterItsIdleTimeout_andTheDialerReconnects() {
        TestGateway g = gateway(Duration.ofSeconds(60));
        UplinkDialer d = dialer(g, PING, IDLE);
        RecordingReceiver firstEnd = take(connected, "the worker connects", WAIT);
        WebSocketFrameChannel first = firstEnd.webSocket();
        RecordingReceiver gatewayReceived = g.nextUplink("uplink").received();
        WebSocketFrameChannel gatewayEnd = gatewayReceived.webSocket();
        CompletableFuture<@Nullable Throwable> workerClosed = firstEnd.closed;

        long silentFrom = System.nanoTime();
        gatewayEnd.channel().config().setAutoRead(false); // Reads nothing more, so answers no ping.
        Throwable cause = done(workerClosed, "the worker closes the uplink of a gateway that went silent", WAIT);
        long afterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - silentFrom);
        assertThat(cause).as("the worker's close has a cause").isNotNull();
        assertThat(String.valueOf(cause == null ? null : cause.getMessage()))
                .as("the cause says nothing was received")
                .contains("nothing received for too long");
        assertThat(afterMs)
                .as("closed no sooner than the 1 s idle timeout after the last pong (ms)")
                .isGreaterThanOrEqualTo(IDLE.minus(PING).toMillis());

        WebSocketFrameChannel second = take(connected, "the dialer re-dials after the idle close", WAIT)
                .webSocket();
        g.nextUplink("the gateway accepts the new uplink");
        assertThat(second).as("a new connection").isNotSameAs(first);
        assertThat(d.attempts()).as("dial attempts").isGreaterThanOrEqualTo(2);
    }

    @Test
    void workerThatStopsPinging_isClosedByTheGatewayAfterItsIdleTimeout_andTheDialerReconnects() {
        TestGateway g = gateway(IDLE);
        // A ping every 30 s: to a gateway with a 1 s idle timeout the worker is silent.
        UplinkDialer d = dialer(g, Duration.ofSeconds(30), null);
        RecordingReceiver firstEnd = take(connected, "the worker connects", WAIT);
        WebSocketFrameChannel first = firstEnd.webSocket();
        RecordingReceiver gatewayReceived = g.nextUplink("uplink").received();
        long connectedAt = System.nanoTime();
        CompletableFuture<@Nullable Throwable> gatewayClosed = gatewayReceived.closed;
        CompletableFuture<@Nullable Throwable> workerClosed = firstEnd.closed;

        Throwable cause = done(gatewayClosed, "the gateway closes the uplink of a silent worker", WAIT);
        long afterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - connectedAt);
        assertThat(String.valueOf(cause == null ? null : cause.getMessage()))
                .as("the gateway's cause says nothing was received")
                .contains("nothing received for too long");
        assertThat(afterMs)
                .as("closed no sooner than the 1 s idle timeout (ms)")
                .isGreaterThanOrEqualTo(900);
        done(workerClosed, "the worker sees the close", WAIT);
        assertThat(first.peerCloseCode())
                .as("the gateway's close code: going away")
                .isEqualTo(1001);
        assertThat(first.peerCloseReason()).as("the gateway's close reason").contains("nothing received");

        WebSocketFrameChannel second = take(connected, "the dialer re-dials after the gateway's idle close", WAIT)
                .webSocket();
        g.nextUplink("the gateway accepts the new uplink");
        assertThat(second).as("a new connection").isNotSameAs(first);
        assertThat(d.attempts()).as("dial attempts").isGreaterThanOrEqualTo(2);
    }

    @Test
    void idleTimeoutNotAbovePingInterval_isRefused_andDefaultsAreThreePingIntervals() {
        TestGateway g = gateway(IDLE);
        UplinkDialer.Builder b = UplinkDialer.builder(g.uri(), "w1", TestGateway.TOKEN, group)
                .pingInterval(Duration.ofSeconds(1))
                .idleTimeout(Duration.ofSeconds(1));
        org.assertj.core.api.Assertions.assertThatThrownBy(b::build)
                .as("an idle timeout that does not exceed the ping interval would close healthy links")
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("idleTimeout");
        assertThat(UplinkDialer.DEFAULT_IDLE_TIMEOUT)
                .as("the worker's default idle timeout: three default pings")
                .isEqualTo(Duration.ofSeconds(60));
        assertThat(UplinkDialer.DEFAULT_PING_INTERVAL).as("default ping").isEqualTo(Duration.ofSeconds(20));
        assertThat(UplinkAcceptor.DEFAULT_IDLE_TIMEOUT)
                .as("the gateway's default idle timeout")
                .isEqualTo(Duration.ofSeconds(90));
    }
}
