package com.spectrayan.spector.testkit;

import static java.util.Objects.requireNonNull;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A wall clock (UTC) that moves only when the test says, at millisecond resolution: for code that
 * reads epoch time from an injected {@link Clock} (token expiry, a registry's {@code until}, a
 * signed timestamp). {@link FakeTicker} is its monotonic sibling.
 *
 * <p>Thread-safe.
 */
public final class FakeClock extends Clock {
    private final AtomicLong millis;

    private FakeClock(long millis) {
        this.millis = new AtomicLong(millis);
    }

    /** Creates a clock standing at {@code instant}. */
    public static FakeClock at(Instant instant) {
        return new FakeClock(requireNonNull(instant, "instant").toEpochMilli());
    }

    /** Moves the clock on by {@code d} (back, when negative). */
    public void advance(Duration d) {
        millis.addAndGet(d.toMillis());
    }

    /** Sets the clock to {@code instant}. */
    public void set(Instant instant) {
        millis.set(instant.toEpochMilli());
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this; // always UTC: the code under test reads instants, never local time
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis.get());
    }

    @Override
    public long millis() {
        return millis.get();
    }
}
