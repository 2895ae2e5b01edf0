package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.contract.Limits;
import java.time.Duration;

/**
 * The forwarder's limits and timers. Each is validated at construction; {@link #defaults()} are
 * the design's numbers.
 *
 * @param retryMax retargets after an owner's 421 ({@code spector.routing.gateway.retry-max}), 0..2
 * @param maxBodyBytes the request body cap ({@code ...max-buffered-body-bytes}); 413 past it
 * @param replayBufferBytes request body kept per exchange for a replay after 421
 * @param replayBudgetBytes replay bytes held at once by the whole gateway; past it a request keeps
 *     no replay copy (a 421 then answers 503) and a refusal is counted
 * @param ownerTimeout longest wait for an owner's response head, per attempt
 * @param headDeadline longest wait for the response head across all attempts
 * @param responseIdleTimeout longest quiet time inside a non-streaming response body
 * @param streamIdleTimeout longest quiet time inside an event stream ({@code text/event-stream})
 * @param ownerDownAfter attempts in a row without a connection, or losing it before the head, that
 *     mark an owner down ({@code ...owner-down-after}); 0 turns passive health off ({@link
 *     OwnerHealth})
 * @param ownerDownBackoff how long an owner first stays down ({@code ...owner-down-backoff})
 * @param ownerDownBackoffMax the longest it stays down, the backoff doubling per failed probe
 */
public record ForwarderSpec(
        int retryMax,
        long maxBodyBytes,
        long replayBufferBytes,
        long replayBudgetBytes,
        Duration ownerTimeout,
        Duration headDeadline,
        Duration responseIdleTimeout,
        Duration streamIdleTimeout,
        int ownerDownAfter,
        Duration ownerDownBackoff,
        Duration ownerDownBackoffMax) {

    /** Default gateway-wide replay budget: 64 concurrent full replay buffers. */
    public static final long DEFAULT_REPLAY_BUDGET_BYTES = 64L * 1024 * 1024;

    /** Default wait for the head across retries: three attempts at the default owner timeout. */
    public static final Duration DEFAULT_HEAD_DEADLINE = Duration.ofSeconds(30);

    /** Default quiet time inside a non-streaming body. */
    public static final Duration DEFAULT_RESPONSE_IDLE_TIMEOUT = Duration.ofSeconds(60);

    /** Default failures in a row that mark an owner down. */
    public static final int DEFAULT_OWNER_DOWN_AFTER = 3;

    /** The most failures in a row {@code owner-down-after} may ask for. */
    public static final int MAX_OWNER_DOWN_AFTER = 100;

    /** Default first backoff of an owner marked down. */
    public static final Duration DEFAULT_OWNER_DOWN_BACKOFF = Duration.ofSeconds(1);

    /** Default longest backoff of an owner marked down. */
    public static final Duration DEFAULT_OWNER_DOWN_BACKOFF_MAX = Duration.ofSeconds(30);

    /** The limits with passive health at its defaults. */
    public ForwarderSpec(
            int retryMax,
            long maxBodyBytes,
            long replayBufferBytes,
            long replayBudgetBytes,
            Duration ownerTimeout,
            Duration headDeadline,
            Duration responseIdleTimeout,
            Duration streamIdleTimeout) {
        this(
                retryMax,
                maxBodyBytes,
                replayBufferBytes,
                replayBudgetBytes,
                ownerTimeout,
                headDeadline,
                responseIdleTimeout,
                streamIdleTimeout,
                DEFAULT_OWNER_DOWN_AFTER,
                DEFAULT_OWNER_DOWN_BACKOFF,
                DEFAULT_OWNER_DOWN_BACKOFF_MAX);
    }

    public ForwarderSpec {
        Limits.RETARGETS.check(retryMax);
        positive("maxBodyBytes", maxBodyBytes);
        if (replayBufferBytes < 0 || replayBufferBytes > maxBodyBytes) {
            throw new IllegalArgumentException(
                    "replayBufferBytes: " + replayBufferBytes + " (expected: 0.." + maxBodyBytes + ")");
        }
        if (replayBudgetBytes < replayBufferBytes) {
            throw new IllegalArgumentException("replayBudgetBytes: " + replayBudgetBytes
                    + " (expected: >= replayBufferBytes " + replayBufferBytes + ")");
        }
        positive("ownerTimeout", ownerTimeout);
        positive("headDeadline", headDeadline);
        positive("responseIdleTimeout", responseIdleTimeout);
        positive("streamIdleTimeout", streamIdleTimeout);
        if (ownerDownAfter < 0 || ownerDownAfter > MAX_OWNER_DOWN_AFTER) {
            throw new IllegalArgumentException(
                    "ownerDownAfter: " + ownerDownAfter + " (expected: 0.." + MAX_OWNER_DOWN_AFTER + ")");
        }
        positive("ownerDownBackoff", ownerDownBackoff);
        if (ownerDownBackoffMax.compareTo(ownerDownBackoff) < 0) {
            throw new IllegalArgumentException("ownerDownBackoffMax: " + ownerDownBackoffMax
                    + " (expected: >= ownerDownBackoff " + ownerDownBackoff + ")");
        }
    }

    /** The design's defaults. */
    public static ForwarderSpec defaults() {
        return new ForwarderSpec(
                (int) Limits.RETARGETS.max(),
                Limits.BODY_BYTES.max(),
                Limits.REPLAY_BYTES.max(),
                DEFAULT_REPLAY_BUDGET_BYTES,
                Limits.OWNER_TIMEOUT,
                DEFAULT_HEAD_DEADLINE,
                DEFAULT_RESPONSE_IDLE_TIMEOUT,
                Limits.STREAM_IDLE_TIMEOUT);
    }

    private static void positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
        }
    }

    private static void positive(String name, Duration value) {
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
        }
    }
}
