package com.spectrayan.spector.uplink.internal.gateway;

import com.spectrayan.spector.contract.DeclaredLength;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.jspecify.annotations.Nullable;

/** The failures the gateway's half of the relay raises, built in one place. */
public final class Failures {
    private Failures() {}

    /** A lost or missing uplink to a worker: WORKER_UNREACHABLE, kind transport. */
    public static SpectorException unreachable(String workerId, String message, @Nullable Throwable cause) {
        return SpectorException.of(ErrorCode.WORKER_UNREACHABLE, message, Map.of("workerId", workerId), cause);
    }

    /** The {@code reason} detail of {@link #noLink}. */
    public static final String NO_LINK = "no-link";

    /**
     * No live uplink of the worker when the relay was about to start: nothing was sent, so the
     * caller may take the relay elsewhere ({@link #isNoLink}). WORKER_UNREACHABLE, kind transport.
     */
    public static SpectorException noLink(String workerId) {
        return SpectorException.of(
                ErrorCode.WORKER_UNREACHABLE,
                "worker " + workerId + " has no live uplink",
                Map.of("workerId", workerId, "reason", NO_LINK));
    }

    /** Answers whether {@code failure} (perhaps wrapped) is a {@link #noLink}: nothing reached a worker. */
    public static boolean isNoLink(Throwable failure) {
        return unwrap(failure) instanceof SpectorException e
                && e.code() == ErrorCode.WORKER_UNREACHABLE
                && NO_LINK.equals(e.details().get("reason"));
    }

    /**
     * An upgrade (docs/PROTOCOL.md section 9.7) for a worker whose link speaks v1, which carries
     * no two-way stream: NOT_IMPLEMENTED, {@code feature} {@code relay-upgrade}; nothing was sent.
     */
    public static SpectorException upgradeNeedsV2(String workerId) {
        return SpectorException.of(
                ErrorCode.NOT_IMPLEMENTED,
                "upgrades through /relay/... need uplink v2's two-way streams (worker " + workerId + " speaks v1)",
                Map.of("feature", "relay-upgrade"));
    }

    /** The {@code reason} detail of {@link #upgradesFull}. */
    public static final String UPGRADES_FULL = "relay-upgrades-full";

    /**
     * An upgrade past its worker's share of switched relays ({@code
     * spector.uplink.relay.max-upgrades-per-worker}, docs/PROTOCOL.md section 9.7): refused at once
     * rather than queued, nothing sent. GATEWAY_ROUTING_FAILURE (503, kind domain: the link is
     * fine), {@code reason} {@value #UPGRADES_FULL}, {@code Retry-After: 1}, as an exhausted owner
     * pool is answered.
     */
    public static SpectorException upgradesFull(String workerId, int max) {
        return SpectorException.of(
                ErrorCode.GATEWAY_ROUTING_FAILURE,
                "worker " + workerId + " already has " + max + " relayed upgrades switched (its share); retry later",
                Map.of("reason", UPGRADES_FULL, "retryAfterSeconds", 1L));
    }

    /** A worker that broke the relay protocol: INTERNAL naming it. */
    public static SpectorException invalidResponse(String workerId, @Nullable Throwable cause) {
        return SpectorException.of(
                ErrorCode.INTERNAL, "worker " + workerId + " sent an invalid relay response", Map.of(), cause);
    }

    /** A worker whose relayed body ran past the length its head declared. */
    public static SpectorException lengthOverrun(String workerId, DeclaredLength length) {
        return SpectorException.of(
                ErrorCode.INTERNAL,
                "worker " + workerId + " sent " + length.counted() + " bytes of a relayed response it declared as "
                        + length.declared());
    }

    /** A worker that ended a relayed body short of the length its head declared. */
    public static SpectorException lengthUnderrun(String workerId, DeclaredLength length) {
        return SpectorException.of(
                ErrorCode.INTERNAL,
                "worker " + workerId + " ended the relayed response after " + length.counted() + " of its declared "
                        + length.declared() + " bytes");
    }

    /**
     * The caller's request body ran past the length its request declared: INTERNAL (the caller
     * broke {@code RelayedRequest}'s contract); nothing past the length was sent.
     */
    public static SpectorException requestLengthOverrun(DeclaredLength length) {
        return SpectorException.of(
                ErrorCode.INTERNAL,
                "the relayed request's body ran to " + length.counted() + " bytes of its declared "
                        + length.declared());
    }

    /** The caller's request body ended short of the length its request declared: INTERNAL, and no end was sent. */
    public static SpectorException requestLengthUnderrun(DeclaredLength length) {
        return SpectorException.of(
                ErrorCode.INTERNAL,
                "the relayed request's body ended after " + length.counted() + " of its declared " + length.declared()
                        + " bytes");
    }

    /** A worker that ended a relay it never answered. */
    public static SpectorException endedWithoutResponse(String workerId) {
        return SpectorException.of(ErrorCode.INTERNAL, "worker " + workerId + " ended the relay without a response");
    }

    /** Strips the wrappers a stage puts around a failure. */
    public static Throwable unwrap(Throwable failure) {
        Throwable t = failure;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }
}
