package com.spectrayan.spector.cluster.gateway;

import java.util.EnumSet;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where one forwarded exchange is, and the events that move it (drawn in {@link GatewayForwarder}'s
 * design notes). Each event has one method; it moves the state and answers true, or, when the
 * event cannot happen in the current state, fails loudly: it logs at ERROR and throws an {@link
 * IllegalStateException} when {@code strict} (every test run: assertions on), else answers false
 * and leaves the state alone, and the exchange then fails itself rather than go on with a
 * connection whose state it no longer knows.
 *
 * <p>Threading: confined to the exchange's event loop.
 */
final class ExchangeState {
    private static final Logger log = LoggerFactory.getLogger(ExchangeState.class);

    /** Whether illegal transitions throw by default: yes under assertions (surefire enables them). */
    static final boolean STRICT = ExchangeState.class.desiredAssertionStatus();

    /** The states of a forwarded exchange. */
    enum State {
        /** Waiting for the routing answer (L2 or L3; an L1 hit skips it). */
        RESOLVING,
        /**
         * The owner is known; a small request body (its length declared, at most the request
         * buffer, or chunked) is read whole into the replay copy before any owner connection is
         * taken, so a slow upload holds none of the owner pool while it arrives (nginx's request
         * buffering). A chunked body that outgrows the buffer leaves it at that chunk.
         */
        BUFFERING,
        /** An attempt waits for its owner connection (pooled, or a new one for an upgrade). */
        CONNECTING,
        /** The request head is written; its body (the replay copy first) flows to the owner. */
        SENDING,
        /** The whole request is written; the owner's head timer runs. */
        AWAITING_HEAD,
        /**
         * An owner answered 503 with {@code X-Spector-Handoff}: the request waits, its body in the
         * replay copy, for the move to end (then it is sent on) or the hold to run out.
         */
        HOLDING,
        /** The owner's head went to the client; its body streams (the request's may still flow). */
        STREAMING,
        /** The response ended; the connection went back to the pool. */
        COMPLETED,
        /** The owner switched protocols; its connection went to the client side. */
        UPGRADED,
        /** The exchange ended with a gateway error (problem+json, or a reset after the head). */
        FAILED,
        /** The client went away. */
        CANCELLED;

        /** Answers whether the exchange is over in this state. */
        boolean isTerminal() {
            return this == COMPLETED || this == UPGRADED || this == FAILED || this == CANCELLED;
        }
    }

    private static final Set<State> BEFORE_HEAD = EnumSet.of(State.SENDING, State.AWAITING_HEAD);
    private static final Set<State> HOLDABLE = EnumSet.of(State.CONNECTING, State.SENDING, State.AWAITING_HEAD);
    private static final Set<State> ROUTABLE = EnumSet.of(
            State.RESOLVING, State.BUFFERING, State.CONNECTING, State.SENDING, State.AWAITING_HEAD, State.HOLDING);
    private static final Set<State> BUFFERABLE = EnumSet.of(State.RESOLVING);
    private static final Set<State> SENDABLE = EnumSet.of(State.SENDING, State.STREAMING);
    // One set each, made once: an EnumSet.of per transition was 2 % of a small request's samples.
    private static final Set<State> CONNECTABLE = EnumSet.of(State.CONNECTING);
    private static final Set<State> ENDABLE = EnumSet.of(State.STREAMING);
    private static final Set<State> LIVE =
            EnumSet.complementOf(EnumSet.of(State.COMPLETED, State.UPGRADED, State.FAILED, State.CANCELLED));

    private final boolean strict;
    private State state = State.RESOLVING;

    ExchangeState(boolean strict) {
        this.strict = strict;
    }

    State get() {
        return state;
    }

    /** Answers whether the exchange is over. */
    boolean isOver() {
        return state.isTerminal();
    }

    /** Answers whether the owner's head went to the client and the exchange is not over. */
    boolean isStreaming() {
        return state == State.STREAMING;
    }

    /** The owner is known and the request's small body is read whole before an attempt starts. */
    boolean buffering() {
        return move("buffering", BUFFERABLE, State.BUFFERING);
    }

    /** Answers whether the exchange reads its body whole before its first attempt. */
    boolean isBuffering() {
        return state == State.BUFFERING;
    }

    /**
     * An attempt starts: the first route (from {@code BUFFERING} once a small body is read, or a
     * chunked one outgrew the buffer), a
     * retarget after a 421, a retry on a fresh connection, a pinned exchange's fallback after a
     * connection that was not made (from {@code CONNECTING}),
     * or a held request's poll of the old owner or its resend at the end of a hand-off (from
     * {@code HOLDING}).
     */
    boolean attempting() {
        return move("attempting", ROUTABLE, State.CONNECTING);
    }

    /** Answers whether the exchange waits for a hand-off to end. */
    boolean isHolding() {
        return state == State.HOLDING;
    }

    /**
     * An owner said its namespace is being handed off (after the head was sent), or a held
     * request's poll of the old owner got no answer (from {@code CONNECTING} too): the request waits.
     */
    boolean holding() {
        return move("holding", HOLDABLE, State.HOLDING);
    }

    /** The attempt's connection is held: the head is written. */
    boolean connected() {
        return move("connected", CONNECTABLE, State.SENDING);
    }

    /** The whole request is written (after the head, too, when the owner answered early). */
    boolean requestSent() {
        return move("requestSent", SENDABLE, state == State.STREAMING ? State.STREAMING : State.AWAITING_HEAD);
    }

    /** The owner's head went to the client. */
    boolean headReceived() {
        return move("headReceived", BEFORE_HEAD, State.STREAMING);
    }

    /** The owner switched protocols. */
    boolean upgraded() {
        return move("upgraded", BEFORE_HEAD, State.UPGRADED);
    }

    /** The response ended. */
    boolean responseEnded() {
        return move("responseEnded", ENDABLE, State.COMPLETED);
    }

    /** The exchange failed. */
    boolean failed() {
        return move("failed", LIVE, State.FAILED);
    }

    /** The client went away. */
    boolean cancelled() {
        return move("cancelled", LIVE, State.CANCELLED);
    }

    private boolean move(String event, Set<State> from, State to) {
        if (from.contains(state)) {
            state = to;
            return true;
        }
        IllegalStateException e = new IllegalStateException(
                "illegal transition: " + event + " in state " + state + " (expected: one of " + from + ")");
        log.error("forwarded exchange: {}", e.getMessage(), e);
        if (strict) {
            throw e;
        }
        return false;
    }

    @Override
    public String toString() {
        return state.name();
    }
}
