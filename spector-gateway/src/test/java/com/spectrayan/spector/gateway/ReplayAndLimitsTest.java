package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The bounds of the gateway's own buffers, at their limit and one past: the replay copy kept for a
 * 421 (here 1 KiB), the request line (256 bytes, then 414) and the request head (1 KiB, then 431).
 */
final class ReplayAndLimitsTest {
    private static final int REPLAY_BYTES = 1024;
    private static final int MAX_LINE = 256;
    private static final int MAX_HEADER = 1024;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Cell cell;

    @BeforeAll
    static void start() throws Exception {
        cell = Cell.builder()
                .owners(2)
                .set("spector.routing.gateway.replay-buffer-bytes", Integer.toString(REPLAY_BYTES))
                .set("spector.server.max-initial-line-length", Integer.toString(MAX_LINE))
                .set("spector.server.max-header-size", Integer.toString(MAX_HEADER))
                .start();
    }

    @AfterAll
    static void stop() {
        cell.close();
    }

    /** A namespace whose ring owner (owner-1) sends every request to owner-0. */
    private static String movedNamespace() {
        String ns = cell.namespaceOwnedBy("owner-1");
        cell.moveNamespace(ns, "owner-1", "owner-0", 2, 2);
        return ns;
    }

    private static RawClient.Response post(String ns, int bodyBytes) throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            byte[] head = ("POST /api/v1/namespaces/" + ns + "/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                            + Cell.token(Cell.TENANT) + "\r\nContent-Length: " + bodyBytes + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1);
            // Head and body in one write: the gateway has the whole body before the owner's 421
            // can come back (a 421 that beats the body is GatewayForwarderReplayTest's case).
            byte[] request = Arrays.copyOf(head, head.length + bodyBytes);
            return c.send(request).read();
        }
    }

    @Test
    void replay_bodyAtTheLimit_isReplayedToTheReportedOwner() throws Exception {
        RawClient.Response r = post(movedNamespace(), REPLAY_BYTES);

        assertThat(r.status()).as("a 1 KiB body follows the 421").isEqualTo(200);
        assertThat(r.header("X-Spector-Node")).isEqualTo("owner-0");
        assertThat(JSON.readTree(r.body()).get("bodyBytes").asInt()).isEqualTo(REPLAY_BYTES);
    }

    @Test
    void replay_bodyOneBytePastTheLimit_answers503WithRetryAfterZero() throws Exception {
        long refusals = cell.gateway.forwarder().metrics().replayRefusals();

        RawClient.Response r = post(movedNamespace(), REPLAY_BYTES + 1);

        assertThat(r.status())
                .as("a body that outgrew the replay copy cannot follow a 421")
                .isEqualTo(503);
        JsonNode problem = JSON.readTree(r.body());
        assertThat(problem.get("code").asText()).isEqualTo("GATEWAY_ROUTING_FAILURE");
        assertThat(problem.at("/details/reason").asText()).isEqualTo("body-too-large-to-replay");
        assertThat(r.header("Retry-After"))
                .as("the new owner is learned: retry at once")
                .isEqualTo("0");
        assertThat(cell.gateway.forwarder().metrics().replayRefusals()).isGreaterThan(refusals);
    }

    @Test
    void requestLine_atTheLimit_passes_andOnePast_is414() throws Exception {
        String ns = cell.namespaceOwnedBy("owner-0");
        String prefix = "GET /api/v1/namespaces/" + ns + "/echo?p=";
        String suffix = " HTTP/1.1";
        String atLimit = prefix + "x".repeat(MAX_LINE - prefix.length() - suffix.length()) + suffix;
        assertThat(atLimit).hasSize(MAX_LINE);

        assertThat(get(atLimit, "").status())
                .as("a %d-byte request line", MAX_LINE)
                .isEqualTo(200);
        String onePast = prefix + "x".repeat(MAX_LINE - prefix.length() - suffix.length() + 1) + suffix;
        RawClient.Response refused = get(onePast, "");
        assertThat(refused.status()).as("a %d-byte request line", MAX_LINE + 1).isEqualTo(414);
        assertThat(refused.text())
                .as("RFC 9457 §3.1.2: the problem's status is the one answered")
                .contains("\"status\":414");
    }

    @Test
    void requestHead_atTheLimit_passes_andOnePast_is431() throws Exception {
        String line = "GET /api/v1/namespaces/" + cell.namespaceOwnedBy("owner-0") + "/echo HTTP/1.1";
        // The decoder counts header bytes without the line ends.
        int fixed = "Host: x".length() + ("Authorization: Bearer " + Cell.token(Cell.TENANT)).length();
        int padAtLimit = MAX_HEADER - fixed - "X-Pad: ".length();

        assertThat(get(line, "X-Pad: " + "p".repeat(padAtLimit) + "\r\n").status())
                .as("a head of exactly %d bytes", MAX_HEADER)
                .isEqualTo(200);
        RawClient.Response refused = get(line, "X-Pad: " + "p".repeat(padAtLimit + 1) + "\r\n");
        assertThat(refused.status())
                .as("a head one byte past %d bytes", MAX_HEADER)
                .isEqualTo(431);
        assertThat(refused.text()).contains("\"status\":431").contains("\"code\":\"BAD_REQUEST\"");
    }

    private static RawClient.Response get(String requestLine, String extraHeaders) throws Exception {
        try (RawClient c = new RawClient(cell.gateway.port())) {
            return c.send(requestLine + "\r\nHost: x\r\nAuthorization: Bearer " + Cell.token(Cell.TENANT) + "\r\n"
                            + extraHeaders + "\r\n")
                    .read();
        }
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
