/**
 * The streaming forwarder: one client exchange forwarded to the owner of its routing key over
 * per-owner pools of kept-alive Netty channels, with both bodies streamed under bounded buffers.
 *
 * <p>{@link com.spectrayan.spector.cluster.gateway.GatewayForwarder} holds the cell's rules (routing
 * headers, K7, 421 retargets with a bounded replay, the body cap, the timers); {@link
 * com.spectrayan.spector.cluster.gateway.GatewayHttpTransport} holds the connections. A client
 * side (the gateway's server handler) hands in a {@link
 * com.spectrayan.spector.cluster.gateway.ForwardRequest} whose body it feeds through {@link
 * com.spectrayan.spector.cluster.gateway.RequestBody}, and receives the answer through a {@link
 * com.spectrayan.spector.cluster.gateway.ResponseSink}. No Spring, no Reactor.
 */
@NullMarked
package com.spectrayan.spector.cluster.gateway;

import org.jspecify.annotations.NullMarked;
