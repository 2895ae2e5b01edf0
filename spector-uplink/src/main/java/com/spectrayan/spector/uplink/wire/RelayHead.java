package com.spectrayan.spector.uplink.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.SpectorException;
import java.util.List;

/**
 * The data of the {@code relay-head} push: the relayed response's status and headers, sent once
 * per relay, before any {@link RelayChunk}. Keyed by the {@code relay.request} call's frame id.
 *
 * <pre>
 * {"status":200, "headers":[["content-type","text/plain"]]}
 *
 * status   integer 100..599, except 101: the relay carries no protocol switch
 * headers  [name, value] pairs, filtered (RelayHeaders#forResponse), then at most 100
 * </pre>
 *
 * <p>Every check runs in the constructor, so the worker (building one from its target's response,
 * where a refusal fails the call INTERNAL) and the gateway ({@link #parse}) apply the same bounds.
 *
 * @param status the response's status
 * @param headers the response's headers after filtering, in order, repeats kept
 */
public record RelayHead(int status, List<Header> headers) {
    /** The push's name. */
    public static final String PUSH = "relay-head";

    /** The smallest status. */
    public static final int MIN_STATUS = 100;

    /** The largest status. */
    public static final int MAX_STATUS = 599;

    /** The one status in range a relay refuses: 101 Switching Protocols. */
    public static final int SWITCHING_PROTOCOLS = 101;

    public RelayHead {
        if (status < MIN_STATUS || status > MAX_STATUS) {
            throw SpectorException.badRequest("status", status + " (expected: " + MIN_STATUS + ".." + MAX_STATUS + ")");
        }
        if (status == SWITCHING_PROTOCOLS) {
            throw SpectorException.badRequest(
                    "status", "101 (expected: not 101, the relay carries no protocol switch)");
        }
        headers = RelayHeaders.checked(RelayHeaders.forResponse(headers));
    }

    /**
     * Reads and bounds a {@code relay-head} push's data.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static RelayHead parse(JsonNode data) {
        ObjectNode in = Inputs.object(data, "data");
        int status = (int) Inputs.integer(in, "status", MIN_STATUS, MAX_STATUS);
        return new RelayHead(status, RelayHeaders.parse(in));
    }

    /** Returns the data as sent. */
    public ObjectNode toJson() {
        ObjectNode node = JsonNodeFactory.instance.objectNode().put("status", status);
        node.set(RelayHeaders.FIELD, RelayHeaders.toJson(headers));
        return node;
    }
}
