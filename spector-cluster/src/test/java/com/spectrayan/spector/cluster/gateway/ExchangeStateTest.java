package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.cluster.gateway.ExchangeState.State;
import java.util.EnumSet;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

final class ExchangeStateTest {
    @Test
    void strict_underTests_isOn() {
        assertThat(ExchangeState.STRICT).as("surefire runs with assertions").isTrue();
    }

    @Test
    void events_forwardedExchange_walkToCompleted() {
        ExchangeState s = new ExchangeState(true);

        assertThat(s.attempting()).isTrue();
        assertThat(s.get()).isEqualTo(State.CONNECTING);
        assertThat(s.connected()).isTrue();
        assertThat(s.get()).isEqualTo(State.SENDING);
        assertThat(s.requestSent()).isTrue();
        assertThat(s.get()).isEqualTo(State.AWAITING_HEAD);
        assertThat(s.headReceived()).isTrue();
        assertThat(s.isStreaming()).isTrue();
        assertThat(s.responseEnded()).isTrue();

        assertThat(s.get()).isEqualTo(State.COMPLETED);
        assertThat(s.isOver()).isTrue();
    }

    @Test
    void buffering_aSmallBody_thenTheFirstAttempt() {
        ExchangeState s = new ExchangeState(true);

        assertThat(s.buffering()).isTrue();
        assertThat(s.isBuffering()).isTrue();
        assertThat(s.isOver()).isFalse();
        assertThat(s.attempting()).as("the body is whole").isTrue();

        assertThat(s.get()).isEqualTo(State.CONNECTING);
        assertThat(s.isBuffering()).isFalse();
    }

    @Test
    void requestSent_afterAnEarlyHead_staysStreaming() {
        ExchangeState s = at(State.SENDING);
        s.headReceived();

        assertThat(s.requestSent()).isTrue();

        assertThat(s.get()).isEqualTo(State.STREAMING);
    }

    @Test
    void attempting_after421OrAStaleConnectionOrAPinnedFallback_connectsAgain() {
        for (State from : EnumSet.of(State.CONNECTING, State.SENDING, State.AWAITING_HEAD)) {
            ExchangeState s = at(from);

            assertThat(s.attempting()).as("from %s", from).isTrue();

            assertThat(s.get()).isEqualTo(State.CONNECTING);
        }
    }

    @Test
    void upgraded_beforeTheHead_isTerminal() {
        ExchangeState s = at(State.AWAITING_HEAD);

        assertThat(s.upgraded()).isTrue();

        assertThat(s.get()).isEqualTo(State.UPGRADED);
        assertThat(s.isOver()).isTrue();
        assertThat(s.isStreaming()).isFalse();
    }

    @Test
    void failedAndCancelled_fromEveryLiveState_areTerminal() {
        for (State from : live()) {
            ExchangeState failed = at(from);
            ExchangeState cancelled = at(from);

            assertThat(failed.failed()).as("failed from %s", from).isTrue();
            assertThat(cancelled.cancelled()).as("cancelled from %s", from).isTrue();

            assertThat(failed.get()).isEqualTo(State.FAILED);
            assertThat(cancelled.get()).isEqualTo(State.CANCELLED);
        }
    }

    @Test
    void events_inTerminalStates_throwWhenStrict() {
        for (State from : EnumSet.complementOf(live())) {
            ExchangeState s = at(from);

            assertThatThrownBy(s::failed).as("from %s", from).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(s::attempting).isInstanceOf(IllegalStateException.class);
            assertThat(s.get()).isEqualTo(from);
        }
    }

    @Test
    void headReceived_beforeAnyConnection_throwsWhenStrict() {
        for (State from : EnumSet.of(State.RESOLVING, State.CONNECTING, State.STREAMING)) {
            ExchangeState s = at(from);

            assertThatThrownBy(s::headReceived)
                    .as("from %s", from)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("headReceived in state " + from);
        }
    }

    @Test
    void illegalEvents_everyOneOfThem_throwWhenStrict() {
        assertIllegal(ExchangeState::connected, EnumSet.complementOf(EnumSet.of(State.CONNECTING)));
        assertIllegal(ExchangeState::requestSent, EnumSet.complementOf(EnumSet.of(State.SENDING, State.STREAMING)));
        assertIllegal(ExchangeState::upgraded, EnumSet.complementOf(EnumSet.of(State.SENDING, State.AWAITING_HEAD)));
        assertIllegal(ExchangeState::responseEnded, EnumSet.complementOf(EnumSet.of(State.STREAMING)));
        assertIllegal(
                ExchangeState::attempting,
                EnumSet.complementOf(EnumSet.of(
                        State.RESOLVING,
                        State.BUFFERING,
                        State.CONNECTING,
                        State.SENDING,
                        State.AWAITING_HEAD,
                        State.HOLDING)));
        assertIllegal(ExchangeState::buffering, EnumSet.complementOf(EnumSet.of(State.RESOLVING)));
        assertIllegal(
                ExchangeState::holding,
                EnumSet.complementOf(EnumSet.of(State.CONNECTING, State.SENDING, State.AWAITING_HEAD)));
    }

    @Test
    void holding_afterAHandoff503_waitsThenAttemptsAgain() {
        for (State from : EnumSet.of(State.CONNECTING, State.SENDING, State.AWAITING_HEAD)) {
            ExchangeState s = at(from);

            assertThat(s.holding()).as("from %s", from).isTrue();
            assertThat(s.isHolding()).isTrue();
            assertThat(s.isOver()).isFalse();
            assertThat(s.attempting())
                    .as("the resend, or a poll of the old owner")
                    .isTrue();

            assertThat(s.get()).isEqualTo(State.CONNECTING);
        }
    }

    @Test
    void illegalEvent_lenient_answersFalseAndKeepsTheState() {
        ExchangeState s = new ExchangeState(false);

        assertThat(s.responseEnded()).isFalse();

        assertThat(s.get()).isEqualTo(State.RESOLVING);
        assertThat(s.isOver()).as("the exchange fails itself next").isFalse();
    }

    private static void assertIllegal(Predicate<ExchangeState> event, EnumSet<State> from) {
        for (State state : from) {
            ExchangeState s = at(state);
            assertThatThrownBy(() -> event.test(s)).as("from %s", state).isInstanceOf(IllegalStateException.class);
            assertThat(s.get()).isEqualTo(state);
        }
    }

    private static EnumSet<State> live() {
        EnumSet<State> live = EnumSet.noneOf(State.class);
        for (State s : State.values()) {
            if (!s.isTerminal()) {
                live.add(s);
            }
        }
        return live;
    }

    /** A strict machine brought to {@code target} by legal events. */
    private static ExchangeState at(State target) {
        ExchangeState s = new ExchangeState(true);
        switch (target) {
            case RESOLVING -> {}
            case BUFFERING -> s.buffering();
            case CONNECTING -> s.attempting();
            case SENDING -> {
                s.attempting();
                s.connected();
            }
            case AWAITING_HEAD -> {
                s.attempting();
                s.connected();
                s.requestSent();
            }
            case STREAMING -> {
                s.attempting();
                s.connected();
                s.headReceived();
            }
            case COMPLETED -> {
                s.attempting();
                s.connected();
                s.headReceived();
                s.responseEnded();
            }
            case UPGRADED -> {
                s.attempting();
                s.connected();
                s.upgraded();
            }
            case HOLDING -> {
                s.attempting();
                s.connected();
                s.holding();
            }
            case FAILED -> s.failed();
            case CANCELLED -> s.cancelled();
        }
        assertThat(s.get()).isEqualTo(target);
        return s;
    }
}
