package com.spectrayan.spector.worker;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Environment;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Runs the worker daemon alone, configured from the environment, as the worker container image
 * does: {@code java -cp ... com.spectrayan.spector.worker.WorkerMain}. Stops on SIGTERM; exits 2 on
 * a bad value, naming the variable, the value and what was expected.
 *
 * <ul>
 *   <li>{@code SPECTOR_WORKER_GATEWAY}: the gateway's uplink, {@code wss://host[:port]/uplink} (or
 *       {@code ws://...}, which warns unless the host is a loopback address);
 *   <li>{@code SPECTOR_WORKER_CA_FILE}: a PEM file of the CA to trust for {@code wss://} instead of
 *       the JDK's trust store (optional);
 *   <li>{@code SPECTOR_WORKER_UPLINKS}: how many links to keep, 1..{@value WorkerDaemon#MAX_UPLINKS}
 *       (default {@value WorkerDaemon#DEFAULT_UPLINKS});
 *   <li>{@code SPECTOR_WORKER_ID}: this worker's id, 1..64 chars of {@code [A-Za-z0-9._-]} (the
 *       gateway's {@code spector.uplink.tokens} names it);
 *   <li>{@code SPECTOR_WORKER_TOKEN_FILE} (a file holding the token) or {@code
 *       SPECTOR_WORKER_TOKEN}, exactly one;
 *   <li>{@code SPECTOR_WORKER_TARGETS}: {@code name=http://host:port[/base]}, comma-separated, 1..64
 *       of them, each name {@code [a-z0-9][a-z0-9-]*};
 *   <li>{@code SPECTOR_WORKER_ADMIN_PORT}: the loopback admin port ({@value #DEFAULT_ADMIN_PORT};
 *       {@code -1}: off).
 * </ul>
 *
 * An empty value counts as unset.
 */
public final class WorkerMain {
    /** The admin port when {@code SPECTOR_WORKER_ADMIN_PORT} is unset, as {@code spector worker} has it. */
    static final int DEFAULT_ADMIN_PORT = 7079;

    static final String GATEWAY = "SPECTOR_WORKER_GATEWAY";
    static final String ID = "SPECTOR_WORKER_ID";
    static final String TOKEN_FILE = "SPECTOR_WORKER_TOKEN_FILE";
    static final String TOKEN = "SPECTOR_WORKER_TOKEN";
    static final String TARGETS = "SPECTOR_WORKER_TARGETS";
    static final String ADMIN_PORT = "SPECTOR_WORKER_ADMIN_PORT";
    static final String CA_FILE = "SPECTOR_WORKER_CA_FILE";
    static final String UPLINKS = "SPECTOR_WORKER_UPLINKS";

    /** A worker id as the gateway's token list accepts it. */
    private static final Pattern WORKER_ID =
            Pattern.compile("[A-Za-z0-9._-]{1," + StatusReport.WORKER_ID_CHARS.max() + "}");

    /** A relay target's capability name. */
    private static final Pattern TARGET_NAME = Pattern.compile("[a-z0-9][a-z0-9-]*");

    private WorkerMain() {}

    /** What the environment says the worker is. The token is never shown by {@link #toString()}. */
    record Settings(
            URI gateway,
            String workerId,
            String token,
            Map<String, URI> targets,
            int adminPort,
            int uplinks,
            @Nullable Path caFile) {
        Settings {
            requireNonNull(gateway, "gateway");
            requireNonNull(workerId, "workerId");
            requireNonNull(token, "token");
            targets = Collections.unmodifiableMap(new LinkedHashMap<>(targets));
        }

        @Override
        public String toString() {
            return "Settings{gateway=" + gateway + ", workerId=" + workerId + ", targets=" + targets + ", adminPort="
                    + adminPort + ", uplinks=" + uplinks + ", caFile=" + caFile + "}";
        }
    }

    /** Starts the worker and waits for the JVM to be asked to stop. */
    public static void main(String[] args) throws InterruptedException {
        Environment.processDefaults(); // first: before any Netty buffer class loads or anything logs
        Settings settings;
        try {
            settings = settingsFrom(System.getenv());
        } catch (Environment.Problems e) {
            System.err.println("spector worker: refusing to start:\n" + e.getMessage());
            System.exit(2);
            return;
        }
        WorkerDaemon.Builder builder = WorkerDaemon.builder(
                        settings.gateway(), settings.workerId(), settings.token(), settings.targets())
                .adminPort(settings.adminPort())
                .uplinks(settings.uplinks());
        Path ca = settings.caFile();
        if (ca != null) {
            builder.caFile(ca);
        }
        WorkerDaemon daemon = Environment.startOrExit("spector worker", builder::start);
        System.out.println("spector worker " + settings.workerId() + " dialling " + settings.gateway() + " with "
                + settings.uplinks() + " links and targets "
                + settings.targets().keySet());
        Environment.awaitShutdown(daemon, "spector-worker");
    }

    /**
     * Returns the settings the environment describes, reading the token file when one is named.
     *
     * @throws Environment.Problems naming every bad variable, its value and what was expected
     */
    static Settings settingsFrom(Map<String, String> env) {
        List<String> problems = new ArrayList<>();
        URI gateway = gateway(env, problems);
        String id = Environment.value(env, ID);
        if (id == null) {
            problems.add(ID + ": (unset) (expected: this worker's id, 1.." + StatusReport.WORKER_ID_CHARS.max()
                    + " chars of [A-Za-z0-9._-])");
        } else if (!WORKER_ID.matcher(id).matches()) {
            problems.add(ID + ": '" + id + "' (expected: 1.." + StatusReport.WORKER_ID_CHARS.max()
                    + " chars of [A-Za-z0-9._-])");
        }
        String token = token(env, problems);
        Map<String, URI> targets = targets(env, problems);
        int adminPort = adminPort(env, problems);
        int uplinks = (int) Environment.integer(
                env,
                UPLINKS,
                WorkerDaemon.DEFAULT_UPLINKS,
                1,
                WorkerDaemon.MAX_UPLINKS,
                "1.." + WorkerDaemon.MAX_UPLINKS + ", the links to keep to the gateway",
                problems);
        Path caFile = caFile(env, problems);
        if (!problems.isEmpty() || gateway == null || id == null || token == null) {
            throw new Environment.Problems(problems);
        }
        return new Settings(gateway, id, token, targets, adminPort, uplinks, caFile);
    }

    private static @Nullable URI gateway(Map<String, String> env, List<String> problems) {
        String raw = Environment.value(env, GATEWAY);
        String expected = " (expected: wss://host[:port]/uplink or ws://host:port/uplink)";
        if (raw == null) {
            problems.add(GATEWAY + ": (unset)" + expected);
            return null;
        }
        try {
            URI uri = new URI(raw);
            if (("ws".equals(uri.getScheme()) || "wss".equals(uri.getScheme())) && uri.getHost() != null) {
                return uri;
            }
        } catch (URISyntaxException e) {
            // reported below, with the value
        }
        problems.add(GATEWAY + ": '" + raw + "'" + expected);
        return null;
    }

    private static @Nullable Path caFile(Map<String, String> env, List<String> problems) {
        String raw = Environment.value(env, CA_FILE);
        if (raw == null) {
            return null;
        }
        try {
            Path file = Path.of(raw);
            if (Files.isReadable(file)
                    && Files.readString(file, StandardCharsets.US_ASCII).contains("-----BEGIN CERTIFICATE-----")) {
                return file;
            }
        } catch (IOException | InvalidPathException e) {
            // reported below, with the value
        }
        problems.add(CA_FILE + ": '" + raw + "' (expected: a readable PEM file of CA certificates)");
        return null;
    }

    private static @Nullable String token(Map<String, String> env, List<String> problems) {
        String file = Environment.value(env, TOKEN_FILE);
        String inline = Environment.value(env, TOKEN);
        if (file != null && inline != null) {
            problems.add(TOKEN_FILE + " and " + TOKEN + ": both set (expected: exactly one)");
            return null;
        }
        if (inline != null) {
            return inline;
        }
        if (file == null) {
            problems.add(TOKEN_FILE + ": (unset) (expected: a file holding the worker's token, or " + TOKEN + ")");
            return null;
        }
        String token;
        try {
            token = Files.readString(Path.of(file), StandardCharsets.UTF_8).strip();
        } catch (IOException | InvalidPathException e) {
            problems.add(TOKEN_FILE + ": '" + file + "' (expected: a readable file holding the token; " + e + ")");
            return null;
        }
        if (token.isEmpty()) {
            problems.add(TOKEN_FILE + ": '" + file + "' (expected: a file holding the token; it is empty)");
            return null;
        }
        return token;
    }

    private static Map<String, URI> targets(Map<String, String> env, List<String> problems) {
        Map<String, URI> targets = new LinkedHashMap<>();
        String raw = Environment.value(env, TARGETS);
        String expected = "name=http://host:port[/base], comma-separated, 1.." + StatusReport.TARGET_COUNT.max()
                + " of them, each name " + Limits.TARGET_CHARS.min() + ".." + Limits.TARGET_CHARS.max()
                + " chars of [a-z0-9][a-z0-9-]*";
        if (raw == null) {
            problems.add(TARGETS + ": (unset) (expected: " + expected + ")");
            return targets;
        }
        for (String entry : raw.split(",", -1)) {
            String target = entry.strip();
            int eq = target.indexOf('=');
            String name = eq < 0 ? target : target.substring(0, eq);
            URI upstream = eq < 0 ? null : upstream(target.substring(eq + 1));
            if (upstream == null
                    || !TARGET_NAME.matcher(name).matches()
                    || !Limits.TARGET_CHARS.allows(name.length())) {
                problems.add(TARGETS + ": '" + target + "' (expected: " + expected + ")");
            } else if (targets.putIfAbsent(name, upstream) != null) {
                problems.add(TARGETS + ": '" + raw + "' (expected: each name once; '" + name + "' is listed twice)");
            }
        }
        if (targets.size() > StatusReport.TARGET_COUNT.max()) {
            problems.add(TARGETS + ": " + targets.size() + " targets (expected: 1.." + StatusReport.TARGET_COUNT.max()
                    + " targets)");
        }
        return targets;
    }

    /** Returns the upstream, or null unless it is {@code http://host:port[/base]} (the port is required). */
    private static @Nullable URI upstream(String raw) {
        try {
            URI uri = new URI(raw);
            boolean ok = "http".equals(uri.getScheme())
                    && uri.getHost() != null
                    && uri.getPort() >= 1
                    && uri.getRawQuery() == null
                    && uri.getRawFragment() == null;
            return ok ? uri : null;
        } catch (URISyntaxException e) {
            return null;
        }
    }

    private static int adminPort(Map<String, String> env, List<String> problems) {
        return (int) Environment.integer(
                env, ADMIN_PORT, DEFAULT_ADMIN_PORT, -1, 65535, "-1..65535; -1: off, 0: any free port", problems);
    }
}
