package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.RouteEntry;
import java.util.Map;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * What the forwarder does after an owner's {@code 421}: retarget to the owner the answer names,
 * or stop. A pure function of what the exchange knows (DESIGN.md section 4); it neither reads
 * the clock nor touches a connection, and reporting the hint to the resolver is the caller's.
 *
 * <p>The checks, in order, and the first that applies decides:
 *
 * <ol>
 *   <li>attempts so far past {@link ForwarderSpec#retryMax()} retargets: {@link Exhausted}
 *       ({@value #RETRIES_EXHAUSTED});
 *   <li>no usable owner in the hint (none, or not a ring member): {@link Stop} ({@value
 *       #NO_OWNER_HINT});
 *   <li>the hint's epoch (the failed attempt's when the hint has none) older than one already
 *       seen: {@link Stop} ({@value #EPOCH_REGRESSED});
 *   <li>the hint names an owner already tried at that epoch or a newer one: {@link Stop} ({@value
 *       #HINT_ALREADY_TRIED});
 *   <li>the body so far is not kept whole: {@link Stop} ({@value #BODY_NOT_REPLAYABLE});
 *   <li>else {@link Retarget} to the hint's owner, epoch and fence.
 * </ol>
 *
 * <p>A {@value #NO_OWNER_HINT} stop is not the end: the exchange forgets the owner's L1 entry
 * and resolves the key again (DESIGN.md section 4, "else re-resolve"), and {@link #reresolved}
 * decides on what that names.
 */
final class RetargetPolicy {
    /** The retarget budget is spent. */
    static final String RETRIES_EXHAUSTED = "retries-exhausted";

    /** The 421 named no owner, or one that is not a ring member, and the key resolved again named a tried one. */
    static final String NO_OWNER_HINT = "no-owner-hint";

    /** The hint's epoch is older than one the exchange already saw. */
    static final String EPOCH_REGRESSED = "epoch-regressed";

    /** The hint names an owner already tried at the same or a newer epoch. */
    static final String HINT_ALREADY_TRIED = "hint-already-tried";

    /** The body outgrew its replay copy, so no retry could send it whole. */
    static final String BODY_NOT_REPLAYABLE = "body-too-large-to-replay";

    /** A held request's hand-off did not end within {@link ForwarderSpec#handoffHold()}. */
    static final String HANDOFF_HOLD_EXPIRED = "handoff-hold-expired";

    /** No hold was free: the gateway holds {@link ForwarderSpec#handoffMaxHeld()} requests or bytes. */
    static final String HANDOFF_HOLDS_FULL = "handoff-holds-full";

    private RetargetPolicy() {}

    /**
     * Decides after a {@code 421}.
     *
     * @param attempts the attempts so far, the failed one included (1 for the first)
     * @param retryMax the retargets allowed ({@link ForwarderSpec#retryMax()})
     * @param hint what the 421 said
     * @param attemptEpoch the epoch the failed attempt was sent with
     * @param epochsSeen the newest epoch tried per owner, every attempt included
     * @param replayable whether the body so far is kept whole
     */
    static Decision decide(
            int attempts,
            int retryMax,
            Hint hint,
            long attemptEpoch,
            Map<String, Long> epochsSeen,
            boolean replayable) {
        if (attempts > retryMax) {
            return new Exhausted(RETRIES_EXHAUSTED);
        }
        String owner = hint.owner();
        if (owner == null || !hint.member()) {
            return new Stop(NO_OWNER_HINT);
        }
        long epoch = hint.epoch() >= 0 ? hint.epoch() : attemptEpoch;
        long newest = -1;
        for (long seen : epochsSeen.values()) {
            newest = Math.max(newest, seen);
        }
        if (epoch < newest) {
            return new Stop(EPOCH_REGRESSED);
        }
        Long tried = epochsSeen.get(owner);
        if (tried != null && epoch <= tried) {
            return new Stop(HINT_ALREADY_TRIED);
        }
        if (!replayable) {
            return new Stop(BODY_NOT_REPLAYABLE);
        }
        return new Retarget(new RouteEntry(owner, epoch, hint.fence()));
    }

    /**
     * Decides after a 421 that named no usable owner, once the key was resolved again: the
     * resolved owner gets the next attempt unless it was tried already in this exchange (at any
     * epoch: nothing says the view changed), the budget is spent, or the body is not kept whole.
     *
     * @param attempts the attempts so far, the failed one included
     * @param retryMax the retargets allowed
     * @param resolved what L2 or the ring named after the owner's L1 entry was forgotten
     * @param epochsSeen the newest epoch tried per owner, every attempt included
     * @param replayable whether the body so far is kept whole
     */
    static Decision reresolved(
            int attempts, int retryMax, RouteEntry resolved, Map<String, Long> epochsSeen, boolean replayable) {
        if (attempts > retryMax) {
            return new Exhausted(RETRIES_EXHAUSTED);
        }
        if (epochsSeen.containsKey(resolved.owner())) {
            return new Stop(NO_OWNER_HINT);
        }
        if (!replayable) {
            return new Stop(BODY_NOT_REPLAYABLE);
        }
        return new Retarget(resolved);
    }

    /**
     * What a {@code 421} said about the key's owner: its {@code X-Spector-Owner}, {@code
     * X-Spector-Epoch} and {@code X-Spector-Fence}.
     *
     * @param owner the owner named, or null
     * @param member whether {@code owner} is a ring member (a hint naming a stranger is unusable)
     * @param epoch the epoch named, or -1 when absent or not a number
     * @param fence the fence named, or {@link RouteEntry#NO_FENCE} when absent or not a number
     */
    record Hint(@Nullable String owner, boolean member, long epoch, long fence) {
        /** A 421 that named nothing. */
        static final Hint NONE = new Hint(null, false, -1, RouteEntry.NO_FENCE);

        /** Reads a hint from header values as received; {@code members} says who is on the ring. */
        static Hint of(
                @Nullable String owner, @Nullable String epoch, @Nullable String fence, Predicate<String> members) {
            requireNonNull(members, "members");
            return new Hint(
                    owner,
                    owner != null && members.test(owner),
                    parseLong(epoch),
                    Math.max(RouteEntry.NO_FENCE, parseLong(fence)));
        }

        /** Answers whether the resolver should learn this hint (a member, at a known epoch). */
        boolean reportable() {
            return owner != null && member && epoch >= 0;
        }

        private static long parseLong(@Nullable String value) {
            if (value == null) {
                return -1;
            }
            try {
                return Long.parseLong(value.trim());
            } catch (NumberFormatException e) {
                return -1;
            }
        }
    }

    /** The outcome of {@link #decide}. */
    sealed interface Decision permits Retarget, Stop, Exhausted {}

    /** Try again, at {@code entry}. */
    record Retarget(RouteEntry entry) implements Decision {}

    /** The hint cannot be followed ({@code reason} is one of the constants above). */
    record Stop(String reason) implements Decision {}

    /** The retarget budget is spent. */
    record Exhausted(String reason) implements Decision {}
}
