package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code spector demo} prints command lines that work: every {@code curl} line it prints is run
 * (as {@code java.net.http}) against the demo it started, and every {@code bin/spector} line
 * through the CLI.
 */
final class DemoCommandTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final Pattern WORD = Pattern.compile("'[^']*'|\"[^\"]*\"|\\S+");

    private final HttpClient http = HttpClient.newBuilder()
            .connectTimeout(TIMEOUT)
            .version(HttpClient.Version.HTTP_1_1)
            .build();

    @Test
    void demo_everyPrintedCommandLineWorks(@TempDir Path state) throws Exception {
        try (DemoCommand.Running demo = DemoCommand.start(state, null, true)) {
            StringWriter welcome = new StringWriter();
            DemoCommand.printWelcome(new PrintWriter(welcome, true), demo);
            String token = Files.readString(demo.tokenFile, StandardCharsets.UTF_8);
            awaitWorker(demo, token);

            List<String> curls = new ArrayList<>();
            List<String> clis = new ArrayList<>();
            for (String line : welcome.toString().lines().toList()) {
                String command = line.strip();
                if (command.startsWith("curl ")) {
                    curls.add(command);
                } else if (command.startsWith("bin/spector ")) {
                    clis.add(command);
                }
            }
            assertThat(curls).as("curl lines printed").hasSizeGreaterThanOrEqualTo(8);
            assertThat(clis).as("bin/spector lines printed").hasSizeGreaterThanOrEqualTo(2);
            for (String curl : curls) {
                int status = runCurl(curl, demo.tokenFile, token);
                assertThat(status).as("status of: %s", curl).isBetween(200, 299);
            }
            for (String cli : clis) {
                StringWriter out = new StringWriter();
                StringWriter err = new StringWriter();
                String[] args = words(cli.substring("bin/spector ".length()));
                int code = SpectorCli.run(new PrintWriter(out, true), new PrintWriter(err, true), args);
                assertThat(code).as("exit of: %s; stderr: %s", cli, err).isZero();
            }
        }
    }

    /**
     * The secret that signs every token and the day's admin token are the user's alone: the state
     * folder 0700, both files 0600, even over files an older demo left 0644 (they were 0644 under
     * the usual umask: any user of the machine could mint an admin token; found by a review).
     */
    @Test
    void demo_keepsItsSecretAndTokenFromOtherUsers(@TempDir Path parent) throws Exception {
        Path state = parent.resolve("state");
        Files.createDirectories(state);
        Files.writeString(state.resolve("secret"), "old");
        Files.setPosixFilePermissions(
                state.resolve("secret"), java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        try (DemoCommand.Running demo = DemoCommand.start(state, null, true)) {
            assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(state)))
                    .isEqualTo("rwx------");
            for (Path f : List.of(state.resolve("secret"), demo.tokenFile)) {
                assertThat(java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(f)))
                        .as("%s", f.getFileName())
                        .isEqualTo("rw-------");
            }
            assertThat(Files.readString(state.resolve("secret"))).isNotEqualTo("old");
        }
    }

    /** Waits (bounded) until the demo worker's uplink answers a relay. */
    private void awaitWorker(DemoCommand.Running demo, String token) {
        HttpRequest relay = HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + demo.gatewayPort + "/relay/demo-worker/echo/echo"))
                .timeout(TIMEOUT)
                .header("Authorization", "Bearer " + token)
                .build();
        await("the demo worker's uplink answers a relay")
                .atMost(TIMEOUT)
                .pollInterval(Duration.ofMillis(50))
                .until(() ->
                        http.send(relay, HttpResponse.BodyHandlers.discarding()).statusCode() == 200);
    }

    /** Runs one printed curl line: -H, -d (POST), -T (PUT a file), -N (a stream: the head is enough). */
    private int runCurl(String line, Path tokenFile, String token) throws Exception {
        String command = line;
        int pipe = command.indexOf(" |");
        if (pipe > 0) {
            command = command.substring(0, pipe);
        }
        int comment = command.indexOf(" #");
        if (comment > 0) {
            command = command.substring(0, comment);
        }
        command = command.replace("$(cat " + tokenFile + ")", token.strip());
        String[] words = words(command);
        HttpRequest.Builder request = HttpRequest.newBuilder().timeout(TIMEOUT);
        boolean stream = false;
        String url = null;
        for (int i = 1; i < words.length; i++) {
            String w = words[i];
            switch (w) {
                case "-s" -> {}
                case "-sN" -> stream = true;
                case "-H" -> {
                    String h = words[++i];
                    int colon = h.indexOf(':');
                    request.header(
                            h.substring(0, colon).strip(),
                            h.substring(colon + 1).strip());
                }
                case "-d" -> request.POST(HttpRequest.BodyPublishers.ofString(words[++i]));
                case "-T" -> request.PUT(HttpRequest.BodyPublishers.ofFile(repositoryFile(words[++i])));
                default -> {
                    assertThat(w).as("an unknown curl word in: %s", line).startsWith("http");
                    url = w;
                }
            }
        }
        assertThat(url).as("a URL in: %s", line).isNotNull();
        request.uri(URI.create(url));
        if (stream) {
            HttpResponse<InputStream> r = http.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
            r.body().close(); // an event stream never ends: its head is the answer
            return r.statusCode();
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.discarding())
                .statusCode();
    }

    private static Path repositoryFile(String name) {
        Path here = Path.of(name);
        return Files.exists(here) ? here : Path.of("..").resolve(name);
    }

    private static String[] words(String command) {
        List<String> words = new ArrayList<>();
        Matcher m = WORD.matcher(command);
        while (m.find()) {
            String w = m.group();
            if (w.length() >= 2 && (w.startsWith("'") || w.startsWith("\""))) {
                w = w.substring(1, w.length() - 1);
            }
            words.add(w);
        }
        return words.toArray(String[]::new);
    }
}
