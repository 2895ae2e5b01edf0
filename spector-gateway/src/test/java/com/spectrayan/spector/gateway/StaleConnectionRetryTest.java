package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.testkit.RecordingUpstream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * RFC 9112 §9.3.1: a pooled owner connection that closes with no answer after the owner received
 * the whole request (its keep-alive timeout crossing the request, or an owner that stopped after
 * reading it) leaves the gateway unable to tell whether the owner acted on it. It sends the request
 * again, once, on a new connection only when a repeat is harmless: an idempotent method (RFC 9110
 * §9.2.2), or an {@code Idempotency-Key} the owner answers a repeat by. A POST without one is
 * answered 502 and reaches the owner once. Before, every replayable request was sent again, so a
 * POST could run twice while its client was told it failed. A raw-socket owner records what
 * arrived, on which connection.
 */
final class StaleConnectionRetryTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Duration WITHIN = Duration.ofSeconds(5);

    static Stream<Arguments> requests() {
        return Stream.of(
                Arguments.of("POST", null, "", 502),
                Arguments.of("PATCH", null, "", 502),
                Arguments.of("POST", "Idempotency-Key", "k-1", 200),
                Arguments.of("POST", "X-Idempotency-Key", "k-1", 200),
                Arguments.of("POST", "Idempotency-Key", "", 502),
                Arguments.of("PUT", null, "", 200),
                Arguments.of("GET", null, "", 200));
    }

    @ParameterizedTest(name = "{0} with {1} \"{2}\": {3}")
    @MethodSource("requests")
    void aRequestTheOwnerReceivedWholeOnAConnectionThatThenClosed_isSentAgainOnlyWhenThatIsHarmless(
            String method, @Nullable String keyHeader, String key, int status) throws Exception {
        try (RecordingUpstream owner = RecordingUpstream.start();
                Cell cell =
                        Cell.builder().owners(0).member("rec-0", owner.uri()).start();
                RawClient client = new RawClient(cell.gateway.port())) {
            String ns = cell.namespaceOwnedBy("rec-0");
            String auth = "Authorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n";
            RawClient.Response first = client.send(
                            "GET /api/v1/namespaces/" + ns + "/warm HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n")
                    .read();
            assertThat(first.status())
                    .as("a first exchange leaves its connection in the pool")
                    .isEqualTo(200);
            assertThat(owner.takeRequest(WITHIN).connection()).isEqualTo(1);

            owner.dropNextAnswer();
            boolean hasBody = !method.equals("GET");
            RawClient.Response r = client.send(method + " /api/v1/namespaces/" + ns + "/once HTTP/1.1\r\nHost: x\r\n"
                            + auth + (keyHeader == null ? "" : keyHeader + ": " + key + "\r\n")
                            + (hasBody ? "Content-Length: 5\r\n\r\nhello" : "\r\n"))
                    .read();

            assertThat(r.status())
                    .as(new String(r.body(), StandardCharsets.UTF_8))
                    .isEqualTo(status);
            RecordingUpstream.Recorded sent = owner.takeRequest(WITHIN);
            assertThat(sent.requestLine()).startsWith(method + " /api/v1/namespaces/" + ns + "/once ");
            assertThat(sent.connection()).as("on the pooled connection").isEqualTo(1);
            assertThat(sent.complete()).as("the owner read it whole").isTrue();
            if (status == 200) {
                RecordingUpstream.Recorded again = owner.takeRequest(WITHIN);
                assertThat(again.requestLine()).isEqualTo(sent.requestLine());
                assertThat(again.connection())
                        .as("once more, on a new connection")
                        .isEqualTo(2);
                assertThat(again.body()).isEqualTo(sent.body());
                if (keyHeader != null) {
                    assertThat(again.header(keyHeader)).isEqualTo(key);
                }
            } else {
                assertThat(JSON.readTree(r.body()).get("code").asText()).isEqualTo("OWNER_UNREACHABLE");
                assertThat(owner.connections())
                        .as("no second connection: the request was not sent again")
                        .isEqualTo(1);
            }
            assertThat(cell.get("/actuator/prometheus").body())
                    .as("a retry is counted only when made")
                    .contains("spector_forwarder_retargets_total{cause=\"stale-connection\"} "
                            + (status == 200 ? "1.0" : "0.0"));
        }
    }
}
