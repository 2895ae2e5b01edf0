package com.spectrayan.spector.cluster.gateway;

import com.github.benmanes.caffeine.cache.Ticker;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The client's request body as one exchange pulls it: started once, paused while no owner
 * connection takes more, resumed when one does. An owner connection that takes no more of the body
 * for {@code stallTimeout} (nginx's {@code proxy_send_timeout}) stalls the exchange, so a stalled
 * owner never holds the client forever; the time waited is read from the {@link Ticker}.
 *
 * <p>The stall clock times an owner, not the exchange: it runs only while an attempt that is sending
 * cannot take more ({@link #pause}). A body paused while no attempt sends ({@link #pauseUntimed}: a
 * connect, a retarget, a hand-off hold) waits on deadlines of their own (the connect timeout, the
 * hold window), and {@link #stopClock} ends the clock of an attempt that is gone, so a hold or the
 * next owner's connect is never reported as the last owner's stall (a 504 naming an owner that
 * had just been asked).
 *
 * <pre>
 *   NOT STARTED --start--> FLOWING --pause--> PAUSED, clock runs --stall timeout--> onStall
 *                           |  ^                  |  ^
 *                pauseUntimed  resume     stopClock  pause
 *                           v  |                  v  |
 *                          PAUSED, no clock  <----+
 *        any --end--> ENDED (a pause after it is a no-op)
 * </pre>
 *
 * <p>Threading: confined to the exchange's event loop.
 */
final class RequestBodyPump {
    private final RequestBody body;
    private final EventLoop loop;
    private final Ticker ticker;
    private final long stallNanos;
    private final Runnable onStall;
    private boolean started;
    private boolean ended;
    private boolean paused;
    private long pausedAtNanos;
    private @Nullable ScheduledFuture<?> stallTimer;

    RequestBodyPump(RequestBody body, EventLoop loop, Ticker ticker, Duration stallTimeout, Runnable onStall) {
        this.body = body;
        this.loop = loop;
        this.ticker = ticker;
        this.stallNanos = stallTimeout.toNanos();
        this.onStall = onStall;
    }

    /** Starts delivery to {@code consumer}, once: the first attempt that can take the body calls it. */
    void start(RequestBody.Consumer consumer) {
        started = true;
        body.start(consumer);
    }

    /** Notes that the body ended (the consumer got {@code onEnd}). */
    void ended() {
        ended = true;
    }

    /**
     * The sending attempt takes no more: stops reading from the client and starts the stall clock,
     * unless it runs already (a started body not yet ended).
     */
    void pause() {
        if (started && !ended) {
            stopReading();
            if (stallTimer == null) {
                pausedAtNanos = ticker.read();
                scheduleStallCheck(stallNanos);
            }
        }
    }

    /** No attempt sends: stops reading from the client, with no stall clock (a started body not yet ended). */
    void pauseUntimed() {
        if (started && !ended) {
            stopReading();
        }
    }

    /** The attempt the clock timed is gone: the body stays as it is, its stall clock stopped. */
    void stopClock() {
        cancelStall();
    }

    private void stopReading() {
        if (!paused) {
            paused = true;
            body.pause();
        }
    }

    /** Reads from the client again. */
    void resume() {
        if (paused) {
            paused = false;
            cancelStall();
            body.resume();
        }
    }

    /** The exchange is over: stops the timer and drops whatever of the body is still to come. */
    void discard() {
        cancelStall();
        if (!ended) {
            body.discard();
        }
    }

    boolean isStarted() {
        return started;
    }

    boolean isEnded() {
        return ended;
    }

    boolean isPaused() {
        return paused;
    }

    private void scheduleStallCheck(long delayNanos) {
        stallTimer = loop.schedule(this::checkStall, delayNanos, TimeUnit.NANOSECONDS);
    }

    private void checkStall() {
        stallTimer = null;
        if (!paused) {
            return;
        }
        long waited = ticker.read() - pausedAtNanos;
        if (waited < stallNanos) {
            scheduleStallCheck(stallNanos - waited);
        } else {
            onStall.run();
        }
    }

    private void cancelStall() {
        ScheduledFuture<?> t = stallTimer;
        if (t != null) {
            t.cancel(false);
            stallTimer = null;
        }
    }
}
