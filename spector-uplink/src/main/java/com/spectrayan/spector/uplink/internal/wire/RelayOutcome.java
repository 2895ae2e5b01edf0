package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.SpectorException;

/**
 * The output of {@code relay.request}: {@code {}} once the response body has ended, or {@code
 * {"cancelled":true}} once a {@code relay.cancel} took effect. {@code "cancelled":false} reads as
 * {@code {}}.
 *
 * @param cancelled whether the relay ended because it was cancelled
 */
public record RelayOutcome(boolean cancelled) {
    /** The relay's response body ended. */
    public static final RelayOutcome COMPLETED = new RelayOutcome(false);

    /** A cancel took effect. */
    public static final RelayOutcome CANCELLED = new RelayOutcome(true);

    /**
     * Reads a {@code relay.request} output.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static RelayOutcome parse(JsonNode output) {
        Boolean cancelled = Inputs.optionalBool(Inputs.object(output, "output"), "cancelled");
        return cancelled != null && cancelled ? CANCELLED : COMPLETED;
    }

    /** Returns the output as sent: {@code {}} or {@code {"cancelled":true}}. */
    public ObjectNode toJson() {
        ObjectNode node = JsonNodeFactory.instance.objectNode();
        return cancelled ? node.put("cancelled", true) : node;
    }
}
