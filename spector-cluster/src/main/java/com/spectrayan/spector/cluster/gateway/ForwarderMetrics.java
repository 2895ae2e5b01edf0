package com.spectrayan.spector.cluster.gateway;

import java.util.concurrent.atomic.LongAdder;

/**
 * Counters of the forwarder, cheap enough for the hot path; the gateway binds them to Micrometer.
 * Retargets are counted by cause, exchanges by outcome.
 */
public final class ForwarderMetrics {
    /** A gauge only, so an adder: an atomic integer moved its cache line between the loops twice per request. */
    private final LongAdder active = new LongAdder();

    private final LongAdder completed = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder cancelled = new LongAdder();
    private final LongAdder retargetMisdirected = new LongAdder();
    private final LongAdder retryStaleConnection = new LongAdder();
    private final LongAdder retargetsExhausted = new LongAdder();
    private final LongAdder replayRefusals = new LongAdder();
    private final LongAdder tooLarge = new LongAdder();
    private final LongAdder ownerTimeouts = new LongAdder();
    private final LongAdder ownerUnreachable = new LongAdder();
    private final LongAdder ownerDown = new LongAdder();
    private final LongAdder handoffHolds = new LongAdder();
    private final LongAdder handoffReleased = new LongAdder();
    private final LongAdder handoffExpired = new LongAdder();
    private final LongAdder handoffRefused = new LongAdder();
    private final LongAdder bytesToOwners = new LongAdder();
    private final LongAdder bytesToClients = new LongAdder();
    private final LongAdder splicedResponses = new LongAdder();
    private final LongAdder splicedBytes = new LongAdder();
    private final LongAdder spliceDrains = new LongAdder();

    /** Exchanges in progress. */
    public int active() {
        return (int) active.sum();
    }

    /** Exchanges whose response ended normally (any status the owner chose). */
    public long completed() {
        return completed.sum();
    }

    /** Exchanges that failed with a gateway error (before or after the head). */
    public long failed() {
        return failed.sum();
    }

    /** Exchanges cancelled because the client went away. */
    public long cancelled() {
        return cancelled.sum();
    }

    /** Retargets after an owner's 421. */
    public long retargetMisdirected() {
        return retargetMisdirected.sum();
    }

    /** Retries on a fresh connection after a pooled one turned out closed. */
    public long retryStaleConnection() {
        return retryStaleConnection.sum();
    }

    /** Exchanges that ended in 503 because the 421 budget was spent or the hint was unusable. */
    public long retargetsExhausted() {
        return retargetsExhausted.sum();
    }

    /** Requests that kept no replay copy (past the per-request buffer or the gateway budget). */
    public long replayRefusals() {
        return replayRefusals.sum();
    }

    /** Requests refused 413 (by Content-Length or by counting a streamed body). */
    public long tooLarge() {
        return tooLarge.sum();
    }

    /** Attempts that got no response head in time. */
    public long ownerTimeouts() {
        return ownerTimeouts.sum();
    }

    /** Attempts that could not reach their owner. */
    public long ownerUnreachable() {
        return ownerUnreachable.sum();
    }

    /** Requests answered 503 at once because passive health marked their owner down. */
    public long ownerDown() {
        return ownerDown.sum();
    }

    /** Requests held because their owner answered 503 with {@code X-Spector-Handoff} (a retarget cause). */
    public long handoffHolds() {
        return handoffHolds.sum();
    }

    /** Held requests sent on because the hand-off ended. */
    public long handoffReleased() {
        return handoffReleased.sum();
    }

    /** Held requests answered 503 because the hold ran out. */
    public long handoffExpired() {
        return handoffExpired.sum();
    }

    /** Hand-off 503s answered at once: a body too large to replay, or the count or bytes bound passed. */
    public long handoffRefused() {
        return handoffRefused.sum();
    }

    /** Request body bytes written to owners. */
    public long bytesToOwners() {
        return bytesToOwners.sum();
    }

    /** Response body bytes handed to clients. */
    public long bytesToClients() {
        return bytesToClients.sum();
    }

    /** Responses whose body went on from the owner's socket to the client's by splice ({@link ResponseSplice}). */
    public long splicedResponses() {
        return splicedResponses.sum();
    }

    void countSpliced() {
        splicedResponses.increment();
    }

    /**
     * Response body bytes that went from the owner's socket to the client's by splice, never
     * through a buffer of ours (a part of {@link #bytesToClients}); the bytes a drain reads out of
     * the socket after the owner's FIN mid-body count here too.
     */
    public long splicedBytes() {
        return splicedBytes.sum();
    }

    void countSplicedBytes(int n) {
        splicedBytes.add(n);
    }

    /**
     * Spliced responses whose owner's input ended mid-body with bytes still in its socket (its
     * FIN right behind the body), the rest read out of it ({@link ResponseSplice}'s notes).
     */
    public long spliceDrains() {
        return spliceDrains.sum();
    }

    void countSpliceDrain() {
        spliceDrains.increment();
    }

    void started() {
        active.increment();
    }

    void ended(Outcome outcome) {
        active.decrement();
        switch (outcome) {
            case COMPLETED -> completed.increment();
            case FAILED -> failed.increment();
            case CANCELLED -> cancelled.increment();
        }
    }

    void countRetargetMisdirected() {
        retargetMisdirected.increment();
    }

    void countRetryStaleConnection() {
        retryStaleConnection.increment();
    }

    void countRetargetsExhausted() {
        retargetsExhausted.increment();
    }

    void countReplayRefused() {
        replayRefusals.increment();
    }

    void countTooLarge() {
        tooLarge.increment();
    }

    void countOwnerTimeout() {
        ownerTimeouts.increment();
    }

    void countOwnerUnreachable() {
        ownerUnreachable.increment();
    }

    void countOwnerDown() {
        ownerDown.increment();
    }

    void countHandoffHold() {
        handoffHolds.increment();
    }

    void countHandoffReleased() {
        handoffReleased.increment();
    }

    void countHandoffExpired() {
        handoffExpired.increment();
    }

    void countHandoffRefused() {
        handoffRefused.increment();
    }

    void countToOwner(long bytes) {
        bytesToOwners.add(bytes);
    }

    void countToClient(long bytes) {
        bytesToClients.add(bytes);
    }

    enum Outcome {
        COMPLETED,
        FAILED,
        CANCELLED
    }
}
