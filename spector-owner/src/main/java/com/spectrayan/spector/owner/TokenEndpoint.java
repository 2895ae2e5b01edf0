package com.spectrayan.spector.owner;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.LinkedHashMap;
import java.util.Map;

/** {@code POST /api/v1/auth/token} {@code {"tenant": "..."}}: answers {@code {"token": "<HS256 JWT>"}}. */
final class TokenEndpoint {
    private TokenEndpoint() {}

    static BodySink open(Exchange ex) {
        return Sinks.collect(ex, body -> {
            JsonNode json = Json.object(body);
            JsonNode tenant = json.get("tenant");
            if (tenant == null || !tenant.isTextual()) {
                throw SpectorException.badRequest("tenant", "missing or not a string (expected: a routing name)");
            }
            String token = ex.node.tokens.issue(tenant.asText());
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("token", token);
            out.put("tokenType", "Bearer");
            out.put("expiresIn", OwnerLimits.TOKEN_TTL.toSeconds());
            ex.respondJson(HttpResponseStatus.OK, out);
        });
    }
}
