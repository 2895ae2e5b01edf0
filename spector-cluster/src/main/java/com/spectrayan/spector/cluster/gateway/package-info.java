/**
 * The streaming forwarder: one client exchange forwarded to the owner of its routing key over
 * per-owner pools of kept-alive Netty channels, with both bodies streamed under bounded buffers.
 *
 * <p>The public nouns: {@link com.spectrayan.spector.cluster.gateway.GatewayForwarder} holds the
 * cell's rules (routing headers, K7, 421 retargets with a bounded replay, the body cap, the
 * timers) and hands back a {@link com.spectrayan.spector.cluster.gateway.GatewayForwarder.Exchange}
 * per request; {@link com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport} holds the
 * connections. A client side (the gateway's server handler) hands in a {@link
 * com.spectrayan.spector.cluster.gateway.ForwardRequest} whose body it feeds through {@link
 * com.spectrayan.spector.cluster.gateway.RequestBody}, and receives the answer through a {@link
 * com.spectrayan.spector.cluster.gateway.ResponseSink}.
 *
 * <p>Everything else is package-private and tested on its own: the exchange's state machine
 * ({@code RealExchange} over {@code ExchangeState}), one owner connection's use ({@code Attempt}),
 * the replay copy and its gateway-wide budget, the request body's pacing, the owner request's
 * headers, the retarget decision and the failure-to-problem mapping. No Spring, no Reactor.
 */
@NullMarked
package com.spectrayan.spector.cluster.gateway;

import org.jspecify.annotations.NullMarked;
