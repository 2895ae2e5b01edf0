package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.gateway.GatewayServer;
import com.spectrayan.spector.gateway.auth.Claims;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code spector status --gateway URL} against a real gateway on loopback. */
final class StatusCommandTest {
    private static final String SECRET = "status-test-secret-0123456789-0123456789";
    private static GatewayServer gateway;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    @BeforeAll
    static void start() {
        gateway = GatewayServer.start(GatewaySettings.load(
                null,
                Map.of(),
                Map.of(
                        "spector.cell.role", "gateway",
                        "spector.cell.id", "status-cell",
                        "spector.cell.ring-members", "owner-0=http://127.0.0.1:1,owner-1=http://127.0.0.1:2",
                        "spector.cell.ring-epoch", "7",
                        "spector.server.port", "0",
                        "spector.server.host", "127.0.0.1",
                        "spector.routing.redis.enabled", "false",
                        "spector.security.jwt.hmac-secret", SECRET)));
    }

    @AfterAll
    static void stop() {
        gateway.close();
    }

    private int run(String... args) {
        return SpectorCli.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
    }

    private static String base() {
        return "http://127.0.0.1:" + gateway.port();
    }

    @Test
    void statusGateway_withAToken_printsRingCacheRedisAndWorkers(@TempDir Path dir) throws IOException {
        Path token = dir.resolve("token");
        Files.writeString(
                token,
                TokenCommand.mint(SECRET, "ops", Duration.ofMinutes(5), List.of(Claims.ADMIN_SCOPE)),
                StandardCharsets.UTF_8);

        int code = run("status", "--gateway", base(), "--token-file", token.toString());

        assertThat(code).as("exit code; stderr: %s", err).isZero();
        assertThat(out.toString())
                .contains("cell status-cell")
                .contains("ring       epoch 7, 2 members")
                .contains("owner-0")
                .contains("http://127.0.0.1:2")
                .contains("L2 off")
                .contains("redis      off")
                .containsPattern("exchanges  0 in flight on [1-9][0-9]* client connections")
                .contains("workers    0 connected, 0 active relays");
    }

    @Test
    void statusGateway_json_printsTheEndpointsBody(@TempDir Path dir) throws IOException {
        Path token = dir.resolve("token");
        Files.writeString(
                token,
                TokenCommand.mint(SECRET, "ops", Duration.ofMinutes(5), List.of(Claims.ADMIN_SCOPE)),
                StandardCharsets.UTF_8);

        assertThat(run("status", "--gateway", base(), "--token-file", token.toString(), "--json"))
                .isZero();
        assertThat(out.toString()).startsWith("{\"cell\":\"status-cell\"");
    }

    /** The status view is the cell's: a tenant's token is refused; {@code spector token --scope} mints one that reads it. */
    @Test
    void statusGateway_aTokenWithoutTheAdminScope_exitsForbidden_andTokenScopeMintsOneThatReads(@TempDir Path dir)
            throws IOException {
        Path secret = Files.writeString(dir.resolve("secret"), SECRET, StandardCharsets.UTF_8);
        Path tenantToken = dir.resolve("tenant-token");
        assertThat(run("token", "--secret-file", secret.toString(), "--tenant", "acme"))
                .isZero();
        Files.writeString(tenantToken, out.toString().strip(), StandardCharsets.UTF_8);
        out.getBuffer().setLength(0);

        assertThat(run("status", "--gateway", base(), "--token-file", tenantToken.toString()))
                .as("FORBIDDEN's CLI exit")
                .isEqualTo(3);
        assertThat(err.toString()).contains("403").contains("--scope spector:admin");

        Path adminToken = dir.resolve("admin-token");
        assertThat(run("token", "--secret-file", secret.toString(), "--tenant", "ops", "--scope", "spector:admin"))
                .isZero();
        Files.writeString(adminToken, out.toString().strip(), StandardCharsets.UTF_8);
        out.getBuffer().setLength(0);
        assertThat(run("status", "--gateway", base(), "--token-file", adminToken.toString()))
                .as("stderr: %s", err)
                .isZero();
        assertThat(out.toString()).contains("cell status-cell");
        assertThat(run("token", "--secret-file", secret.toString(), "--tenant", "ops", "--scope", "a\"b"))
                .as("a scope character RFC 6749 §3.3 does not allow")
                .isNotZero();
    }

    @Test
    void statusGateway_withoutAToken_exitsUnauthenticatedWithAHint() {
        int code = run("status", "--gateway", base());

        assertThat(code).as("UNAUTHENTICATED's CLI exit").isEqualTo(3);
        assertThat(err.toString()).contains("UNAUTHENTICATED").contains("--token-file");
    }

    @Test
    void statusGateway_nobodyListening_exitsWithTheTransportCode() throws IOException {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort();
        }
        int code = run("status", "--gateway", "http://127.0.0.1:" + closedPort);

        assertThat(code).as("a transport failure's CLI exit").isEqualTo(1);
        assertThat(err.toString()).contains("no answer from the gateway");
    }

    @Test
    void statusWorkerAdmin_printsTheWorkersIdAndTargets_fromItsLoopbackAdminPort() throws Exception {
        try (WorkerDaemon worker = WorkerDaemon.start(
                URI.create("ws://127.0.0.1:" + gateway.port() + "/uplink"),
                "w-status",
                "no-token-needed-for-the-admin-port",
                Map.of("app", URI.create("http://127.0.0.1:1")),
                0)) {
            int code = run("status", "--worker-admin", Integer.toString(worker.adminPort()));

            assertThat(code).as("exit code; stderr: %s", err).isZero();
            assertThat(out.toString()).contains("worker        w-status").contains("targets       app");
        }
    }

    @Test
    void everyCommandClass_isReachableFromTheCommandLine() {
        for (String command : new String[] {"route", "gateway", "owner", "worker", "status", "demo", "token"}) {
            assertThat(run(command, "--help"))
                    .as("'spector %s --help' exits 0; stderr: %s", command, err)
                    .isZero();
        }
    }

    @Test
    void status_gatewayAndWorkerAdminTogether_isAUsageError() {
        assertThat(run("status", "--gateway", base(), "--worker-admin", "7079")).isEqualTo(2);
        assertThat(err.toString()).contains("mutually exclusive");
    }
}
