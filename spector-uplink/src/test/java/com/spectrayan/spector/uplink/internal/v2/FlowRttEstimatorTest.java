package com.spectrayan.spector.uplink.internal.v2;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.FakeTicker;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The round-trip probe of the windows' growth (PROTOCOL.md section 9.5): PING at most once a second while DATA flows. */
final class FlowRttEstimatorTest {
    private final FakeTicker ticker = new FakeTicker();
    private final FlowRttEstimator rtt = new FlowRttEstimator(ticker);

    @Test
    void pingDue_noDataYet_isEmpty() {
        ticker.advance(Duration.ofSeconds(5));

        assertThat(rtt.pingDue()).isEmpty();
        assertThat(rtt.rttNanos()).isEqualTo(-1);
    }

    @Test
    void pingDue_firstData_probesAtOnceWithATaggedPayload() {
        rtt.dataReceived();

        OptionalLong ping = rtt.pingDue();

        assertThat(ping).isPresent();
        assertThat(ping.getAsLong() & 0xFFFF_FFFF_0000_0000L).isEqualTo(FlowRttEstimator.PING_TAG);
        assertThat(rtt.probing()).isTrue();
    }

    @Test
    void pingDue_probeInFlight_isEmpty() {
        rtt.dataReceived();
        rtt.pingDue();
        ticker.advance(Duration.ofSeconds(10));
        rtt.dataReceived();

        assertThat(rtt.pingDue()).isEmpty();
    }

    @Test
    void onPingAck_theProbesPayload_measuresTheRoundTrip() {
        rtt.dataReceived();
        long ping = rtt.pingDue().orElseThrow();
        ticker.advance(37_250, TimeUnit.MICROSECONDS);

        assertThat(rtt.onPingAck(ping)).isTrue();

        assertThat(rtt.rttNanos()).isEqualTo(37_250_000L);
        assertThat(rtt.probing()).isFalse();
        assertThat(rtt.onPingAck(ping)).as("answered once").isFalse();
    }

    @Test
    void onPingAck_anotherPayload_isIgnored() {
        rtt.dataReceived();
        long ping = rtt.pingDue().orElseThrow();

        assertThat(rtt.onPingAck(ping + 1)).isFalse();
        assertThat(rtt.onPingAck(0)).isFalse();

        assertThat(rtt.probing()).isTrue();
        assertThat(rtt.rttNanos()).isEqualTo(-1);
    }

    @Test
    void pingDue_oneNanoBeforeTheInterval_isEmpty_atTheInterval_probes() {
        rtt.dataReceived();
        long first = rtt.pingDue().orElseThrow();
        ticker.advance(1, TimeUnit.MILLISECONDS);
        rtt.onPingAck(first);
        rtt.dataReceived();

        ticker.advance(V2Limits.RTT_PROBE_INTERVAL_NANOS - TimeUnit.MILLISECONDS.toNanos(1) - 1, TimeUnit.NANOSECONDS);
        assertThat(rtt.pingDue())
                .as("interval less one nano since the last probe was sent")
                .isEmpty();

        ticker.advance(1, TimeUnit.NANOSECONDS);
        OptionalLong second = rtt.pingDue();
        assertThat(second).isPresent();
        assertThat(second.getAsLong()).isNotEqualTo(first);
    }

    @Test
    void pingDue_noDataSinceTheLastProbe_isEmptyUntilDataFlows() {
        rtt.dataReceived();
        rtt.onPingAck(rtt.pingDue().orElseThrow());
        ticker.advance(Duration.ofSeconds(3));

        assertThat(rtt.pingDue()).isEmpty();

        rtt.dataReceived();
        assertThat(rtt.pingDue()).isPresent();
    }
}
