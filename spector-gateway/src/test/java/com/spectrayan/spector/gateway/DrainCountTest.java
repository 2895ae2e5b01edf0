package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/**
 * The drain's count of exchanges in flight. Regression (found by ReplicaProcessesTest): the wait
 * was a one-shot signal completed when the count first reached zero, so an exchange that started
 * afterwards on a keep-alive connection (which the drain promises to serve) was cut at once.
 */
final class DrainCountTest {
    @Test
    void anExchangeThatStartsAfterTheCountReachedZero_isWaitedFor() {
        Drain drain = new Drain();
        drain.begin(); // nothing in flight: the count is zero now
        drain.exchangeStarted(); // a request on a keep-alive connection, after that zero
        CountDownLatch waiting = new CountDownLatch(1);
        CompletableFuture<Integer> left = CompletableFuture.supplyAsync(() -> {
            waiting.countDown();
            return drain.awaitIdle(Duration.ofSeconds(10));
        });
        Waits.await(waiting, "the stop is waiting");
        drain.exchangeEnded();
        assertThat(Waits.done(left, "the wait ends with the exchange"))
                .as("no exchange cut: the wait lasted until the late exchange ended")
                .isZero();
    }

    @Test
    void theWaitIsBounded_andReportsWhatIsStillRunning() {
        Drain drain = new Drain();
        drain.exchangeStarted();
        drain.begin();
        assertThat(drain.awaitIdle(Duration.ofMillis(20))).isEqualTo(1);
        drain.exchangeEnded();
        assertThat(drain.awaitIdle(Duration.ofMillis(20))).isZero();
    }
}
