package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The class-data training run reaches every path it means to load: each probe, the scrape, and
 * both forwards through edge auth to its stub owner answer 200 (a request that failed would train
 * the error path instead, and {@link GatewayTraining#run()} refuses it).
 */
final class GatewayTrainingTest {
    @Test
    void run_probesScrapeAndAuthorisedForwards_allAnswer200() throws Exception {
        try (GatewayTraining training = GatewayTraining.run()) {
            assertThat(training.answers())
                    .containsExactly(
                            "GET /actuator/health 200",
                            "GET /actuator/health/readiness 200",
                            "GET /actuator/health/liveness 200",
                            "GET /actuator/prometheus 200",
                            "GET /api/v1/namespaces/training/echo 200",
                            "POST /api/v1/namespaces/training/echo 200");
        }
    }
}
