package com.spectrayan.spector.cli;

import com.spectrayan.spector.gateway.GatewayServer;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code spector gateway [--config FILE]}: runs the gateway until SIGTERM or Ctrl-C. Settings come
 * from the YAML file, then {@code SPECTOR_*} environment variables, then system properties.
 */
@Command(
        name = "gateway",
        mixinStandardHelpOptions = true,
        description = "Run the gateway. Settings: --config YAML, then SPECTOR_* environment, then -D properties.")
final class GatewayCommand extends DaemonCommand {
    /** The option naming the YAML file. */
    static final String CONFIG = "--config";

    @Option(names = CONFIG, paramLabel = "FILE", description = "A YAML file with spector.* settings.")
    @Nullable
    Path config;

    /**
     * Returns the command for {@code gateway}, {@code gateway --config FILE} or {@code gateway
     * --config=FILE} without picocli (see {@link SpectorCli}), or null for any other arguments,
     * which picocli then parses (help, a FILE that looks like an option, an unknown option).
     */
    static @Nullable GatewayCommand plain(String... args) {
        if (args.length == 0 || !args[0].equals("gateway") || args.length > 3) {
            return null;
        }
        String file = null;
        if (args.length == 2 && args[1].startsWith(CONFIG + "=")) {
            file = args[1].substring(CONFIG.length() + 1);
        } else if (args.length == 3 && args[1].equals(CONFIG)) {
            file = args[2];
        } else if (args.length != 1) {
            return null;
        }
        GatewayCommand command = new GatewayCommand();
        if (file != null) {
            if (file.startsWith("-")) {
                return null;
            }
            try {
                command.config = Path.of(file);
            } catch (InvalidPathException e) {
                return null;
            }
        }
        return command;
    }

    @Override
    AutoCloseable launch() {
        return GatewayServer.start(GatewaySettings.load(config));
    }
}
