package com.spectrayan.spector.uplink.internal.v2;

import static com.spectrayan.spector.uplink.internal.v2.FlowErrors.assertConnectionError;
import static com.spectrayan.spector.uplink.internal.v2.FlowErrors.assertStreamError;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.testkit.FakeTicker;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The receive side's windows: overruns, when credit goes back, and growth (PROTOCOL.md sections
 * 9.4 and 9.5; RFC 9113 section 6.9 for the levels of the errors and the accounting of DATA on
 * closed streams, section 5.1 for streams never opened).
 */
final class FlowReceiveWindowsTest {
    private static final int STREAM = V2Limits.INITIAL_STREAM_WINDOW;
    private static final int CONNECTION = V2Limits.INITIAL_CONNECTION_WINDOW;
    private static final int MIB = 1024 * 1024;

    private final FakeTicker ticker = new FakeTicker();
    private final FlowReceiveWindows windows = new FlowReceiveWindows(ticker);

    // ---- overruns ----

    @Test
    void onData_exactlyTheStreamWindow_isTaken() {
        windows.open(1);

        assertThat(windows.onData(1, STREAM)).isEmpty();

        assertThat(windows.streamAvailable(1)).isZero();
        assertThat(windows.connectionAvailable()).isEqualTo(CONNECTION - STREAM);
    }

    @Test
    void onData_oneByteOverTheStreamWindow_isAStreamFlowControlError() {
        windows.open(1);
        windows.onData(1, STREAM - 10);

        assertStreamError(() -> windows.onData(1, 11), FlowControlException.Kind.FLOW_CONTROL_ERROR, 1);
        assertThat(windows.connectionAvailable())
                .as("counted against the connection")
                .isEqualTo(CONNECTION - STREAM - 1);
    }

    @Test
    void close_afterAStreamOverrun_creditsTheConnectionForAllItsBytes() {
        twoFullStreams();
        assertThatThrownBy(() -> windows.onData(1, 1)).isInstanceOf(FlowControlException.class);

        // stream 1's 256 KiB + 1 byte, never taken, go back to the connection (512 KiB is half of 1 MiB)
        assertThat(windows.close(1)).isEmpty();
        assertThat(windows.consumed(3, STREAM))
                .containsExactly(new WindowCredit(3, STREAM), new WindowCredit(0, 2 * STREAM + 1));
        assertThat(windows.connectionAvailable()).isEqualTo(CONNECTION);
    }

    @Test
    void onData_exactlyTheConnectionWindow_isTaken_andOneBytePast_isAConnectionFlowControlError() {
        twoFullStreams();
        windows.close(1); // 256 KiB taken for the connection, below its threshold: still unreturned
        long left = windows.connectionAvailable();
        assertThat(left).isEqualTo(CONNECTION - 2 * STREAM);

        // DATA for closed stream 1 still counts against the connection (section 9.4)
        assertConnectionError(() -> windows.onData(1, (int) left + 1), FlowControlException.Kind.FLOW_CONTROL_ERROR, 0);
        assertThat(windows.onData(1, (int) left)).containsExactly(new WindowCredit(0, STREAM + (int) left));
    }

    @Test
    void onData_overrunningBothWindows_isTheConnectionsError() {
        twoFullStreams();

        assertConnectionError(
                () -> windows.onData(1, V2Limits.MAX_FRAME_PAYLOAD), FlowControlException.Kind.FLOW_CONTROL_ERROR, 0);
    }

    @Test
    void onData_streamNeverOpened_isAConnectionProtocolError() {
        windows.open(3);

        for (int never : new int[] {5, 2}) {
            assertConnectionError(() -> windows.onData(never, 1), FlowControlException.Kind.PROTOCOL_ERROR, never);
        }
    }

    @Test
    void onData_lengthPastAFramesPayload_isRefused() {
        windows.open(1);

        assertThatThrownBy(() -> windows.onData(1, V2Limits.MAX_FRAME_PAYLOAD + 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> windows.onData(0, 1)).isInstanceOf(IllegalArgumentException.class);
    }

    // ---- credit ----

    @Test
    void onData_openStream_returnsNoCreditBeforeTheConsumerTookTheBytes() {
        windows.open(1);

        assertThat(windows.onData(1, STREAM)).isEmpty();

        assertThat(windows.streamAvailable(1)).isZero();
    }

    @Test
    void consumed_oneByteBelowHalfTheStreamWindow_returnsNothing_atHalf_returnsTheStreamsUpdate() {
        windows.open(1);
        windows.onData(1, STREAM);

        assertThat(windows.consumed(1, STREAM / 2 - 1)).isEmpty();
        assertThat(windows.consumed(1, 1)).containsExactly(new WindowCredit(1, STREAM / 2));

        assertThat(windows.streamAvailable(1)).isEqualTo(STREAM / 2);
        assertThat(windows.consumed(1, STREAM / 2 - 1)).isEmpty();
    }

    @Test
    void consumed_halfTheConnectionWindow_returnsTheConnectionsUpdateAfterTheStreams() {
        twoFullStreams();
        windows.consumed(1, STREAM);
        List<WindowCredit> credits = windows.consumed(3, STREAM - 1);
        assertThat(credits).containsExactly(new WindowCredit(3, STREAM - 1));

        assertThat(windows.consumed(3, 1)).containsExactly(new WindowCredit(0, CONNECTION / 2));
        assertThat(windows.connectionAvailable()).isEqualTo(CONNECTION);
    }

    @Test
    void consumed_moreThanReceived_isRefused() {
        windows.open(1);
        windows.onData(1, 100);

        assertThatThrownBy(() -> windows.consumed(1, 101)).isInstanceOf(IllegalArgumentException.class);
        assertThat(windows.consumed(1, 100)).isEmpty();
        assertThatThrownBy(() -> windows.consumed(1, 1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void close_bytesNeverTaken_creditTheConnection() {
        twoFullStreams();

        assertThat(windows.close(1)).isEmpty();
        assertThat(windows.close(3)).containsExactly(new WindowCredit(0, 2 * STREAM));
        assertThat(windows.close(3)).as("closed twice").isEmpty();
        assertThat(windows.consumed(3, 10))
                .as("taken after the close: credited already")
                .isEmpty();
    }

    @Test
    void onData_closedStream_isCreditedToTheConnectionAtOnce() {
        windows.open(1);
        windows.close(1);
        int frame = 16 * 1024;

        for (int i = 1; i < CONNECTION / 2 / frame; i++) {
            assertThat(windows.onData(1, frame)).as("frame %d", i).isEmpty();
        }
        assertThat(windows.onData(1, frame)).containsExactly(new WindowCredit(0, CONNECTION / 2));
        assertThat(windows.connectionAvailable()).isEqualTo(CONNECTION);
    }

    // ---- growth ----

    @Test
    void open_twiceTheOpenWindowsPastTheConnections_growsTheConnection() {
        assertThat(windows.open(1)).isEmpty();
        assertThat(windows.open(3)).as("2 x 512 KiB is the initial 1 MiB").isEmpty();

        assertThat(windows.open(5)).containsExactly(new WindowCredit(0, 2 * STREAM));

        assertThat(windows.connectionWindow()).isEqualTo(6 * STREAM);
    }

    @Test
    void onPingAck_streamTookMoreThanHalfItsWindowInOneRoundTrip_doublesIt() {
        windows.open(1);
        long ping = probe(1);
        flowAndTake(1, STREAM / 2 + 1);
        ticker.advance(20, TimeUnit.MILLISECONDS);

        assertThat(windows.onPingAck(ping)).containsExactly(new WindowCredit(1, STREAM));

        assertThat(windows.streamWindow(1)).isEqualTo(2 * STREAM);
        assertThat(windows.connectionWindow()).as("2 x 512 KiB: not past 1 MiB").isEqualTo(CONNECTION);
        assertThat(windows.rttNanos()).isEqualTo(TimeUnit.MILLISECONDS.toNanos(20));
    }

    /** Rounds in which no stream took more than half its window (as the probe's ack saw it). */
    enum QuietRound {
        /** The consumer took exactly half the window: not more. */
        EXACTLY_HALF_TAKEN,
        /** The bytes arrived but the reader stopped: nothing taken. */
        RECEIVED_NEVER_TAKEN,
        /** The window was taken whole, but the ack answers another PING. */
        ACK_OF_ANOTHER_PING
    }

    @ParameterizedTest
    @EnumSource(QuietRound.class)
    void onPingAck_noStreamTookMoreThanHalfItsWindow_growsNothing(QuietRound round) {
        windows.open(1);
        long ping = probe(1);
        long ack = ping;
        switch (round) {
            case EXACTLY_HALF_TAKEN -> flowAndTake(1, STREAM / 2);
            case RECEIVED_NEVER_TAKEN -> windows.onData(1, STREAM - 1);
            case ACK_OF_ANOTHER_PING -> {
                flowAndTake(1, STREAM);
                ack = ping ^ 1;
            }
        }

        assertThat(windows.onPingAck(ack)).isEmpty();
        assertThat(windows.streamWindow(1)).isEqualTo(STREAM);
        assertThat(windows.connectionWindow()).isEqualTo(CONNECTION);
    }

    @Test
    void growth_doublesUpToTheStreamCap_neverPast_andTheConnectionFollowsAtTwiceTheSum() {
        windows.open(1);
        List<Integer> sizes = new ArrayList<>();
        for (int round = 0; round < 10; round++) {
            busyRound(1);
            sizes.add(windows.streamWindow(1));
        }

        assertThat(sizes)
                .containsExactly(
                        MIB / 2, MIB, 2 * MIB, 4 * MIB, 8 * MIB, 16 * MIB, 16 * MIB, 16 * MIB, 16 * MIB, 16 * MIB);
        assertThat(V2Limits.MAX_STREAM_WINDOW).isEqualTo(16 * MIB);
        assertThat(windows.connectionWindow()).isEqualTo(2 * V2Limits.MAX_STREAM_WINDOW);
    }

    @Test
    void growth_atTheStreamCap_sendsNoUpdate() {
        windows.open(1);
        growToCap(1);

        assertThat(busyRound(1)).isEmpty();
    }

    @Test
    void growth_neverShrinks_whenTrafficFalls() {
        windows.open(1);
        for (int round = 0; round < 3; round++) {
            busyRound(1);
        }
        int grown = windows.streamWindow(1);
        int connection = windows.connectionWindow();
        assertThat(grown).isEqualTo(8 * STREAM);

        for (int round = 0; round < 3; round++) {
            long ping = probe(1);
            flowAndTake(1, 100);
            assertThat(windows.onPingAck(ping)).isEmpty();
        }
        assertThat(windows.connectionWindow()).isEqualTo(connection);
        windows.open(3);
        int withThree = windows.connectionWindow();
        assertThat(withThree).as("2 x (2 MiB + 256 KiB)").isEqualTo(2 * (grown + STREAM));
        windows.close(3);

        assertThat(windows.streamWindow(1)).isEqualTo(grown);
        assertThat(windows.connectionWindow()).as("not shrunk by the close").isEqualTo(withThree);
    }

    @Test
    void growth_twoStreamsAtTheirCap_takeTheConnectionToItsCap_andAThirdStreamDoesNotGrowPastIt() {
        windows.open(1);
        windows.open(3);
        growToCap(1);
        growToCap(3);
        assertThat(windows.connectionWindow()).isEqualTo(V2Limits.MAX_CONNECTION_WINDOW);

        assertThat(windows.open(5)).as("2 x (32 MiB + 256 KiB) is past the cap").isEmpty();
        assertThat(busyRound(5)).isEmpty();
        assertThat(windows.streamWindow(5)).isEqualTo(STREAM);
        assertThat(windows.connectionWindow()).isEqualTo(V2Limits.MAX_CONNECTION_WINDOW);
    }

    @Test
    void growth_secondStreamNearTheConnectionCap_growsOnlyToTheRoomLeft() {
        windows.open(1);
        windows.open(3);
        growToCap(1);
        // stream 3 at 8 MiB; then 2 x (16 + 16) = 64 MiB: it may still reach 16 MiB, exactly
        for (int round = 0; round < 5; round++) {
            busyRound(3);
        }
        assertThat(windows.streamWindow(3)).isEqualTo(8 * MIB);
        windows.open(5); // 16 + 8 + 0.25 MiB open: stream 3 has room for 32 - 16.25 = 15.75 MiB

        long ping = probe(3);
        flowAndTake(3, 4 * MIB + 1);
        List<WindowCredit> credits = windows.onPingAck(ping);

        assertThat(windows.streamWindow(3)).isEqualTo(16 * MIB - STREAM);
        assertThat(credits)
                .containsExactly(
                        new WindowCredit(3, 8 * MIB - STREAM),
                        new WindowCredit(0, V2Limits.MAX_CONNECTION_WINDOW - (2 * (16 * MIB + 8 * MIB + STREAM))));
        assertThat(windows.connectionWindow()).isEqualTo(V2Limits.MAX_CONNECTION_WINDOW);
    }

    /** Opens streams 1 and 3 and fills both windows, nothing taken: half the connection's is left. */
    private void twoFullStreams() {
        windows.open(1);
        windows.open(3);
        windows.onData(1, STREAM);
        windows.onData(3, STREAM);
    }

    /** Lets DATA flow on {@code id} past the probe interval and returns the probe's PING payload. */
    private long probe(int id) {
        ticker.advance(V2Limits.RTT_PROBE_INTERVAL_NANOS, TimeUnit.NANOSECONDS);
        windows.onData(id, 0);
        return windows.pingDue().orElseThrow();
    }

    /** One probe during which {@code id}'s consumer takes one byte more than half its window. */
    private List<WindowCredit> busyRound(int id) {
        long ping = probe(id);
        flowAndTake(id, windows.streamWindow(id) / 2 + 1);
        return windows.onPingAck(ping);
    }

    /** Grows {@code id}'s window to the cap with as many probes as it takes. */
    private void growToCap(int id) {
        for (int round = 0; round < 20 && windows.streamWindow(id) < V2Limits.MAX_STREAM_WINDOW; round++) {
            busyRound(id);
        }
        assertThat(windows.streamWindow(id)).isEqualTo(V2Limits.MAX_STREAM_WINDOW);
    }

    /**
     * The peer sends {@code bytes} on {@code id} in frames of at most a frame's payload within its
     * credit, spending the WINDOW_UPDATEs it gets back, and the consumer takes each frame at once.
     */
    private void flowAndTake(int id, long bytes) {
        while (bytes > 0) {
            long credit = Math.min(windows.streamAvailable(id), windows.connectionAvailable());
            int n = (int) Math.min(Math.min(bytes, V2Limits.MAX_FRAME_PAYLOAD), credit);
            assertThat(n).as("the peer has credit").isPositive();
            assertThat(windows.onData(id, n)).isEmpty();
            windows.consumed(id, n);
            bytes -= n;
        }
    }
}
