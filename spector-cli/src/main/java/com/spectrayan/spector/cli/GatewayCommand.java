package com.spectrayan.spector.cli;

import com.spectrayan.spector.gateway.GatewayServer;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
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
final class GatewayCommand implements Callable<Integer> {
    @Option(names = "--config", paramLabel = "FILE", description = "A YAML file with spector.* settings.")
    @Nullable
    Path config;

    @Override
    public Integer call() throws InterruptedException {
        GatewaySettings settings = GatewaySettings.load(config);
        GatewayServer server = GatewayServer.start(settings);
        awaitShutdown(server);
        return 0;
    }

    /** Blocks until the JVM is asked to stop, then closes the resource. */
    static void awaitShutdown(AutoCloseable resource) throws InterruptedException {
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            try {
                                resource.close();
                            } catch (Exception e) {
                                System.err.println("spector: while stopping: " + e);
                            } finally {
                                stopped.countDown();
                            }
                        },
                        "spector-shutdown"));
        stopped.await(); // the process's main wait: released by SIGTERM or Ctrl-C through the hook
    }
}
