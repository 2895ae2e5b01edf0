package com.spectrayan.spector.uplink.internal.v2;

import static com.spectrayan.spector.uplink.internal.v2.FlowErrors.assertConnectionError;
import static com.spectrayan.spector.uplink.internal.v2.FlowErrors.assertStreamError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The send side's windows: what the peer's WINDOW_UPDATEs allow (PROTOCOL.md section 9.5; RFC 9113
 * section 6.9 for the increment, the 2^31-1 bound and the level of each error; section 5.1 for a
 * stream never opened).
 */
final class FlowSendWindowsTest {
    private static final int MAX = V2Limits.MAX_WINDOW;

    private final FlowSendWindows windows = new FlowSendWindows();

    @Test
    void open_newStream_startsAtTheInitialWindows() {
        windows.open(1);

        assertThat(windows.streamWindow(1)).isEqualTo(V2Limits.INITIAL_STREAM_WINDOW);
        assertThat(windows.connectionWindow()).isEqualTo(V2Limits.INITIAL_CONNECTION_WINDOW);
        assertThat(windows.sendable(1)).isEqualTo(V2Limits.INITIAL_STREAM_WINDOW);
    }

    @Test
    void open_evenOrNotRisingId_isRefused() {
        windows.open(5);

        assertThatThrownBy(() -> windows.open(4)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> windows.open(5)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> windows.open(3)).isInstanceOf(IllegalArgumentException.class);
        windows.open(V2Limits.MAX_STREAM_ID);
        assertThat(windows.isOpen(V2Limits.MAX_STREAM_ID)).isTrue();
    }

    @Test
    void sendable_isTheSmallerOfTheStreamAndTheConnection() {
        windows.open(1);
        windows.open(3);
        windows.consume(1, V2Limits.INITIAL_STREAM_WINDOW);
        windows.consume(3, V2Limits.INITIAL_STREAM_WINDOW);
        windows.onWindowUpdate(1, V2Limits.INITIAL_CONNECTION_WINDOW); // stream 1: 1 MiB

        // the connection has 1 MiB - 512 KiB left, less than stream 1's window
        assertThat(windows.sendable(1))
                .isEqualTo(V2Limits.INITIAL_CONNECTION_WINDOW - 2 * V2Limits.INITIAL_STREAM_WINDOW);
        assertThat(windows.sendable(3)).isZero();
        assertThat(windows.sendable(7)).as("not open").isZero();
    }

    @Test
    void consume_pastTheCredit_isRefused() {
        windows.open(1);

        assertThatThrownBy(() -> windows.consume(1, V2Limits.INITIAL_STREAM_WINDOW + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expected: 0.." + V2Limits.INITIAL_STREAM_WINDOW);
        windows.consume(1, V2Limits.INITIAL_STREAM_WINDOW);
        assertThat(windows.sendable(1)).isZero();
        assertThatThrownBy(() -> windows.consume(3, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void onWindowUpdate_streamToExactlyMaxWindow_isTaken() {
        windows.open(1);

        windows.onWindowUpdate(1, MAX - V2Limits.INITIAL_STREAM_WINDOW);

        assertThat(windows.streamWindow(1)).isEqualTo(MAX);
    }

    @Test
    void onWindowUpdate_streamOnePastMaxWindow_isAStreamFlowControlError() {
        windows.open(1);

        assertStreamError(
                () -> windows.onWindowUpdate(1, MAX - V2Limits.INITIAL_STREAM_WINDOW + 1),
                FlowControlException.Kind.FLOW_CONTROL_ERROR,
                1);
        assertThat(windows.streamWindow(1)).as("unchanged").isEqualTo(V2Limits.INITIAL_STREAM_WINDOW);
    }

    @Test
    void onWindowUpdate_connectionToExactlyMaxWindow_isTaken() {
        windows.onWindowUpdate(0, MAX - V2Limits.INITIAL_CONNECTION_WINDOW);

        assertThat(windows.connectionWindow()).isEqualTo(MAX);
    }

    @Test
    void onWindowUpdate_connectionOnePastMaxWindow_isAConnectionFlowControlError() {
        assertConnectionError(
                () -> windows.onWindowUpdate(0, MAX - V2Limits.INITIAL_CONNECTION_WINDOW + 1),
                FlowControlException.Kind.FLOW_CONTROL_ERROR,
                0);
        assertThat(windows.connectionWindow()).isEqualTo(V2Limits.INITIAL_CONNECTION_WINDOW);
    }

    @Test
    void onWindowUpdate_incrementOne_isTheSmallestTaken() {
        windows.open(1);

        windows.onWindowUpdate(1, 1);
        windows.onWindowUpdate(0, 1);

        assertThat(windows.streamWindow(1)).isEqualTo(V2Limits.INITIAL_STREAM_WINDOW + 1);
        assertThat(windows.connectionWindow()).isEqualTo(V2Limits.INITIAL_CONNECTION_WINDOW + 1);
    }

    @Test
    void onWindowUpdate_incrementZeroOnAStream_isAStreamProtocolError() {
        windows.open(1);

        assertStreamError(() -> windows.onWindowUpdate(1, 0), FlowControlException.Kind.PROTOCOL_ERROR, 1);
    }

    @Test
    void onWindowUpdate_incrementZeroOnTheConnection_isAConnectionProtocolError() {
        assertConnectionError(() -> windows.onWindowUpdate(0, 0), FlowControlException.Kind.PROTOCOL_ERROR, 0);
    }

    @Test
    void onWindowUpdate_closedStream_isDropped() {
        windows.open(1);
        windows.open(3);
        windows.close(1);

        windows.onWindowUpdate(1, 0); // even an increment of 0: the frame is dropped (section 9.4)
        windows.onWindowUpdate(1, MAX);

        assertThat(windows.isOpen(1)).isFalse();
        assertThat(windows.sendable(1)).isZero();
    }

    @Test
    void onWindowUpdate_streamNeverOpened_isAConnectionProtocolError() {
        windows.open(3);

        for (int never : new int[] {5, 2}) { // above the highest opened; even (reserved)
            assertConnectionError(
                    () -> windows.onWindowUpdate(never, 1), FlowControlException.Kind.PROTOCOL_ERROR, never);
        }
    }

    @Test
    void onWindowUpdate_afterSpending_restoresTheCredit() {
        windows.open(1);
        windows.consume(1, 1000);

        windows.onWindowUpdate(1, 1000);
        windows.onWindowUpdate(0, 1000);

        assertThat(windows.streamWindow(1)).isEqualTo(V2Limits.INITIAL_STREAM_WINDOW);
        assertThat(windows.connectionWindow()).isEqualTo(V2Limits.INITIAL_CONNECTION_WINDOW);
    }
}
