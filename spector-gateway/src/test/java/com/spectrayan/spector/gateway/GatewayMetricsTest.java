package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The JVM's meters are bound after the gateway listens, not before (issue 14: about 40 ms of a
 * start): a scrape that comes first binds them itself, and binding twice adds nothing.
 */
final class GatewayMetricsTest {
    @Test
    void jvmMeters_notBoundAtConstruction_boundByTheFirstScrape_once() {
        GatewayMetrics metrics = new GatewayMetrics();

        assertThat(metrics.registry().scrape())
                .as("constructed: the gateway's own meters only")
                .contains("spector_gateway_send_timeouts_total")
                .doesNotContain("jvm_memory_used_bytes");

        assertThat(metrics.scrape())
                .contains("jvm_memory_used_bytes")
                .contains("process_cpu_usage")
                .contains("process_uptime_seconds");
        int bound = metrics.registry().getMeters().size();

        metrics.bindJvm();
        assertThat(metrics.registry().getMeters())
                .as("bound once: as many meters as after the first scrape")
                .hasSize(bound);
    }

    @Test
    void bindJvm_afterStart_thenScrape_hasTheJvmMeters() {
        GatewayMetrics metrics = new GatewayMetrics();
        metrics.bindJvm();
        int bound = metrics.registry().getMeters().size();

        assertThat(metrics.scrape()).contains("jvm_memory_used_bytes");
        assertThat(metrics.registry().getMeters()).hasSize(bound);
    }
}
