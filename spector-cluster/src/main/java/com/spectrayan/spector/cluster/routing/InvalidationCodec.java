package com.spectrayan.spector.cluster.routing;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;

/**
 * The JSON form of a {@link RouteInvalidation} on the cell's channel, for owners in any language:
 *
 * <pre>
 * {"origin":"...","tenant":"acme","namespace":"orders","owner":"owner-1","epoch":2,"fence":7}
 * </pre>
 *
 * <p>A message is wire input: it is bounded in size and its names are checked before use.
 */
final class InvalidationCodec {
    /** Largest message accepted; a real one is well under 1 KiB. */
    static final int MAX_MESSAGE_CHARS = 4096;

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private InvalidationCodec() {}

    static String encode(RouteInvalidation invalidation) {
        try {
            return MAPPER.writeValueAsString(invalidation);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a RouteInvalidation is always serialisable", e);
        }
    }

    /**
     * Parses and checks a message.
     *
     * @throws SpectorException BAD_REQUEST when it is too long, malformed, or breaks a bound
     */
    static RouteInvalidation decode(String message) {
        if (message.length() > MAX_MESSAGE_CHARS) {
            throw SpectorException.badRequest(
                    "invalidation", message.length() + " chars (expected: <= " + MAX_MESSAGE_CHARS + ")");
        }
        RouteInvalidation inv;
        try {
            inv = MAPPER.readValue(message, RouteInvalidation.class);
        } catch (JsonProcessingException | RuntimeException e) {
            throw SpectorException.badRequest("invalidation", "not a route invalidation: " + e.getMessage());
        }
        RoutingKey.checkName("namespace", inv.namespace());
        if (inv.tenant() != null) {
            RoutingKey.checkName("tenant", inv.tenant());
        }
        String owner = inv.owner();
        if (owner != null && !Limits.RING_MEMBER_CHARS.allows(owner.length())) {
            throw Limits.RING_MEMBER_CHARS.refusal(owner.length());
        }
        if (inv.epoch() < 0 || inv.fence() < 0) {
            throw SpectorException.badRequest("invalidation", "negative epoch or fence");
        }
        return inv;
    }
}
