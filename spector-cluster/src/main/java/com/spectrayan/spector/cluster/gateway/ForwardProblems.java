package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.contract.Bound;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;

/**
 * The problem a client gets for each way a forwarded exchange fails, chosen by the failure's type
 * (never its message text):
 *
 * <pre>
 *   body past the cap (Content-Length or counted)        413 PAYLOAD_TOO_LARGE
 *   no connection free in the owner's pool               503 GATEWAY_ROUTING_FAILURE  owner-pool-exhausted
 *     ({@link UpstreamHttpTransport.PoolExhaustedException})
 *   retarget stopped or exhausted, unknown owner         503 GATEWAY_ROUTING_FAILURE  (its reason)
 *   a hand-off hold ran out, or no hold was free         503 GATEWAY_ROUTING_FAILURE  handoff-hold-expired,
 *                                                            handoff-holds-full
 *   the resolver failed                                  503 GATEWAY_ROUTING_FAILURE, or its own
 *   no head in owner-timeout ({@link HeadTimeoutException}),
 *     no head by the head deadline, no body byte taken
 *     for owner-timeout, quiet inside a response         504 OWNER_TIMEOUT
 *   any other failure of an attempt (refused, closed,
 *     reset, a malformed or unasked-for answer)          502 OWNER_UNREACHABLE
 *   the client's body failed                             its own (400, 408), else 400
 *   a pinned exchange's deadline passed                  504 OWNER_TIMEOUT
 *   a pinned attempt not connected within its bound      502 OWNER_UNREACHABLE
 * </pre>
 *
 * <p>A {@code 503}'s {@code retryAfterSeconds} is 0 when the exchange learned the key's new owner
 * (the client's retry lands there), else 1.
 */
final class ForwardProblems {
    private final Bound bodyBound;
    private final Duration ownerTimeout;
    private final Duration headDeadline;

    ForwardProblems(ForwarderSpec spec) {
        this.bodyBound = Bound.atMost("bodyBytes", spec.maxBodyBytes(), "bytes", ErrorCode.PAYLOAD_TOO_LARGE);
        this.ownerTimeout = spec.ownerTimeout();
        this.headDeadline = spec.headDeadline();
    }

    /** The body reached {@code bytes}, past the cap: 413. */
    SpectorException tooLarge(long bytes) {
        return bodyBound.refusal(bytes);
    }

    /**
     * Attempt to {@code owner} failed with {@code cause}: 504 for a {@link HeadTimeoutException},
     * 503 for an exhausted pool, else 502. {@code headSent} says the response had begun.
     */
    SpectorException attemptFailed(String owner, Throwable cause, boolean headSent, int attempts) {
        if (cause instanceof HeadTimeoutException) {
            return SpectorException.of(
                    ErrorCode.OWNER_TIMEOUT,
                    "owner " + owner + " sent no response head within " + ownerTimeout.toMillis() + " ms",
                    Map.of("owner", owner, "timeoutMs", ownerTimeout.toMillis()));
        }
        if (cause instanceof UpstreamHttpTransport.PoolExhaustedException) {
            return routing(
                    "owner-pool-exhausted",
                    attempts,
                    1,
                    "no connection to owner " + owner + " became free within the acquire timeout");
        }
        if (cause instanceof MalformedResponseException) {
            // What was wrong goes to the gateway's log, not to the client: the owner's bytes are
            // the owner's business (RFC 9110 §15.6.3: an invalid response from upstream is a 502).
            return SpectorException.of(
                    ErrorCode.OWNER_UNREACHABLE,
                    "owner " + owner + " sent a response that is not valid HTTP/1.1",
                    Map.of("owner", owner));
        }
        // The cause (an address, a socket error) goes to the gateway's log (RealExchange), not to
        // the client: the owner's id is all a client needs, its address is the cell's business.
        return SpectorException.of(
                ErrorCode.OWNER_UNREACHABLE,
                "owner " + owner + (headSent ? " broke off the response" : " is unreachable"),
                Map.of("owner", owner));
    }

    /** Passive health marked the owner down: 503 at once, {@code Retry-After} the backoff left (at least 1 s). */
    static SpectorException ownerDown(String owner, Duration left) {
        long seconds = Math.max(1, (left.toMillis() + 999) / 1000);
        return SpectorException.of(
                ErrorCode.OWNER_DOWN,
                "owner " + owner + " is marked down after failed attempts; retry in " + seconds + " s",
                Map.of("owner", owner, "retryAfterSeconds", seconds));
    }

    /** The owner took no request body byte for owner-timeout: 504. */
    SpectorException sendStalled(String owner) {
        return SpectorException.of(
                ErrorCode.OWNER_TIMEOUT,
                "owner " + owner + " took no request body byte for " + ownerTimeout.toMillis() + " ms",
                Map.of("owner", owner, "timeoutMs", ownerTimeout.toMillis()));
    }

    /** No owner answered by the head deadline, over {@code attempts} attempts: 504. */
    SpectorException headDeadline(String owner, int attempts) {
        return SpectorException.of(
                ErrorCode.OWNER_TIMEOUT,
                "no owner answered within " + headDeadline.toMillis() + " ms over " + attempts + " attempt(s)",
                Map.of("owner", owner, "timeoutMs", headDeadline.toMillis()));
    }

    /** The owner sent nothing for {@code idle} inside a response: 504. */
    static SpectorException idle(String owner, Duration idle) {
        return SpectorException.of(
                ErrorCode.OWNER_TIMEOUT,
                "owner " + owner + " sent nothing for " + idle.toMillis() + " ms inside a response",
                Map.of("owner", owner, "timeoutMs", idle.toMillis()));
    }

    /** A pinned exchange did not finish within its deadline: 504. */
    static SpectorException pinnedDeadline(String target, Duration deadline) {
        return SpectorException.of(
                ErrorCode.OWNER_TIMEOUT,
                target + " did not finish the exchange within " + deadline.toMillis() + " ms",
                Map.of("owner", target, "timeoutMs", deadline.toMillis()));
    }

    /** A pinned attempt had no connection within {@code timeout}: 502. */
    static SpectorException notConnected(String target, Duration timeout) {
        return SpectorException.of(
                ErrorCode.OWNER_UNREACHABLE,
                target + " is unreachable: no connection within " + timeout.toMillis() + " ms",
                Map.of("owner", target));
    }

    /** The retargets stopped for {@code reason} after {@code attempts}: 503. */
    static SpectorException exhausted(String reason, int attempts, boolean learnedOwner) {
        return routing(
                reason,
                attempts,
                learnedOwner ? 0 : 1,
                "the owner could not be reached after " + attempts + " attempt(s): " + reason);
    }

    /**
     * A request held during a hand-off of its namespace from {@code owner} to {@code to} could not
     * be held (on) for {@code reason}: 503, {@code Retry-After: 1} (the move is likely over by then).
     */
    static SpectorException handoff(String reason, String owner, String to, int attempts, String why) {
        return routing(reason, attempts, 1, "owner " + owner + " is handing the namespace to " + to + ": " + why);
    }

    /** The route names an owner that is not a ring member: 503. */
    static SpectorException unknownOwner(String owner, int attempts) {
        // The id comes from Redis or an owner's header: cut, so a hostile value is not echoed whole.
        String id = owner.length() > 64 ? owner.substring(0, 64) + "..." : owner;
        return routing("unknown-owner", attempts, 1, "owner '" + id + "' is not a ring member");
    }

    /** The resolver failed: its own problem when it has one, else 503. */
    static SpectorException routingFailed(Throwable error) {
        Throwable t = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        if (t instanceof SpectorException se) {
            return se;
        }
        return SpectorException.of(ErrorCode.GATEWAY_ROUTING_FAILURE, String.valueOf(t), Map.of());
    }

    /** The client's body failed: its own problem when it has one (400, 408), else 400. */
    static SpectorException bodyFailed(Throwable error) {
        return error instanceof SpectorException se
                ? se
                : SpectorException.badRequest("body", "the request body failed: " + error);
    }

    /** The forwarder broke its own state machine: 500 (the connection is not trusted further). */
    static SpectorException internal(String what) {
        return SpectorException.of(ErrorCode.INTERNAL, "the forwarder failed: " + what);
    }

    private static SpectorException routing(String reason, int attempts, long retryAfter, String message) {
        return SpectorException.of(
                ErrorCode.GATEWAY_ROUTING_FAILURE,
                message,
                Map.of("reason", reason, "attempts", attempts, "retryAfterSeconds", retryAfter));
    }
}
