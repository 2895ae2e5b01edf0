package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Owners that cannot answer: a dead one (nothing listens) and a silent one (never answers). */
final class OwnerFailureTest {
    private static final Duration OWNER_TIMEOUT = Duration.ofMillis(500);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(1)
                .deadMember()
                .silentMember()
                .set("spector.routing.gateway.owner-timeout", OWNER_TIMEOUT.toMillis() + "ms")
                .start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    private HttpResponse<String> get(String ns) throws Exception {
        return cell.get("/api/v1/namespaces/" + ns + "/echo");
    }

    @Test
    void shouldAnswer502WhenTheOwnerIsDead() throws Exception {
        HttpResponse<String> r = get(cell.namespaceOwnedBy("dead-0"));

        assertThat(r.statusCode()).isEqualTo(502);
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("OWNER_UNREACHABLE");
        assertThat(JSON.readTree(r.body()).at("/details/owner").asText()).isEqualTo("dead-0");
    }

    @Test
    void shouldAnswer504WithinTheOwnerTimeoutWhenTheOwnerNeverAnswers() throws Exception {
        long start = System.nanoTime();
        HttpResponse<String> r = get(cell.namespaceOwnedBy("silent-0"));
        long tookMs = (System.nanoTime() - start) / 1_000_000;

        assertThat(r.statusCode()).isEqualTo(504);
        assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("OWNER_TIMEOUT");
        assertThat(tookMs)
                .as("504 after %d ms; owner-timeout is %d ms", tookMs, OWNER_TIMEOUT.toMillis())
                .isBetween(OWNER_TIMEOUT.toMillis(), OWNER_TIMEOUT.toMillis() + 1500);
    }
}
