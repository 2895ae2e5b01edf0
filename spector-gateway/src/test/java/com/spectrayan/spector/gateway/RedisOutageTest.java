package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.testkit.RedisServerExtension;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A gateway whose Redis goes away keeps routing from the ring, and says so in its health. */
final class RedisOutageTest {
    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private Cell cell;

    @BeforeEach
    void start() throws Exception {
        cell = Cell.builder().owners(2).redis(redis.uri()).start();
        await("subscribed")
                .atMost(Duration.ofSeconds(10))
                .until(() -> !cell.gateway.resolver().isL1Bypassed());
    }

    @AfterEach
    void stop() {
        cell.close();
    }

    @Test
    void shouldStillRouteWhenRedisIsDown() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-1");
        assertThat(cell.get("/api/v1/namespaces/" + ns + "/echo").statusCode()).isEqualTo(200);

        redis.stop();
        HttpResponse<String> r = cell.get("/api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo");

        assertThat(r.statusCode())
                .as("routing answers from the ring with Redis down")
                .isEqualTo(200);
        assertThat(r.headers().firstValue("X-Spector-Node")).hasValue("owner-0");
        await("health reports Redis down, readiness stays up")
                .atMost(Duration.ofSeconds(10))
                .untilAsserted(() -> {
                    HttpResponse<String> health = cell.get("/actuator/health");
                    assertThat(health.statusCode()).isEqualTo(200);
                    com.fasterxml.jackson.databind.JsonNode json =
                            new com.fasterxml.jackson.databind.ObjectMapper().readTree(health.body());
                    assertThat(json.at("/components/redis/status").asText()).isEqualTo("DOWN");
                    assertThat(json.get("status").asText())
                            .as("Redis down only degrades")
                            .isEqualTo("UP");
                });
    }
}
