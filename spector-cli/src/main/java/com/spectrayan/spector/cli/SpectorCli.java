package com.spectrayan.spector.cli;

import com.spectrayan.spector.contract.Environment;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.gateway.config.SettingsException;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The entry point of {@code bin/spector}. Exit codes come from the error contract: a command that
 * fails with an {@link ErrorCode} exits with that code's {@link ErrorCode#cliExit()}; a usage
 * error, and settings the gateway refuses (every refused key listed), exit like BAD_REQUEST.
 *
 * <p>Start-up (bench/README.md, start-up and idle memory): {@code spector gateway} with no
 * arguments but {@code --config FILE} runs without picocli at all ({@link GatewayCommand#plain}),
 * with the same messages and exit codes; picocli's classes are Java 5 class files, checked by the
 * slow verifier and never taken into a class-data archive. Otherwise, when the first argument
 * names a subcommand, only that subcommand's model is built: picocli instantiates every
 * registered command and reflects over its options, and the others' classes (the status
 * command's JSON mapper among them) would cost each start. Help and errors for anything else see
 * all of them.
 */
@Command(
        name = "spector",
        mixinStandardHelpOptions = true,
        versionProvider = SpectorCli.Version.class,
        description = "Spector Gateway: a streaming HTTP ingress router for a cell of single-writer backends.")
public final class SpectorCli {
    private SpectorCli() {}

    /** The subcommands by name, in the order {@code spector --help} lists them. */
    private static Map<String, Supplier<Object>> commands() {
        Map<String, Supplier<Object>> m = new LinkedHashMap<>();
        m.put("route", RouteCommand::new);
        m.put("gateway", GatewayCommand::new);
        m.put("owner", OwnerCommand::new);
        m.put("worker", WorkerCommand::new);
        m.put("status", StatusCommand::new);
        m.put("ring", RingCommand::new);
        m.put("move", MoveCommand::new);
        m.put("demo", DemoCommand::new);
        m.put("token", TokenCommand::new);
        return m;
    }

    /** The command line for {@code args}: the named subcommand alone, or all of them. */
    static CommandLine commandLine(String... args) {
        CommandLine cli = new CommandLine(new SpectorCli());
        Map<String, Supplier<Object>> commands = commands();
        Supplier<Object> named = args.length > 0 ? commands.get(args[0]) : null;
        if (named != null) {
            cli.addSubcommand(args[0], named.get());
        } else {
            commands.forEach((name, command) -> cli.addSubcommand(name, command.get()));
        }
        return cli;
    }

    /** Runs a command line and returns its exit code. */
    static int run(PrintWriter out, PrintWriter err, String... args) {
        CommandLine cli = commandLine(args);
        cli.setOut(out);
        cli.setErr(err);
        cli.setExitCodeExceptionMapper(
                e -> e instanceof SpectorException se ? se.code().cliExit() : ErrorCode.INTERNAL.cliExit());
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> failed(e, commandLine.getErr()));
        cli.setParameterExceptionHandler((e, a) -> {
            e.getCommandLine().getErr().println("spector: " + e.getMessage());
            e.getCommandLine().usage(e.getCommandLine().getErr());
            return ErrorCode.BAD_REQUEST.cliExit();
        });
        return cli.execute(args);
    }

    /**
     * Runs a command that needed no parsing ({@link GatewayCommand#plain}) as {@link #run} runs a
     * parsed one: the same message and exit code when it fails.
     */
    static int runPlain(Callable<Integer> command, PrintWriter err) {
        try {
            return command.call();
        } catch (Exception e) {
            return failed(e, err);
        }
    }

    /** Prints a failed command's error and returns its exit code (see the class comment). */
    private static int failed(Exception e, PrintWriter err) {
        int code;
        if (e instanceof SpectorException se) {
            err.println("spector: " + se.code() + ": " + se.getMessage());
            code = se.code().cliExit();
        } else if (e instanceof SettingsException) {
            err.println("spector: " + e.getMessage()); // its headline, then each refused key on a line
            code = ErrorCode.BAD_REQUEST.cliExit();
        } else {
            err.println("spector: INTERNAL: " + e);
            code = ErrorCode.INTERNAL.cliExit();
        }
        err.flush();
        return code;
    }

    /** Runs {@code bin/spector} and exits with the command's code. */
    public static void main(String[] args) {
        Environment.processDefaults(); // first: before any Netty buffer class loads or anything logs or anything logs
        PrintWriter out = new PrintWriter(System.out, true, java.nio.charset.StandardCharsets.UTF_8);
        PrintWriter err = new PrintWriter(System.err, true, java.nio.charset.StandardCharsets.UTF_8);
        GatewayCommand gateway = GatewayCommand.plain(args);
        int code = gateway != null ? runPlain(gateway, err) : run(out, err, args);
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
