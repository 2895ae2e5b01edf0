package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.GatewayServer;
import com.spectrayan.spector.gateway.auth.Claims;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spector worker --uplinks N} against a real gateway on loopback: the worker keeps N links,
 * and {@code spector status --gateway} lists each of them under the one worker.
 */
final class WorkerLinksCommandTest {
    private static final String SECRET = "links-test-secret-0123456789-0123456789";
    private static final String TOKEN = "links-worker-token-0123456789";
    private static final Duration WAIT = Duration.ofSeconds(20);

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    @Test
    void uplinksOutside1To8_areRefused(@TempDir Path dir) throws Exception {
        Path tokenFile = Files.writeString(dir.resolve("t"), TOKEN, StandardCharsets.UTF_8);
        for (String n : new String[] {"0", "9"}) {
            int code = SpectorCli.run(
                    new PrintWriter(out, true),
                    new PrintWriter(err, true),
                    "worker",
                    "--gateway",
                    "ws://127.0.0.1:1/uplink",
                    "--id",
                    "wl",
                    "--token-file",
                    tokenFile.toString(),
                    "--uplinks",
                    n,
                    "--target",
                    "app=http://127.0.0.1:1");
            assertThat(code).as("--uplinks %s: BAD_REQUEST's exit", n).isEqualTo(2);
            assertThat(err.toString()).contains("uplinks").contains("1..8");
        }
    }

    @Test
    void workerWithThreeUplinks_isOneWorkerWithThreeLinks_inTheGatewaysStatus(@TempDir Path dir) throws Exception {
        try (GatewayServer gateway = GatewayServer.start(GatewaySettings.load(
                null,
                Map.of(),
                Map.of(
                        "spector.cell.role", "gateway",
                        "spector.cell.id", "links-cell",
                        "spector.cell.ring-members", "owner-0=http://127.0.0.1:1",
                        "spector.server.port", "0",
                        "spector.server.host", "127.0.0.1",
                        "spector.routing.redis.enabled", "false",
                        "spector.security.jwt.hmac-secret", SECRET,
                        "spector.uplink.tokens", "wl=" + TokenHashes.sha256Hex(TOKEN))))) {
            Path tokenFile = Files.writeString(dir.resolve("worker-token"), TOKEN + "\n", StandardCharsets.UTF_8);
            WorkerCommand command = new WorkerCommand();
            new picocli.CommandLine(command)
                    .parseArgs(
                            "--gateway",
                            "ws://127.0.0.1:" + gateway.port() + "/uplink",
                            "--id",
                            "wl",
                            "--token-file",
                            tokenFile.toString(),
                            "--uplinks",
                            "3",
                            "--admin-port",
                            "-1",
                            "--target",
                            "app=http://127.0.0.1:1");
            // What 'spector worker' runs until SIGTERM, closed here instead.
            try (AutoCloseable worker = command.launch()) {
                WorkerDaemon daemon = (WorkerDaemon) worker;
                await("the worker's three links")
                        .atMost(WAIT)
                        .until(() -> daemon.connectedUplinks() == 3
                                && gateway.workerDirectory().links("wl").size() == 3);
                Path opsToken = Files.writeString(
                        dir.resolve("ops-token"),
                        TokenCommand.mint(SECRET, "ops", Duration.ofMinutes(5), List.of(Claims.ADMIN_SCOPE)),
                        StandardCharsets.UTF_8);
                int code = SpectorCli.run(
                        new PrintWriter(out, true),
                        new PrintWriter(err, true),
                        "status",
                        "--gateway",
                        "http://127.0.0.1:" + gateway.port(),
                        "--token-file",
                        opsToken.toString());
                assertThat(code).as("exit code; stderr: %s", err).isZero();
                assertThat(out.toString())
                        .contains("workers    1 connected")
                        .contains("    link 0 ")
                        .contains("    link 1 ")
                        .contains("    link 2 ")
                        .contains("from /127.0.0.1:");
            }
        }
    }
}
