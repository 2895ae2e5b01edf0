package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.StatusReport;

/**
 * The input of {@code status.get}, the gateway's link refresh: {@code {}}. Its output is a {@link
 * StatusReport}. The gateway waits {@code Limits.STATUS_TIMEOUT} for it, and closes the link after
 * {@code Limits.STATUS_MISSES_TO_CLOSE} misses in a row.
 */
public record StatusGet() {
    /** The operation's name. */
    public static final String OP = "status.get";

    /**
     * Reads a {@code status.get} input: any object.
     *
     * @throws SpectorException BAD_REQUEST when it is not an object
     */
    public static StatusGet parse(JsonNode input) {
        Inputs.object(input, "input");
        return new StatusGet();
    }

    /** Returns the input as sent: {@code {}}. */
    public ObjectNode toJson() {
        return JsonNodeFactory.instance.objectNode();
    }
}
