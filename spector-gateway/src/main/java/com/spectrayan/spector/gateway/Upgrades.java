package com.spectrayan.spector.gateway;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;

/**
 * The upgrades the gateway passes (RFC 9110 §7.8): {@code Upgrade: websocket} with {@code
 * Connection: upgrade}. Any other {@code Upgrade} token is ignored, as RFC 9110 §7.8 allows (the
 * request is served as a plain HTTP/1.1 request, and the header is dropped as hop-by-hop).
 */
final class Upgrades {
    /** The one protocol the gateway upgrades to. */
    static final String WEBSOCKET = "websocket";

    private Upgrades() {}

    /** Answers whether a request asks for a WebSocket upgrade the gateway passes on. */
    static boolean isUpgrade(HttpHeaders headers) {
        return headers.containsValue(HttpHeaderNames.CONNECTION, "upgrade", true)
                && headers.containsValue(HttpHeaderNames.UPGRADE, WEBSOCKET, true);
    }
}
