package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.channel.epoll.Epoll;
import io.netty.util.internal.PlatformDependent;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The class-data training run reaches every path it means to load: each probe, the scrape, and
 * both forwards through edge auth to its stub owner answer 200 (a request that failed would train
 * the error path instead, and {@link GatewayTraining#run()} refuses it); and it copies the native
 * library Netty loaded for this machine, byte for byte, under the name Netty looks for on
 * {@code java.library.path}.
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

    @Test
    void exportNativeLibraries_copiesTheTransportLibrariesNettyLoads_underTheNamesNettyAsksFor(@TempDir Path dir)
            throws Exception {
        assumeTrue(Epoll.isAvailable(), "epoll: Linux with Netty's native transport on the class path");
        Path into = dir.resolve("made/by/the/export");

        var copied = GatewayTraining.exportNativeLibraries(into);

        String arch = PlatformDependent.normalizedArch();
        for (String library : List.of(
                System.mapLibraryName("netty_transport_native_epoll_" + arch),
                System.mapLibraryName("netty_transport_native_io_uring42_" + arch))) {
            assertThat(copied).contains(library);
            try (InputStream in = Objects.requireNonNull(
                    GatewayTraining.class.getClassLoader().getResourceAsStream("META-INF/native/" + library))) {
                assertThat(Files.readAllBytes(into.resolve(library))).isEqualTo(in.readAllBytes());
            }
        }
        try (var files = Files.list(into)) {
            assertThat(files.map(f -> f.getFileName().toString())).containsExactlyInAnyOrderElementsOf(copied);
        }
    }
}
