package com.spectrayan.spector.gateway;

import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The gateway's graceful stop. Counts the client exchanges in flight (forwarded and relayed) and
 * holds the open client connections. {@link #begin} marks the gateway draining: readiness answers
 * DOWN, a busy connection closes once its exchange ends, and a request that arrives on an idle
 * keep-alive connection meanwhile is still served, with {@code Connection: close} (closing idle
 * connections at once would race requests already on the wire). {@link #awaitIdle} waits, bounded,
 * for the last exchange to end; {@link #closeAll} then closes what is left.
 *
 * <p>Threading: safe from any thread.
 */
final class Drain {
    private final ChannelGroup connections = new DefaultChannelGroup("clients", GlobalEventExecutor.INSTANCE);
    private final ChannelGroup uplinks = new DefaultChannelGroup("uplinks", GlobalEventExecutor.INSTANCE);
    private final LoopCounter inFlight = new LoopCounter(); // per loop: no shared line per request
    private volatile boolean draining;

    /** Holds a new client connection until it closes. */
    void track(Channel connection) {
        connections.add(connection);
        if (draining) {
            connection.close(); // accepted in the instant before the listener closed
        }
    }

    private final ReusableConnections reusable = new ReusableConnections();

    /** Returns the idle client connections, per loop, that a full client listener may close ({@code max-connections}). */
    ReusableConnections reusable() {
        return reusable;
    }

    /**
     * Moves a connection that became an uplink out of the client connections: its close belongs to
     * its worker link, and {@link #awaitUplinksClosed} waits for it.
     */
    void trackUplink(Channel connection) {
        connections.remove(connection);
        uplinks.add(connection);
    }

    /**
     * Waits, at most {@code timeout}, for every uplink's connection to close once its worker link was
     * told to: the close frame with its reason must leave before the event loops stop, or the
     * worker sees a bare disconnect.
     *
     * @return whether every uplink closed in time
     */
    boolean awaitUplinksClosed(Duration timeout) {
        return uplinks.newCloseFuture().awaitUninterruptibly(timeout.toMillis());
    }

    /** Counts an exchange in; {@link #exchangeEnded} must run on the same thread (its connection's loop). */
    void exchangeStarted() {
        inFlight.increment();
    }

    void exchangeEnded() {
        inFlight.decrement();
        if (draining && inFlight.sum() == 0) {
            synchronized (this) {
                notifyAll(); // awaitIdle re-checks the count under this monitor
            }
        }
    }

    /** Returns the open client connections (tests). */
    ChannelGroup connections() {
        return connections;
    }

    /** Returns the connections that became uplinks (tests). */
    ChannelGroup uplinks() {
        return uplinks;
    }

    /** Answers whether the gateway is draining (readiness DOWN, connections close after their exchange). */
    boolean isDraining() {
        return draining;
    }

    /** Returns the client exchanges in flight. */
    int inFlight() {
        return inFlight.sum();
    }

    /** Starts the drain. */
    void begin() {
        draining = true;
    }

    /**
     * Waits for the exchanges in flight to end, at most {@code timeout}. The count is read under
     * this monitor each time it may have reached zero, so an exchange that starts on a keep-alive
     * connection after an earlier zero is waited for too (a one-shot "idle" signal was not: it let
     * the stop cut a request it had promised to serve).
     *
     * @return the exchanges still running when the wait ended (0 when drained)
     */
    int awaitIdle(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            while (inFlight.sum() > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        return inFlight.sum();
    }

    /**
     * Starts, on each connection's loop, every relay still reading its body first ({@link
     * RelayedExchange#startNow}), and waits for those starts, at most {@code within}: a relay
     * started takes its worker link's count, so the link sent away next closes only after it,
     * where one started after the links were sent away would find none (a 503 for an exchange
     * the drain promised to finish).
     */
    void startDeferredRelays(Duration within) {
        List<Future<?>> starts = new ArrayList<>();
        for (Channel c : connections) {
            try {
                starts.add(c.eventLoop().submit(() -> {
                    GatewayHandler h = c.pipeline().get(GatewayHandler.class);
                    if (h != null && h.connection().exchange() instanceof RelayedExchange r) {
                        r.startNow();
                    }
                }));
            } catch (RejectedExecutionException e) {
                // its loop stopped: nothing runs there any more
            }
        }
        long deadline = System.nanoTime() + within.toNanos();
        for (Future<?> f : starts) {
            f.awaitUninterruptibly(Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        }
    }

    /**
     * Closes every client connection still open, each on its loop: one whose response is under way
     * with a reset ({@link ClientConnection#closeCutting}), so that a client never takes the body
     * cut here for a whole one (an HTTP/1.0 client reads a body of unknown length to the close: a
     * FIN ended it as complete, found by a review).
     */
    void closeAll() {
        for (Channel c : connections) {
            try {
                c.eventLoop().execute(() -> {
                    GatewayHandler h = c.pipeline().get(GatewayHandler.class);
                    if (h != null) {
                        h.connection().closeCutting();
                    } else {
                        c.close();
                    }
                });
            } catch (RejectedExecutionException e) {
                c.close(); // its loop stopped
            }
        }
        connections.newCloseFuture().awaitUninterruptibly(GatewayServer.SHUTDOWN_TIMEOUT.toMillis());
    }
}
