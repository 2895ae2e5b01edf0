package com.spectrayan.spector.cluster.gateway;

import java.time.Duration;

/**
 * The owner connection pools' limits. Pools are FIXED per (event loop, owner): a bounded number of
 * connections, a bounded queue of waiting acquires with a short timeout (503 when exhausted), and
 * idle connections closed before the owner's keep-alive would (stale pooled connections are the
 * most reported failure of the peers).
 *
 * @param connectTimeout longest TCP connect to an owner
 * @param maxConnectionsPerOwner connections per owner per event loop
 * @param maxPendingAcquires acquires waiting for a connection per owner per event loop
 * @param acquireTimeout longest wait for a pooled connection
 * @param maxIdleTime a pooled connection unused this long is closed (keep below the owner's keep-alive)
 * @param maxResponseHeaderBytes an owner's response head; past it the exchange fails 502
 * @param maxInitialLineBytes an owner's status line
 * @param maxStreamsPerOwner event streams per owner per event loop that leave the connections'
 *     count ({@code maxConnectionsPerOwner}) when their head arrives, so subscribers that stay do
 *     not lock the owner's other requests out; past it a stream counts as a connection (0: every
 *     stream does, as before issue 14's lockout fix)
 */
public record TransportSpec(
        Duration connectTimeout,
        int maxConnectionsPerOwner,
        int maxPendingAcquires,
        Duration acquireTimeout,
        Duration maxIdleTime,
        int maxResponseHeaderBytes,
        int maxInitialLineBytes,
        int maxStreamsPerOwner) {

    /** Event streams per owner per loop out of the connections' count, by default. */
    public static final int DEFAULT_MAX_STREAMS_PER_OWNER = 8192;

    public TransportSpec {
        positive("connectTimeout", connectTimeout);
        positive("acquireTimeout", acquireTimeout);
        positive("maxIdleTime", maxIdleTime);
        if (maxConnectionsPerOwner < 1) {
            throw new IllegalArgumentException(
                    "maxConnectionsPerOwner: " + maxConnectionsPerOwner + " (expected: >= 1)");
        }
        if (maxPendingAcquires < 0) {
            throw new IllegalArgumentException("maxPendingAcquires: " + maxPendingAcquires + " (expected: >= 0)");
        }
        if (maxStreamsPerOwner < 0) {
            throw new IllegalArgumentException("maxStreamsPerOwner: " + maxStreamsPerOwner + " (expected: >= 0)");
        }
        if (maxResponseHeaderBytes < 1024 || maxInitialLineBytes < 256) {
            throw new IllegalArgumentException("maxResponseHeaderBytes: " + maxResponseHeaderBytes
                    + ", maxInitialLineBytes: " + maxInitialLineBytes + " (expected: >= 1024, >= 256)");
        }
    }

    /** The limits with {@link #DEFAULT_MAX_STREAMS_PER_OWNER} event streams per owner per loop. */
    public TransportSpec(
            Duration connectTimeout,
            int maxConnectionsPerOwner,
            int maxPendingAcquires,
            Duration acquireTimeout,
            Duration maxIdleTime,
            int maxResponseHeaderBytes,
            int maxInitialLineBytes) {
        this(
                connectTimeout,
                maxConnectionsPerOwner,
                maxPendingAcquires,
                acquireTimeout,
                maxIdleTime,
                maxResponseHeaderBytes,
                maxInitialLineBytes,
                DEFAULT_MAX_STREAMS_PER_OWNER);
    }

    /**
     * Defaults: 2 s connect, 256 connections, 1024 waiters and {@value #DEFAULT_MAX_STREAMS_PER_OWNER}
     * event streams per owner per loop, 30 s idle.
     */
    public static TransportSpec defaults() {
        return new TransportSpec(
                Duration.ofSeconds(2), 256, 1024, Duration.ofSeconds(2), Duration.ofSeconds(30), 16 * 1024, 8192);
    }

    private static void positive(String name, Duration value) {
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
        }
    }
}
