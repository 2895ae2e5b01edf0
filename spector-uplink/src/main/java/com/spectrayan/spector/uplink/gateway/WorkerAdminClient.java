package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.uplink.wire.StatusReport;
import java.util.concurrent.CompletionStage;

/**
 * What an admin-facing user of a worker's uplink may call: the status, and nothing that changes
 * the link or relays ({@link GatewayWorkerClient} adds the link's life; relays go through {@link
 * GatewayRelay}).
 */
public interface WorkerAdminClient {
    /** Reads the worker's status ({@code status.get}). */
    CompletionStage<StatusReport> statusGet();
}
