package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code deploy/docker/http-probe.sh}, the images' HEALTHCHECK, run by bash against loopback
 * servers of the test's: which port it asks (the gateway's admin port when one is set, else the
 * client port), and that only a 200 passes.
 */
final class HttpProbeTest {
    private static final long BOUND_S = 20;

    /** A server that answers each connection's first request with {@code status}, and records its request line. */
    private static final class OneLineServer implements AutoCloseable {
        final ServerSocket socket;
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        private final Thread thread;

        OneLineServer(int status) throws IOException {
            socket = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
            thread = new Thread(() -> {
                while (!socket.isClosed()) {
                    try (Socket s = socket.accept()) {
                        s.setSoTimeout((int) TimeUnit.SECONDS.toMillis(BOUND_S));
                        BufferedReader in = new BufferedReader(
                                new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
                        lines.add(String.valueOf(in.readLine()));
                        for (String f = in.readLine(); f != null && !f.isEmpty(); f = in.readLine()) {
                            // the rest of the head, read as a server reads it before it answers
                        }
                        OutputStream out = s.getOutputStream();
                        out.write(("HTTP/1.1 " + status + " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                                .getBytes(StandardCharsets.US_ASCII));
                        out.flush();
                    } catch (IOException e) {
                        // closed by the test, or a probe gone: the next accept decides
                    }
                }
            });
            thread.setDaemon(true);
            thread.start();
        }

        int port() {
            return socket.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static int probe(Map<String, String> env, String... args) throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of(
                "bash", Repo.root().resolve("deploy/docker/http-probe.sh").toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().remove("SPECTOR_SERVER_PORT");
        pb.environment().remove("SPECTOR_SERVER_ADMIN_PORT");
        pb.environment().putAll(env);
        Process p = pb.start();
        assertThat(p.waitFor(BOUND_S, TimeUnit.SECONDS)).as("the probe ends").isTrue();
        return p.exitValue();
    }

    @Test
    void withAnAdminPort_itProbesTheAdminPort_notTheClientPort() throws Exception {
        try (OneLineServer admin = new OneLineServer(200)) {
            int exit = probe(
                    Map.of(
                            "SPECTOR_SERVER_PORT", String.valueOf(closedPort()),
                            "SPECTOR_SERVER_ADMIN_PORT", String.valueOf(admin.port())),
                    "/actuator/health/liveness");
            assertThat(exit).isZero();
            assertThat(admin.lines.poll(BOUND_S, TimeUnit.SECONDS)).isEqualTo("GET /actuator/health/liveness HTTP/1.1");
        }
        try (OneLineServer client = new OneLineServer(200)) {
            assertThat(probe(
                            Map.of(
                                    "SPECTOR_SERVER_PORT", String.valueOf(client.port()),
                                    "SPECTOR_SERVER_ADMIN_PORT", String.valueOf(closedPort())),
                            "/actuator/health/liveness"))
                    .as("the admin port set but not answering: unhealthy, even though the client port answers")
                    .isEqualTo(1);
        }
    }

    @Test
    void withoutAnAdminPort_itProbesTheClientPort_andAnArgumentWins() throws Exception {
        try (OneLineServer client = new OneLineServer(200)) {
            for (String off : List.of("-1", "0", "")) {
                assertThat(probe(
                                Map.of(
                                        "SPECTOR_SERVER_PORT",
                                        String.valueOf(client.port()),
                                        "SPECTOR_SERVER_ADMIN_PORT",
                                        off),
                                "/health"))
                        .as("admin port '%s': the client port", off)
                        .isZero();
            }
            assertThat(probe(
                            Map.of("SPECTOR_SERVER_ADMIN_PORT", String.valueOf(closedPort())),
                            "/health",
                            String.valueOf(client.port())))
                    .as("PORT given: it wins")
                    .isZero();
        }
    }

    /**
     * A server that takes the connection and resets it at once (a process dying, a full backlog
     * dropped): whichever of the probe's write and read meets the reset, the probe says unhealthy
     * with 1, the one failure code Docker's HEALTHCHECK defines, and not 141 (bash killed by
     * SIGPIPE, which it did for most of these).
     */
    @Test
    void aServerThatResets_isUnhealthy_withExitOne() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            Thread resetter = new Thread(() -> {
                while (!server.isClosed()) {
                    try (Socket s = server.accept()) {
                        s.setSoLinger(true, 0); // close sends RST
                    } catch (IOException e) {
                        // closed by the test
                    }
                }
            });
            resetter.setDaemon(true);
            resetter.start();
            for (int i = 0; i < 10; i++) {
                assertThat(probe(Map.of("SPECTOR_SERVER_PORT", String.valueOf(server.getLocalPort())), "/health"))
                        .as("probe %d against a reset", i)
                        .isEqualTo(1);
            }
        }
    }

    @Test
    void onlyA200Passes() throws Exception {
        try (OneLineServer down = new OneLineServer(503)) {
            assertThat(probe(Map.of("SPECTOR_SERVER_PORT", String.valueOf(down.port())), "/actuator/health/readiness"))
                    .as("readiness 503 while draining: unhealthy")
                    .isEqualTo(1);
        }
    }
}
