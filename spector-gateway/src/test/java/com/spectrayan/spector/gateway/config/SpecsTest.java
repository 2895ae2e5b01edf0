package com.spectrayan.spector.gateway.config;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.gateway.ForwarderSpec;
import com.spectrayan.spector.cluster.gateway.TransportSpec;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The mapping of the settings onto the forwarder's and the transport's specs. */
final class SpecsTest {
    private static final long MIB = 1024L * 1024;

    private static GatewaySettings settings(Map<String, String> extra) {
        Map<String, String> props = new HashMap<>();
        props.put("spector.cell.role", "gateway");
        props.put("spector.cell.ring-members", "owner-0");
        props.put("spector.security.enabled", "false");
        props.putAll(extra);
        return GatewaySettings.load(null, Map.of(), props);
    }

    @Test
    void forwarder_documentedDefaults_areTheForwardersDefaults() {
        assertThat(Specs.forwarder(settings(Map.of())))
                .as("owner-timeout 10s x (retry-max 2 + 1) is the 30 s default head deadline")
                .isEqualTo(ForwarderSpec.defaults());
    }

    @Test
    void forwarder_everyKey_isCarriedOver() {
        ForwarderSpec spec = Specs.forwarder(settings(Map.of(
                "spector.routing.gateway.retry-max", "1",
                "spector.routing.gateway.max-buffered-body-bytes", "4096",
                "spector.routing.gateway.replay-buffer-bytes", "2048",
                "spector.routing.gateway.request-buffer-bytes", "1024",
                "spector.routing.gateway.owner-timeout", "3s",
                "spector.routing.gateway.stream-idle-timeout", "7m")));

        assertThat(spec.retryMax()).isEqualTo(1);
        assertThat(spec.maxBodyBytes()).isEqualTo(4096);
        assertThat(spec.replayBufferBytes()).isEqualTo(2048);
        assertThat(spec.requestBufferBytes()).isEqualTo(1024);
        assertThat(spec.ownerTimeout()).isEqualTo(Duration.ofSeconds(3));
        assertThat(spec.headDeadline()).isEqualTo(Duration.ofSeconds(6));
        assertThat(spec.streamIdleTimeout()).isEqualTo(Duration.ofMinutes(7));
        assertThat(spec.responseIdleTimeout())
                .as("no key sets it")
                .isEqualTo(ForwarderSpec.DEFAULT_RESPONSE_IDLE_TIMEOUT);
    }

    /** The request buffer is read into the replay copy: never larger than the replay buffer. */
    @ParameterizedTest(name = "request buffer {0}, replay buffer {1}: {2}")
    @CsvSource({"65536, 1048576, 65536", "2048, 2048, 2048", "2049, 2048, 2048", "1073741824, 0, 0", "0, 4096, 0"})
    void forwarder_requestBuffer_isCappedByTheReplayBuffer(String requestBuffer, String replayBuffer, long expected) {
        ForwarderSpec spec = Specs.forwarder(settings(Map.of(
                "spector.routing.gateway.request-buffer-bytes", requestBuffer,
                "spector.routing.gateway.replay-buffer-bytes", replayBuffer)));

        assertThat(spec.requestBufferBytes()).isEqualTo(expected);
    }

    @ParameterizedTest(name = "retry-max {0} at owner-timeout {1}: head deadline {2}")
    @CsvSource({"0, 4s, PT4S", "1, 4s, PT8S", "2, 4s, PT12S", "2, 8760h, PT26280H"})
    void forwarder_headDeadline_isOwnerTimeoutTimesAttempts(String retryMax, String ownerTimeout, Duration expected) {
        ForwarderSpec spec = Specs.forwarder(settings(Map.of(
                "spector.routing.gateway.retry-max", retryMax,
                "spector.routing.gateway.owner-timeout", ownerTimeout)));

        assertThat(spec.headDeadline())
                .as("every attempt may use its whole owner timeout")
                .isEqualTo(expected);
    }

    @ParameterizedTest(name = "replay buffer {0} MiB: budget {1} MiB")
    @CsvSource({"0, 64", "1, 64", "64, 64", "65, 65", "512, 512"})
    void forwarder_replayBudget_isTheDefaultOrOneReplayBufferWhenLarger(long bufferMib, long budgetMib) {
        ForwarderSpec spec = Specs.forwarder(settings(Map.of(
                "spector.routing.gateway.max-buffered-body-bytes", String.valueOf(RoutingSettings.MAX_BODY_BYTES_LIMIT),
                "spector.routing.gateway.replay-buffer-bytes", String.valueOf(bufferMib * MIB))));

        assertThat(spec.replayBudgetBytes())
                .as("64 MiB, and never less than one request's replay buffer")
                .isEqualTo(budgetMib * MIB);
    }

    @Test
    void transport_noKeySetsIt_isTheTransportsDefaults() {
        assertThat(Specs.transport(settings(Map.of()))).isEqualTo(TransportSpec.defaults());
    }
}
