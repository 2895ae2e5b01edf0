package com.spectrayan.spector.gateway;

import io.netty.util.concurrent.FastThreadLocal;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A count that the event loops change on every request and other threads read now and then: the
 * exchanges in flight, which a drain waits for.
 *
 * <p>Design notes (issue 14). Each thread that changes the count has a cell of its own, which only
 * that thread writes, and the count is the sum of the cells. A shared {@code AtomicInteger} moved
 * its cache line between the cores twice per request: 2.0-2.3 % of the event loop's samples on
 * this 2-core machine (bench/README.md), and more with more loops. Envoy keeps its per-request
 * counts thread-local for the same reason.
 *
 * <p>Why not a {@code LongAdder}: its sum is not a snapshot, and a thread moves to another cell
 * when its add contends, so an exchange's +1 and its -1 can land in two cells, and a sum read
 * between them can see the -1 without the +1: a zero while another exchange still runs, which would
 * let a drain cut it. Here every -1 is made on the thread of its +1 (an exchange ends on its
 * connection's loop), so no cell is ever below zero, and a sum of zero means each cell was zero
 * when it was read: nothing that started before the read was still running.
 *
 * <p>Threading: {@link #increment} and {@link #decrement} from any thread, each -1 on the thread
 * of its +1; {@link #sum} from any thread. A cell is made once per thread and kept for the
 * counter's life (the event loops live as long as the gateway).
 */
final class LoopCounter {
    private final Queue<Cell> cells = new ConcurrentLinkedQueue<>();

    private final FastThreadLocal<Cell> mine = new FastThreadLocal<>() {
        @Override
        protected Cell initialValue() {
            Cell c = new Cell();
            cells.add(c);
            return c;
        }
    };

    /** Adds one on this thread's cell. */
    void increment() {
        mine.get().add(1);
    }

    /** Takes one off this thread's cell: the thread that added it. */
    void decrement() {
        mine.get().add(-1);
    }

    /** Returns the sum of every thread's cell. */
    int sum() {
        int s = 0;
        for (Cell c : cells) {
            s += c.get();
        }
        return s;
    }

    /**
     * One thread's part of the count, in the middle of an array of its own so that no other cell
     * shares its cache line, wherever a collection moves it. Guarded by confinement: only its
     * thread writes it. Its accesses are volatile: a decrement and the read of {@code draining}
     * that follows it on a loop, against the drain's write of {@code draining} and its read of the
     * cells, must not both miss the other's write (a missed wake-up would hold a stop to its
     * drain timeout). Uncontended, a volatile store is a fence, not a cache line moving.
     */
    private static final class Cell {
        private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(int[].class);

        /** 128 bytes either side of the value. */
        private static final int AT = 32;

        private final int[] padded = new int[2 * AT + 1];

        void add(int delta) {
            SLOT.setVolatile(padded, AT, (int) SLOT.get(padded, AT) + delta); // one writer: no lost update
        }

        int get() {
            return (int) SLOT.getVolatile(padded, AT);
        }
    }
}
