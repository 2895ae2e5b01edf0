package com.spectrayan.spector.cli;

import com.spectrayan.spector.gateway.GatewayServer;
import com.spectrayan.spector.gateway.config.GatewaySettings;
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
    @Option(names = "--config", paramLabel = "FILE", description = "A YAML file with spector.* settings.")
    @Nullable
    Path config;

    @Override
    AutoCloseable launch() {
        return GatewayServer.start(GatewaySettings.load(config));
    }
}
