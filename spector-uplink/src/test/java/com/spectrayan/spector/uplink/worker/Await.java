package com.spectrayan.spector.uplink.worker;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A bounded condition wait shaped like Awaitility's (which is not on this module's test classpath):
 * {@code await("what").atMost(d).until(cond)} polls until the condition holds or fails after
 * {@code d}; with {@code during(q)} the condition must hold for all of {@code q}.
 */
final class Await {
    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    private final String alias;
    private Duration atMost = Duration.ofSeconds(5);
    private Duration during = Duration.ZERO;

    private Await(String alias) {
        this.alias = alias;
    }

    static Await await() {
        return new Await("condition");
    }

    static Await await(String alias) {
        return new Await(alias);
    }

    Await atMost(Duration bound) {
        this.atMost = bound;
        return this;
    }

    Await during(Duration quiet) {
        this.during = quiet;
        return this;
    }

    void until(Callable<Boolean> condition) {
        long start = System.nanoTime();
        long deadline = start + atMost.toNanos();
        long heldSince = -1;
        while (true) {
            boolean holds = check(condition);
            long now = System.nanoTime();
            if (holds) {
                if (heldSince < 0) {
                    heldSince = now;
                }
                if (now - heldSince >= during.toNanos()) {
                    return;
                }
            } else {
                if (!during.isZero() && heldSince >= 0) {
                    throw new AssertionError(alias + ": stopped holding after "
                            + Duration.ofNanos(now - heldSince).toMillis() + " ms (expected: " + during.toMillis()
                            + " ms)");
                }
                heldSince = -1;
            }
            if (now - deadline > 0) {
                throw new AssertionError(alias + ": did not hold within " + atMost.toMillis() + " ms");
            }
            LockSupport.parkNanos(POLL_NANOS);
        }
    }

    private boolean check(Callable<Boolean> condition) {
        try {
            return condition.call();
        } catch (Exception e) {
            throw new AssertionError(alias + ": the condition failed: " + e, e);
        }
    }
}
