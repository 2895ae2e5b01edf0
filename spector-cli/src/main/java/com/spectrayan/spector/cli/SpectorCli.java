package com.spectrayan.spector.cli;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The entry point of {@code bin/spector}. Exit codes come from the error contract: a command that
 * fails with an {@link ErrorCode} exits with that code's {@link ErrorCode#cliExit()}; a usage
 * error exits like BAD_REQUEST.
 */
@Command(
        name = "spector",
        mixinStandardHelpOptions = true,
        versionProvider = SpectorCli.Version.class,
        description = "Spector Gateway: a streaming HTTP ingress router for a cell of single-writer backends.",
        subcommands = {
            RouteCommand.class,
            GatewayCommand.class,
            OwnerCommand.class,
            WorkerCommand.class,
            StatusCommand.class,
            DemoCommand.class,
            TokenCommand.class
        })
public final class SpectorCli {
    private SpectorCli() {}

    /** Runs a command line and returns its exit code. */
    static int run(PrintWriter out, PrintWriter err, String... args) {
        CommandLine cli = new CommandLine(new SpectorCli());
        cli.setOut(out);
        cli.setErr(err);
        cli.setExitCodeExceptionMapper(
                e -> e instanceof SpectorException se ? se.code().cliExit() : ErrorCode.INTERNAL.cliExit());
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            if (e instanceof SpectorException se) {
                commandLine.getErr().println("spector: " + se.code() + ": " + se.getMessage());
            } else {
                commandLine.getErr().println("spector: INTERNAL: " + e);
            }
            commandLine.getErr().flush();
            return commandLine.getExitCodeExceptionMapper().getExitCode(e);
        });
        cli.setParameterExceptionHandler((e, a) -> {
            e.getCommandLine().getErr().println("spector: " + e.getMessage());
            e.getCommandLine().usage(e.getCommandLine().getErr());
            return ErrorCode.BAD_REQUEST.cliExit();
        });
        return cli.execute(args);
    }

    /** Runs {@code bin/spector} and exits with the command's code. */
    public static void main(String[] args) {
        PrintWriter out = new PrintWriter(System.out, true, java.nio.charset.StandardCharsets.UTF_8);
        PrintWriter err = new PrintWriter(System.err, true, java.nio.charset.StandardCharsets.UTF_8);
        int code = run(out, err, args);
        out.flush();
        err.flush();
        System.exit(code);
    }

    /** Prints the version of the running jar. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = SpectorCli.class.getPackage().getImplementationVersion();
            return new String[] {"spector " + (v == null ? "dev" : v)};
        }
    }
}
