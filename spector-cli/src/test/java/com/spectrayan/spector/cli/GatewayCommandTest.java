package com.spectrayan.spector.cli;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spector gateway}'s start without picocli ({@link GatewayCommand#plain}): which argument
 * lists take it, and that a failure there reads and exits as it does through picocli.
 */
final class GatewayCommandTest {
    @Test
    void plain_gatewayAloneOrWithConfig_isTakenWithoutPicocli() {
        assertThat(GatewayCommand.plain("gateway"))
                .isNotNull()
                .extracting(c -> c.config)
                .isNull();
        assertThat(GatewayCommand.plain("gateway", "--config", "a.yaml"))
                .isNotNull()
                .extracting(c -> c.config)
                .isEqualTo(Path.of("a.yaml"));
        assertThat(GatewayCommand.plain("gateway", "--config=b.yaml"))
                .isNotNull()
                .extracting(c -> c.config)
                .isEqualTo(Path.of("b.yaml"));
    }

    @Test
    void plain_anythingElse_isLeftToPicocli() {
        assertThat(GatewayCommand.plain()).isNull();
        assertThat(GatewayCommand.plain("owner")).isNull();
        assertThat(GatewayCommand.plain("gateway", "--help")).isNull();
        assertThat(GatewayCommand.plain("gateway", "-V")).isNull();
        assertThat(GatewayCommand.plain("gateway", "--config")).isNull();
        assertThat(GatewayCommand.plain("gateway", "--config", "-h")).isNull();
        assertThat(GatewayCommand.plain("gateway", "--config", "a.yaml", "extra"))
                .isNull();
        assertThat(GatewayCommand.plain("gateway", "--configs", "a.yaml")).isNull();
        assertThat(GatewayCommand.plain("gateway", "a.yaml")).isNull();
        assertThat(GatewayCommand.plain("gateway", "--config", "bad\u0000path")).isNull();
    }

    @Test
    void runPlain_badSettings_sameMessageAndExitCodeAsThroughPicocli(@TempDir Path dir) {
        String missing = dir.resolve("missing.yaml").toString();
        StringWriter plainErr = new StringWriter();
        int plainCode = SpectorCli.runPlain(
                requireNonNull(GatewayCommand.plain("gateway", "--config", missing)), new PrintWriter(plainErr, true));
        StringWriter picocliErr = new StringWriter();
        int picocliCode = SpectorCli.run(
                new PrintWriter(new StringWriter(), true),
                new PrintWriter(picocliErr, true),
                "gateway",
                "--config",
                missing);

        assertThat(plainCode).isEqualTo(picocliCode).isEqualTo(ErrorCode.BAD_REQUEST.cliExit());
        assertThat(plainErr.toString()).isEqualTo(picocliErr.toString()).contains("missing.yaml");
    }

    /**
     * Settings the gateway refuses are the operator's to fix, not an internal error: every refused
     * key on a line of its own (key, value, what was expected), no exception class, and exit code 2,
     * as docs/OPERATIONS.md says. Before, it printed {@code spector: INTERNAL:
     * com.spectrayan...SettingsException: ...} and exited 1.
     */
    @Test
    void badSettings_areListedKeyByKey_andExitLikeBadRequest(@TempDir Path dir) throws Exception {
        Path yaml = dir.resolve("gateway.yaml");
        Files.writeString(yaml, """
                spector:
                  cell:
                    role: gateway
                    ring-members: owner-0
                  security:
                    jwt:
                      hmac-secret: 0123456789abcdef0123456789abcdef
                  server:
                    port: 99999
                    transport: kqueue
                """);
        StringWriter err = new StringWriter();

        int code = SpectorCli.runPlain(
                requireNonNull(GatewayCommand.plain("gateway", "--config", yaml.toString())),
                new PrintWriter(err, true));

        assertThat(code).isEqualTo(2);
        assertThat(err.toString().lines())
                .containsExactly(
                        "spector: the gateway settings are refused:",
                        "spector.server.port: 99999 (expected: a port in 0..65535 (0: any free port))",
                        "spector.server.transport: kqueue (expected: auto, io_uring, epoll or nio)");
    }

    @Test
    void commandLine_namedSubcommand_buildsThatOneAlone() {
        assertThat(SpectorCli.commandLine("route", "--help").getSubcommands()).containsOnlyKeys("route");
        assertThat(SpectorCli.commandLine("--help").getSubcommands())
                .containsOnlyKeys("route", "gateway", "owner", "worker", "status", "ring", "move", "demo", "token");
        assertThat(SpectorCli.commandLine("nonsense").getSubcommands()).hasSize(9);
        assertThat(SpectorCli.commandLine("ring", "show").getSubcommands()).containsOnlyKeys("ring");
    }
}
