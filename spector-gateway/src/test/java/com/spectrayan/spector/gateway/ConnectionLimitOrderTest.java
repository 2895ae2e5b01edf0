package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;

import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Which idle connection a full listener closes: the one of the newcomer's event loop idle
 * longest, where idle counts from a connection's last response, not from its open (nginx's
 * reusable queue, {@code ngx_reusable_connection}, moves a connection to its tail each time it
 * becomes idle). Two connections on one loop, the older one used again: a newcomer on that loop
 * takes the other one's place. Regression guard for the per-loop list ({@link ReusableConnections})
 * that replaced a scan of every connection at each accept at the limit.
 */
final class ConnectionLimitOrderTest {
    private static final int LOOPS = Runtime.getRuntime().availableProcessors(); // the gateway's, in this JVM
    private static final int MAX_CONNECTIONS = 2 * LOOPS;
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .set("spector.server.max-connections", Integer.toString(MAX_CONNECTIONS))
                .set("spector.server.idle-timeout", "60s")
                .start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static String health() {
        return "GET /actuator/health/liveness HTTP/1.1\r\nHost: x\r\n\r\n";
    }

    /** The gateway's loop serving {@code client}, or null once its connection is gone. */
    private static @Nullable EventLoop loopOf(RawClient client) {
        for (Channel c : cell.gateway.clientChannels()) {
            if (((InetSocketAddress) c.remoteAddress()).getPort() == client.localPort()) {
                return c.eventLoop();
            }
        }
        return null;
    }

    @Test
    void atTheLimit_theNewcomersLoopLosesItsConnectionIdleLongest_countedFromItsLastResponse() throws Exception {
        List<RawClient> clients = new ArrayList<>();
        try {
            for (int i = 0; i < MAX_CONNECTIONS; i++) {
                RawClient c = new RawClient(cell.gateway.port());
                clients.add(c);
                assertThat(c.send(health()).read().status()).isEqualTo(200);
            }
            // Two connections on one loop: the older (opened first) and the newer
            RawClient older = null;
            RawClient newer = null;
            EventLoop loop = null;
            for (int i = 0; i < clients.size() && newer == null; i++) {
                for (int j = i + 1; j < clients.size(); j++) {
                    EventLoop l = loopOf(clients.get(i));
                    if (l != null && l == loopOf(clients.get(j))) {
                        older = clients.get(i);
                        newer = clients.get(j);
                        loop = l;
                        break;
                    }
                }
            }
            assertThat(newer)
                    .as("%d connections on %d loops: two share one", MAX_CONNECTIONS, LOOPS)
                    .isNotNull();
            RawClient first = requireNonNull(older);
            RawClient second = requireNonNull(newer);
            assertThat(first.send(health()).read().status())
                    .as("the older one used again: now idle the shortest time on its loop")
                    .isEqualTo(200);

            // Newcomers until one lands on that loop (each on another loop takes its own loop's place)
            boolean landed = false;
            for (int i = 0; i < 4 * LOOPS && !landed; i++) {
                RawClient n = new RawClient(cell.gateway.port());
                clients.add(n);
                assertThat(n.send(health()).read().status()).isEqualTo(200);
                landed = loopOf(n) == loop;
            }
            assertThat(landed).as("a newcomer on the loop of the two").isTrue();
            assertThat(second.closedByServer())
                    .as("the connection idle longest on that loop, closed for the newcomer")
                    .isTrue();
            assertThat(first.send(health()).read().status())
                    .as("the one used since is kept")
                    .isEqualTo(200);
        } finally {
            for (RawClient c : clients) {
                c.close();
            }
        }
    }
}
