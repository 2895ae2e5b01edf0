package com.spectrayan.spector.cli;

import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code spector worker --gateway wss://HOST[:PORT]/uplink [--ca-file CA.pem] [--uplinks N] --id ID
 * --token-file F --target NAME=http://HOST:PORT ...}: keeps N links to the gateway's uplink and
 * serves {@code http-forward} targets until SIGTERM, re-dialling each link by itself.
 */
@Command(
        name = "worker",
        mixinStandardHelpOptions = true,
        description = "Dial a gateway's uplink and serve http-forward relay targets.")
final class WorkerCommand extends DaemonCommand {
    @Option(
            names = "--gateway",
            required = true,
            paramLabel = "URI",
            description = "wss://HOST[:PORT]/uplink (TLS), or ws://HOST:PORT/uplink (clear text: loopback only)")
    URI gateway = URI.create("ws://127.0.0.1:7070/uplink");

    @Option(names = "--id", required = true, paramLabel = "ID", description = "This worker's id.")
    String id = "";

    @Option(names = "--token-file", required = true, paramLabel = "FILE", description = "The worker token.")
    Path tokenFile = Path.of("");

    @Option(
            names = "--target",
            required = true,
            paramLabel = "NAME=URL",
            description = "A relay target: NAME=http://HOST:PORT (http-forward). Repeatable.")
    List<String> targets = new ArrayList<>();

    @Option(
            names = "--admin-port",
            paramLabel = "PORT",
            description = "Loopback admin port for 'spector status' (default: ${DEFAULT-VALUE}; -1: off).")
    int adminPort = 7079;

    @Option(
            names = "--ca-file",
            paramLabel = "FILE",
            description = "A PEM file of the CA to trust for wss:// (default: the JDK's trust store).")
    @Nullable
    Path caFile;

    @Option(
            names = "--uplinks",
            paramLabel = "N",
            description = "Links to keep to the gateway, 1..8 (default: ${DEFAULT-VALUE}).")
    int uplinks = WorkerDaemon.DEFAULT_UPLINKS;

    @Option(
            names = "--uplink-protocol",
            paramLabel = "v2|v1",
            description = "v2 (the default) offers uplink protocol v2, then v1, and speaks what the gateway picks;"
                    + " v1 speaks v1 only.")
    String uplinkProtocol = "v2";

    /** Answers whether {@code --uplink-protocol} asks for v2; BAD_REQUEST for anything but v2 or v1. */
    static boolean protocolV2(String value) {
        return switch (value) {
            case "v2" -> true;
            case "v1" -> false;
            default -> throw SpectorException.badRequest("uplink-protocol", "'" + value + "' (expected: v2 or v1)");
        };
    }

    @Override
    AutoCloseable launch() throws IOException {
        Map<String, URI> upstreams = new LinkedHashMap<>();
        for (String t : targets) {
            int eq = t.indexOf('=');
            if (eq <= 0) {
                throw SpectorException.badRequest("target", "'" + t + "' (expected: NAME=http://HOST:PORT)");
            }
            upstreams.put(t.substring(0, eq), URI.create(t.substring(eq + 1)));
        }
        if (uplinks < 1 || uplinks > WorkerDaemon.MAX_UPLINKS) {
            throw SpectorException.badRequest("uplinks", uplinks + " (expected: 1.." + WorkerDaemon.MAX_UPLINKS + ")");
        }
        WorkerDaemon.Builder worker = WorkerDaemon.builder(gateway, id, Secrets.read(tokenFile), upstreams)
                .adminPort(adminPort)
                .uplinks(uplinks)
                .v2(protocolV2(uplinkProtocol));
        Path ca = caFile;
        if (ca != null) {
            worker.caFile(ca);
        }
        return worker.start();
    }
}
