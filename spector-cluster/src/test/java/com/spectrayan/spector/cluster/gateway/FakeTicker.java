package com.spectrayan.spector.cluster.gateway;

import com.github.benmanes.caffeine.cache.Ticker;
import io.netty.util.concurrent.MockTicker;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock that moves only when the test says: the forwarder's {@link Ticker} and, given to an
 * {@code EmbeddedChannel}, its event loop's too, so timers and the time they check agree.
 */
final class FakeTicker implements Ticker, MockTicker {
    private final AtomicLong nanos = new AtomicLong();

    @Override
    public long read() {
        return nanos.get();
    }

    @Override
    public long nanoTime() {
        return nanos.get();
    }

    @Override
    public void advance(long amount, TimeUnit unit) {
        nanos.addAndGet(unit.toNanos(amount));
    }

    /** Moves the clock on by {@code d}. */
    void advance(Duration d) {
        nanos.addAndGet(d.toNanos());
    }

    @Override
    public void sleep(long delay, TimeUnit unit) {
        advance(delay, unit);
    }
}
