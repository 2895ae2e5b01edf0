package com.spectrayan.spector.gateway;

import io.netty.channel.Channel;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The gateway's budget of kernel pipes for spliced response bodies ({@code
 * spector.server.splice-pipes}, HAProxy's {@code maxpipes}). On epoll Netty makes a client
 * connection's pipe (two descriptors, up to 64 KiB of kernel memory while bytes are in it) at its
 * first spliced body and closes it only with the connection; on io_uring the cluster's {@code
 * UringSplice} makes one per body and closes it at the body's end. Either way a connection holds
 * its slot from its first spliced body until it closes (at most that many pipes at once); past the
 * budget a body is copied as usual. Zero turns splicing off.
 *
 * <p>Thread-safe: one counter, claimed by compare-and-set from every event loop.
 */
final class SplicePipes {
    /** The budget when splicing is off. */
    static final SplicePipes OFF = new SplicePipes(0);

    private final int max;
    private final AtomicInteger held = new AtomicInteger();

    SplicePipes(int max) {
        if (max < 0) {
            throw new IllegalArgumentException("max: " + max + " (expected: >= 0)");
        }
        this.max = max;
    }

    /** Answers whether splicing is on. */
    boolean enabled() {
        return max > 0;
    }

    /**
     * Takes a slot for {@code connection} until it closes; false when every slot is held. Call once
     * per connection (the caller remembers that it holds one).
     */
    boolean claim(Channel connection) {
        for (; ; ) {
            int n = held.get();
            if (n >= max) {
                return false;
            }
            if (held.compareAndSet(n, n + 1)) {
                connection.closeFuture().addListener(f -> held.decrementAndGet());
                return true;
            }
        }
    }

    /** Returns the slots held now. */
    int held() {
        return held.get();
    }
}
