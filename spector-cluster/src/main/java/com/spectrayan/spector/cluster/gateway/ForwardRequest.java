package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import org.jspecify.annotations.Nullable;

/**
 * One client request to forward: its head as received, its routing key, the facts the gateway
 * adds as {@code X-Forwarded-*}, and its body as a stream ({@link RequestBody}), never a byte
 * array.
 *
 * @param method the request method
 * @param uri the path (normalized by the edge: dot-segments removed) and query, in origin form
 * @param headers the client's headers as received; the forwarder filters them
 * @param key the routing key; null only for a pinned request
 * @param body the body, pulled as the owner takes it
 * @param declaredLength the client's Content-Length, or -1 when chunked or absent
 * @param clientAddress the client's IP literal, for {@code X-Forwarded-For}
 * @param trustedProxy whether the client is a configured trusted proxy (its X-Forwarded-* are kept)
 * @param scheme {@code http} or {@code https}, for {@code X-Forwarded-Proto}
 * @param host the client's Host header, for {@code X-Forwarded-Host}
 * @param upgrade the protocol the client asks to switch to ({@code websocket}), or null: the
 *     owner gets {@code Upgrade} and {@code Connection: upgrade} again (they are hop-by-hop), over a
 *     connection of its own that never returns to the pool
 * @param pinned the upstream this request goes to as it is, skipping the resolver ({@link
 *     PinnedTarget} says what else changes), or null to route by {@code key}
 */
public record ForwardRequest(
        HttpMethod method,
        String uri,
        HttpHeaders headers,
        @Nullable RoutingKey key,
        RequestBody body,
        long declaredLength,
        String clientAddress,
        boolean trustedProxy,
        String scheme,
        @Nullable String host,
        @Nullable String upgrade,
        @Nullable PinnedTarget pinned) {
    public ForwardRequest {
        requireNonNull(method, "method");
        requireNonNull(uri, "uri");
        requireNonNull(headers, "headers");
        if (key == null && pinned == null) {
            throw new IllegalArgumentException("key: null (expected: a routing key, or a pinned target)");
        }
        requireNonNull(body, "body");
        requireNonNull(clientAddress, "clientAddress");
        requireNonNull(scheme, "scheme");
        if (pinned != null && upgrade != null) {
            throw new IllegalArgumentException("upgrade: " + upgrade + " (expected: none on a pinned request)");
        }
    }

    /**
     * A request that goes to {@code target} as it is (no routing key, no upgrade); the client's
     * headers are filtered, then {@link PinnedTarget#headers()} are set.
     *
     * @param uri the path and query, in origin form
     * @param declaredLength the client's Content-Length, or -1 when chunked or absent
     * @param clientAddress the client's IP literal, for logs
     */
    public static ForwardRequest pinned(
            HttpMethod method,
            String uri,
            HttpHeaders headers,
            RequestBody body,
            long declaredLength,
            String clientAddress,
            PinnedTarget target) {
        return new ForwardRequest(
                method,
                uri,
                headers,
                null,
                body,
                declaredLength,
                clientAddress,
                false,
                "http",
                null,
                null,
                requireNonNull(target, "target"));
    }

    /** Returns the routing key of a request that is not pinned. */
    RoutingKey routingKey() {
        RoutingKey k = key;
        if (k == null) {
            throw new IllegalStateException("a pinned request has no routing key");
        }
        return k;
    }
}
