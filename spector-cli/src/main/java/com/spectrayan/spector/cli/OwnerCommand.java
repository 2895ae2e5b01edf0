package com.spectrayan.spector.cli;

import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.ReferenceOwner;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** {@code spector owner --node-id ID --port P ...}: runs a reference owner node until SIGTERM. */
@Command(
        name = "owner",
        mixinStandardHelpOptions = true,
        description = "Run a reference owner node (echo, stream, objects, commands, events, token issuance).")
final class OwnerCommand extends DaemonCommand {
    /** The variable {@code --admin-token} defaults to, as the owner image reads it. */
    static final String ADMIN_TOKEN_ENV = "SPECTOR_OWNER_ADMIN_TOKEN";

    @Option(names = "--node-id", required = true, paramLabel = "ID", description = "This node's ring member id.")
    String nodeId = "";

    @Option(names = "--port", paramLabel = "P", description = "Port (default: ${DEFAULT-VALUE}).")
    int port = 7071;

    @Option(names = "--host", paramLabel = "H", description = "Bind address (default: ${DEFAULT-VALUE}).")
    String host = "127.0.0.1";

    @Option(
            names = "--members",
            split = ",",
            paramLabel = "ID",
            description = "The cell's ring members (default: this node alone).")
    List<String> members = new ArrayList<>();

    @Mixin
    EpochOption epoch = new EpochOption();

    @Option(names = "--cell-id", paramLabel = "C", description = "The cell id (default: ${DEFAULT-VALUE}).")
    String cellId = "default";

    @Option(names = "--data-dir", paramLabel = "DIR", description = "Where objects are stored (default: a temp dir).")
    @Nullable
    Path dataDir;

    @Option(names = "--secret-file", paramLabel = "FILE", description = "The cell's HMAC secret for token issuance.")
    @Nullable
    Path secretFile;

    @Option(names = "--redis", paramLabel = "URI", description = "Redis for publishing ownership changes.")
    @Nullable
    String redis;

    @Option(
            names = "--admin-token",
            paramLabel = "TOKEN",
            defaultValue = "${env:" + ADMIN_TOKEN_ENV + "}",
            description = {
                "The cell's admin token (default: $" + ADMIN_TOKEN_ENV + "): every admin caller must send it as",
                "Authorization: Bearer, from any address. None: the admin API answers loopback callers only."
            })
    @Nullable
    String adminToken;

    @Override
    AutoCloseable launch() throws IOException {
        OwnerSpec.Builder spec = OwnerSpec.builder(nodeId)
                .bindHost(host)
                .port(port)
                .cellId(cellId)
                .ringMembers(members.isEmpty() ? List.of(nodeId) : members)
                .ringEpoch(epoch.value);
        if (dataDir != null) {
            spec.dataDir(dataDir);
        }
        if (secretFile != null) {
            spec.hmacSecret(Secrets.read(secretFile).getBytes(StandardCharsets.UTF_8));
        }
        if (redis != null) {
            spec.redisUri(redis);
        }
        String token = adminToken(adminToken);
        if (token != null) {
            spec.adminToken(token);
        }
        return ReferenceOwner.start(spec.build());
    }

    /**
     * Returns an {@code --admin-token} value, or null when it is unset or blank (an empty variable
     * counts as unset).
     *
     * @throws SpectorException BAD_REQUEST naming what is wrong with it, never its text
     */
    static @Nullable String adminToken(@Nullable String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        String token = value.strip();
        String problem = OwnerSpec.adminTokenProblem(token);
        if (problem != null) {
            throw SpectorException.badRequest("--admin-token", problem);
        }
        return token;
    }
}
