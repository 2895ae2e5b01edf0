package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;

/**
 * A declared body length on the wire: the optional member {@code length}, an integer 0..2^53-1
 * ({@link Limits#RELAY_LENGTH_BYTES}), absent when the length is unknown. Every head that frames a
 * body carries it the same way: {@code relay-head} and {@code relay.request} (docs/PROTOCOL.md
 * sections 3 and 4), and v2's response and request heads (section 9.3). Public for those heads.
 * What the length may be beside the rest of a head (a status, a request without a body) is each
 * head's rule.
 */
public final class Lengths {
    /** The member holding the declared length. */
    public static final String FIELD = "length";

    private Lengths() {}

    /**
     * Returns a declared length when it is unknown ({@link ResponseFraming#UNKNOWN_LENGTH}) or
     * within the bound; refuses it otherwise: {@code "length: 9007199254740992 (expected: absent or
     * 0..9007199254740991)"}.
     */
    public static long checked(long length) {
        if (length != ResponseFraming.UNKNOWN_LENGTH && !Limits.RELAY_LENGTH_BYTES.allows(length)) {
            throw SpectorException.badRequest(
                    FIELD, length + " (expected: absent or 0.." + Limits.RELAY_LENGTH_BYTES.max() + ")");
        }
        return length;
    }

    /**
     * Reads the member: {@link ResponseFraming#UNKNOWN_LENGTH} when it is absent or null, else an
     * integer within the bound.
     *
     * @throws SpectorException BAD_REQUEST ({@code length}) for any other value
     */
    public static long parse(ObjectNode object) {
        return Inputs.member(object, FIELD) == null
                ? ResponseFraming.UNKNOWN_LENGTH
                : Inputs.integer(object, FIELD, 0, Limits.RELAY_LENGTH_BYTES.max());
    }

    /** Writes the member into {@code node}, or leaves it out when the length is unknown. */
    public static ObjectNode put(ObjectNode node, long length) {
        if (length != ResponseFraming.UNKNOWN_LENGTH) {
            node.put(FIELD, length);
        }
        return node;
    }
}
