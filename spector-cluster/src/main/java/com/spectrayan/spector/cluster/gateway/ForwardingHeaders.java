package com.spectrayan.spector.cluster.gateway;

import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import org.jspecify.annotations.Nullable;

/**
 * The forwarding facts a request carries to the next hop, one rule for an owner's request and a
 * worker's relayed one ({@code spector.server.trusted-proxies}): a client's own {@code Forwarded}
 * and {@code X-Forwarded-*} are dropped unless it is a trusted proxy; then {@code X-Forwarded-For}
 * is set (appended to a trusted proxy's), and {@code X-Forwarded-Proto} and {@code -Host} unless a
 * trusted proxy sent them. As nginx's {@code $proxy_add_x_forwarded_for} and Envoy's
 * {@code xff_num_trusted_hops} do, so a target that allow-lists, rate-limits or audits by address
 * reads the address the gateway saw, never one a client wrote.
 *
 * <p>Threading: the headers are the request's, edited on its event loop.
 */
public final class ForwardingHeaders {
    static final AsciiString X_FORWARDED_FOR = AsciiString.cached("X-Forwarded-For");
    static final AsciiString X_FORWARDED_PROTO = AsciiString.cached("X-Forwarded-Proto");
    static final AsciiString X_FORWARDED_HOST = AsciiString.cached("X-Forwarded-Host");

    private ForwardingHeaders() {}

    /**
     * Edits {@code headers} in place as the class says.
     *
     * @param trustedProxy whether the client is a trusted proxy (its facts are kept and extended)
     * @param clientAddress the client's address as the gateway saw it
     * @param scheme {@code http} or {@code https}, as the client reached the gateway
     * @param host the request's authority (its Host), or null when it had none
     */
    public static void set(
            HttpHeaders headers, boolean trustedProxy, String clientAddress, String scheme, @Nullable String host) {
        // Every field line, in order (RFC 9110 §5.3: lines of one name are one list): a proxy
        // that adds its own line behind a client's (HAProxy's option forwardfor does) must not
        // have the address it saw replaced by the one the client wrote (found by a review).
        String priorFor = trustedProxy ? joined(headers.getAll(X_FORWARDED_FOR)) : null;
        if (!trustedProxy) {
            HeaderFilter.dropForwardingFacts(headers);
        }
        headers.set(X_FORWARDED_FOR, priorFor == null ? clientAddress : priorFor + ", " + clientAddress);
        if (!headers.contains(X_FORWARDED_PROTO)) {
            headers.set(X_FORWARDED_PROTO, scheme);
        }
        if (host != null && !headers.contains(X_FORWARDED_HOST)) {
            headers.set(X_FORWARDED_HOST, host);
        }
    }

    private static @Nullable String joined(java.util.List<String> lines) {
        return lines.isEmpty() ? null : lines.size() == 1 ? lines.get(0) : String.join(", ", lines);
    }
}
