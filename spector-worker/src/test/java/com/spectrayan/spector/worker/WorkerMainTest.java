package com.spectrayan.spector.worker;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.Environment;
import com.spectrayan.spector.worker.WorkerMain.Settings;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link WorkerMain}: the worker image's environment. */
final class WorkerMainTest {
    @TempDir
    Path tmp;

    /** A complete environment with an inline token; tests override single keys. */
    private static Map<String, String> env(String... keyValues) {
        Map<String, String> env = new HashMap<>();
        env.put("SPECTOR_WORKER_GATEWAY", "ws://gateway:7070/uplink");
        env.put("SPECTOR_WORKER_ID", "worker-1");
        env.put("SPECTOR_WORKER_TOKEN", "s3cret-token");
        env.put("SPECTOR_WORKER_TARGETS", "echo=http://upstream:7070");
        for (int i = 0; i < keyValues.length; i += 2) {
            env.put(keyValues[i], keyValues[i + 1]);
        }
        return env;
    }

    /** {@link #env} without {@code key}. */
    private static Map<String, String> envWithout(String key, String... keyValues) {
        Map<String, String> env = env(keyValues);
        env.remove(key);
        return env;
    }

    private static List<String> problems(Map<String, String> env) {
        try {
            WorkerMain.settingsFrom(env);
        } catch (Environment.Problems e) {
            return e.problems();
        }
        throw new AssertionError("expected a refusal of " + env);
    }

    @Test
    void settingsFrom_completeEnvironment_isTakenAsGiven() {
        Settings s = WorkerMain.settingsFrom(env(
                "SPECTOR_WORKER_TARGETS", "echo=http://upstream:7070, app=http://app:8080/base",
                "SPECTOR_WORKER_ADMIN_PORT", "7179"));

        assertThat(s.gateway()).isEqualTo(URI.create("ws://gateway:7070/uplink"));
        assertThat(s.workerId()).isEqualTo("worker-1");
        assertThat(s.token()).isEqualTo("s3cret-token");
        assertThat(s.targets())
                .containsExactly(
                        Map.entry("echo", URI.create("http://upstream:7070")),
                        Map.entry("app", URI.create("http://app:8080/base")));
        assertThat(s.adminPort()).isEqualTo(7179);
        assertThat(s.toString()).doesNotContain("s3cret-token");
    }

    @Test
    void settingsFrom_noAdminPort_takesTheCliDefault() {
        assertThat(WorkerMain.settingsFrom(env()).adminPort()).isEqualTo(7079);
    }

    @Test
    void settingsFrom_tokenFile_isReadAndStripped() throws IOException {
        Path file = tmp.resolve("token");
        Files.writeString(file, "from-file\n", StandardCharsets.UTF_8);

        Settings s = WorkerMain.settingsFrom(
                envWithout("SPECTOR_WORKER_TOKEN", "SPECTOR_WORKER_TOKEN_FILE", file.toString()));

        assertThat(s.token()).isEqualTo("from-file");
    }

    @Test
    void settingsFrom_tokenUnsetBothSetOrFileMissing_isRefused() throws IOException {
        assertThat(problems(envWithout("SPECTOR_WORKER_TOKEN")))
                .containsExactly("SPECTOR_WORKER_TOKEN_FILE: (unset) (expected: a file holding the worker's token, or"
                        + " SPECTOR_WORKER_TOKEN)");
        assertThat(problems(env("SPECTOR_WORKER_TOKEN_FILE", "/x")))
                .containsExactly(
                        "SPECTOR_WORKER_TOKEN_FILE and SPECTOR_WORKER_TOKEN: both set (expected: exactly one)");
        Path missing = tmp.resolve("missing");
        assertThat(problems(envWithout("SPECTOR_WORKER_TOKEN", "SPECTOR_WORKER_TOKEN_FILE", missing.toString())))
                .singleElement()
                .asString()
                .startsWith(
                        "SPECTOR_WORKER_TOKEN_FILE: '" + missing + "' (expected: a readable file holding the token");
        Path empty = Files.writeString(tmp.resolve("empty"), "\n", StandardCharsets.UTF_8);
        assertThat(problems(envWithout("SPECTOR_WORKER_TOKEN", "SPECTOR_WORKER_TOKEN_FILE", empty.toString())))
                .containsExactly(
                        "SPECTOR_WORKER_TOKEN_FILE: '" + empty + "' (expected: a file holding the token; it is empty)");
    }

    @Test
    void settingsFrom_gatewayNotAWsOrWssUri_isRefused() {
        String expected = " (expected: wss://host[:port]/uplink or ws://host:port/uplink)";
        for (String bad : List.of("http://gateway:7070/uplink", "https://gateway/uplink", "gateway:7070", "ws://")) {
            assertThat(problems(env("SPECTOR_WORKER_GATEWAY", bad)))
                    .as(bad)
                    .containsExactly("SPECTOR_WORKER_GATEWAY: '" + bad + "'" + expected);
        }
        assertThat(problems(envWithout("SPECTOR_WORKER_GATEWAY")))
                .containsExactly("SPECTOR_WORKER_GATEWAY: (unset)" + expected);
        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_GATEWAY", "wss://gateway/uplink"))
                        .gateway())
                .as("wss:// without a port: 443")
                .hasToString("wss://gateway/uplink");
    }

    @Test
    void settingsFrom_uplinks_default2_1And8Taken_0And9Refused() {
        assertThat(WorkerMain.settingsFrom(env()).uplinks())
                .isEqualTo(WorkerDaemon.DEFAULT_UPLINKS)
                .isEqualTo(2);
        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_UPLINKS", "1")).uplinks())
                .isEqualTo(1);
        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_UPLINKS", "8")).uplinks())
                .isEqualTo(8);
        for (String bad : List.of("0", "9", "two")) {
            assertThat(problems(env("SPECTOR_WORKER_UPLINKS", bad)))
                    .as(bad)
                    .singleElement()
                    .asString()
                    .startsWith("SPECTOR_WORKER_UPLINKS: '" + bad + "'")
                    .contains("1..8");
        }
    }

    @Test
    void settingsFrom_caFile_mustBeAReadablePemCertificate() throws IOException {
        Path ca = Files.writeString(
                tmp.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n");
        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_CA_FILE", ca.toString()))
                        .caFile())
                .isEqualTo(ca);
        assertThat(WorkerMain.settingsFrom(env()).caFile())
                .as("unset: the JDK's trust store")
                .isNull();
        Path notPem = Files.writeString(tmp.resolve("key.txt"), "hello\n");
        for (Path bad : List.of(notPem, tmp.resolve("missing.pem"))) {
            assertThat(problems(env("SPECTOR_WORKER_CA_FILE", bad.toString())))
                    .containsExactly(
                            "SPECTOR_WORKER_CA_FILE: '" + bad + "' (expected: a readable PEM file of CA certificates)");
        }
    }

    @Test
    void settingsFrom_workerIdOf64Chars_isTaken_and65IsRefused() {
        String id64 = "w".repeat(64);

        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_ID", id64)).workerId())
                .isEqualTo(id64);
        assertThat(problems(env("SPECTOR_WORKER_ID", id64 + "w")))
                .containsExactly("SPECTOR_WORKER_ID: '" + id64 + "w' (expected: 1..64 chars of [A-Za-z0-9._-])");
        assertThat(problems(env("SPECTOR_WORKER_ID", "a b")))
                .containsExactly("SPECTOR_WORKER_ID: 'a b' (expected: 1..64 chars of [A-Za-z0-9._-])");
        assertThat(problems(envWithout("SPECTOR_WORKER_ID")))
                .singleElement()
                .asString()
                .startsWith("SPECTOR_WORKER_ID: (unset)");
    }

    @Test
    void settingsFrom_adminPortAtItsBounds_isTaken_andOnePastIsRefused() {
        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_ADMIN_PORT", "-1"))
                        .adminPort())
                .isEqualTo(-1);
        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_ADMIN_PORT", "65535"))
                        .adminPort())
                .isEqualTo(65535);
        assertThat(problems(env("SPECTOR_WORKER_ADMIN_PORT", "-2")))
                .containsExactly("SPECTOR_WORKER_ADMIN_PORT: '-2' (expected: -1..65535; -1: off, 0: any free port)");
        assertThat(problems(env("SPECTOR_WORKER_ADMIN_PORT", "65536")))
                .containsExactly("SPECTOR_WORKER_ADMIN_PORT: '65536' (expected: -1..65535; -1: off, 0: any free port)");
    }

    @Test
    void settingsFrom_64Targets_areTaken_and65AreRefused() {
        String targets64 = IntStream.range(0, 64)
                .mapToObj(i -> "t" + i + "=http://upstream:" + (8000 + i))
                .collect(Collectors.joining(","));

        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_TARGETS", targets64))
                        .targets())
                .hasSize(64);
        assertThat(problems(env("SPECTOR_WORKER_TARGETS", targets64 + ",t64=http://upstream:9000")))
                .containsExactly("SPECTOR_WORKER_TARGETS: 65 targets (expected: 1..64 targets)");
    }

    @Test
    void settingsFrom_targetNameOf64Chars_isTaken_and65IsRefused() {
        String name64 = "t".repeat(64);

        assertThat(WorkerMain.settingsFrom(env("SPECTOR_WORKER_TARGETS", name64 + "=http://u:1"))
                        .targets())
                .containsOnlyKeys(name64);
        assertThat(problems(env("SPECTOR_WORKER_TARGETS", name64 + "t=http://u:1")))
                .singleElement()
                .asString()
                .startsWith("SPECTOR_WORKER_TARGETS: '" + name64 + "t=http://u:1' (expected: name=http://host:port");
    }

    @Test
    void settingsFrom_badTargets_areRefusedNamingEach() {
        for (String bad : List.of(
                "echo",
                "echo=",
                "Echo=http://u:1",
                "-echo=http://u:1",
                "echo=https://u:443",
                "echo=http://u",
                "echo=http://u:1/?q=1",
                "=http://u:1")) {
            assertThat(problems(env("SPECTOR_WORKER_TARGETS", bad)))
                    .as(bad)
                    .singleElement()
                    .asString()
                    .startsWith("SPECTOR_WORKER_TARGETS: '" + bad + "' (expected: name=http://host:port[/base]");
        }
        assertThat(problems(env("SPECTOR_WORKER_TARGETS", "a=http://u:1,a=http://v:2")))
                .containsExactly("SPECTOR_WORKER_TARGETS: 'a=http://u:1,a=http://v:2' (expected: each name once; 'a'"
                        + " is listed twice)");
    }

    @Test
    void settingsFrom_emptyEnvironment_listsEveryMissingVariable() {
        assertThat(problems(Map.of()))
                .extracting(p -> p.substring(0, p.indexOf(':')))
                .containsExactly(
                        "SPECTOR_WORKER_GATEWAY",
                        "SPECTOR_WORKER_ID",
                        "SPECTOR_WORKER_TOKEN_FILE",
                        "SPECTOR_WORKER_TARGETS");
    }
}
