package com.spectrayan.spector.testkit;

import com.github.benmanes.caffeine.cache.Ticker;
import io.netty.util.concurrent.MockTicker;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock that moves only when the test says: a Caffeine {@link Ticker} for the code under test
 * and, given to an {@code EmbeddedChannel}, its event loop's Netty {@link MockTicker} too, so the
 * timers and the time they check agree. It starts at zero.
 *
 * <p>Thread-safe; {@link #sleep} advances the clock instead of blocking, so a timer that sleeps
 * returns at once with the time moved on.
 */
public final class FakeTicker implements Ticker, MockTicker {
    private final AtomicLong nanos = new AtomicLong();

    /** Creates a clock at zero. */
    public FakeTicker() {}

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
    public void advance(Duration d) {
        nanos.addAndGet(d.toNanos());
    }

    @Override
    public void sleep(long delay, TimeUnit unit) {
        advance(delay, unit);
    }
}
