package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import java.util.concurrent.CompletionStage;

/**
 * The gateway's client of one worker over its uplink: the admin operations and the link's life.
 * Every call fails {@code WORKER_UNREACHABLE} (kind transport) when the uplink closes before it is
 * answered; an error frame fails it with the exception of its code. Relays do not go through it
 * but through {@link GatewayRelay}, which keeps the windows, deadlines and limits.
 *
 * <p>It is the receiver of its uplink ({@link FrameChannel.Receiver}): the transport delivers the
 * uplink's frames and its close to it, so hand it back to the transport that handed the channel
 * over. Thread-safe.
 */
public interface GatewayWorkerClient extends WorkerAdminClient, FrameChannel.Receiver {
    /**
     * Returns the client of worker {@code workerId} over {@code channel}; return it to the
     * transport as the channel's receiver.
     */
    static GatewayWorkerClient over(String workerId, FrameChannel channel) {
        return RealGatewayWorkerClient.over(workerId, channel);
    }

    /** Answers whether the uplink is open. */
    boolean isOpen();

    /** Closes the uplink; the calls in flight fail {@code WORKER_UNREACHABLE} at once. */
    void close(String reason);

    /** Returns a stage that completes once the uplink is closed, by either side. */
    CompletionStage<Void> closed();
}
