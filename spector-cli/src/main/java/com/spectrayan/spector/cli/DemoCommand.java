package com.spectrayan.spector.cli;

import com.spectrayan.spector.gateway.GatewayServer;
import com.spectrayan.spector.gateway.auth.Claims;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.ReferenceOwner;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code spector demo}: a gateway on 7070 and three reference owners ({@code owner-0..2} on
 * 7071-7073, ring epoch 1) on localhost, auth on with a fresh HMAC secret. Writes a token for
 * tenant {@code demo} to {@code DIR/token}, prints curl lines that work, and stops everything on
 * Ctrl-C or SIGTERM. The process's {@code SPECTOR_*} environment is ignored: the demo is the same
 * everywhere.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        description = "Run a gateway and three reference owners on localhost and print curl lines that work.")
final class DemoCommand extends DaemonCommand {
    static final int GATEWAY_PORT = 7070;
    static final int FIRST_OWNER_PORT = 7071;
    static final int OWNERS = 3;
    static final int UPSTREAM_PORT = 7074;
    static final String DEMO_WORKER = "demo-worker";

    @Spec
    @SuppressWarnings("NullAway.Init") // injected by picocli before call()
    CommandSpec spec;

    @Option(
            names = "--state-dir",
            paramLabel = "DIR",
            description = "Token, secret and data (default: ${DEFAULT-VALUE}).")
    Path stateDir = Path.of(".spector-demo");

    @Option(names = "--redis", paramLabel = "URI", description = "Use Redis for L2 and invalidations (default: off).")
    @Nullable
    String redis;

    @Option(
            names = "--access-log",
            paramLabel = "DEST",
            arity = "0..1",
            fallbackValue = "stdout",
            description = "Write the gateway's access log (JSON lines) to stdout or a file (default: off).")
    @Nullable
    String accessLog;

    @Option(
            names = "--uplink-protocol",
            paramLabel = "v2|v1",
            description = "The demo worker's uplink protocol: v2 (the default: offered first) or v1 only.")
    String uplinkProtocol = "v2";

    @Override
    AutoCloseable launch() throws IOException {
        Running demo = start(
                stateDir,
                redis,
                false,
                accessLog == null ? "off" : accessLog,
                WorkerCommand.protocolV2(uplinkProtocol));
        printWelcome(spec.commandLine().getOut(), demo);
        return demo;
    }

    /**
     * A running demo: what it started, in the order it stops them (worker, gateway, owners,
     * upstream), and where they listen.
     */
    static final class Running implements AutoCloseable {
        final List<AutoCloseable> parts = new ArrayList<>();
        final List<Integer> ownerPorts = new ArrayList<>();
        int gatewayPort;
        int upstreamPort;
        Path tokenFile = Path.of("");

        /** Stops every part, in order; a part that fails to stop does not keep the others running. */
        @Override
        public void close() {
            for (AutoCloseable c : parts) {
                try {
                    c.close();
                } catch (Exception e) {
                    System.err.println("spector demo: while stopping " + c + ": " + e);
                }
            }
        }
    }

    /**
     * Starts the demo. With {@code ephemeralPorts} every process takes a free port (tests); else
     * the documented ones: gateway {@value #GATEWAY_PORT}, owners from {@value #FIRST_OWNER_PORT},
     * upstream {@value #UPSTREAM_PORT}.
     */
    static Running start(Path stateDir, @Nullable String redis, boolean ephemeralPorts) throws IOException {
        return start(stateDir, redis, ephemeralPorts, "off");
    }

    /** As above, the gateway's access log going to {@code accessLog} ({@code off}, {@code stdout} or a file). */
    static Running start(Path stateDir, @Nullable String redis, boolean ephemeralPorts, String accessLog)
            throws IOException {
        return start(stateDir, redis, ephemeralPorts, accessLog, true);
    }

    /** As above, the demo worker offering uplink protocol v2 first ({@code v2}) or speaking v1 only. */
    static Running start(Path stateDir, @Nullable String redis, boolean ephemeralPorts, String accessLog, boolean v2)
            throws IOException {
        Files.createDirectories(stateDir);
        ownerOnly(stateDir, "rwx------");
        SecureRandom random = new SecureRandom();
        String secret = randomText(random, 48);
        Path secretFile = stateDir.resolve("secret");
        writeOwnerOnly(secretFile, secret);

        Running demo = new Running();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < OWNERS; i++) {
            ids.add("owner-" + i);
        }
        List<AutoCloseable> owners = new ArrayList<>();
        StringBuilder members = new StringBuilder();
        for (int i = 0; i < OWNERS; i++) {
            OwnerSpec.Builder owner = OwnerSpec.builder(ids.get(i))
                    .port(ephemeralPorts ? 0 : FIRST_OWNER_PORT + i)
                    .ringMembers(ids)
                    .ringEpoch(1)
                    .dataDir(stateDir.resolve(ids.get(i)))
                    .hmacSecret(secret.getBytes(StandardCharsets.UTF_8));
            if (redis != null) {
                owner.redisUri(redis);
            }
            ReferenceOwner started = ReferenceOwner.start(owner.build());
            owners.add(started);
            demo.ownerPorts.add(started.port());
            members.append(i == 0 ? "" : ",")
                    .append(ids.get(i))
                    .append("=http://127.0.0.1:")
                    .append(started.port());
        }
        Map<String, String> settings = new HashMap<>();
        settings.put("spector.cell.role", "gateway");
        settings.put("spector.cell.ring-members", members.toString());
        settings.put("spector.cell.ring-epoch", "1");
        settings.put("spector.server.port", Integer.toString(ephemeralPorts ? 0 : GATEWAY_PORT));
        settings.put("spector.server.host", "127.0.0.1");
        settings.put("spector.server.drain-timeout", "2s");
        settings.put("spector.server.access-log", accessLog);
        settings.put("spector.security.jwt.hmac-secret", secret);
        settings.put("spector.routing.redis.enabled", redis == null ? "false" : "true");
        if (redis != null) {
            settings.put("spector.routing.redis.uri", redis);
        }
        String workerToken = randomText(random, 24); // its own bytes: no part of the secret that signs tokens
        settings.put("spector.uplink.tokens", DEMO_WORKER + "=" + TokenHashes.sha256Hex(workerToken));
        GatewayServer gateway = GatewayServer.start(GatewaySettings.load(null, Map.of(), settings));
        demo.gatewayPort = gateway.port();

        // The worker's local upstream: a reference node serving echo and stream under one namespace.
        ReferenceOwner upstream = ReferenceOwner.start(OwnerSpec.builder("echo-upstream")
                .port(ephemeralPorts ? 0 : UPSTREAM_PORT)
                .dataDir(stateDir.resolve("echo-upstream"))
                .hmacSecret(secret.getBytes(StandardCharsets.UTF_8))
                .build());
        demo.upstreamPort = upstream.port();
        demo.parts.add(WorkerDaemon.builder(
                        URI.create("ws://127.0.0.1:" + gateway.port() + "/uplink"),
                        DEMO_WORKER,
                        workerToken,
                        Map.of("echo", URI.create("http://127.0.0.1:" + upstream.port() + "/api/v1/namespaces/demo")))
                .v2(v2)
                .start());
        demo.parts.add(gateway);
        demo.parts.addAll(owners);
        demo.parts.add(upstream);

        // The demo's one token also reads the status views: the demo is its own operator.
        String token = TokenCommand.mint(secret, "demo", Duration.ofHours(24), List.of(Claims.ADMIN_SCOPE));
        demo.tokenFile = stateDir.resolve("token");
        writeOwnerOnly(demo.tokenFile, token);
        return demo;
    }

    private static String randomText(SecureRandom random, int bytes) {
        byte[] b = new byte[bytes];
        random.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /**
     * Writes {@code text} to {@code file}, readable by its owner only: the secret signs any token
     * (the admin scope's too) and the token is a day's admin credential, so another user of the
     * machine must not read them (they were 0644 under the usual umask, found by a review).
     */
    private static void writeOwnerOnly(Path file, String text) throws IOException {
        Files.deleteIfExists(file); // a file left by an older demo keeps its old mode: made anew
        if (file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        }
        Files.writeString(file, text, StandardCharsets.UTF_8);
    }

    /** Sets {@code path}'s POSIX permissions to {@code mode} where the file system has them. */
    private static void ownerOnly(Path path, String mode) throws IOException {
        if (path.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(mode));
        }
    }

    static void printWelcome(PrintWriter out, Running demo) {
        String t = "$(cat " + demo.tokenFile + ")";
        String base = "http://127.0.0.1:" + demo.gatewayPort;
        out.println();
        out.println("Spector demo: gateway on " + base + ", owners owner-0..2 on ports " + demo.ownerPorts
                + " (ring epoch 1),");
        out.println(
                "worker " + DEMO_WORKER + " on the uplink with target 'echo' (upstream on " + demo.upstreamPort + ").");
        out.println("A token for tenant 'demo' is in " + demo.tokenFile + ". Try:");
        out.println();
        out.println("  curl -s -H \"Authorization: Bearer " + t + "\" " + base + "/api/v1/namespaces/orders/echo");
        out.println(
                "  curl -s -H \"Authorization: Bearer " + t + "\" -H 'Idempotency-Key: demo-1' -d '{\"op\":\"hello\"}' "
                        + base + "/api/v1/namespaces/orders/commands");
        out.println("  curl -s -H \"Authorization: Bearer " + t + "\" -T README.md " + base
                + "/api/v1/namespaces/orders/objects/readme");
        out.println("  curl -sN -H \"Authorization: Bearer " + t + "\" " + base + "/api/v1/events");
        out.println("  curl -s -H \"Authorization: Bearer " + t + "\" " + base + "/relay/" + DEMO_WORKER
                + "/echo/echo        # through the worker's uplink");
        out.println("  curl -s -H \"Authorization: Bearer " + t + "\" '" + base + "/relay/" + DEMO_WORKER
                + "/echo/stream?bytes=1000000' | wc -c");
        out.println("  curl -s -H \"Authorization: Bearer " + t + "\" " + base + "/gateway/v1/workers");
        out.println("  curl -s " + base + "/actuator/health");
        out.println("  bin/spector status --gateway " + base + " --token-file " + demo.tokenFile);
        out.println("  bin/spector route --members owner-0,owner-1,owner-2 demo/orders   # which owner answers");
        out.println();
        out.println("Ctrl-C stops everything.");
        out.flush();
    }
}
