package com.spectrayan.spector.uplink;

import java.util.concurrent.CompletionStage;

/**
 * A module on a worker that answers relayed HTTP exchanges, registered under a capability name
 * (the {@code target} of {@code relay.request}). The core names no target: they come from the
 * worker's options.
 *
 * <p>Contract: the target reads the request body (if any) as it needs it, completes the stage with
 * a response whose body it produces on demand, and stops work when the request's {@link
 * AbortSignal} aborts. A stage that fails, or a target that throws, is answered INTERNAL.
 */
@FunctionalInterface
public interface RelayTarget {
    /** Handles one relayed request. */
    CompletionStage<RelayedResponse> handle(RelayedRequest request);
}
