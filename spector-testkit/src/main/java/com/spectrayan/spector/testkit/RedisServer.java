package com.spectrayan.spector.testkit;

import static java.util.Objects.requireNonNull;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * A real {@code redis-server} process on a loopback port, with no persistence. It can be stopped
 * and started again on the same port mid-test, which is how tests take Redis away from a gateway.
 *
 * <p>Readiness is read from the server's own log line ("Ready to accept connections"), so no test
 * sleeps to wait for it; every wait is bounded by {@link #READY_TIMEOUT} or {@link #STOP_TIMEOUT}.
 *
 * <p>The binary is {@code redis-server} on the {@code PATH}, or the file named by the environment
 * variable {@code SPECTOR_REDIS_SERVER}. When neither exists, {@link #start()} fails with a message
 * that says how to install it.
 */
public final class RedisServer implements AutoCloseable {
    /** Longest wait for a started server to log that it accepts connections. */
    public static final Duration READY_TIMEOUT = Duration.ofSeconds(15);

    /** Longest wait for a stopped server to exit after SIGTERM before it is killed. */
    public static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

    /** Log lines kept to explain a server that did not become ready. */
    static final int LOG_TAIL_LINES = 40;

    private static final String READY_LINE = "Ready to accept connections";

    private final String binary;
    private final int port;
    private final Path dir;
    private @Nullable Process process;

    private RedisServer(String binary, int port, Path dir) {
        this.binary = binary;
        this.port = port;
        this.dir = dir;
    }

    /** Creates a server on a free loopback port, not yet started, using the default binary. */
    public static RedisServer onFreePort() {
        return withBinary(defaultBinary());
    }

    /** Creates a server on a free loopback port, not yet started, using the given binary. */
    public static RedisServer withBinary(String binary) {
        requireNonNull(binary, "binary");
        try {
            return new RedisServer(binary, freePort(), Files.createTempDirectory("spector-redis-"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns the loopback port, the same across restarts. */
    public int port() {
        return port;
    }

    /** Returns the {@code redis://127.0.0.1:PORT} URI. */
    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    /** Answers whether the process is running. */
    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    /**
     * Starts the process and returns once it logs that it accepts connections.
     *
     * @throws IllegalStateException when the binary is missing or the server does not become
     *     ready within {@link #READY_TIMEOUT}; the message carries the server's last log lines
     */
    public synchronized RedisServer start() {
        if (isRunning()) {
            return this;
        }
        if (!isExecutable(binary)) {
            throw new IllegalStateException("redis-server not found (looked for '" + binary + "' on the PATH and in"
                    + " SPECTOR_REDIS_SERVER). The tests start a real Redis: install it with"
                    + " 'apt-get install -y redis-server' (.ci/run does this), or point SPECTOR_REDIS_SERVER at"
                    + " the binary.");
        }
        List<String> command = List.of(
                binary,
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                dir.toString(),
                "--loglevel",
                "notice");
        Process started;
        try {
            started = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new IllegalStateException("could not start " + command, e);
        }
        process = started;
        awaitReady(started);
        return this;
    }

    /** Stops the process (SIGTERM, then SIGKILL after {@link #STOP_TIMEOUT}) and waits for its exit. */
    public synchronized void stop() {
        Process p = process;
        process = null;
        if (p == null) {
            return;
        }
        p.destroy();
        try {
            if (!p.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly().waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
        }
    }

    @Override
    public void close() {
        stop();
    }

    private void awaitReady(Process started) {
        CompletableFuture<Void> ready = new CompletableFuture<>();
        Deque<String> tail = new ArrayDeque<>();
        Thread reader = new Thread(
                () -> {
                    try (BufferedReader in = new BufferedReader(
                            new InputStreamReader(started.getInputStream(), StandardCharsets.UTF_8))) {
                        for (String line; (line = in.readLine()) != null; ) {
                            synchronized (tail) {
                                tail.addLast(line);
                                if (tail.size() > LOG_TAIL_LINES) {
                                    tail.removeFirst();
                                }
                            }
                            if (line.contains(READY_LINE)) {
                                ready.complete(null);
                            }
                        }
                        ready.completeExceptionally(new IllegalStateException("redis-server exited"));
                    } catch (IOException e) {
                        ready.completeExceptionally(e);
                    }
                },
                "redis-server-log-" + port);
        reader.setDaemon(true);
        reader.start();
        try {
            ready.get(READY_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            stop();
            String log;
            synchronized (tail) {
                log = String.join("\n", tail);
            }
            throw new IllegalStateException(
                    "redis-server on port " + port + " was not ready within " + READY_TIMEOUT.toMillis()
                            + " ms; its last log lines:\n" + log,
                    e);
        }
    }

    private static String defaultBinary() {
        String configured = System.getenv("SPECTOR_REDIS_SERVER");
        if (configured != null && !configured.isBlank()) {
            return configured;
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator, -1)) {
                File candidate = new File(dir, "redis-server");
                if (candidate.canExecute()) {
                    return candidate.getPath();
                }
            }
        }
        return "redis-server";
    }

    private static boolean isExecutable(String binary) {
        File f = new File(binary);
        return f.isFile() && f.canExecute();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }
}
