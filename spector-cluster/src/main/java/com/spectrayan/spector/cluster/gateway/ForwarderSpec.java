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
 * @param handoffHold the longest a request is held while its namespace is handed to another owner
 *     (an owner's 503 with {@code X-Spector-Handoff}; {@code ...handoff-hold}); zero holds none
 * @param handoffMaxHeld the requests the whole gateway holds at once ({@code ...handoff-max-held});
 *     past it a hand-off's 503 is answered at once
 * @param handoffMaxHeldBytes the body bytes the whole gateway holds at once ({@code
 *     ...handoff-max-held-bytes}); past it the same
 * @param requestBufferBytes a request body declared at most this long is read whole before its
 *     owner connection is taken ({@code ...request-buffer-bytes}); at most {@code
 *     replayBufferBytes} (the body is read into the replay copy); 0 streams every body
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
        Duration ownerDownBackoffMax,
        Duration handoffHold,
        int handoffMaxHeld,
        long handoffMaxHeldBytes,
        long requestBufferBytes) {

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

    /** Default longest hold of a request during a hand-off: the 2 s. */
    public static final Duration DEFAULT_HANDOFF_HOLD = Duration.ofSeconds(2);

    /** The longest hold {@code handoff-hold} may ask for: a client's patience, not a move's length. */
    public static final Duration MAX_HANDOFF_HOLD = Duration.ofSeconds(30);

    /** Default requests held at once per gateway: Vitess's {@code buffer_size} default. */
    public static final int DEFAULT_HANDOFF_MAX_HELD = 1000;

    /** The most requests {@code handoff-max-held} may ask for. */
    public static final int MAX_HANDOFF_MAX_HELD = 100_000;

    /** Default body bytes held at once per gateway: a quarter of the default replay budget. */
    public static final long DEFAULT_HANDOFF_MAX_HELD_BYTES = 16L * 1024 * 1024;

    /**
     * Default request buffer: a small API body (nginx's {@code client_body_buffer_size} is 16 KiB
     * in memory, its bodies past it go to disk; this gateway streams those).
     */
    public static final long DEFAULT_REQUEST_BUFFER_BYTES = 64L * 1024;

    /** The limits with the request buffer at its default, or the replay buffer when smaller. */
    public ForwarderSpec(
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
            Duration ownerDownBackoffMax,
            Duration handoffHold,
            int handoffMaxHeld,
            long handoffMaxHeldBytes) {
        this(
                retryMax,
                maxBodyBytes,
                replayBufferBytes,
                replayBudgetBytes,
                ownerTimeout,
                headDeadline,
                responseIdleTimeout,
                streamIdleTimeout,
                ownerDownAfter,
                ownerDownBackoff,
                ownerDownBackoffMax,
                handoffHold,
                handoffMaxHeld,
                handoffMaxHeldBytes,
                Math.min(DEFAULT_REQUEST_BUFFER_BYTES, replayBufferBytes));
    }

    /** The limits with passive health at the given values and hand-off holds at their defaults. */
    public ForwarderSpec(
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
        this(
                retryMax,
                maxBodyBytes,
                replayBufferBytes,
                replayBudgetBytes,
                ownerTimeout,
                headDeadline,
                responseIdleTimeout,
                streamIdleTimeout,
                ownerDownAfter,
                ownerDownBackoff,
                ownerDownBackoffMax,
                DEFAULT_HANDOFF_HOLD,
                DEFAULT_HANDOFF_MAX_HELD,
                DEFAULT_HANDOFF_MAX_HELD_BYTES);
    }

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
        if (handoffHold.isNegative() || handoffHold.compareTo(MAX_HANDOFF_HOLD) > 0) {
            throw new IllegalArgumentException(
                    "handoffHold: " + handoffHold + " (expected: 0.." + MAX_HANDOFF_HOLD + ")");
        }
        if (handoffMaxHeld < 0 || handoffMaxHeld > MAX_HANDOFF_MAX_HELD) {
            throw new IllegalArgumentException(
                    "handoffMaxHeld: " + handoffMaxHeld + " (expected: 0.." + MAX_HANDOFF_MAX_HELD + ")");
        }
        if (handoffMaxHeldBytes < 0) {
            throw new IllegalArgumentException("handoffMaxHeldBytes: " + handoffMaxHeldBytes + " (expected: >= 0)");
        }
        if (requestBufferBytes < 0 || requestBufferBytes > replayBufferBytes) {
            throw new IllegalArgumentException("requestBufferBytes: " + requestBufferBytes
                    + " (expected: 0..replayBufferBytes " + replayBufferBytes + ")");
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
