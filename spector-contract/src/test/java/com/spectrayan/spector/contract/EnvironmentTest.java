package com.spectrayan.spector.contract;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@link Environment#awaitShutdown} in a real child JVM ({@link ShutdownChild}) stopped by SIGTERM. */
final class EnvironmentTest {
    /** The bound on every wait for the child: its start, its exit, the end of its output. */
    private static final long WAIT_SECONDS = 20;

    private final List<String> out = new CopyOnWriteArrayList<>();
    private final List<String> err = new CopyOnWriteArrayList<>();
    private final CompletableFuture<Void> ready = new CompletableFuture<>();
    private final CompletableFuture<Void> outEnded = new CompletableFuture<>();
    private final CompletableFuture<Void> errEnded = new CompletableFuture<>();
    private @Nullable Process child;

    @AfterEach
    void kill() {
        Process c = child;
        if (c != null) {
            c.destroyForcibly();
        }
    }

    /** Starts the child and waits until it printed {@code ready} (it is then in the main wait). */
    private void start(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                ShutdownChild.class.getName()));
        command.addAll(List.of(args));
        Process c = new ProcessBuilder(command).start();
        child = c;
        collect(c.getInputStream(), out, outEnded);
        collect(c.getErrorStream(), err, errEnded);
        ready.get(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    private void collect(InputStream in, List<String> lines, CompletableFuture<Void> ended) {
        Thread t = new Thread(
                () -> {
                    try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                        for (String line; (line = r.readLine()) != null; ) {
                            lines.add(line);
                            if (line.equals("ready")) {
                                ready.complete(null);
                            }
                        }
                        ended.complete(null);
                    } catch (IOException e) {
                        ended.completeExceptionally(e);
                    }
                },
                "child-output");
        t.setDaemon(true);
        t.start();
    }

    /** Sends SIGTERM and waits for the child to exit and for all it printed. */
    private void stop() throws Exception {
        Process c = requireNonNull(child, "child");
        c.toHandle().destroy(); // SIGTERM on Linux; unlike Process.destroy it leaves our ends of the pipes open
        assertThat(c.waitFor(WAIT_SECONDS, TimeUnit.SECONDS))
                .as("the child exits on SIGTERM")
                .isTrue();
        outEnded.get(WAIT_SECONDS, TimeUnit.SECONDS);
        errEnded.get(WAIT_SECONDS, TimeUnit.SECONDS);
    }

    @Test
    void awaitShutdown_sigterm_closesTheResourceAndLetsTheProcessExit() throws Exception {
        start();
        assertThat(out).as("nothing closed before the signal").containsExactly("ready");

        stop();

        assertThat(out).containsExactly("ready", "closed");
        assertThat(err).isEmpty();
    }

    @Test
    void awaitShutdown_closeFails_printsTheFailureAndStillExits() throws Exception {
        start("fail");

        stop();

        assertThat(err).containsExactly("spector-test: while stopping: java.lang.IllegalStateException: boom");
        assertThat(out).containsExactly("ready");
    }

    /**
     * Each property {@link Environment#processDefaults} sets, its value when the command line gave
     * none, and one the command line gave, which stands: Netty's allocator out of its low-memory
     * mode, JBoss Logging (SmallRye Config's) to SLF4J.
     */
    @ParameterizedTest
    @CsvSource({"io.netty.allocator.lowMemory, false, true", "org.jboss.logging.provider, slf4j, jdk"})
    void processDefaults_setsEachPropertyUnset_butKeepsAValueTheCommandLineGave(
            String property, String value, String given) {
        assertThat(List.of(Environment.NETTY_LOW_MEMORY, Environment.JBOSS_LOGGING_PROVIDER))
                .contains(property);
        String before = System.getProperty(property);
        try {
            System.clearProperty(property);
            Environment.processDefaults();
            assertThat(System.getProperty(property)).isEqualTo(value);

            System.setProperty(property, given); // -Dproperty=given
            Environment.processDefaults();
            assertThat(System.getProperty(property)).isEqualTo(given);
        } finally {
            if (before == null) {
                System.clearProperty(property);
            } else {
                System.setProperty(property, before);
            }
        }
    }
}
