package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.ProblemJson;
import com.spectrayan.spector.contract.SpectorHeaders;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What an {@link OwnershipGuard} decided for one request, with everything an owner writes when it
 * refuses: the status, the headers and a problem+json body. Immutable and thread-safe.
 *
 * <p>An owner applies a decision before any side effect: on {@link Outcome#SERVE} it handles the
 * request; otherwise it writes {@link #status()}, {@link #headers()} and {@link #problemJson} and
 * nothing else.
 *
 * @param outcome serve, or which refusal
 * @param view this node's view of the key: its owner, epoch and fence
 * @param reason why: {@code owner}, {@code not-owner}, {@code stale-epoch}, {@code stale-fence} or
 *     {@code owner-lagging}
 * @param detail a sentence for humans naming the values compared
 */
public record OwnershipDecision(Outcome outcome, RouteEntry view, String reason, String detail) {
    /** The status of a misdirected request (RFC 9110 section 15.5.20). */
    public static final int MISDIRECTED_STATUS = 421;

    /** The problem code of a 421: not in the error registry, since a gateway never relays one. */
    public static final String MISDIRECTED_CODE = "MISDIRECTED";

    /** Seconds a client waits before retrying a request the lagging owner refused. */
    public static final int LAGGING_RETRY_AFTER_SECONDS = 1;

    /** Reason of a served request. */
    public static final String REASON_OWNER = "owner";

    /** Reason of a 421: another node owns the key in this node's view. */
    public static final String REASON_NOT_OWNER = "not-owner";

    /** Reason of a 421: the request's epoch is older than this node's view. */
    public static final String REASON_STALE_EPOCH = "stale-epoch";

    /** Reason of a 421: a write's fence is lower than this node's view. */
    public static final String REASON_STALE_FENCE = "stale-fence";

    /** Reason of a 503: the request's epoch is newer than this node's view (this node lags). */
    public static final String REASON_LAGGING = "owner-lagging";

    private static final ObjectMapper MAPPER = JsonMapper.builder().build();

    /** Whether the owner serves the request, and if not, how it refuses. */
    public enum Outcome {
        /** This node owns the key at the request's epoch and fence: handle it. */
        SERVE,
        /** 421: another node owns the key, or the request's view is older than this node's. */
        MISDIRECTED,
        /** 503 with {@code Retry-After}: the request's epoch is newer than this node's view. */
        LAGGING
    }

    public OwnershipDecision {
        requireNonNull(outcome, "outcome");
        requireNonNull(view, "view");
        requireNonNull(reason, "reason");
        requireNonNull(detail, "detail");
    }

    /** Answers whether the owner handles the request. */
    public boolean serves() {
        return outcome == Outcome.SERVE;
    }

    /** Returns the status to write: 421 or 503 for a refusal; 200 for SERVE, whose handler decides. */
    public int status() {
        return switch (outcome) {
            case SERVE -> 200;
            case MISDIRECTED -> MISDIRECTED_STATUS;
            case LAGGING -> ErrorCode.GATEWAY_ROUTING_FAILURE.httpStatus();
        };
    }

    /**
     * Returns the headers to write on a refusal, in order: for a 421 {@code X-Spector-Owner},
     * {@code X-Spector-Epoch}, {@code X-Spector-Fence} and {@code Cache-Control: no-store}; for a
     * 503 {@code X-Spector-Epoch} (the owner's, older than the request's), {@code Retry-After} and
     * {@code Cache-Control: no-store}. Empty for SERVE.
     */
    public Map<String, String> headers() {
        Map<String, String> headers = new LinkedHashMap<>();
        switch (outcome) {
            case SERVE -> {}
            case MISDIRECTED -> {
                headers.put(SpectorHeaders.OWNER, view.owner());
                headers.put(SpectorHeaders.EPOCH, Long.toString(view.epoch()));
                headers.put(SpectorHeaders.FENCE, Long.toString(view.fence()));
                headers.put("Cache-Control", "no-store");
            }
            case LAGGING -> {
                // The owner's own (older) epoch: the gateway tells this refusal from an
                // application's 503 by it, and holds the request until the owner caught up.
                headers.put(SpectorHeaders.EPOCH, Long.toString(view.epoch()));
                headers.put("Retry-After", Integer.toString(LAGGING_RETRY_AFTER_SECONDS));
                headers.put("Cache-Control", "no-store");
            }
        }
        return Collections.unmodifiableMap(headers);
    }

    /**
     * Returns the {@code application/problem+json} body of a refusal: for a 421 a problem with code
     * {@code MISDIRECTED} and details {@code {owner, epoch, fence, reason}}; for a 503 a {@code
     * GATEWAY_ROUTING_FAILURE} with reason {@code owner-lagging}.
     *
     * @param instance the request path, or null
     * @throws IllegalStateException for SERVE, which has no problem
     */
    public byte[] problemJson(@Nullable String instance) {
        switch (outcome) {
            case MISDIRECTED -> {
                Map<String, Object> details = new LinkedHashMap<>();
                details.put("owner", view.owner());
                details.put("epoch", view.epoch());
                details.put("fence", view.fence());
                details.put("reason", reason);
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("type", Problem.TYPE_PREFIX + MISDIRECTED_CODE);
                body.put("title", "Misdirected request");
                body.put("status", MISDIRECTED_STATUS);
                body.put("detail", detail);
                body.put("code", MISDIRECTED_CODE);
                body.put("details", details);
                if (instance != null) {
                    body.put("instance", instance);
                }
                try {
                    return MAPPER.writeValueAsBytes(body);
                } catch (JsonProcessingException e) {
                    throw new IllegalStateException("a map of strings and numbers is always serialisable", e);
                }
            }
            case LAGGING -> {
                return ProblemJson.toBytes(
                        Problem.of(ErrorCode.GATEWAY_ROUTING_FAILURE, detail, Map.of("reason", reason), instance));
            }
            default -> throw new IllegalStateException("outcome: SERVE (expected: MISDIRECTED or LAGGING)");
        }
    }
}
