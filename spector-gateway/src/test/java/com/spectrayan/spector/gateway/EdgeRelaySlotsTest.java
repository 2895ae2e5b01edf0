package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.WireClient.Response;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A relay cut by the body timeout gives its worker's relay slot back at once (issue 9, section 4),
 * on a gateway with a 1 s body timeout and 2 relays per worker; the worker dials the real uplink
 * and serves a {@link RecordingTarget}. Raw sockets only. The header timeout keeps its default
 * here, so that it cannot cut the uplink (see {@link EdgeTimersTest}).
 */
final class EdgeRelaySlotsTest {
    private static final Duration BODY_TIMEOUT = Duration.ofSeconds(1);

    /** What a timer may run late on a loaded machine. */
    private static final Duration MARGIN = Duration.ofSeconds(2);

    private static final int RELAYS_PER_WORKER = 2;
    private static final String WORKER = "sw";
    private static final Duration WITHIN = Duration.ofSeconds(5);

    private static final RecordingTarget target = new RecordingTarget();
    private static RelayCell relayCell;
    private static Cell cell;
    private static String token;

    @BeforeAll
    static void start() throws Exception {
        relayCell = RelayCell.start(
                Cell.builder()
                        .owners(1)
                        .set("spector.server.body-timeout", BODY_TIMEOUT.toSeconds() + "s")
                        .set("spector.uplink.relay.max-per-worker", Integer.toString(RELAYS_PER_WORKER)),
                WORKER,
                (c, httpForward) -> Map.of("record", target));
        cell = relayCell.cell;
        token = Cell.token(Cell.TENANT);
    }

    @AfterAll
    static void stop() {
        relayCell.close();
    }

    private static WireClient client() {
        return new WireClient(cell.gateway.port());
    }

    /**
     * Stalled uploaders on {@code /relay/...} are cut by the body timeout (408 and close), their
     * worker requests are aborted, and their relay slots are released at once, so another relay to
     * the same worker runs promptly (issue 9 §4). Regression: a stalled uploader held its relay slot
     * for the relay deadline (330 s), so every other relay to that worker waited.
     */
    @Test
    void shouldReleaseARelaySlotWhenTheBodyTimeoutCutsAStalledUploader() {
        List<String> stalledPaths = List.of("/stalled-1", "/stalled-2");
        try (WireClient first = client().timeout(BODY_TIMEOUT.plus(MARGIN));
                WireClient second = client().timeout(BODY_TIMEOUT.plus(MARGIN))) {
            List<WireClient> stalled = List.of(first, second);
            for (int i = 0; i < RELAYS_PER_WORKER; i++) {
                stalled.get(i)
                        .send(WireClient.head(
                                        "PUT",
                                        "/relay/" + WORKER + "/record" + stalledPaths.get(i),
                                        token,
                                        "Content-Length: 100000") // past the request buffer: streamed
                                + "0123456789");
            }
            for (String p : stalledPaths) {
                target.awaitCall(p, WITHIN);
            }
            assertThat(cell.gateway.relay().running(WORKER))
                    .as("both stalled uploads hold a relay slot")
                    .isEqualTo(RELAYS_PER_WORKER);

            for (WireClient c : stalled) {
                Response r = c.read();
                assertThat(r.status()).as("%s", r).isEqualTo(408);
                assertThat(r.code()).isEqualTo("REQUEST_TIMEOUT");
                assertThat(r.closed()).isTrue();
            }
        }
        for (String p : stalledPaths) {
            RecordingTarget.Call call = target.awaitCall(p, WITHIN);
            assertThat(call.outcome(WITHIN)).as("%s", call).isNotEqualTo(RecordingTarget.Outcome.COMPLETED);
        }
        await("the stalled relays' slots are released")
                .atMost(Duration.ofSeconds(2))
                .until(() -> cell.gateway.relay().running(WORKER) == 0);

        byte[] body = "0123456789".getBytes(StandardCharsets.US_ASCII);
        try (WireClient c = client().timeout(Duration.ofSeconds(3))) {
            Response r = c.send(
                            WireClient.head("PUT", "/relay/" + WORKER + "/record/after", token, "Content-Length: 10"))
                    .send(body)
                    .read();
            assertThat(r.status())
                    .as("a third relay to the worker runs at once: %s", r)
                    .isEqualTo(200);
            assertThat(r.json().path("bytes").asLong()).isEqualTo(body.length);
        }
        RecordingTarget.Call after = target.awaitCall("/after", WITHIN);
        assertThat(after.outcome(WITHIN)).isEqualTo(RecordingTarget.Outcome.COMPLETED);
        assertThat(after.sha256Hex()).isEqualTo(RecordingTarget.sha256Hex(body));
    }
}
