package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.uplink.wire.StatusReport;
import java.util.concurrent.CompletionStage;

/**
 * What an admin-facing user of a worker's uplink may call: the operations that are not part of
 * the relay. The relay operations live only on {@link GatewayWorkerClient}.
 */
public interface WorkerAdminClient {
    /** Reads the worker's status ({@code status.get}). */
    CompletionStage<StatusReport> statusGet();
}
