package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.testkit.Waits;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * One gateway replica as its own JVM ({@link GatewayMain} on the test class path), its settings
 * given as system properties. Its ports are fixed when it is made, so it restarts on the same ones;
 * its output (both streams) goes to a file per run, in {@code logs}.
 *
 * <pre>
 *   new ─start()─> starting ─"spector gateway ready"─> running ─kill()/terminate()─> stopped ─start()─> ...
 * </pre>
 *
 * <p>Thread-safety: {@link #start}, {@link #kill}, {@link #terminate} and {@link #close} are
 * synchronized on this; the list of run logs is a {@link CopyOnWriteArrayList}.
 */
final class GatewayProcess implements AutoCloseable {
    /** The bound on a start, from the process launch to the ready line (three JVMs share 2 cores). */
    static final Duration READY = Duration.ofSeconds(30);

    /** The bound on an exit after SIGTERM or SIGKILL. */
    static final Duration EXIT = Duration.ofSeconds(15);

    private static final String READY_LINE = "spector gateway ready";

    final String name;
    final int port;
    final int tlsPort;
    final int peerPort;
    private final Map<String, String> settings;
    private final Path logs;
    private final List<Path> runLogs = new CopyOnWriteArrayList<>();
    private int runs;
    private @Nullable Process process;

    GatewayProcess(String name, int port, int tlsPort, int peerPort, Map<String, String> settings, Path logs) {
        this.name = requireNonNull(name, "name");
        this.logs = requireNonNull(logs, "logs");
        this.port = port;
        this.tlsPort = tlsPort;
        this.peerPort = peerPort;
        this.settings = Map.copyOf(settings);
    }

    /** Launches the JVM, its output into a file of its own; {@link #awaitReady} waits for it. */
    synchronized Process start() {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException(name + " runs already");
        }
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dio.netty.leakDetection.level=PARANOID"));
        settings.forEach((k, v) -> command.add("-D" + k + "=" + v));
        command.add("-Dspector.server.port=" + port);
        command.add("-Dspector.server.tls.port=" + tlsPort);
        command.add("-Dspector.server.peer-port=" + peerPort);
        command.add("-Dspector.server.peer-address=127.0.0.1:" + peerPort);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), GatewayMain.class.getName()));
        Path log = logs.resolve(name + "-" + ++runs + ".log");
        Process p;
        try {
            // a file, not a pipe: Process.destroy() closes the pipes at once, losing what the drain logs
            p = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(log.toFile())
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start " + name, e);
        }
        process = p;
        runLogs.add(log);
        return p;
    }

    /** Waits, at most {@link #READY}, for the run's ready line; fails with the replica's output. */
    void awaitReady(Process started) {
        try {
            Waits.until(name + " logs that it is ready", READY, () -> {
                if (!started.isAlive()) {
                    throw new IllegalStateException(name + " exited before it was ready: " + output());
                }
                return lines(runLogs.get(runLogs.size() - 1)).stream().anyMatch(l -> l.contains(READY_LINE));
            });
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "; its output:\n" + String.join("\n", output()), e);
        }
    }

    /** Answers whether the JVM runs. */
    synchronized boolean isAlive() {
        Process p = process;
        return p != null && p.isAlive();
    }

    /** SIGKILL, and waits for the exit. */
    synchronized void kill() {
        Process p = requireNonNull(process, "process");
        p.destroyForcibly();
        awaitExit(p);
    }

    /** SIGTERM (the drain), without waiting; {@link #awaitExit} waits. */
    synchronized void terminate() {
        requireNonNull(process, "process").destroy();
    }

    /** Waits, at most {@link #EXIT}, for the JVM to end; SIGKILL past it, and fails. */
    void awaitExit() {
        Process p;
        synchronized (this) {
            p = requireNonNull(process, "process");
        }
        awaitExit(p);
    }

    private void awaitExit(Process p) {
        try {
            if (!p.waitFor(EXIT.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(name + " did not exit within " + EXIT.toSeconds() + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new AssertionError(name + ": interrupted while waiting for its exit", e);
        }
    }

    /** Returns the exit code of the last run, or -1 while it runs (or never ran). */
    synchronized int exitCode() {
        Process p = process;
        return p == null || p.isAlive() ? -1 : p.exitValue();
    }

    /** Returns every line the replica wrote, across its runs. */
    List<String> output() {
        List<String> all = new ArrayList<>();
        for (Path log : runLogs) {
            all.addAll(lines(log));
        }
        return all;
    }

    private static List<String> lines(Path log) {
        try {
            return Files.readAllLines(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public synchronized void close() {
        Process p = process;
        if (p != null && p.isAlive()) {
            p.destroyForcibly();
            try {
                p.waitFor(EXIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        return name + " (port " + port + ", tls " + tlsPort + ", peer " + peerPort + ")";
    }

    /** Returns {@code n} distinct free loopback ports, all held at once while they are picked. */
    static int[] freePorts(int n) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(s);
                ports[i] = s.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : held) {
                s.close();
            }
        }
    }
}
