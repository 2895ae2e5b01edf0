package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A flood of connections past {@code spector.server.max-connections}, against a gateway in a JVM
 * of its own (its log read as an operator reads it): every refused connection is counted in
 * {@code spector_gateway_connections_refused_total}, and the log says so in one line per
 * {@link GatewayServer#REFUSED_LOG_INTERVAL}, not one per connection (before: a WARN each, written
 * to standard error on the event loop that accepted it, so a flood's cost became the log's).
 */
final class RefusedConnectionsProcessTest {
    private static final int MAX_CONNECTIONS = 2;
    private static final int FLOOD = 200;
    private static final Pattern LINE = Pattern.compile("refused (\\d+) connection\\(s\\) since the last such line");

    private final List<GatewayProcess> started = new ArrayList<>();

    @AfterEach
    void stop() {
        started.forEach(GatewayProcess::close);
    }

    private static String health(boolean close) {
        return "GET /actuator/health/liveness HTTP/1.1\r\nHost: x\r\n" + (close ? "Connection: close\r\n" : "")
                + "\r\n";
    }

    @Test
    void connectionsPastTheLimit_areEachCounted_andLoggedOncePerInterval(@TempDir Path dir) throws Exception {
        Map<String, String> settings = new HashMap<>();
        settings.put("spector.cell.role", "gateway");
        settings.put("spector.cell.ring-members", "owner-0=http://127.0.0.1:9");
        settings.put("spector.server.host", "127.0.0.1");
        settings.put("spector.routing.redis.enabled", "false");
        settings.put("spector.security.jwt.hmac-secret", Cell.SECRET);
        settings.put("spector.server.max-connections", Integer.toString(MAX_CONNECTIONS));
        settings.put("spector.server.access-log", "off");
        GatewayProcess g = GatewayProcess.startReplicas(1, settings, dir).get(0);
        started.add(g);

        long burstStarted = System.nanoTime();
        try (RawClient first = new RawClient(g.port);
                RawClient second = new RawClient(g.port)) {
            assertThat(first.send(health(false)).read().status()).isEqualTo(200);
            assertThat(second.send(health(false)).read().status()).isEqualTo(200);
            for (int i = 0; i < FLOOD; i++) {
                try (RawClient past = new RawClient(g.port)) {
                    past.send(health(false));
                    assertThat(past.closedByServer())
                            .as("connection %d past the limit", i + 1)
                            .isTrue();
                }
            }
        }
        long burstMillis = Duration.ofNanos(System.nanoTime() - burstStarted).toMillis();

        String metric = "spector_gateway_connections_refused_total " + FLOOD + ".0";
        Waits.until("the scrape counts every refused connection", Duration.ofSeconds(15), () -> {
            try (RawClient scrape = new RawClient(g.port)) {
                return scrape.send("GET /actuator/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        .read()
                        .text()
                        .contains(metric);
            } catch (java.io.IOException e) {
                return false; // the two held connections are not yet forgotten
            }
        });

        List<Long> counted = new ArrayList<>();
        for (String line : g.output()) {
            Matcher m = LINE.matcher(line);
            if (m.find()) {
                counted.add(Long.parseLong(m.group(1)));
            }
        }
        long intervals = 1 + burstMillis / GatewayServer.REFUSED_LOG_INTERVAL.toMillis();
        assertThat(counted)
                .as(
                        "lines about refused connections in %d ms (at most one per %s)",
                        burstMillis, GatewayServer.REFUSED_LOG_INTERVAL)
                .isNotEmpty()
                .hasSizeLessThanOrEqualTo((int) intervals);
        assertThat(counted.get(0)).as("the first refusal is logged at once").isEqualTo(1L);
        assertThat(counted.stream().mapToLong(Long::longValue).sum())
                .as("no line counts a connection twice")
                .isLessThanOrEqualTo(FLOOD);
    }
}
