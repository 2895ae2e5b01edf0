package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.handler.codec.http.HttpHeaders;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

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
 *       an owner, and a relayed target may say 421 for reasons of its own. Unless the target has a
 *       {@link #fallback()}: then a 421, or a connection that was not made (refused, or not within
 *       {@link #connectTimeout()}), asks the fallback where to go instead, at most {@link
 *       #MAX_FALLBACKS} times, and only while the request body so far fits the replay copy. The
 *       upstream that says 421 must say it before it reads the body (as an owner does); one
 *       whose connection was not made saw nothing. Nothing reached a target before a fallback, so
 *       even a {@code POST} goes on to the next one. A target that closes or resets the
 *       connection before its head may have acted on the request: only an idempotent one (RFC
 *       9110 section 9.2.2) goes on then, as nginx's {@code proxy_next_upstream error} passes it.
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
 * @param fallback where the exchange goes when this target refuses it (421) or cannot be
 *     connected to; null: nowhere, the 421 or the failure is the answer
 */
public record PinnedTarget(
        String name,
        URI uri,
        Supplier<HttpHeaders> headers,
        Duration deadline,
        Duration connectTimeout,
        @Nullable Fallback fallback) {
    /** The most fallbacks one exchange takes (the deadline bounds them too). */
    public static final int MAX_FALLBACKS = 2;

    /**
     * Where a pinned exchange goes when its target refused it before reading anything (421) or was
     * not reached. Called on the exchange's event loop; the stage may complete on any thread.
     */
    public interface Fallback {
        /**
         * Answers whether a 421 with these headers is the target's own refusal, given before it
         * read the request, rather than an answer it passes on (which then reaches the client).
         */
        boolean isRefusal(HttpHeaders head);

        /**
         * Returns the next target ({@link #headers()}, {@link #deadline()} and {@link
         * #connectTimeout()} of the first one still apply), or fails with the {@link
         * com.spectrayan.spector.contract.SpectorException} to answer. {@code refused} is the
         * target that just refused or was not reached, {@code why} says which.
         */
        CompletionStage<Next> next(Next refused, String why);
    }

    /**
     * One target of a fallback.
     *
     * @param name as {@link PinnedTarget#name()}
     * @param uri as {@link PinnedTarget#uri()}
     */
    public record Next(String name, URI uri) {
        public Next {
            requireNonNull(name, "name");
            checkUri(requireNonNull(uri, "uri"));
        }
    }

    /**
     * A fallback for targets that mark their own refusals with the header {@code refusalHeader}
     * and whose next target comes from {@code next}.
     */
    public static Fallback fallback(
            String refusalHeader, java.util.function.BiFunction<Next, String, CompletionStage<Next>> next) {
        requireNonNull(refusalHeader, "refusalHeader");
        requireNonNull(next, "next");
        return new Fallback() {
            @Override
            public boolean isRefusal(HttpHeaders head) {
                return head.contains(refusalHeader);
            }

            @Override
            public CompletionStage<Next> next(Next refused, String why) {
                return next.apply(refused, why);
            }
        };
    }

    /** A target whose headers are the same on every attempt. */
    public PinnedTarget(
            String name,
            URI uri,
            HttpHeaders headers,
            Duration deadline,
            Duration connectTimeout,
            @Nullable Fallback fallback) {
        this(name, uri, constant(headers), deadline, connectTimeout, fallback);
    }

    /** A target with no fallback: its 421 or failure is the answer. */
    public PinnedTarget(String name, URI uri, HttpHeaders headers, Duration deadline, Duration connectTimeout) {
        this(name, uri, constant(headers), deadline, connectTimeout, null);
    }

    private static Supplier<HttpHeaders> constant(HttpHeaders headers) {
        requireNonNull(headers, "headers");
        return () -> headers;
    }

    public PinnedTarget {
        requireNonNull(name, "name");
        requireNonNull(uri, "uri");
        requireNonNull(headers, "headers");
        positive("deadline", requireNonNull(deadline, "deadline"));
        positive("connectTimeout", requireNonNull(connectTimeout, "connectTimeout"));
        checkUri(uri);
    }

    /** Returns the first target as a {@link Next}. */
    public Next first() {
        return new Next(name, uri);
    }

    private static void checkUri(URI uri) {
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
