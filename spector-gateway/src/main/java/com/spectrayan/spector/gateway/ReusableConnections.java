package com.spectrayan.spector.gateway;

import io.netty.channel.Channel;
import io.netty.util.concurrent.FastThreadLocal;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The connections of one listener that a full listener may close for a new one, per event loop,
 * longest idle first: nginx's "reusable" queue ({@code ngx_reusable_connection}, drained by {@code
 * ngx_drain_connections} when it runs out of connections).
 *
 * <p>Design notes. A connection joins its loop's list at the tail each time it becomes idle (it
 * opened, or a response ended on it and it is kept), so the list is in the order of those moments
 * and its head is the connection idle longest. Leaving idleness costs nothing where it happens (a
 * head's first byte, a pipelined request): {@link #longest} drops the busy entries it meets at the
 * head, and such a connection joins again at its next idle moment. A close takes its entry out at
 * once, so the list never holds more than the open connections. One look at the limit is O(1)
 * amortized where a scan of every connection was O(connections) per accepted connection (about
 * 10 000 at the default limit, on the accepting loop, found by a review).
 *
 * <p>Threading: every method runs on the connection's own event loop, and each loop has its own
 * list (a {@link FastThreadLocal}), so nothing is shared between threads and nothing is locked.
 */
final class ReusableConnections {
    private final FastThreadLocal<LoopList> lists = new FastThreadLocal<>() {
        @Override
        protected LoopList initialValue() {
            return new LoopList();
        }
    };

    /** Makes the entry of {@code channel}; {@code since} answers since when it is idle, or -1 when busy. */
    Entry register(Channel channel, LongSupplier since) {
        return new Entry(channel, since);
    }

    /** Puts {@code e} at its loop's tail: it has just become idle. On its loop. */
    void idle(Entry e) {
        remove(e);
        LoopList l = lists.get();
        e.list = l;
        e.prev = l.tail;
        if (l.tail == null) {
            l.head = e;
        } else {
            l.tail.next = e;
        }
        l.tail = e;
        l.size++;
    }

    /** Takes {@code e} out of its list, if it is in one (its connection closed or left HTTP). On its loop. */
    void remove(Entry e) {
        LoopList l = e.list;
        if (l == null) {
            return;
        }
        if (e.prev == null) {
            l.head = e.next;
        } else {
            e.prev.next = e.next;
        }
        if (e.next == null) {
            l.tail = e.prev;
        } else {
            e.next.prev = e.prev;
        }
        e.prev = null;
        e.next = null;
        e.list = null;
        l.size--;
    }

    /**
     * Returns the open connection of the calling loop that has been idle longest, or null when none
     * is: the busy and closed entries met before it are dropped. On the loop whose connections are
     * asked for.
     */
    @Nullable
    Channel longest() {
        LoopList l = lists.get();
        for (Entry e = l.head; e != null; e = l.head) {
            if (e.channel.isActive() && e.since.getAsLong() >= 0) {
                return e.channel;
            }
            remove(e);
        }
        return null;
    }

    /** Returns how many entries the calling loop's list holds (tests). */
    int size() {
        return lists.get().size;
    }

    /** One connection's place in its loop's list; guarded by that loop (its only thread). */
    static final class Entry {
        private final Channel channel;
        private final LongSupplier since;
        private @Nullable LoopList list;
        private @Nullable Entry prev;
        private @Nullable Entry next;

        private Entry(Channel channel, LongSupplier since) {
            this.channel = channel;
            this.since = since;
        }
    }

    /** A loop's idle connections, longest idle at the head; guarded by that loop. */
    private static final class LoopList {
        private @Nullable Entry head;
        private @Nullable Entry tail;
        private int size;
    }
}
