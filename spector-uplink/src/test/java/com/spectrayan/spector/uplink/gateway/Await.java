package com.spectrayan.spector.uplink.gateway;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** The relay tests' one bound on a condition wait, over Awaitility. */
final class Await {
    static final Duration WAIT = Duration.ofSeconds(10);

    private Await() {}

    /** Waits at most {@link #WAIT} for {@code condition}; fails naming {@code what} past it. */
    static void until(String what, BooleanSupplier condition) {
        await(what).atMost(WAIT).pollInterval(Duration.ofMillis(1)).until(condition::getAsBoolean);
    }

    /** Waits at most {@link #WAIT} for {@code assertion} to pass; fails with its last failure past it. */
    static void untilAsserted(Runnable assertion) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(1)).untilAsserted(assertion::run);
    }
}
