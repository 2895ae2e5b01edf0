package com.spectrayan.spector.uplink.transport;

import io.netty.channel.Channel;
import io.netty.handler.timeout.IdleStateHandler;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The uplink's two timers, the same at both ends: the idle check and the worker's pings.
 *
 * <ul>
 *   <li>The idle check closes a link that received nothing, pings and pongs included, for the idle
 *       timeout ({@link WebSocketFrameChannel} closes it with 1001 "nothing received for too long"
 *       on the reader-idle event). What the end itself writes does not count: a worker that only
 *       streams a response out must still hear from the gateway.
 *   <li>The worker pings every ping interval whatever else it writes, so the gateway's pongs keep
 *       the worker's idle check quiet and the pings keep the gateway's quiet.
 * </ul>
 *
 * <p>Both run on the channel's event loop and read its {@link io.netty.util.concurrent.Ticker}:
 * a test on an {@code EmbeddedChannel} with a fake ticker moves their time exactly.
 */
final class Keepalive {
    private Keepalive() {}

    /** The idle check: a reader-idle event after {@code idle} without a read. */
    static IdleStateHandler idleCheck(Duration idle) {
        return new IdleStateHandler(idle.toNanos(), 0, 0, TimeUnit.NANOSECONDS);
    }

    /** Runs {@code ping} (a WebSocket ping of either version's link) every {@code interval} until {@code ch} closes. */
    static void pingEvery(Duration interval, Channel ch, Runnable ping) {
        long nanos = interval.toNanos();
        ScheduledFuture<?> pings = ch.eventLoop().scheduleAtFixedRate(ping, nanos, nanos, TimeUnit.NANOSECONDS);
        ch.closeFuture().addListener(f -> pings.cancel(false));
    }
}
