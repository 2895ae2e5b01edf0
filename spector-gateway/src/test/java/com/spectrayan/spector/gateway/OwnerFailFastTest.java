package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.testkit.Waits;
import java.net.Socket;
import java.net.URI;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Passive health over raw sockets (issue 13): an owner that resets every connection is marked down
 * after {@code owner-down-after} failures in a row; its requests are then answered 503 {@code
 * OWNER_DOWN} with {@code Retry-After} at once, without a connection to it; after the backoff one
 * probe reaches it; readiness stays up, and status and metrics show the owner down.
 */
final class OwnerFailFastTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final AtomicInteger connections = new AtomicInteger();
    private static SilentServer resetting;
    private static Cell cell;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        resetting = SilentServer.serving("resetting-owner", s -> {
            connections.incrementAndGet();
            reset(s);
        });
        cell = Cell.builder()
                .owners(1)
                .member("flaky", URI.create("http://127.0.0.1:" + resetting.port()))
                .set("spector.routing.gateway.owner-down-after", "3")
                .set("spector.routing.gateway.owner-down-backoff", "300ms")
                .set("spector.routing.gateway.owner-down-backoff-max", "2s")
                .start();
        token = Cell.token(Cell.TENANT);
    }

    private static void reset(Socket s) {
        try (s) {
            s.setSoLinger(true, 0);
        } catch (java.io.IOException e) {
            // closed either way
        }
    }

    @AfterAll
    static void stop() {
        cell.close();
        resetting.close();
    }

    @Test
    void downAfterThreeResets_answeredAtOnceWithoutAConnection_probedAfterTheBackoff() throws Exception {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("flaky") + "/x";
        try (WireClient c = new WireClient(cell.gateway.port())) {
            for (int i = 1; i <= 3; i++) {
                WireClient.Response r =
                        c.send(WireClient.head("GET", path, token)).read();
                assertThat(r.status())
                        .as("failure %d reaches the owner: %s", i, r)
                        .isEqualTo(502);
            }
        }
        assertThat(connections.get()).as("three attempts, three connections").isEqualTo(3);

        WireClient.Response down;
        long started = System.nanoTime();
        try (WireClient c = new WireClient(cell.gateway.port())) {
            down = c.send(WireClient.head("GET", path, token)).read();
        }
        long tookMs = (System.nanoTime() - started) / 1_000_000;
        assertThat(down.status()).isEqualTo(503);
        JsonNode problem = JSON.readTree(down.text());
        assertThat(problem.get("code").asText()).isEqualTo("OWNER_DOWN");
        assertThat(problem.at("/details/owner").asText()).isEqualTo("flaky");
        assertThat(down.header("Retry-After"))
                .as("the backoff left, rounded up")
                .isEqualTo("1");
        assertThat(connections.get()).as("no connection while it is down").isEqualTo(3);
        assertThat(tookMs).as("at once").isLessThan(1000);

        try (WireClient c = new WireClient(cell.gateway.port())) {
            WireClient.Response readiness = c.send(WireClient.head("GET", "/actuator/health/readiness", token))
                    .read();
            assertThat(readiness.status())
                    .as("the other owners serve: readiness stays up")
                    .isEqualTo(200);
            WireClient.Response metrics = c.send(WireClient.head("GET", "/actuator/prometheus", token))
                    .read();
            assertThat(metrics.text()).contains("spector_owner_up{owner=\"flaky\"} 0.0");
            assertThat(metrics.text()).contains("spector_forwarder_owner_down_total 1.0");
            WireClient.Response status = c.send(WireClient.head("GET", "/gateway/v1/status", Cell.adminToken()))
                    .read();
            assertThat(JSON.readTree(status.text()).at("/ring/members")).anySatisfy(m -> {
                assertThat(m.get("id").asText()).isEqualTo("flaky");
                assertThat(m.get("state").asText()).isEqualTo("down");
            });
        }

        Waits.until("after the 300 ms backoff one probe reaches the owner", () -> {
            try (WireClient c = new WireClient(cell.gateway.port())) {
                c.send(WireClient.head("GET", path, token)).read();
            }
            return connections.get() == 4;
        });
        try (WireClient c = new WireClient(cell.gateway.port())) {
            WireClient.Response again =
                    c.send(WireClient.head("GET", path, token)).read();
            assertThat(again.status())
                    .as("the probe failed: down again, for twice as long")
                    .isEqualTo(503);
        }
        assertThat(connections.get()).isEqualTo(4);
    }

    @Test
    void theOtherOwnersAreServedMeanwhile() {
        String path = "/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo";
        try (WireClient c = new WireClient(cell.gateway.port())) {
            assertThat(c.send(WireClient.head("GET", path, token)).read().status())
                    .isEqualTo(200);
        }
    }
}
