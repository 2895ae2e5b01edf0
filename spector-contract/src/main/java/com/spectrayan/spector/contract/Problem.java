package com.spectrayan.spector.contract;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * An RFC 9457 problem detail with Spector's extension members {@code code} and {@code details}.
 *
 * @param type a URI naming the problem type: {@code urn:spector:error:<CODE>}
 * @param title the code's title
 * @param status the HTTP status
 * @param detail the human explanation of this occurrence
 * @param code the {@link ErrorCode} name
 * @param details machine-readable members, shaped as the code says
 * @param instance the request path the problem occurred on, when known
 * @param requestId the exchange's {@code X-Request-Id}, when the gateway answered it: the same id
 *     is in its access log line, its response header and what the owner or worker received
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
@JsonPropertyOrder({"type", "title", "status", "detail", "code", "details", "instance", "requestId"})
public record Problem(
        String type,
        String title,
        int status,
        String detail,
        String code,
        Map<String, Object> details,
        @Nullable String instance,
        @Nullable String requestId) {

    /** The media type of a problem body. */
    public static final String CONTENT_TYPE = "application/problem+json";

    /** The prefix of every {@link #type()}. */
    public static final String TYPE_PREFIX = "urn:spector:error:";

    public Problem {
        requireNonNull(type, "type");
        requireNonNull(title, "title");
        requireNonNull(detail, "detail");
        requireNonNull(code, "code");
        details = Map.copyOf(requireNonNull(details, "details"));
    }

    /** A problem without a request id. */
    public Problem(
            String type,
            String title,
            int status,
            String detail,
            String code,
            Map<String, Object> details,
            @Nullable String instance) {
        this(type, title, status, detail, code, details, instance, null);
    }

    /** Creates the problem for a code. */
    public static Problem of(ErrorCode code, String detail, Map<String, Object> details, @Nullable String instance) {
        return new Problem(
                TYPE_PREFIX + code.name(), code.title(), code.httpStatus(), detail, code.name(), details, instance);
    }

    /** Returns this problem about the exchange {@code requestId}. */
    public Problem withRequestId(@Nullable String requestId) {
        return new Problem(type, title, status, detail, code, details, instance, requestId);
    }
}
