package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.spectrayan.spector.testkit.ProcessLogs;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gateway image's one jar ({@code spector-gateway-*-image.jar}, made by {@code package}; its
 * path comes in {@code spector.gateway.image.jar}) run as deploy/docker/Dockerfile runs it: the
 * class-data training first ({@link GatewayTraining}, which must exit 0 and list its classes, then
 * the static dump of those, which must leave the archive), then
 * {@link GatewayMain} mapping that archive, configured by {@code SPECTOR_*} variables and a YAML
 * file. What a jar merged from 56 must still do: read its settings from both, answer health and a
 * Prometheus scrape with the JVM's meters (Micrometer's binders), refuse a request without a token
 * with a problem (Nimbus, Jackson), log through slf4j-simple (found as a service provider), never
 * start {@code java.util.logging} (SmallRye Config's JBoss Logging and Caffeine's
 * {@code System.Logger} both go to SLF4J: {@code Environment.processDefaults}, issue 14), and carry
 * nothing of another process.
 */
class ImageJarIT {
    /** The bound on the training, the start, and each answer. */
    static final Duration BOUND = Duration.ofSeconds(60);

    private static final Pattern LISTENING = Pattern.compile("gateway listening on /127\\.0\\.0\\.1:(\\d+)");

    @Test
    void theImagesMain_exits1_whenAPortIsTaken_ratherThanHangWithoutServing(@TempDir Path dir) throws Exception {
        Path jar = Path.of(System.getProperty("spector.gateway.image.jar", "the-jar-package-makes"));
        assumeTrue(Files.isRegularFile(jar), "the image's jar is made by package: " + jar);
        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            Path log = dir.resolve("gateway.log");
            ProcessBuilder pb = new ProcessBuilder(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-XX:+UseSerialGC",
                    "-Xmx128m",
                    "-cp",
                    jar.toString(),
                    GatewayMain.class.getName());
            pb.environment().put("SPECTOR_CELL_ROLE", "gateway");
            pb.environment().put("SPECTOR_CELL_RING_MEMBERS", "owner-0=http://127.0.0.1:1");
            pb.environment().put("SPECTOR_SERVER_HOST", "127.0.0.1");
            pb.environment().put("SPECTOR_SERVER_PORT", "0");
            pb.environment().put("SPECTOR_SERVER_PEER_PORT", "-1");
            pb.environment().put("SPECTOR_SERVER_ADMIN_PORT", String.valueOf(taken.getLocalPort()));
            pb.environment().put("SPECTOR_ROUTING_REDIS_ENABLED", "false");
            pb.environment().put("SPECTOR_SECURITY_ENABLED", "false");
            Process p =
                    pb.redirectErrorStream(true).redirectOutput(log.toFile()).start();
            try {
                assertThat(p.waitFor(BOUND.toSeconds(), TimeUnit.SECONDS))
                        .as(
                                "the process ends (its client port was bound and its loops run when the admin"
                                        + " port's bind failed): %s",
                                ProcessLogs.output(log))
                        .isTrue();
            } finally {
                p.destroyForcibly();
            }
            assertThat(p.exitValue()).isEqualTo(1);
            assertThat(ProcessLogs.output(log))
                    .contains("spector gateway: cannot start:")
                    .contains("Address already in use");
        }
    }

    @Test
    void theImagesJar_trainsItsArchive_thenServesFromSettingsInTheEnvironment(@TempDir Path dir) throws Exception {
        Path jar = Path.of(System.getProperty("spector.gateway.image.jar", "the-jar-package-makes"));
        assumeTrue(Files.isRegularFile(jar), "the image's jar is made by package: " + jar);
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            assertThat(zip.stream().map(e -> e.getName()))
                    .as("the gateway's closure only (DockerfileRulesTest's rule for the image)")
                    .anyMatch(n -> n.startsWith("com/spectrayan/spector/gateway/"))
                    .noneMatch(n -> n.startsWith("com/spectrayan/spector/owner/")
                            || n.startsWith("com/spectrayan/spector/worker/")
                            || n.startsWith("com/spectrayan/spector/cli/")
                            || n.startsWith("com/spectrayan/spector/testkit/"));
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Path archive = dir.resolve("gateway.jsa");
        Path nativeDir = dir.resolve("native");

        Path training = dir.resolve("training.log");
        Path classList = dir.resolve("gateway.classes");
        run(
                "the training",
                training,
                java,
                "-XX:DumpLoadedClassList=" + classList,
                "-XX:+UseSerialGC",
                "-Xmx256m",
                "-Dspector.training.native-dir=" + nativeDir,
                "-cp",
                jar.toString(),
                GatewayTraining.class.getName());
        run(
                "the dump",
                dir.resolve("dump.log"),
                java,
                "-XX:+UseG1GC", // as the Dockerfile's dump: heap objects for a G1 runtime, skipped by Serial
                "-Xmx256m",
                "-Xshare:dump",
                "-XX:SharedClassListFile=" + classList,
                "-XX:SharedArchiveFile=" + archive,
                "-cp",
                jar.toString());
        assertThat(Files.size(archive)).as("the archive it wrote").isPositive();

        int admin;
        try (ServerSocket s = new ServerSocket(0)) {
            admin = s.getLocalPort();
        }
        Path yaml = dir.resolve("gateway.yaml");
        Files.writeString(yaml, "spector:\n  server:\n    admin-port: " + admin + "\n");
        Path log = dir.resolve("gateway.log");
        Path classes = dir.resolve("classes.log");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xlog:class+load=info:file=" + classes,
                "-XX:SharedArchiveFile=" + archive,
                "-Xshare:on", // fails to start, not silently on, when the archive does not match the jar
                "-XX:+UseSerialGC",
                "-Xmx256m",
                "-Djava.library.path=" + nativeDir,
                "-Dio.netty.leakDetection.level=PARANOID",
                "-cp",
                jar.toString(),
                GatewayMain.class.getName(),
                yaml.toString()));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().put("SPECTOR_CELL_ROLE", "gateway");
        pb.environment().put("SPECTOR_CELL_RING_MEMBERS", "owner-0=http://127.0.0.1:1");
        pb.environment().put("SPECTOR_SERVER_HOST", "127.0.0.1");
        pb.environment().put("SPECTOR_SERVER_PORT", "0");
        pb.environment().put("SPECTOR_SERVER_PEER_PORT", "-1");
        pb.environment().put("SPECTOR_ROUTING_REDIS_ENABLED", "false");
        pb.environment().put("SPECTOR_SECURITY_JWT_HMAC_SECRET", Cell.SECRET);
        Process gateway =
                pb.redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            int port = ProcessLogs.awaitPort(gateway, log, LISTENING, BOUND);
            RawClient.Response health = RawClient.exchange(port, "GET /actuator/health HTTP/1.1\r\nHost: gw\r\n\r\n");
            assertThat(health.status()).isEqualTo(200);
            assertThat(health.text()).contains("\"status\":\"UP\"");
            RawClient.Response scrape =
                    RawClient.exchange(admin, "GET /actuator/prometheus HTTP/1.1\r\nHost: gw\r\n\r\n");
            assertThat(scrape.status()).as("the admin port, from the YAML file").isEqualTo(200);
            assertThat(scrape.text())
                    .as("the JVM's and the gateway's meters")
                    .contains("jvm_memory_used_bytes")
                    .contains("spector_eventloop_pending_tasks");
            RawClient.Response refused =
                    RawClient.exchange(port, "GET /api/v1/namespaces/ns-1/items HTTP/1.1\r\nHost: gw\r\n\r\n");
            assertThat(refused.status())
                    .as("edge auth from the HMAC secret in the environment")
                    .isEqualTo(401);
            assertThat(refused.header("content-type")).isEqualTo("application/problem+json");
            assertThat(ProcessLogs.output(log))
                    .as("slf4j-simple's provider found: the gateway's own lines are logged")
                    .contains("gateway listening on")
                    .doesNotContain("No SLF4J providers")
                    .doesNotContain("LEAK:");
            assertThat(Files.readString(classes))
                    .as("java.util.logging never started, no logger and no root (its start was 15 ms of the"
                            + " gateway's; java.management only looks its LogManager class up)")
                    .contains("com.spectrayan.spector.gateway.GatewayServer source: shared objects file\n")
                    .doesNotContain("java.util.logging.Logger ")
                    .doesNotContain("java.util.logging.LogManager$RootLogger ");
        } finally {
            gateway.destroy();
            if (!gateway.waitFor(BOUND.toSeconds(), TimeUnit.SECONDS)) {
                gateway.destroyForcibly();
            }
        }
        assertThat(gateway.exitValue())
                .as("a SIGTERM drains and stops (143 is the signal's own)")
                .isIn(0, 143);
    }

    /** Runs {@code command} to its end (within {@link #BOUND}), its output in {@code log}; it must exit 0. */
    private static void run(String what, Path log, String... command) throws Exception {
        Process p = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        try {
            assertThat(p.waitFor(BOUND.toSeconds(), TimeUnit.SECONDS))
                    .as("%s ends within %s", what, BOUND)
                    .isTrue();
        } finally {
            p.destroyForcibly();
        }
        assertThat(p.exitValue())
                .as("%s's exit (its output: %s)", what, ProcessLogs.output(log))
                .isZero();
    }
}
