package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.contract.Environment;
import com.spectrayan.spector.testkit.Waits;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link OwnerMain}: the owner image's environment, and the process it runs. */
final class OwnerMainTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Pattern READY = Pattern.compile("ready on port (\\d+)");

    @TempDir
    Path tmp;

    private static Map<String, String> env(String... keyValues) {
        Map<String, String> env = new HashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            env.put(keyValues[i], keyValues[i + 1]);
        }
        return env;
    }

    private static List<String> problems(Map<String, String> env) {
        try {
            OwnerMain.specFrom(env);
        } catch (Environment.Problems e) {
            return e.problems();
        }
        throw new AssertionError("expected a refusal of " + env);
    }

    @Test
    void specFrom_nodeIdOnly_hasTheContainerDefaults() {
        OwnerSpec spec = OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "owner-0"));

        assertThat(spec.nodeId()).isEqualTo("owner-0");
        assertThat(spec.port()).isEqualTo(7070);
        assertThat(spec.bindHost()).isEqualTo("0.0.0.0");
        assertThat(spec.ringMembers()).containsExactly("owner-0");
        assertThat(spec.ringEpoch()).isEqualTo(1);
        assertThat(spec.cellId()).isEqualTo("default");
        assertThat(spec.redisUri()).isNull();
        assertThat(spec.dataDir()).isNull();
    }

    @Test
    void specFrom_noNodeId_takesTheHostname() {
        OwnerSpec spec =
                OwnerMain.specFrom(env("HOSTNAME", "owner-1", "SPECTOR_CELL_RING_MEMBERS", "owner-0,owner-1,owner-2"));

        assertThat(spec.nodeId()).isEqualTo("owner-1");
    }

    @Test
    void specFrom_noNodeIdAndNoHostname_isRefused() {
        assertThat(problems(env("SPECTOR_CELL_RING_MEMBERS", "owner-0")))
                .containsExactly("SPECTOR_CELL_NODE_ID: (unset) (expected: this node's ring member id; HOSTNAME is"
                        + " unset too)");
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", " ", "HOSTNAME", "")))
                .singleElement()
                .asString()
                .startsWith("SPECTOR_CELL_NODE_ID: (unset)");
    }

    @Test
    void specFrom_everyVariableSet_isTakenAsGiven() {
        OwnerSpec spec = OwnerMain.specFrom(env(
                "SPECTOR_CELL_NODE_ID", "owner-2",
                "SPECTOR_CELL_RING_MEMBERS",
                        "owner-0=http://owner-0:7070, owner-1=http://owner-1:7070,owner-2=http://owner-2:7070",
                "SPECTOR_CELL_RING_EPOCH", "7",
                "SPECTOR_CELL_ID", "cell-a",
                "SPECTOR_SERVER_PORT", "7171",
                "SPECTOR_SERVER_HOST", "127.0.0.1",
                "SPECTOR_ROUTING_REDIS_URI", "redis://redis:6379",
                "SPECTOR_DATA_DIR", tmp.toString(),
                "SPECTOR_SECURITY_JWT_HMAC_SECRET", "0123456789abcdef0123456789abcdef"));

        assertThat(spec.ringMembers()).containsExactly("owner-0", "owner-1", "owner-2");
        assertThat(spec.ringEpoch()).isEqualTo(7);
        assertThat(spec.cellId()).isEqualTo("cell-a");
        assertThat(spec.port()).isEqualTo(7171);
        assertThat(spec.bindHost()).isEqualTo("127.0.0.1");
        assertThat(spec.redisUri()).isEqualTo("redis://redis:6379");
        assertThat(spec.dataDir()).isEqualTo(tmp);
        assertThat(new String(spec.hmacSecret(), StandardCharsets.UTF_8)).isEqualTo("0123456789abcdef0123456789abcdef");
    }

    @Test
    void specFrom_portAtItsBounds_isTaken_andOnePastIsRefused() {
        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_SERVER_PORT", "65535"))
                        .port())
                .isEqualTo(65535);
        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_SERVER_PORT", "0"))
                        .port())
                .isZero();
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_SERVER_PORT", "65536")))
                .containsExactly("SPECTOR_SERVER_PORT: '65536' (expected: 0..65535)");
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_SERVER_PORT", "-1")))
                .containsExactly("SPECTOR_SERVER_PORT: '-1' (expected: 0..65535)");
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_SERVER_PORT", "http")))
                .containsExactly("SPECTOR_SERVER_PORT: 'http' (expected: 0..65535)");
    }

    @Test
    void specFrom_epochAtZero_isTaken_andMinusOneIsRefused() {
        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_CELL_RING_EPOCH", "0"))
                        .ringEpoch())
                .isZero();
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_CELL_RING_EPOCH", "-1")))
                .containsExactly("SPECTOR_CELL_RING_EPOCH: '-1' (expected: >= 0)");
    }

    @Test
    void specFrom_ringOf4096Members_isTaken_and4097IsRefused() {
        String members4096 =
                IntStream.range(0, 4096).mapToObj(i -> "owner-" + i).collect(Collectors.joining(","));

        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "owner-0", "SPECTOR_CELL_RING_MEMBERS", members4096))
                        .ringMembers())
                .hasSize(4096);
        assertThat(problems(env(
                        "SPECTOR_CELL_NODE_ID", "owner-0", "SPECTOR_CELL_RING_MEMBERS", members4096 + ",owner-4096")))
                .containsExactly("SPECTOR_CELL_RING_MEMBERS: 4097 members (expected: 1..4096 members)");
    }

    @Test
    void specFrom_memberIdOf255Chars_isTaken_and256IsRefused() {
        String id255 = "o".repeat(255);

        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", id255)).nodeId())
                .isEqualTo(id255);
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", id255 + "o")))
                .singleElement()
                .asString()
                .startsWith("SPECTOR_CELL_NODE_ID: '" + id255 + "o' (expected: a ring member id of 1..255 chars");
    }

    @Test
    void specFrom_badRingMembers_areRefusedNamingTheValue() {
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", "a", "SPECTOR_CELL_RING_MEMBERS", "a,b,a")))
                .containsExactly("SPECTOR_CELL_RING_MEMBERS: 'a,b,a' (expected: each id once; 'a' is listed twice)");
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", "a", "SPECTOR_CELL_RING_MEMBERS", "a,,b")))
                .singleElement()
                .asString()
                .startsWith("SPECTOR_CELL_RING_MEMBERS: '' (expected: a ring member id");
    }

    @Test
    void specFrom_nodeMissingFromTheRing_isRefused() {
        assertThat(problems(env(
                        "HOSTNAME", "spector-owner-0", "SPECTOR_CELL_RING_MEMBERS", "owner-0=http://x:7070,owner-1")))
                .containsExactly(
                        "SPECTOR_CELL_NODE_ID: 'spector-owner-0' (expected: one of the ring members [owner-0, owner-1])");
    }

    @Test
    void specFrom_hmacSecretOf32Bytes_isTaken_and31AreRefusedWithoutShowingIt() {
        String secret31 = "s".repeat(31);

        assertThat(OwnerMain.specFrom(
                                env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_SECURITY_JWT_HMAC_SECRET", secret31 + "s"))
                        .hmacSecret())
                .hasSize(32);
        assertThat(problems(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_SECURITY_JWT_HMAC_SECRET", secret31)))
                .containsExactly("SPECTOR_SECURITY_JWT_HMAC_SECRET: 31 bytes (expected: >= 32 bytes)");
    }

    @Test
    void specFrom_adminTokenAtItsBounds_isTaken_andOnePastIsRefusedWithoutShowingIt() {
        String min = "a".repeat(OwnerLimits.MIN_ADMIN_TOKEN_BYTES);
        String max = "Z".repeat(OwnerLimits.MAX_ADMIN_TOKEN_BYTES);

        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_OWNER_ADMIN_TOKEN", min))
                        .adminToken())
                .isEqualTo(min);
        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_OWNER_ADMIN_TOKEN", max))
                        .adminToken())
                .isEqualTo(max);
        List<String> short15 =
                problems(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_OWNER_ADMIN_TOKEN", min.substring(1)));
        List<String> long257 = problems(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_OWNER_ADMIN_TOKEN", max + "Z"));

        assertThat(short15).containsExactly("SPECTOR_OWNER_ADMIN_TOKEN: 15 bytes (expected: 16..256 bytes)");
        assertThat(long257).containsExactly("SPECTOR_OWNER_ADMIN_TOKEN: 257 bytes (expected: 16..256 bytes)");
        assertThat(String.join("\n", long257)).doesNotContain("ZZZZ");
    }

    @Test
    void specFrom_adminTokenWithABadChar_isRefusedWithoutShowingIt_andEmptyIsUnset() {
        String token = "admin-token-with space";

        List<String> refused = problems(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_OWNER_ADMIN_TOKEN", token));

        assertThat(refused)
                .containsExactly("SPECTOR_OWNER_ADMIN_TOKEN: a character outside token68 at index 16 (expected:"
                        + " A-Za-z0-9-._~+/ with '=' only at the end)");
        assertThat(String.join("\n", refused)).doesNotContain("admin-token-with");
        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_OWNER_ADMIN_TOKEN", ""))
                        .adminToken())
                .as("an empty value counts as unset")
                .isNull();
        assertThat(OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "n")).adminToken())
                .isNull();
    }

    @Test
    void specFrom_severalBadValues_listsEveryOne() {
        assertThat(problems(env(
                        "SPECTOR_CELL_NODE_ID", "n",
                        "SPECTOR_CELL_ID", "Cell A",
                        "SPECTOR_ROUTING_REDIS_URI", "localhost:6379",
                        "SPECTOR_SERVER_PORT", "99999")))
                .containsExactly(
                        "SPECTOR_SERVER_PORT: '99999' (expected: 0..65535)",
                        "SPECTOR_CELL_ID: 'Cell A' (expected: a name of [a-z0-9][a-z0-9._-]{0,62})",
                        "SPECTOR_ROUTING_REDIS_URI: 'localhost:6379' (expected: redis://host:port or"
                                + " rediss://host:port)");
        assertThatThrownBy(() -> OwnerMain.specFrom(env("SPECTOR_CELL_NODE_ID", "n", "SPECTOR_SERVER_PORT", "x")))
                .hasMessage("SPECTOR_SERVER_PORT: 'x' (expected: 0..65535)");
    }

    @Test
    void main_asAProcess_answersHealthAndStopsOnSigterm() throws Exception {
        Process owner = start(
                env(
                        "SPECTOR_CELL_NODE_ID", "owner-1",
                        "SPECTOR_CELL_RING_MEMBERS", "owner-0,owner-1,owner-2",
                        "SPECTOR_SERVER_PORT", "0",
                        "SPECTOR_SERVER_HOST", "127.0.0.1",
                        "SPECTOR_DATA_DIR", tmp.resolve("data").toString()),
                tmp.resolve("owner.err"));
        try {
            CompletableFuture<Integer> port = CompletableFuture.supplyAsync(() -> readyPort(owner));
            int p = port.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

            HttpClient http = HttpClient.newBuilder().connectTimeout(WAIT).build();
            HttpResponse<String> health = http.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p + "/health"))
                            .timeout(WAIT)
                            .build(),
                    HttpResponse.BodyHandlers.ofString());

            assertThat(health.statusCode()).isEqualTo(200);
            assertThat(health.body()).contains("\"UP\"").contains("owner-1");
            owner.destroy(); // SIGTERM: the shutdown hook closes the owner
            assertThat(owner.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                    .as("the owner stops on SIGTERM")
                    .isTrue();
            assertThat(owner.exitValue()).isEqualTo(143);
        } finally {
            owner.destroyForcibly();
        }
    }

    @Test
    void main_asAProcessWithABadValue_exitsTwoNamingIt() throws Exception {
        Path stderr = tmp.resolve("owner.err");
        Process owner = start(env("SPECTOR_CELL_NODE_ID", "owner-0", "SPECTOR_SERVER_PORT", "70000"), stderr);
        try {
            assertThat(owner.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            String err = Files.readString(stderr, StandardCharsets.UTF_8);

            assertThat(owner.exitValue()).isEqualTo(2);
            assertThat(err).contains("SPECTOR_SERVER_PORT: '70000' (expected: 0..65535)");
        } finally {
            owner.destroyForcibly();
        }
    }

    @Test
    void main_asAProcessWithAnAdminToken_asksEveryAdminCallerForIt_andNeverLogsIt() throws Exception {
        String token = "owner-main-admin-token-0123456789";
        Path stderr = tmp.resolve("owner.err");
        Process owner = start(
                env(
                        "SPECTOR_CELL_NODE_ID", "owner-0",
                        "SPECTOR_SERVER_PORT", "0",
                        "SPECTOR_SERVER_HOST", "127.0.0.1",
                        "SPECTOR_DATA_DIR", tmp.resolve("data").toString(),
                        "SPECTOR_OWNER_ADMIN_TOKEN", token),
                stderr);
        try {
            int p = CompletableFuture.supplyAsync(() -> readyPort(owner)).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            HttpClient http = HttpClient.newBuilder().connectTimeout(WAIT).build();
            URI stats = URI.create("http://127.0.0.1:" + p + "/admin/stats");

            HttpResponse<String> without = http.send(
                    HttpRequest.newBuilder(stats).timeout(WAIT).build(), HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> with = http.send(
                    HttpRequest.newBuilder(stats)
                            .timeout(WAIT)
                            .header("Authorization", "Bearer " + token)
                            .build(),
                    HttpResponse.BodyHandlers.ofString());

            assertThat(without.statusCode()).as("loopback without the token").isEqualTo(401);
            assertThat(without.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"spector-admin\"");
            assertThat(with.statusCode()).isEqualTo(200);
            Waits.until("the refusal is logged", () -> read(stderr).contains("refused: admin-token"));
            String log = read(stderr);
            assertThat(log.lines().filter(l -> l.contains("refused: admin-token")))
                    .as("once, at WARN, naming the address")
                    .singleElement()
                    .asString()
                    .contains("WARN")
                    .contains("GET /admin/stats from /127.0.0.1:");
            assertThat(log).as("the token is never logged").doesNotContain(token);
        } finally {
            owner.destroyForcibly();
            owner.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    @Test
    void main_asAProcessWithATooShortAdminToken_exitsTwoWithoutPrintingIt() throws Exception {
        String token = "fifteen-bytes-x";
        Path stderr = tmp.resolve("owner.err");
        Process owner = start(env("SPECTOR_CELL_NODE_ID", "owner-0", "SPECTOR_OWNER_ADMIN_TOKEN", token), stderr);
        try {
            assertThat(owner.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            String err = read(stderr);

            assertThat(owner.exitValue()).isEqualTo(2);
            assertThat(err).contains("SPECTOR_OWNER_ADMIN_TOKEN: 15 bytes (expected: 16..256 bytes)");
            assertThat(err).doesNotContain(token);
        } finally {
            owner.destroyForcibly();
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Process start(Map<String, String> env, Path stderr) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Xmx64m");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(OwnerMain.class.getName());
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().clear();
        pb.environment().putAll(env);
        pb.redirectError(stderr.toFile());
        return pb.start();
    }

    /** Reads the process's output until the ready line; the caller bounds the wait. */
    private static int readyPort(Process process) {
        // Not closed here: the process keeps writing to it; destroying the process ends it.
        BufferedReader out =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        try {
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                Matcher m = READY.matcher(line);
                if (m.find()) {
                    return Integer.parseInt(m.group(1));
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        throw new IllegalStateException("the owner exited before it was ready");
    }
}
