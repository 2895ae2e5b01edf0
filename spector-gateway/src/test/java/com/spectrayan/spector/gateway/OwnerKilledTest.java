package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Passive health against a real owner that dies (issue 13): a client loop is served by reference
 * owner {@code owner-1} until the owner is closed mid-loop, so its port refuses connections and the
 * gateway's pooled connections to it are lost. After {@code owner-down-after} failed requests
 * (each one attempt: only a 421 is retried) the owner is down: its requests are answered 503
 * {@code OWNER_DOWN} with {@code Retry-After} in delay-seconds (RFC 9110 §10.2.3) at once, while
 * {@code owner-0}'s requests keep being served and status shows {@code owner-1} down.
 *
 * <p>The backoff is long ({@link #BACKOFF}) so that every down-answer this test asks for falls
 * before the first probe, which would reach the dead port and fail with 502 again.
 */
final class OwnerKilledTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** {@code owner-down-after}: failures in a row that mark an owner down. */
    private static final int DOWN_AFTER = 3;

    /** {@code owner-down-backoff}: far longer than the down-answers below take. */
    private static final Duration BACKOFF = Duration.ofSeconds(5);

    /** The bound on one down-answer: no connection attempt, so far below any owner timeout. */
    private static final Duration AT_ONCE = Duration.ofMillis(100);

    /** Requests {@code owner-1} serves before it is killed. */
    private static final int SERVED_BEFORE_KILL = 5;

    /** Requests asked once the owner is down, each answered at once. */
    private static final int DOWN_ANSWERS = 5;

    private static final String KILLED = "owner-1";
    private static final String ALIVE = "owner-0";

    private static Cell cell;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(2)
                .set("spector.routing.gateway.owner-down-after", String.valueOf(DOWN_AFTER))
                .set("spector.routing.gateway.owner-down-backoff", BACKOFF.toSeconds() + "s")
                .set(
                        "spector.routing.gateway.owner-down-backoff-max",
                        BACKOFF.multipliedBy(2).toSeconds() + "s")
                .start();
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private static WireClient.Response get(String path) {
        try (WireClient c = new WireClient(cell.gateway.port())) {
            return c.send(WireClient.head("GET", path, token)).read();
        }
    }

    private static boolean ownerDown(WireClient.Response r) throws Exception {
        return r.status() == 503
                && "OWNER_DOWN".equals(JSON.readTree(r.text()).path("code").asText());
    }

    @Test
    void killedMidLoop_downAfterTheConfiguredFailures_answeredAtOnce_othersServed() throws Exception {
        String killedPath = "/api/v1/namespaces/" + cell.namespaceOwnedBy(KILLED) + "/echo";
        String alivePath = "/api/v1/namespaces/" + cell.namespaceOwnedBy(ALIVE) + "/echo";

        int failures = 0;
        WireClient.@Nullable Response firstDown = null;
        for (int i = 0; i <= SERVED_BEFORE_KILL + DOWN_AFTER; i++) {
            if (i == SERVED_BEFORE_KILL) {
                cell.owner(KILLED).close(); // its port now refuses; its connections are gone
            }
            WireClient.Response r = get(killedPath);
            if (i < SERVED_BEFORE_KILL) {
                assertThat(r.status())
                        .as("request %d, before the kill: %s", i, r)
                        .isEqualTo(200);
            } else if (ownerDown(r)) {
                firstDown = r;
                break;
            } else {
                failures++;
                assertThat(r.status())
                        .as("request %d, after the kill: %s", i, r)
                        .isEqualTo(502);
                assertThat(JSON.readTree(r.text()).get("code").asText()).isEqualTo("OWNER_UNREACHABLE");
            }
            assertThat(get(alivePath).status())
                    .as("the other owner serves throughout (request %d)", i)
                    .isEqualTo(200);
        }
        assertThat(firstDown)
                .as("OWNER_DOWN within %d failures after the kill (%d seen)", DOWN_AFTER, failures)
                .isNotNull();
        assertThat(failures)
                .as(
                        "each failed request is one attempt (no retry without a 421): the %dth still reaches the"
                                + " dead owner, the next is answered down",
                        DOWN_AFTER)
                .isEqualTo(DOWN_AFTER);

        for (int i = 0; i < DOWN_ANSWERS; i++) {
            WireClient.Response down;
            long tookNanos;
            try (WireClient c = new WireClient(cell.gateway.port())) {
                long started = System.nanoTime();
                down = c.send(WireClient.head("GET", killedPath, token)).read();
                tookNanos = System.nanoTime() - started;
            }
            assertThat(down.status()).as("down-answer %d: %s", i, down).isEqualTo(503);
            JsonNode problem = JSON.readTree(down.text());
            assertThat(problem.get("code").asText()).isEqualTo("OWNER_DOWN");
            assertThat(problem.at("/details/owner").asText()).isEqualTo(KILLED);
            String retryAfter = down.header("Retry-After");
            assertThat(retryAfter)
                    .as("Retry-After as delay-seconds, RFC 9110 §10.2.3")
                    .isNotNull()
                    .matches("[0-9]+");
            assertThat(Long.parseLong(retryAfter))
                    .as("the backoff left, rounded up")
                    .isBetween(1L, BACKOFF.toSeconds());
            assertThat(Duration.ofNanos(tookNanos))
                    .as("down-answer %d at once", i)
                    .isLessThan(AT_ONCE);
            assertThat(get(alivePath).status())
                    .as("the other owner serves while %s is down", KILLED)
                    .isEqualTo(200);
        }

        JsonNode members;
        try (WireClient c = new WireClient(cell.gateway.port())) {
            members = JSON.readTree(c.send(WireClient.head("GET", "/gateway/v1/status", Cell.adminToken()))
                            .read()
                            .text())
                    .at("/ring/members");
        }
        assertThat(members).anySatisfy(m -> {
            assertThat(m.get("id").asText()).isEqualTo(KILLED);
            assertThat(m.get("state").asText()).isEqualTo("down");
        });
        assertThat(members).anySatisfy(m -> {
            assertThat(m.get("id").asText()).isEqualTo(ALIVE);
            assertThat(m.get("state").asText()).isNotEqualTo("down");
        });
    }
}
