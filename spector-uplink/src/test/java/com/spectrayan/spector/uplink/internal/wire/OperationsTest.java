package com.spectrayan.spector.uplink.internal.wire;

import static com.spectrayan.spector.uplink.internal.wire.BadRequests.assertRefused;
import static com.spectrayan.spector.uplink.internal.wire.BadRequests.json;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The small schemas: relay.cancel, relay.request's output, status.get and its report. */
final class OperationsTest {
    private static final Instant STARTED = Instant.parse("2025-01-02T03:04:05.678Z");

    private static List<String> targets(int count) {
        List<String> targets = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            targets.add("t" + i);
        }
        return targets;
    }

    private static ObjectNode report(String workerId, List<String> targets) {
        ObjectNode node = JsonNodeFactory.instance.objectNode().put("workerId", workerId);
        ArrayNode array = node.putArray("targets");
        targets.forEach(array::add);
        return node.put("activeRelays", 2).put("startedAt", STARTED.toString());
    }

    @Test
    void operations_names_areTheSeeds() {
        assertThat(List.of(StatusGet.OP, RelayRequest.OP, RelayBody.OP, RelayCancel.OP))
                .containsExactly("status.get", "relay.request", "relay.body", "relay.cancel");
    }

    @Test
    void relayCancel_parsed_roundTrips() {
        RelayCancel cancel = RelayCancel.parse(json("{'relayId':'r-1'}"));

        assertThat(cancel.relayId()).isEqualTo("r-1");
        assertThat(cancel.toJson()).isEqualTo(json("{'relayId':'r-1'}"));
    }

    @Test
    void relayCancel_relayIdOf64Chars_isAccepted_and65_isBadRequest() {
        String max = "c".repeat(64);

        assertThat(RelayCancel.parse(json("{'relayId':'" + max + "'}")).relayId())
                .isEqualTo(max);
        assertRefused(() -> RelayCancel.parse(json("{'relayId':'" + max + "c'}")), "relayId", "relayId of 65 chars")
                .hasMessage("relayId: 65 chars (expected: 1..64)");
        assertRefused(() -> RelayCancel.parse(json("{}")), "relayId", "relayId missing");
    }

    @Test
    void relayOutcome_emptyOrCancelled_isRead() {
        assertThat(RelayOutcome.parse(json("{}"))).isEqualTo(RelayOutcome.COMPLETED);
        assertThat(RelayOutcome.parse(json("{'cancelled':true}"))).isEqualTo(RelayOutcome.CANCELLED);
        assertThat(RelayOutcome.parse(json("{'cancelled':false}"))).isEqualTo(RelayOutcome.COMPLETED);
        assertThat(RelayOutcome.COMPLETED.toJson()).isEqualTo(json("{}"));
        assertThat(RelayOutcome.CANCELLED.toJson()).isEqualTo(json("{'cancelled':true}"));
    }

    @Test
    void relayOutcome_cancelledNotABoolean_isBadRequest() {
        assertRefused(() -> RelayOutcome.parse(json("{'cancelled':'yes'}")), "cancelled", "cancelled a string");
        assertRefused(() -> RelayOutcome.parse(json("[]")), "output", "output an array");
    }

    @Test
    void statusGet_anyObject_isRead_andWritesEmpty() {
        assertThat(StatusGet.parse(json("{'verbose':true}"))).isEqualTo(new StatusGet());
        assertThat(new StatusGet().toJson()).isEqualTo(json("{}"));
        assertRefused(() -> StatusGet.parse(json("null")), "input", "input null");
    }

    @Test
    void statusReport_parsed_roundTrips() {
        StatusReport report = StatusReport.parse(report("w-1", List.of("app", "agent-device")));

        assertThat(report).isEqualTo(new StatusReport("w-1", List.of("app", "agent-device"), 2, STARTED));
        assertThat(StatusReport.parse(report.toJson())).isEqualTo(report);
    }

    @Test
    void statusReport_workerIdOf64Chars_isAccepted_and65_isBadRequest() {
        String max = "w".repeat(64);

        assertThat(StatusReport.parse(report(max, List.of())).workerId()).isEqualTo(max);
        assertRefused(() -> StatusReport.parse(report(max + "w", List.of())), "workerId", "workerId of 65 chars")
                .hasMessage("workerId: 65 chars (expected: 1..64)");
        assertRefused(() -> StatusReport.parse(report("w 1", List.of())), "workerId", "workerId with a space");
    }

    @Test
    void statusReport_64Targets_isAccepted_and65_isBadRequest() {
        assertThat(StatusReport.parse(report("w", targets(64))).targets())
                .as("64 targets")
                .hasSize(64);
        assertRefused(() -> StatusReport.parse(report("w", targets(65))), "targets", "65 targets")
                .hasMessage("targets: 65 targets (expected: <= 64)");
    }

    @Test
    void statusReport_badOrRepeatedTarget_isBadRequest() {
        assertRefused(() -> StatusReport.parse(report("w", List.of("app", "App"))), "targets[1]", "target 'App'");
        assertRefused(() -> StatusReport.parse(report("w", List.of("app", "app"))), "targets[1]", "target twice")
                .hasMessage("targets[1]: listed twice (expected: distinct names)");
        ObjectNode numeric = report("w", List.of());
        numeric.putArray("targets").add(1);
        assertRefused(() -> StatusReport.parse(numeric), "targets[0]", "a numeric target");
    }

    @Test
    void statusReport_activeRelaysOrStartedAtOutOfShape_isBadRequest() {
        assertRefused(
                () -> StatusReport.parse(report("w", List.of()).put("activeRelays", -1)), "activeRelays", "-1 relays");
        assertRefused(
                () -> StatusReport.parse(report("w", List.of()).put("startedAt", "yesterday")),
                "startedAt",
                "startedAt not an instant");
        assertRefused(
                        () -> StatusReport.parse(report("w", List.of()).put("startedAt", "2".repeat(65))),
                        "startedAt",
                        "startedAt of 65 chars")
                .hasMessage("startedAt: 65 chars (expected: 1..64)");
    }
}
