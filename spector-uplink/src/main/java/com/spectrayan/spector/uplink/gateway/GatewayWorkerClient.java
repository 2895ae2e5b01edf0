package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.uplink.wire.RelayBody;
import com.spectrayan.spector.uplink.wire.RelayOutcome;
import com.spectrayan.spector.uplink.wire.RelayRequest;
import java.util.concurrent.CompletionStage;

/**
 * The gateway's client of one worker over its uplink: the admin operations plus the relay
 * operations. Every call fails {@code WORKER_UNREACHABLE} (kind transport) when the uplink closes
 * before it is answered; an error frame fails it with the exception of its code.
 */
public interface GatewayWorkerClient extends WorkerAdminClient {
    /**
     * Opens a relay ({@code relay.request}); its pushes go to {@code hooks}, and the stage
     * completes with the call's answer.
     */
    CompletionStage<RelayOutcome> relayRequest(RelayRequest request, RelayHooks hooks);

    /** Sends the next part, or the end, of a relay's request body ({@code relay.body}). */
    CompletionStage<Void> relayBody(RelayBody body);

    /** Cancels a relay ({@code relay.cancel}). */
    CompletionStage<Void> relayCancel(String relayId);

    /** Answers whether the uplink is open. */
    boolean isOpen();

    /** Closes the uplink; the calls in flight fail {@code WORKER_UNREACHABLE} at once. */
    void close(String reason);

    /** Returns a stage that completes once the uplink is closed, by either side. */
    CompletionStage<Void> closed();
}
