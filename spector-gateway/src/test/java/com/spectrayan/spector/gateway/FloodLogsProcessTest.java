package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.transport.UplinkAcceptor;
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
 * Floods anyone can send, against a gateway in a JVM of its own (its log read as an operator reads
 * it), must not become floods of log lines: each line is written to standard error on the event
 * loop that saw the event, so a line per event made a flood's cost the log's (before: a WARN per
 * connection past {@code spector.server.max-connections}, and per uplink handshake with a bad
 * token). Now one line per interval says how many; each refusal is counted in a meter ({@code
 * spector_gateway_connections_refused_total}, {@code spector_uplinks_refused_total{code}}).
 */
final class FloodLogsProcessTest {
    private static final int MAX_CONNECTIONS = 2;
    private static final int FLOOD = 200;
    private static final Pattern LINE = Pattern.compile("refused (\\d+) connection\\(s\\) since the last such line");
    private static final Pattern BAD_TOKEN_LINE = Pattern.compile(
            "uplink refused: bad token for worker w1 from .* \\((\\d+) such refusal\\(s\\) since the last");
    private static final String TOKEN = "worker-token-0123456789";

    private final List<GatewayProcess> started = new ArrayList<>();
    private com.spectrayan.spector.owner.@org.jspecify.annotations.Nullable ReferenceOwner owner;

    @AfterEach
    void stop() {
        started.forEach(GatewayProcess::close);
        if (owner != null) {
            owner.close();
        }
    }

    private static String health(boolean close) {
        return "GET /actuator/health/liveness HTTP/1.1\r\nHost: x\r\n" + (close ? "Connection: close\r\n" : "")
                + "\r\n";
    }

    private GatewayProcess start(Path dir, Map<String, String> extra) throws java.io.IOException {
        Map<String, String> settings = new HashMap<>();
        settings.put("spector.cell.role", "gateway");
        settings.put("spector.cell.ring-members", "owner-0=http://127.0.0.1:9");
        settings.put("spector.server.host", "127.0.0.1");
        settings.put("spector.routing.redis.enabled", "false");
        settings.put("spector.security.jwt.hmac-secret", Cell.SECRET);
        settings.put("spector.server.access-log", "off");
        settings.putAll(extra);
        GatewayProcess g = GatewayProcess.startReplicas(1, settings, dir).get(0);
        started.add(g);
        return g;
    }

    /** The counts the lines matching {@code line} report, in order. */
    private static List<Long> counted(GatewayProcess g, Pattern line) {
        List<Long> counted = new ArrayList<>();
        for (String l : g.output()) {
            Matcher m = line.matcher(l);
            if (m.find()) {
                counted.add(Long.parseLong(m.group(1)));
            }
        }
        return counted;
    }

    @Test
    void connectionsPastTheLimit_areEachCounted_andLoggedOncePerInterval(@TempDir Path dir) throws Exception {
        // An owner whose event stream holds the two connections in an exchange: neither is then an
        // idle one a newcomer may take (ConnectionLimitTest), and every newcomer is refused.
        com.spectrayan.spector.owner.ReferenceOwner o = Cell.soleOwner();
        owner = o;
        GatewayProcess g = start(
                dir,
                Map.of(
                        "spector.server.max-connections",
                        Integer.toString(MAX_CONNECTIONS),
                        "spector.cell.ring-members",
                        "owner-0=" + o.baseUri()));

        long burstStarted = System.nanoTime();
        try (RawClient first = new RawClient(g.port);
                RawClient second = new RawClient(g.port)) {
            String events = Cell.eventStreamRequest();
            assertThat(first.send(events).read200HeadOnly()).isEqualTo(200);
            assertThat(second.send(events).read200HeadOnly()).isEqualTo(200);
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

        List<Long> counted = counted(g, LINE);
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

    @Test
    void uplinkHandshakesWithABadToken_areEachRefused_andLoggedOncePerInterval(@TempDir Path dir) throws Exception {
        GatewayProcess g = start(dir, Map.of("spector.uplink.tokens", "w1=" + TokenHashes.sha256Hex(TOKEN)));
        long burstStarted = System.nanoTime();
        for (int i = 0; i < FLOOD; i++) {
            try (RawClient c = new RawClient(g.port)) {
                RawClient.Response r = c.send("GET /uplink HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                                + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: spector-uplink.v2\r\n"
                                + "X-Spector-Worker: w1\r\nX-Spector-Link: 0\r\nAuthorization: Bearer wrong-" + i
                                + "\r\n\r\n")
                        .read();
                assertThat(r.status())
                        .as("handshake %d with a bad token", i + 1)
                        .isEqualTo(401);
            }
        }
        long burstMillis = Duration.ofNanos(System.nanoTime() - burstStarted).toMillis();
        try (RawClient scrape = new RawClient(g.port)) {
            assertThat(scrape.send("GET /actuator/prometheus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                            .read()
                            .text())
                    .as("each refused handshake counted by its code")
                    .contains("spector_uplinks_refused_total{code=\"UNAUTHENTICATED\"} " + FLOOD + ".0")
                    .contains("spector_uplinks_refused_total{code=\"UPLINK_LIMIT\"} 0.0");
        }
        List<Long> counted = counted(g, BAD_TOKEN_LINE);
        assertThat(counted)
                .as(
                        "lines about bad tokens in %d ms (at most one per %s)",
                        burstMillis, UplinkAcceptor.BAD_TOKEN_LOG_INTERVAL)
                .isNotEmpty()
                .hasSizeLessThanOrEqualTo((int) (1 + burstMillis / UplinkAcceptor.BAD_TOKEN_LOG_INTERVAL.toMillis()));
        assertThat(counted.get(0)).as("the first is logged at once").isEqualTo(1L);
    }
}
