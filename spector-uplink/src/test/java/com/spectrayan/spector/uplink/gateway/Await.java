package com.spectrayan.spector.uplink.gateway;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * A bounded condition wait, like Awaitility's {@code await().atMost(..).until(..)}: Awaitility is
 * not on this module's test classpath (its pom is not ours to change). Polls every millisecond
 * until the condition holds or the bound passes, then fails naming the condition.
 */
final class Await {
    static final Duration WAIT = Duration.ofSeconds(10);

    private Await() {}

    /** Waits at most {@link #WAIT} for {@code condition}; fails with {@code what} past it. */
    static void until(String what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not within " + WAIT.toMillis() + " ms: " + what);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }

    /** Waits at most {@link #WAIT} for {@code assertion} to pass; rethrows its last failure past it. */
    static void untilAsserted(Runnable assertion) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            try {
                assertion.run();
                return;
            } catch (AssertionError e) {
                if (System.nanoTime() - deadline > 0) {
                    throw e;
                }
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }
}
