package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.Future;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The drain's per-loop count of exchanges in flight ({@link LoopCounter}): exact under two loops
 * counting at once, and the drain's wait woken by whichever loop ends the last exchange.
 */
final class LoopCounterTest {
    /** Each loop's +1s and -1s, many times over, while the others do the same. */
    private static final int ROUNDS = 200_000;

    @Test
    void loopsCountingAtOnce_sumExactly() {
        MultiThreadIoEventLoopGroup loops = new MultiThreadIoEventLoopGroup(4, NioIoHandler.newFactory());
        try {
            LoopCounter c = new LoopCounter();
            List<Future<?>> runs = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                runs.add(loops.next().submit(() -> {
                    for (int n = 0; n < ROUNDS; n++) {
                        c.increment();
                        c.increment();
                        c.decrement();
                    }
                }));
            }
            for (Future<?> f : runs) {
                assertThat(f.awaitUninterruptibly(30, TimeUnit.SECONDS)).isTrue();
            }
            assertThat(c.sum()).isEqualTo(4 * ROUNDS);
        } finally {
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void theDrainWakesWhenTheLastOfTwoLoopsEndsItsExchange() {
        MultiThreadIoEventLoopGroup loops = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        try {
            var a = loops.next();
            var b = loops.next();
            assertThat(a).isNotSameAs(b);
            Drain drain = new Drain();
            Waits.done(CompletableFuture.runAsync(drain::exchangeStarted, a), "loop a starts one");
            Waits.done(CompletableFuture.runAsync(drain::exchangeStarted, b), "loop b starts one");
            drain.begin();
            CompletableFuture<Integer> left =
                    CompletableFuture.supplyAsync(() -> drain.awaitIdle(Duration.ofSeconds(20)));
            Waits.done(CompletableFuture.runAsync(drain::exchangeEnded, a), "loop a ends its one");
            assertThat(left).as("one exchange still runs on loop b").isNotDone();
            Waits.done(CompletableFuture.runAsync(drain::exchangeEnded, b), "loop b ends its one");
            long t0 = System.nanoTime();
            assertThat(Waits.done(left, "the drain's wait ends")).isZero();
            assertThat(Duration.ofNanos(System.nanoTime() - t0))
                    .as("woken by the last end, not by its 20 s deadline")
                    .isLessThan(Duration.ofSeconds(5));
        } finally {
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
    }
}
