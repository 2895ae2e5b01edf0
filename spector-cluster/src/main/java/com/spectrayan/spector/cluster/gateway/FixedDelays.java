package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import com.github.benmanes.caffeine.cache.Ticker;
import io.netty.channel.EventLoop;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deadlines of one fixed delay on one event loop (the owner timeout, the head deadline): arming
 * one and disarming it, once per request, cost a link and an unlink, not a task in the loop's
 * scheduled-task heap and its removal (issue 14: their {@code schedule} and {@code cancel} were
 * 3-4 % of a small request's samples).
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>A queue, not a heap.</b> Every deadline of a queue is armed with the same delay, so the
 *       order they were armed in is the order they fall due: a doubly linked list, armed at its
 *       tail and disarmed from anywhere.
 *   <li><b>One task per queue.</b> The loop holds at most one scheduled task for the whole queue,
 *       for its first deadline. A disarmed deadline leaves the task scheduled: when it runs it
 *       expires what is due and schedules itself for the next first deadline, if any. Under a
 *       steady load that is one schedule per delay, not one per request. nginx keeps one timer
 *       tree per worker for the same reason.
 *   <li><b>Time.</b> Deadlines are read from the {@link Ticker} (the forwarder's), and the task is
 *       scheduled on the loop for the difference, as the attempt's idle check does; a task that
 *       runs early finds nothing due and is scheduled again.
 * </ul>
 *
 * <p>Threading: confined to its loop; {@link Deadline}s of a queue are armed and disarmed there.
 */
final class FixedDelays {
    private static final Logger log = LoggerFactory.getLogger(FixedDelays.class);

    private final EventLoop loop;
    private final Ticker ticker;
    private final long delayNanos;

    private @Nullable Deadline first;
    private @Nullable Deadline last;
    /** Whether the loop holds this queue's task (it runs {@link #expire}). */
    private boolean scheduled;
    /** How many times the task was scheduled (tests). */
    private long schedules;

    FixedDelays(EventLoop loop, Ticker ticker, Duration delay) {
        this.loop = requireNonNull(loop, "loop");
        this.ticker = requireNonNull(ticker, "ticker");
        this.delayNanos = delay.toNanos();
        if (delayNanos < 0) {
            throw new IllegalArgumentException("delay: " + delay + " (expected: >= 0)");
        }
    }

    /** Returns the loop the queue runs on. */
    EventLoop loop() {
        return loop;
    }

    /** One deadline: armed (again) by {@link #arm}, then disarmed, or expired once. */
    static final class Deadline {
        private final Runnable onExpiry;
        private @Nullable FixedDelays queue;
        private @Nullable Deadline prev;
        private @Nullable Deadline next;
        private long dueNanos;

        /** A deadline that runs {@code onExpiry} on the loop when it falls due armed. */
        Deadline(Runnable onExpiry) {
            this.onExpiry = requireNonNull(onExpiry, "onExpiry");
        }

        /** Answers whether the deadline is armed (not disarmed, not expired). */
        boolean isArmed() {
            return queue != null;
        }

        /** Disarms the deadline; nothing when it is not armed. */
        void disarm() {
            FixedDelays q = queue;
            if (q != null) {
                q.unlink(this);
            }
        }
    }

    /** Arms {@code d} to fall due after this queue's delay from now (from now again if it was armed). */
    void arm(Deadline d) {
        d.disarm();
        d.dueNanos = ticker.read() + delayNanos;
        d.queue = this;
        Deadline tail = last;
        d.prev = tail;
        d.next = null;
        if (tail == null) {
            first = d;
        } else {
            tail.next = d;
        }
        last = d;
        if (!scheduled) {
            schedule(delayNanos);
        }
    }

    private void unlink(Deadline d) {
        Deadline p = d.prev;
        Deadline n = d.next;
        if (p == null) {
            first = n;
        } else {
            p.next = n;
        }
        if (n == null) {
            last = p;
        } else {
            n.prev = p;
        }
        d.prev = null;
        d.next = null;
        d.queue = null;
    }

    private void schedule(long delay) {
        scheduled = true;
        schedules++;
        loop.schedule(this::expire, delay, TimeUnit.NANOSECONDS);
    }

    /** Expires the deadlines that fell due, in order, then waits for the next first one. */
    private void expire() {
        scheduled = false;
        long now = ticker.read();
        Deadline d;
        while ((d = first) != null && d.dueNanos - now <= 0) {
            unlink(d);
            try {
                d.onExpiry.run(); // may arm deadlines of this queue again: they go behind the rest
            } catch (RuntimeException e) {
                log.warn("a deadline's expiry failed", e); // the others still expire
            }
        }
        Deadline next = first;
        if (next != null && !scheduled) {
            schedule(next.dueNanos - now);
        }
    }

    /** Returns how many times the queue's task was scheduled (tests). */
    long schedules() {
        return schedules;
    }

    /** Returns how many deadlines are armed (tests). */
    int armed() {
        int n = 0;
        for (Deadline d = first; d != null; d = d.next) {
            n++;
        }
        return n;
    }
}
