package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code spector.server.max-connections} against clients that hold connections open and idle: at
 * the limit, a new client takes the place of the connection of its event loop that has waited
 * longest between requests with nothing read, as nginx closes its "reusable" connections when it
 * runs out ({@code ngx_drain_connections}); a connection in an exchange or mid-head is never taken.
 * Regression: idle keep-alives refreshed before the idle timeout kept every new client out
 * (closed at accept, no answer). The idle timeout here is long, so only the limit closes.
 */
final class ConnectionLimitTest {
    private static final int MAX_CONNECTIONS = 2;
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

    private static void awaitNoConnections() {
        await("connections of earlier tests are no longer counted")
                .atMost(Duration.ofSeconds(5))
                .until(() -> cell.gateway.clientConnections() == 0);
    }

    private static String health() {
        return "GET /actuator/health/liveness HTTP/1.1\r\nHost: x\r\n\r\n";
    }

    /**
     * Two idle keep-alives hold the limit; each of two new clients is served, and each takes one
     * idle connection's place: the two idle ones are closed by the gateway, one per newcomer, and
     * the newcomers keep working.
     */
    @Test
    void idleConnections_atTheLimit_makeRoomForNewClients() throws Exception {
        awaitNoConnections();
        List<RawClient> idle = new ArrayList<>();
        List<RawClient> newcomers = new ArrayList<>();
        try {
            for (int i = 0; i < MAX_CONNECTIONS; i++) {
                RawClient c = new RawClient(cell.gateway.port());
                idle.add(c);
                assertThat(c.send(health()).read().status()).isEqualTo(200);
            }
            for (int i = 0; i < MAX_CONNECTIONS; i++) {
                RawClient n = new RawClient(cell.gateway.port());
                newcomers.add(n);
                assertThat(n.send(health()).read().status())
                        .as("newcomer %d at the limit of %d", i + 1, MAX_CONNECTIONS)
                        .isEqualTo(200);
            }
            for (RawClient c : idle) {
                assertThat(c.closedByServer())
                        .as("an idle connection, closed for a newcomer")
                        .isTrue();
            }
            for (RawClient n : newcomers) {
                assertThat(n.send(health()).read().status())
                        .as("the newcomers go on")
                        .isEqualTo(200);
            }
            assertThat(cell.gateway.clientConnections()).isEqualTo(MAX_CONNECTIONS);
        } finally {
            closeAll(idle);
            closeAll(newcomers);
        }
    }

    /** Connections in an exchange are not idle: at the limit, a new client is refused (closed at accept). */
    @Test
    void busyConnections_atTheLimit_refuseANewClient() throws Exception {
        awaitNoConnections();
        List<RawClient> busy = new ArrayList<>();
        try {
            for (int i = 0; i < MAX_CONNECTIONS; i++) {
                RawClient c = new RawClient(cell.gateway.port());
                busy.add(c);
                // An event stream open: its head read, the exchange runs, and the connection is not idle
                assertThat(c.send(Cell.eventStreamRequest()).read200HeadOnly()).isEqualTo(200);
            }
            try (RawClient past = new RawClient(cell.gateway.port())) {
                past.send(health());
                assertThat(past.closedByServer())
                        .as("one past the limit, none idle")
                        .isTrue();
            }
            for (RawClient c : busy) {
                assertThat(c.closedByServer())
                        .as("a busy connection is never taken")
                        .isFalse();
            }
        } finally {
            closeAll(busy);
        }
    }

    private static void closeAll(List<RawClient> clients) throws IOException {
        for (RawClient c : clients) {
            c.close();
        }
    }
}
