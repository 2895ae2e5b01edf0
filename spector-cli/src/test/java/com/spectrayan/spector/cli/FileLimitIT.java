package com.spectrayan.spector.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.spectrayan.spector.testkit.ProcessLogs;
import com.spectrayan.spector.testkit.Waits;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shipped jar's gateway and owner out of file descriptors, as their clients see them. Runs in
 * the build's integration-test phase, after {@code package} made {@code spector-cli-*-all.jar}
 * (its path comes in {@code spector.cli.jar}): the jar is what production runs, one file the JVM
 * holds open, so a class it loads late needs no new descriptor (a test class path of directories
 * would, and would fail where production does not).
 *
 * <p>Each runs under {@code ulimit -n} {@value #FILES}; the test opens idle connections until every
 * descriptor is taken ({@code EMFILE}: the gateway cannot open the owner connection a request needs)
 * and asks for an answer, which must be a problem; so must every answer after the connections are
 * gone: the first problem rendered while out of files must not break the rendering for the life of
 * the process (a class whose initialization failed stays unusable, and Jackson's reads the JDK's
 * time-zone file: {@code ProblemJson#prepare}). Found holding 9 990 SSE streams through a gateway
 * allowed 20 000 files (bench/README).
 */
class FileLimitIT {
    /** The process's open-file limit: its JVM's own files and about two hundred connections. */
    static final int FILES = 256;

    /** Connections beyond the files: the process's accept fails on them, so it says it is out of files. */
    static final int SURPLUS = 4;

    /** The bound on one answer, and on the process's start. */
    static final Duration ANSWER = Duration.ofSeconds(20);

    @Test
    void a_gateway_out_of_files_answers_problems_then_and_after(@TempDir Path dir) throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort(); // nothing listens here once it closes: the owner is down
        }
        // A namespace's request: its owner cannot be reached (no descriptor for the connection,
        // then connection refused), so the gateway answers 502 or 503 (RFC 9110 §15.6.3, §15.6.4).
        outOfFiles(
                dir,
                List.of("gateway"),
                Map.of(
                        "SPECTOR_CELL_ROLE", "gateway",
                        "SPECTOR_CELL_RING_MEMBERS", "owner-0=http://127.0.0.1:" + closedPort,
                        "SPECTOR_SERVER_HOST", "127.0.0.1",
                        "SPECTOR_SERVER_PORT", "0",
                        "SPECTOR_SERVER_PEER_PORT", "-1",
                        "SPECTOR_ROUTING_REDIS_ENABLED", "false",
                        "SPECTOR_SECURITY_ENABLED", "false",
                        "SPECTOR_SERVER_ACCESS_LOG", "off"),
                Pattern.compile("gateway listening on /127\\.0\\.0\\.1:(\\d+)"),
                "GET /api/v1/namespaces/ns-1/items HTTP/1.1\r\nHost: gw\r\n\r\n",
                "50[23]");
    }

    @Test
    void an_owner_out_of_files_answers_problems_then_and_after(@TempDir Path dir) throws Exception {
        // A header line without a colon: the owner answers 400 (RFC 9112 §5), a problem it renders.
        outOfFiles(
                dir,
                List.of(
                        "owner",
                        "--node-id",
                        "owner-0",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        "0",
                        "--members",
                        "owner-0=http://127.0.0.1:1"),
                Map.of(),
                Pattern.compile("owner-0 listening on 127\\.0\\.0\\.1:(\\d+)"),
                "GET /api/v1/namespaces/ns-1/items HTTP/1.1\r\nHost: owner\r\nno colon here\r\n\r\n",
                "400");
    }

    /**
     * Runs the shipped jar's {@code args} under {@code ulimit -n} {@value #FILES}, takes every
     * descriptor with idle connections (it stops accepting at {@code EMFILE}; the kernel holds the
     * rest in the backlog) until it logs that it is, sends {@code request} on the first and asserts a problem, then closes
     * them and asserts a problem on a new connection; nothing in its output may say that a class
     * could not be initialized.
     */
    private static void outOfFiles(
            Path dir, List<String> args, Map<String, String> env, Pattern listening, String request, String status)
            throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")), "Linux: the test counts the process's files in /proc");
        Path jar = Path.of(System.getProperty("spector.cli.jar", "the-jar-package-makes"));
        assumeTrue(Files.isRegularFile(jar), "the shipped jar is made by package: " + jar);
        Path log = dir.resolve("out.log");
        List<String> command = new ArrayList<>(List.of(
                "/bin/sh",
                "-c",
                "ulimit -n " + FILES + " && exec \"$@\"",
                "sh",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Dio.netty.leakDetection.level=PARANOID",
                "-jar",
                jar.toString()));
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().putAll(env);
        Process process =
                pb.redirectErrorStream(true).redirectOutput(log.toFile()).start();
        List<Socket> fillers = new ArrayList<>();
        try {
            int port = ProcessLogs.awaitPort(process, log, listening, ANSWER);
            long pid = process.pid(); // the shell execs the JVM: one process
            Waits.until(args.get(0) + "'s " + FILES + " files are all open", ANSWER, () -> {
                if (openFiles(pid) < FILES && fillers.size() < FILES) {
                    fillers.add(connect(port));
                }
                return openFiles(pid) >= FILES;
            });
            for (int i = 0; i < SURPLUS; i++) {
                fillers.add(connect(port)); // left in the backlog: the next accept fails
            }
            Waits.until(
                    args.get(0) + " says it is out of files",
                    ANSWER,
                    () -> ProcessLogs.output(log).contains("Too many open files"));
            assertProblem(fillers.get(0), request, status, "out of files");

            for (Socket s : fillers) {
                s.close();
            }
            Waits.until(args.get(0) + " closes the connections", ANSWER, () -> openFiles(pid) < FILES / 2);
            try (Socket s = connect(port)) {
                assertProblem(s, request, status, "after the files came back");
            }
            assertThat(ProcessLogs.output(log))
                    .as(args.get(0) + "'s output")
                    .doesNotContain("NoClassDefFoundError")
                    .doesNotContain("ExceptionInInitializerError");
        } finally {
            for (Socket s : fillers) {
                s.close();
            }
            process.destroyForcibly();
            process.waitFor(ANSWER.toSeconds(), TimeUnit.SECONDS);
        }
    }

    /** Sends {@code request}; asserts a problem+json answer with {@code status} and a code, within {@link #ANSWER}. */
    private static void assertProblem(Socket s, String request, String status, String when) throws IOException {
        s.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
        s.setSoTimeout((int) ANSWER.toMillis());
        String head = head(s.getInputStream());
        assertThat(head).as("the answer " + when).matches("(?s)HTTP/1\\.1 " + status + " .*");
        assertThat(head.toLowerCase(java.util.Locale.ROOT))
                .as("the answer " + when)
                .contains("content-type: application/problem+json");
        byte[] body = s.getInputStream().readNBytes(contentLength(head));
        assertThat(new String(body, StandardCharsets.UTF_8))
                .as("its body " + when)
                .contains("\"code\"");
    }

    private static String head(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        while (true) {
            int c = in.read();
            if (c < 0) {
                throw new AssertionError("the connection closed after " + b.size() + " bytes of a head: " + b);
            }
            b.write(c);
            byte[] h = b.toByteArray();
            int n = h.length;
            if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
                return b.toString(StandardCharsets.US_ASCII);
            }
        }
    }

    private static int contentLength(String head) {
        Matcher m = Pattern.compile("(?im)^content-length:\\s*(\\d+)\\s*$").matcher(head);
        assertThat(m.find()).as("a Content-Length in " + head).isTrue();
        return Integer.parseInt(m.group(1));
    }

    private static Socket connect(int port) {
        try {
            Socket s = new Socket();
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) ANSWER.toMillis());
            return s;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long openFiles(long pid) {
        try (Stream<Path> fds = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            return fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
