package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Event-stream subscribers do not lock an owner's other requests out of its connection pool
 * (issue 14, the lockout left open since the hostile reviews): with {@code owner-connections} 1,
 * more subscribers than event loops each hold an owner connection for as long as they stay, and
 * before the fix any two on one loop meant the second waited 2 s for {@code 503
 * owner-pool-exhausted}, and so did every other request to that owner on that loop. Raw sockets
 * for the subscribers (a stream's client reads a head and keeps the connection); the owner's record
 * shows the requests reached it.
 */
final class OwnerStreamsTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int LOOPS = Runtime.getRuntime().availableProcessors(); // the gateway's event loops

    private static List<RawClient> subscribe(Cell cell, int n) throws Exception {
        List<RawClient> streams = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            streams.add(new RawClient(cell.gateway.port()).send(Cell.eventStreamRequest()));
        }
        return streams;
    }

    private static void closeAll(List<RawClient> streams) throws Exception {
        for (RawClient c : streams) {
            c.close();
        }
    }

    @Test
    void subscribersPastOwnerConnections_areServed_andTheOwnersOtherRequestsToo() throws Exception {
        try (Cell cell = Cell.builder()
                .owners(1)
                .set("spector.routing.gateway.owner-connections", "1")
                .start()) {
            // 2 loops + 1 subscribers: two share a loop whatever the accept order, past its one connection
            List<RawClient> streams = subscribe(cell, 2 * LOOPS + 1);
            try {
                for (RawClient s : streams) {
                    assertThat(s.read200HeadOnly())
                            .as("each subscriber is served, none waits for a connection")
                            .isEqualTo(200);
                }
                String ns = cell.namespaceOwnedBy("owner-0");
                // one more than the loops: one shares a loop with two streams
                cell.assertServedWithoutWaiting(ns, LOOPS + 1, "the streams");
                assertThat(cell.served("owner-0", "GET", "/api/v1/namespaces/" + ns + "/echo"))
                        .as("the owner received every request")
                        .hasSize(LOOPS + 1);
                assertThat(JSON.readTree(cell.get("/gateway/v1/status").body())
                                .get("ownerStreams")
                                .asInt())
                        .as("the status view counts the streams out of the pools")
                        .isEqualTo(2 * LOOPS + 1);
            } finally {
                closeAll(streams);
            }
            await("the streams' owner connections are closed with their clients")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> JSON.readTree(cell.get("/gateway/v1/status").body())
                                    .get("ownerStreams")
                                    .asInt()
                            == 0);
        }
    }

    /** {@code owner-streams} 0: every stream counts as a connection, as before the fix, and one past the pool is refused. */
    @Test
    void withNoOwnerStreams_aSubscriberPastOwnerConnections_isRefusedAsExhausted() throws Exception {
        try (Cell cell = Cell.builder()
                .owners(1)
                .set("spector.routing.gateway.owner-connections", "1")
                .set("spector.routing.gateway.owner-streams", "0")
                .start()) {
            List<RawClient> streams = subscribe(cell, LOOPS + 1); // two share a loop
            try {
                int refused = 0;
                for (RawClient s : streams) {
                    RawClient.Response head = s.readHead();
                    if (head.status() == 503) {
                        refused++;
                        assertThat(new String(s.readBody(head), StandardCharsets.UTF_8))
                                .contains("owner-pool-exhausted");
                    } else {
                        assertThat(head.status()).isEqualTo(200);
                    }
                }
                assertThat(refused).as("the subscribers past one per loop").isPositive();
            } finally {
                closeAll(streams);
            }
        }
    }
}
