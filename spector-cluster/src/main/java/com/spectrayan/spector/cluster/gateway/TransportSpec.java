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
 */
public record TransportSpec(
        Duration connectTimeout,
        int maxConnectionsPerOwner,
        int maxPendingAcquires,
        Duration acquireTimeout,
        Duration maxIdleTime,
        int maxResponseHeaderBytes,
        int maxInitialLineBytes) {

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
        if (maxResponseHeaderBytes < 1024 || maxInitialLineBytes < 256) {
            throw new IllegalArgumentException("maxResponseHeaderBytes: " + maxResponseHeaderBytes
                    + ", maxInitialLineBytes: " + maxInitialLineBytes + " (expected: >= 1024, >= 256)");
        }
    }

    /** Defaults: 2 s connect, 256 connections and 1024 waiters per owner per loop, 30 s idle. */
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
