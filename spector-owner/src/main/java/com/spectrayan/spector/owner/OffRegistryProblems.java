package com.spectrayan.spector.owner;

import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.ProblemJson;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Problems an owner answers that the error registry does not hold, because a gateway never
 * originates them: 409 and 422 of idempotency keys, 426 of a WebSocket version. Same shape as every problem+json body: {@code
 * type urn:spector:error:<CODE>}, a {@code code} member and {@code details}.
 */
final class OffRegistryProblems {
    /** 422: the key was used before with a different request. */
    static final String IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED";

    /** 409: the first request with the key is still being processed. */
    static final String IDEMPOTENCY_KEY_IN_FLIGHT = "IDEMPOTENCY_KEY_IN_FLIGHT";

    /** 426: a WebSocket handshake asked for a version other than 13 (RFC 6455 §4.4). */
    static final String WEBSOCKET_VERSION_UNSUPPORTED = "WEBSOCKET_VERSION_UNSUPPORTED";

    private OffRegistryProblems() {}

    /** Returns the problem+json body of an off-registry problem. */
    static byte[] body(
            int status,
            String code,
            String title,
            String detail,
            Map<String, Object> details,
            @Nullable String instance) {
        return ProblemJson.toBytes(
                new Problem(Problem.TYPE_PREFIX + code, title, status, detail, code, details, instance));
    }
}
