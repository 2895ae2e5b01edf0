package com.spectrayan.spector.contract;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class ProblemJsonTest {

    @Test
    void render_payloadTooLarge_hasRfc9457MembersAndCode() {
        SpectorException e = Limits.BODY_BYTES.refusal(20_000_000);

        String json = new String(ProblemJson.toBytes(e.toProblem("/api/v1/namespaces/a/echo")), StandardCharsets.UTF_8);

        assertThat(json)
                .isEqualTo("{\"type\":\"urn:spector:error:PAYLOAD_TOO_LARGE\",\"title\":\"Payload too large\","
                        + "\"status\":413,\"detail\":\"bodyBytes: 20000000 (expected: <= 10485760 bytes)\","
                        + "\"code\":\"PAYLOAD_TOO_LARGE\",\"details\":{\"limitBytes\":10485760},"
                        + "\"instance\":\"/api/v1/namespaces/a/echo\"}");
    }

    @Test
    void render_withoutInstance_omitsIt() {
        Problem p = SpectorException.of(ErrorCode.INTERNAL, "bug").toProblem(null);

        assertThat(new String(ProblemJson.toBytes(p), StandardCharsets.UTF_8))
                .doesNotContain("instance")
                .contains("\"details\":{}");
    }

    @Test
    void parse_renderedProblem_roundTrips() {
        Problem p = SpectorException.of(ErrorCode.OWNER_UNREACHABLE, "owner-1 refused", Map.of("owner", "owner-1"))
                .toProblem("/api/v1/x");

        Problem back = ProblemJson.parse(ProblemJson.toBytes(p));

        assertThat(back).isEqualTo(p);
        assertThat(back.status()).isEqualTo(502);
    }

    @Test
    void parse_unknownMembers_areIgnored() {
        Problem p = ProblemJson.parse(
                ("{\"type\":\"about:blank\",\"title\":\"t\",\"status\":400,\"detail\":\"d\",\"code\":\"BAD_REQUEST\","
                                + "\"details\":{},\"extra\":1}")
                        .getBytes(StandardCharsets.UTF_8));

        assertThat(p.code()).isEqualTo("BAD_REQUEST");
    }
}
