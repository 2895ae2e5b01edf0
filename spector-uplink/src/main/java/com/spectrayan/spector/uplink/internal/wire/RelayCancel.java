package com.spectrayan.spector.uplink.internal.wire;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;

/**
 * The input of {@code relay.cancel}: stop a relay. Output {@code {}}, also for a relay id the
 * worker does not hold.
 *
 * <pre>
 * {"relayId":"r-1"}
 *
 * relayId  [A-Za-z0-9._:-], 1..64 chars
 * </pre>
 *
 * @param relayId the id of the relay to cancel
 */
public record RelayCancel(String relayId) {
    /** The operation's name. */
    public static final String OP = "relay.cancel";

    public RelayCancel {
        Checks.id("relayId", requireNonNull(relayId, "relayId"), Limits.RELAY_ID_CHARS);
    }

    /**
     * Reads and bounds a {@code relay.cancel} input.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static RelayCancel parse(JsonNode input) {
        return new RelayCancel(Inputs.text(Inputs.object(input, "input"), "relayId"));
    }

    /** Returns the input as sent. */
    public ObjectNode toJson() {
        return JsonNodeFactory.instance.objectNode().put("relayId", relayId);
    }
}
