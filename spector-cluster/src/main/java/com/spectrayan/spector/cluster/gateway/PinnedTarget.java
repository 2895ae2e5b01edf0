package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.handler.codec.http.HttpHeaders;
import java.net.URI;
import java.time.Duration;

/**
 * An upstream a {@link ForwardRequest} goes to as it is, instead of the owner of a routing key:
 * the forwarder skips the resolver and the ring, and streams the exchange to {@link #uri()} with
 * the same engine, pool, backpressure and cancel as a forwarded one. The gateway pins a relay it
 * hands to the gateway replica holding the worker's uplink (the peer hop).
 *
 * <p>What changes for a pinned exchange, and why:
 *
 * <ul>
 *   <li><b>No routing.</b> No routing headers ({@code X-Spector-Namespace}, {@code -Tenant},
 *       {@code -Epoch}, {@code -Fence}, {@code -Attempt}) and no {@code X-Forwarded-*} of its
 *       own: the hop is inside the cell and must not change what the final target sees. {@link
 *       #headers()} are set after the client's headers were filtered (the filter drops a client's
 *       copy of every gateway-owned name first).
 *   <li><b>A 421 is an answer</b>, passed to the client like any status: a pinned upstream is not
 *       an owner, and a relayed target may say 421 for reasons of its own.
 *   <li><b>One deadline</b> for the whole exchange, both bodies included, from {@link
 *       GatewayForwarder#forward} ({@link #deadline()}); the owner timeout, the head deadline
 *       across retries and the response idle timer do not apply (a relayed target may think for
 *       minutes). Past it, before the head: 504 {@code OWNER_TIMEOUT} naming {@link #name()};
 *       after it, the client connection is reset.
 *   <li><b>A short connect bound</b> ({@link #connectTimeout()}): an upstream whose connection is
 *       not made by then fails the exchange 502 {@code OWNER_UNREACHABLE}, however long the
 *       transport's own connect timeout is.
 *   <li><b>No body cap</b> of the forwarder ({@link ForwarderSpec#maxBodyBytes()}): the pinned
 *       upstream applies its own bounds. The replay copy (for the one retry on a fresh
 *       connection when a pooled one turns out closed) is bounded as for any exchange.
 *   <li>Owner counters ({@code owner_timeouts}, {@code owner_unreachable}) are not counted: the
 *       upstream is not a ring member.
 * </ul>
 *
 * @param name how problems and logs name the upstream, e.g. {@code peer 10.0.0.7:7090}
 * @param uri the upstream's base URI, {@code http://host:port}
 * @param headers set on the upstream request after the client's headers were filtered
 * @param deadline the whole exchange's deadline
 * @param connectTimeout the longest wait for a connection to {@code uri}
 */
public record PinnedTarget(String name, URI uri, HttpHeaders headers, Duration deadline, Duration connectTimeout) {
    public PinnedTarget {
        requireNonNull(name, "name");
        requireNonNull(uri, "uri");
        requireNonNull(headers, "headers");
        positive("deadline", requireNonNull(deadline, "deadline"));
        positive("connectTimeout", requireNonNull(connectTimeout, "connectTimeout"));
        if (!"http".equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 1) {
            throw new IllegalArgumentException("uri: " + uri + " (expected: http://host:port)");
        }
    }

    private static void positive(String name, Duration value) {
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
        }
    }
}
