/**
 * The uplink's WebSocket transport: {@link com.spectrayan.spector.uplink.transport.WebSocketFrameChannel}
 * carries frames over a Netty channel, {@link com.spectrayan.spector.uplink.transport.UplinkAcceptor}
 * accepts uplinks on the gateway's HTTP pipeline at {@code /uplink}, and {@link
 * com.spectrayan.spector.uplink.transport.UplinkDialer} dials (and re-dials) it from a worker.
 */
@NullMarked
package com.spectrayan.spector.uplink.transport;

import org.jspecify.annotations.NullMarked;
