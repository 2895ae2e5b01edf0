package com.spectrayan.spector.uplink.wire;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Bound;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.internal.wire.Checks;
import com.spectrayan.spector.uplink.internal.wire.Inputs;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The output of {@code status.get}: who the worker is and what it serves.
 *
 * <pre>
 * {"workerId":"w1", "targets":["app","agent-device"], "activeRelays":2,
 *  "startedAt":"2025-01-01T00:00:00Z"}
 *
 * workerId      [A-Za-z0-9._:-], 1..64 chars
 * targets       at most 64 distinct target names ([a-z0-9][a-z0-9-]*, 1..64 chars)
 * activeRelays  integer 0..2^31-1
 * startedAt     ISO-8601 instant (UTC, e.g. 2025-01-01T00:00:00.123Z), at most 64 chars
 * </pre>
 *
 * @param workerId the worker's id, as its uplink's {@code X-Spector-Worker} header gives it
 * @param targets the relay targets registered on the worker, in its order
 * @param activeRelays the relays the worker runs now
 * @param startedAt when the worker started
 */
public record StatusReport(String workerId, List<String> targets, int activeRelays, Instant startedAt) {
    /** A worker id. */
    public static final Bound WORKER_ID_CHARS = new Bound("workerIdChars", 1, 64, "chars", ErrorCode.BAD_REQUEST);

    /** Relay targets one report lists. */
    public static final Bound TARGET_COUNT = Bound.atMost("targetCount", 64, "targets", ErrorCode.BAD_REQUEST);

    /** Chars of the {@code startedAt} text, checked before it is parsed. */
    static final Bound STARTED_AT_CHARS = new Bound("startedAtChars", 1, 64, "chars", ErrorCode.BAD_REQUEST);

    public StatusReport {
        Checks.id("workerId", requireNonNull(workerId, "workerId"), WORKER_ID_CHARS);
        Checks.count("targets", targets.size(), TARGET_COUNT);
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < targets.size(); i++) {
            String target = Checks.target("targets[" + i + "]", requireNonNull(targets.get(i)), Limits.TARGET_CHARS);
            if (!seen.add(target)) {
                throw SpectorException.badRequest("targets[" + i + "]", "listed twice (expected: distinct names)");
            }
        }
        targets = List.copyOf(targets);
        if (activeRelays < 0) {
            throw SpectorException.badRequest(
                    "activeRelays", activeRelays + " (expected: 0.." + Integer.MAX_VALUE + ")");
        }
        requireNonNull(startedAt, "startedAt");
    }

    /**
     * Reads and bounds a {@code status.get} output.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static StatusReport parse(JsonNode output) {
        ObjectNode out = Inputs.object(output, "output");
        String workerId = Inputs.text(out, "workerId");
        JsonNode targetsNode = Inputs.member(out, "targets");
        if (targetsNode == null) {
            throw Inputs.missing("targets", "an array of target names");
        }
        if (!targetsNode.isArray()) {
            throw Inputs.wrongType("targets", targetsNode, "an array of target names");
        }
        Checks.count("targets", targetsNode.size(), TARGET_COUNT);
        List<String> targets = new ArrayList<>(targetsNode.size());
        for (int i = 0; i < targetsNode.size(); i++) {
            JsonNode target = targetsNode.get(i);
            if (!target.isTextual()) {
                throw Inputs.wrongType("targets[" + i + "]", target, "a string");
            }
            targets.add(target.textValue());
        }
        int activeRelays = (int) Inputs.integer(out, "activeRelays", 0, Integer.MAX_VALUE);
        String startedAt = Checks.length("startedAt", Inputs.text(out, "startedAt"), STARTED_AT_CHARS);
        Instant started;
        try {
            started = Instant.parse(startedAt);
        } catch (DateTimeParseException e) {
            throw SpectorException.badRequest(
                    "startedAt", "not an ISO-8601 instant (expected: e.g. 2025-01-01T00:00:00Z)");
        }
        return new StatusReport(workerId, targets, activeRelays, started);
    }

    /** Returns the output as sent. */
    public ObjectNode toJson() {
        ObjectNode node = JsonNodeFactory.instance.objectNode().put("workerId", workerId);
        ArrayNode array = node.putArray("targets");
        targets.forEach(array::add);
        return node.put("activeRelays", activeRelays).put("startedAt", startedAt.toString());
    }
}
