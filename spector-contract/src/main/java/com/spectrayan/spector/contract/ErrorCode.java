package com.spectrayan.spector.contract;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The one registry of error codes (DESIGN.md section 6): each code's kind, HTTP status, CLI exit
 * code, title, and the shape of its {@code details} object.
 *
 * <p>Callers classify failures by code or kind, never by message text. Whether a failure means
 * "the connection to the peer is lost" is answered by {@link #isConnectionLost(Throwable)} alone.
 */
public enum ErrorCode {
    BAD_REQUEST(ErrorKind.VALIDATION, 400, 2, "Bad request", shape("field", String.class, "reason", String.class)),
    UNAUTHENTICATED(ErrorKind.AUTH, 401, 3, "Unauthenticated", shape("reason", String.class)),
    FORBIDDEN(ErrorKind.AUTH, 403, 3, "Forbidden", shape("reason", String.class)),
    NOT_FOUND(ErrorKind.DOMAIN, 404, 1, "Not found", shape("path", String.class)),
    REQUEST_TIMEOUT(
            ErrorKind.VALIDATION, 408, 2, "Request timeout", shape("phase", String.class, "timeoutMs", Long.class)),
    PAYLOAD_TOO_LARGE(ErrorKind.VALIDATION, 413, 2, "Payload too large", shape("limitBytes", Long.class)),
    GATEWAY_ROUTING_FAILURE(
            ErrorKind.DOMAIN,
            503,
            1,
            "Gateway routing failure",
            shape("reason", String.class, "attempts", Integer.class, "retryAfterSeconds", Long.class)),
    OWNER_UNREACHABLE(ErrorKind.TRANSPORT, 502, 1, "Owner unreachable", shape("owner", String.class)),
    OWNER_TIMEOUT(ErrorKind.TRANSPORT, 504, 1, "Owner timeout", shape("owner", String.class, "timeoutMs", Long.class)),
    OWNER_DOWN(
            ErrorKind.TRANSPORT, 503, 1, "Owner down", shape("owner", String.class, "retryAfterSeconds", Long.class)),
    WORKER_UNREACHABLE(
            ErrorKind.TRANSPORT, 503, 1, "Worker unreachable", shape("workerId", String.class, "reason", String.class)),
    RELAY_TARGET_MISSING(ErrorKind.DOMAIN, 503, 1, "Relay target missing", shape("target", String.class)),
    DAEMON_STOPPING(ErrorKind.TRANSPORT, 503, 1, "Daemon stopping", shape()),
    DAEMON_CONNECTION_LOST(ErrorKind.TRANSPORT, 503, 1, "Daemon connection lost", shape()),
    NOT_IMPLEMENTED(ErrorKind.DOMAIN, 501, 1, "Not implemented", shape("feature", String.class)),
    UPLINK_LIMIT(ErrorKind.DOMAIN, 409, 1, "Uplink limit", shape("workerId", String.class, "limit", Integer.class)),
    INTERNAL(ErrorKind.INTERNAL, 500, 1, "Internal error", shape());

    /** How many causes {@link #isConnectionLost(Throwable)} follows before giving up on a chain. */
    static final int MAX_CAUSE_DEPTH = 16;

    private final ErrorKind kind;
    private final int httpStatus;
    private final int cliExit;
    private final String title;

    @SuppressWarnings("ImmutableEnumChecker") // an unmodifiable map of immutable values
    private final Map<String, Class<?>> details;

    ErrorCode(ErrorKind kind, int httpStatus, int cliExit, String title, Map<String, Class<?>> details) {
        this.kind = kind;
        this.httpStatus = httpStatus;
        this.cliExit = cliExit;
        this.title = title;
        this.details = details;
    }

    /** Returns who can act on this code. */
    public ErrorKind kind() {
        return kind;
    }

    /** Returns the HTTP status a response carrying this code has. */
    public int httpStatus() {
        return httpStatus;
    }

    /** Returns the exit code of {@code bin/spector} when a command fails with this code. */
    public int cliExit() {
        return cliExit;
    }

    /** Returns the short, human title used in problem+json bodies. */
    public String title() {
        return title;
    }

    /**
     * Returns the shape of this code's {@code details}: each member name it may carry, in order,
     * with the Java type of its value. A detail outside this shape is a programming error.
     */
    public Map<String, Class<?>> details() {
        return details;
    }

    /** Returns the code with this wire name, or null when no code has it. */
    public static @Nullable ErrorCode fromWire(String name) {
        for (ErrorCode code : values()) {
            if (code.name().equals(name)) {
                return code;
            }
        }
        return null;
    }

    /**
     * Answers whether a failure means that the connection to the peer (an owner, a worker's
     * uplink, a daemon) is lost or unusable: a {@link SpectorException} of kind {@link
     * ErrorKind#TRANSPORT} anywhere in the cause chain. This is the only place that decides it.
     */
    public static boolean isConnectionLost(@Nullable Throwable failure) {
        Throwable t = failure;
        for (int depth = 0; t != null && depth < MAX_CAUSE_DEPTH; depth++) {
            if (t instanceof SpectorException e) {
                return e.code().kind == ErrorKind.TRANSPORT;
            }
            t = t.getCause();
        }
        return false;
    }

    private static Map<String, Class<?>> shape(Object... nameTypePairs) {
        Map<String, Class<?>> shape = new LinkedHashMap<>();
        for (int i = 0; i < nameTypePairs.length; i += 2) {
            shape.put((String) nameTypePairs[i], (Class<?>) nameTypePairs[i + 1]);
        }
        return Collections.unmodifiableMap(shape);
    }
}
