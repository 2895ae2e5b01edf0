/**
 * The gateway's half of the uplink relay: {@link com.spectrayan.spector.uplink.gateway.GatewayRelay}
 * (one relay per call, with its windows, deadline and per-worker limit), the client of one worker
 * over its uplink ({@link com.spectrayan.spector.uplink.gateway.GatewayWorkerClient}), and the
 * directory of live worker links with their status refresh. The protocol client's relay operations
 * are in {@code …uplink.internal.gateway}.
 */
@NullMarked
package com.spectrayan.spector.uplink.gateway;

import org.jspecify.annotations.NullMarked;
