package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.routing.RoutingKeyExtractor;
import java.time.Duration;
import java.util.Set;

/**
 * What every connection's {@link GatewayHandler} shares: thread-safe, built once at start.
 *
 * @param forwarder the streaming forwarder
 * @param extractor the routing key extractor of the cell
 * @param auth edge authentication
 * @param cors CORS answers and headers
 * @param local the gateway's own endpoints
 * @param metrics request metrics
 * @param trustedProxies client IPs whose X-Forwarded-* headers are kept and appended to
 * @param relay the {@code /relay/...} and {@code /gateway/v1/workers} routes
 * @param drain the graceful stop: exchanges in flight and whether the gateway is draining
 * @param status the {@code /gateway/v1/status} answer
 * @param tokens where a request's bearer token is found (header, cookie, {@code access_token})
 * @param headerTimeout how long a request head may take from its first byte ({@code
 *     spector.server.header-timeout})
 * @param bodyTimeout the longest gap between two reads of a request body ({@code
 *     spector.server.body-timeout})
 * @param sendTimeout the longest a client may take no byte of a response held for it ({@code
 *     spector.server.send-timeout})
 * @param streamIdleTimeout how long an upgraded (spliced) connection may carry no byte ({@code
 *     spector.routing.gateway.stream-idle-timeout})
 * @param requestBufferBytes a relayed request body declared at most this long is read whole
 *     before the relay takes one of its worker's slots ({@code
 *     spector.routing.gateway.request-buffer-bytes}, as the forwarder reads one before an owner
 *     connection)
 * @param peerHop where a relay for a worker with no link here goes ({@link PeerHop#OFF}: nowhere)
 * @param accessLog the access log ({@link AccessLog#NONE} when off)
 * @param splicePipes the pipes for response bodies spliced to clients ({@code
 *     spector.server.splice-pipes})
 * @param via the cell's {@code Via} entry and its loop check
 */
record GatewayContext(
        GatewayForwarder forwarder,
        RoutingKeyExtractor extractor,
        EdgeAuthenticator auth,
        Cors cors,
        LocalEndpoints local,
        GatewayMetrics metrics,
        Set<String> trustedProxies,
        RelayRoute relay,
        Drain drain,
        GatewayStatus status,
        BearerTokens tokens,
        Duration headerTimeout,
        Duration bodyTimeout,
        Duration sendTimeout,
        Duration streamIdleTimeout,
        long requestBufferBytes,
        PeerHop peerHop,
        AccessLog accessLog,
        SplicePipes splicePipes,
        Via via) {}
