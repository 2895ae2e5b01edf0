package com.spectrayan.spector.contract;

import static java.util.Objects.requireNonNull;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A failure with a code from the {@link ErrorCode} registry, a message for humans, and details
 * for machines (shaped as {@link ErrorCode#details()} says).
 *
 * <p>Expected failures (every kind but {@link ErrorKind#INTERNAL}) carry no stack trace: they are
 * frequent under load and their code says all a caller acts on.
 */
public final class SpectorException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final ErrorCode code;
    private final transient Map<String, Object> details;

    private SpectorException(ErrorCode code, String message, Map<String, Object> details, @Nullable Throwable cause) {
        super(message, cause, false, code.kind() == ErrorKind.INTERNAL);
        this.code = code;
        this.details = details;
    }

    /** Creates a failure with no details. */
    public static SpectorException of(ErrorCode code, String message) {
        return of(code, message, Map.of(), null);
    }

    /** Creates a failure with details; each must be a member of the code's shape, of its type. */
    public static SpectorException of(ErrorCode code, String message, Map<String, ?> details) {
        return of(code, message, details, null);
    }

    /** Creates a failure with details and a cause. */
    public static SpectorException of(
            ErrorCode code, String message, Map<String, ?> details, @Nullable Throwable cause) {
        requireNonNull(code, "code");
        requireNonNull(message, "message");
        requireNonNull(details, "details");
        Map<String, Object> checked = new LinkedHashMap<>();
        for (Map.Entry<String, ?> e : details.entrySet()) {
            Class<?> type = code.details().get(e.getKey());
            if (type == null) {
                throw new IllegalArgumentException("details." + e.getKey() + ": not in the shape of " + code
                        + " (expected one of: " + code.details().keySet() + ")");
            }
            Object value = requireNonNull(e.getValue(), e.getKey());
            if (!type.isInstance(value)) {
                throw new IllegalArgumentException("details." + e.getKey() + ": "
                        + value.getClass().getSimpleName() + " (expected: " + type.getSimpleName() + ")");
            }
            checked.put(e.getKey(), value);
        }
        return new SpectorException(code, message, Collections.unmodifiableMap(checked), cause);
    }

    /** A BAD_REQUEST naming the field and why it was refused. */
    public static SpectorException badRequest(String field, String reason) {
        return of(ErrorCode.BAD_REQUEST, field + ": " + reason, Map.of("field", field, "reason", reason));
    }

    /** Returns the code. */
    public ErrorCode code() {
        return code;
    }

    /** Returns the details, in the order they were given. */
    public Map<String, Object> details() {
        return details;
    }

    /** Returns this failure as a problem+json body for the given request path (may be null). */
    public Problem toProblem(@Nullable String instance) {
        return Problem.of(code, String.valueOf(getMessage()), details, instance);
    }
}
