package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.owner.ReferenceOwner;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code spector owner}'s admin token: what it launches, over a real loopback socket. */
final class OwnerCommandTest {
    private static final String TOKEN = "owner-command-admin-token-0123456789";
    private static final Duration TIMEOUT = Duration.ofSeconds(10);

    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(TIMEOUT).build();

    /** Parses {@code spector owner ARGS} as the CLI does and returns the command, not yet launched. */
    private static OwnerCommand parse(String... args) {
        OwnerCommand command = new OwnerCommand();
        new CommandLine(command).parseArgs(args);
        return command;
    }

    private int status(ReferenceOwner owner, String path, String... authorization) throws Exception {
        HttpRequest.Builder b =
                HttpRequest.newBuilder(owner.baseUri().resolve(path)).timeout(TIMEOUT);
        for (String a : authorization) {
            b.header("Authorization", a);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Test
    void launch_withAnAdminToken_asksEveryAdminCallerForIt() throws Exception {
        OwnerCommand command = parse("--node-id", "owner-0", "--port", "0", "--admin-token", TOKEN);

        // What 'spector owner' runs until SIGTERM, closed here instead.
        try (AutoCloseable launched = command.launch()) {
            ReferenceOwner owner = (ReferenceOwner) launched;

            assertThat(status(owner, "/admin/stats"))
                    .as("loopback without the token")
                    .isEqualTo(401);
            assertThat(status(owner, "/admin/stats", "Bearer " + TOKEN)).isEqualTo(200);
            assertThat(status(owner, "/health")).isEqualTo(200);
        }
    }

    @Test
    void launch_withAnEmptyAdminToken_hasNone_andAnswersLoopbackAdminCallers() throws Exception {
        OwnerCommand command = parse("--node-id", "owner-0", "--port", "0", "--admin-token", "");

        try (AutoCloseable launched = command.launch()) {
            assertThat(status((ReferenceOwner) launched, "/admin/stats"))
                    .as("an empty value (an empty variable) is no token")
                    .isEqualTo(200);
        }
    }

    @Test
    void owner_withAnAdminTokenOutsideItsBounds_isExit2WithoutShowingIt() {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String token = "Q".repeat(257);

        int code = SpectorCli.run(
                new PrintWriter(out, true),
                new PrintWriter(err, true),
                "owner",
                "--node-id",
                "owner-0",
                "--port",
                "0",
                "--admin-token",
                token);

        assertThat(code).isEqualTo(2);
        assertThat(err.toString())
                .contains("--admin-token: 257 bytes (expected: 16..256 bytes)")
                .doesNotContain("QQQQ");
    }

    @Test
    void adminToken_defaultsToTheOwnerImagesVariable() throws Exception {
        CommandLine.Option option =
                OwnerCommand.class.getDeclaredField("adminToken").getAnnotation(CommandLine.Option.class);

        assertThat(option.names()).containsExactly("--admin-token");
        assertThat(option.defaultValue())
                .as("picocli reads the variable when it parses")
                .isEqualTo("${env:SPECTOR_OWNER_ADMIN_TOKEN}");
        assertThat(OwnerCommand.ADMIN_TOKEN_ENV)
                .as("the variable OwnerMain reads")
                .isEqualTo("SPECTOR_OWNER_ADMIN_TOKEN");
    }
}
