package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpVersion;
import java.util.Map;

/**
 * The upgrades the gateway passes (RFC 9110 §7.8): {@code Upgrade: websocket} with {@code
 * Connection: upgrade}. Any other {@code Upgrade} token is ignored, as RFC 9110 §7.8 allows (the
 * request is served as a plain HTTP/1.1 request, and the header is dropped as hop-by-hop).
 */
final class Upgrades {
    /** The one protocol the gateway upgrades to. */
    static final String WEBSOCKET = "websocket";

    private Upgrades() {}

    /**
     * Answers whether a request asks for a WebSocket upgrade the gateway passes on: HTTP/1.1 (a
     * server ignores Upgrade in an HTTP/1.0 request, RFC 9110 §7.8), a GET (RFC 6455 §4.1),
     * {@code Connection: upgrade} and {@code Upgrade: websocket}.
     */
    static boolean isUpgrade(HttpRequest request) {
        HttpHeaders headers = request.headers();
        return request.protocolVersion().equals(HttpVersion.HTTP_1_1)
                && HttpMethod.GET.equals(request.method())
                && headers.containsValue(HttpHeaderNames.CONNECTION, "upgrade", true)
                && headers.containsValue(HttpHeaderNames.UPGRADE, WEBSOCKET, true);
    }

    /**
     * The answer to an upgrade through {@code /relay/...} that would cross the peer hop to another
     * replica (docs/PROTOCOL.md section 8), which carries no two-way stream; a link of this replica
     * that speaks v1 is answered the same by the relay ({@code Failures.upgradeNeedsV2}).
     */
    static SpectorException relayRefusal() {
        return SpectorException.of(
                ErrorCode.NOT_IMPLEMENTED,
                "upgrades through /relay/... need uplink v2's two-way streams on this replica's link of the worker"
                        + " (the peer hop between replicas carries none)",
                Map.of("feature", "relay-upgrade"));
    }
}
