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
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code spector worker --gateway ws://HOST:7070/uplink --id ID --token-file F --target
 * NAME=http://HOST:PORT ...}: dials the gateway's uplink and serves {@code http-forward} targets
 * until SIGTERM, reconnecting by itself.
 */
@Command(
        name = "worker",
        mixinStandardHelpOptions = true,
        description = "Dial a gateway's uplink and serve http-forward relay targets.")
final class WorkerCommand extends DaemonCommand {
    @Option(names = "--gateway", required = true, paramLabel = "URI", description = "ws://HOST:PORT/uplink")
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
        return WorkerDaemon.start(gateway, id, Secrets.read(tokenFile), upstreams, adminPort);
    }
}
