package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.Environment;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.gateway.config.SettingsException;
import java.nio.file.Path;

/**
 * Runs the gateway alone: {@code java -cp ... com.spectrayan.spector.gateway.GatewayMain [FILE]}.
 * Settings come from the optional YAML file, the {@code SPECTOR_*} environment and system
 * properties. Stops on SIGTERM; exits 2 on a bad setting, 1 when it cannot start (a port taken).
 * {@code bin/spector gateway} does the same.
 */
public final class GatewayMain {
    private GatewayMain() {}

    /** Starts the gateway and waits for the JVM to be asked to stop. */
    public static void main(String[] args) throws InterruptedException {
        Environment.processDefaults(); // first: before any Netty buffer class loads or anything logs
        GatewaySettings settings;
        try {
            settings = GatewaySettings.load(args.length > 0 ? Path.of(args[0]) : null);
        } catch (SettingsException e) {
            System.err.println("spector gateway: refusing to start:\n" + e.getMessage());
            System.exit(2);
            return;
        }
        GatewayServer server = Environment.startOrExit("spector gateway", () -> GatewayServer.start(settings));
        System.out.println("spector gateway ready on port " + server.port());
        Environment.awaitShutdown(server, "spector-gateway");
    }
}
