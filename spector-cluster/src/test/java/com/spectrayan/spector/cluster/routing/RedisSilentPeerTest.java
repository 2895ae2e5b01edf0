package com.spectrayan.spector.cluster.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.contract.Limits;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A "Redis" that accepts connections and never answers (a paused container, a proxy whose backend
 * is down): each connect attempt is given up within the connect and command timeouts, and tried
 * again. Regression (a review): Lettuce bounds the handshake by the URI's timeout, 60 s by default,
 * so each attempt waited a minute before the next.
 */
final class RedisSilentPeerTest {
    @Test
    void aRedisThatAcceptsAndNeverAnswers_isGivenUpWithinTheTimeouts_andTriedAgain() throws Exception {
        List<Long> accepted = new CopyOnWriteArrayList<>();
        List<Socket> held = new CopyOnWriteArrayList<>();
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread acceptor = new Thread(
                    () -> {
                        while (!silent.isClosed()) {
                            try {
                                held.add(silent.accept());
                                accepted.add(System.nanoTime());
                            } catch (IOException e) {
                                return;
                            }
                        }
                    },
                    "silent-redis");
            acceptor.setDaemon(true);
            acceptor.start();
            try (RedisRouting r = RedisRouting.connect(
                    "redis://127.0.0.1:" + silent.getLocalPort(), "cell-a", Limits.L2_TTL, Duration.ofMillis(500))) {
                await("a second attempt, at least a second after the first")
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> accepted.size() >= 2
                                && TimeUnit.NANOSECONDS.toMillis(accepted.get(accepted.size() - 1) - accepted.get(0))
                                        >= 1_000);
                assertThat(r.isConnected()).isFalse();
            }
        } finally {
            for (Socket s : held) {
                s.close();
            }
        }
    }
}
