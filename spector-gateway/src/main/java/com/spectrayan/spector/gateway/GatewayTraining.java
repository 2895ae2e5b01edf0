package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.Environment;
import com.spectrayan.spector.gateway.auth.HmacTokens;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import io.netty.util.internal.PlatformDependent;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The training run behind the gateway's class-data archive (AppCDS): {@code bin/spector gateway}
 * runs {@code java -XX:DumpLoadedClassList=LIST -cp JAR com.spectrayan.spector.gateway.GatewayTraining}
 * once per jar (and JVM), the gateway image once at build time, then {@code java -Xshare:dump
 * -XX:SharedClassListFile=LIST -XX:SharedArchiveFile=FILE -cp JAR} archives the classes this run
 * loaded, the JDK's and the jar's, in one static archive, and every later start maps it instead of
 * loading them from the jars and instead of the JDK's own archive (bench/README.md, start-up and
 * idle memory).
 *
 * <p>Design notes. The run loads what a healthy, serving gateway loads in its first seconds and
 * nothing else: on a JVM that maps archives at a random address (JDK 17.0.x's default) every
 * archived page is touched at start, so a class archived but never used costs resident memory. It
 * starts a gateway the way {@code spector gateway} does, but from settings of its own (loopback,
 * any free port, Redis off, edge auth with a random key, one owner: a stub on a loopback port
 * that answers {@code 200}), so that nothing in the user's environment changes what it does or makes it fail.
 * It answers the probes and a scrape, then forwards {@link #FORWARDS} authorised requests (a GET
 * and a POST with a body, the second one over the pooled owner connection). It sends no request
 * that fails: the error path (problem+json, and with it Jackson's ObjectMapper) would add about
 * 6 MiB to every start for a cost that the first error pays once instead. The gateway is not
 * closed: the JVM's exit writes the archive, and the drain path's classes are loaded when a real
 * gateway stops. Every wait is bounded by {@link #IO_TIMEOUT}; the run fails (exit 1: the launcher
 * keeps no archive, the image build stops) when the gateway does not start or any answer is not a
 * 200.
 *
 * <p>With {@code -D}{@value #NATIVE_DIR}{@code =DIR} it also copies Netty's native libraries for
 * this machine out of the class path into DIR ({@link #exportNativeLibraries}), for the launcher to
 * put on {@code java.library.path}: Netty loads a library from there when it finds it, and
 * otherwise writes it out of the jar to a temporary file at every start (with a
 * {@code SecureRandom} seeded for the file's name), about 25 ms of the gateway's start-up.
 */
public final class GatewayTraining implements AutoCloseable {
    /** Connect and read timeout of each training request, and of the stub owner's reads. */
    static final Duration IO_TIMEOUT = Duration.ofSeconds(5);

    /** The validity of the training's bearer token. */
    static final Duration TOKEN_TTL = Duration.ofMinutes(1);

    /** The namespace of the training's forwarded requests. */
    static final String NAMESPACE = "training";

    /** The forwarded requests, in the order sent. */
    static final List<Forward> FORWARDS = List.of(new Forward("GET", null), new Forward("POST", "{}"));

    /** A forwarded training request: its method and body ({@code null}: none). */
    record Forward(String method, @Nullable String body) {}

    /** The system property naming the directory {@link #exportNativeLibraries} fills. */
    static final String NATIVE_DIR = "spector.training.native-dir";

    /** The probes and the scrape, in the order sent. */
    static final List<String> LOCAL_PATHS = List.of(
            "/actuator/health", "/actuator/health/readiness", "/actuator/health/liveness", "/actuator/prometheus");

    private final ServerSocket ownerSocket;
    private final GatewayServer gateway;
    private final List<String> answers;

    private GatewayTraining(ServerSocket ownerSocket, GatewayServer gateway, List<String> answers) {
        this.ownerSocket = ownerSocket;
        this.gateway = gateway;
        this.answers = List.copyOf(answers);
    }

    /** Runs the training and exits 0, or 1 with the reason on standard error. */
    public static void main(String[] args) {
        Environment.processDefaults(); // as the gateway runs: its archive holds the same classes
        int code;
        try {
            String nativeDir = System.getProperty(NATIVE_DIR);
            if (nativeDir != null) {
                System.err.println("spector: native libraries for java.library.path: "
                        + exportNativeLibraries(Path.of(nativeDir)));
            }
            GatewayTraining training = run();
            code = 0;
            System.err.println("spector: trained the class-data archive on " + training.answers());
        } catch (IOException | RuntimeException e) {
            System.err.println("spector: class-data training failed: " + e);
            code = 1;
        }
        System.exit(code); // the gateway is left running: see the class comment
    }

    /**
     * Starts a gateway and its stub owner and sends the training requests; the returned run holds
     * them (its {@link #close()} stops them: a test's, never the training process's).
     */
    static GatewayTraining run() throws IOException {
        String secret = randomSecret();
        ServerSocket ownerSocket = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        Thread owner = new Thread(() -> owner(ownerSocket), "spector-training-owner");
        owner.setDaemon(true);
        owner.start();
        GatewaySettings settings = GatewaySettings.load(
                null,
                Map.of(),
                Map.of(
                        "spector.cell.role", "gateway",
                        "spector.cell.ring-members", "owner-0=http://127.0.0.1:" + ownerSocket.getLocalPort(),
                        "spector.server.host", "127.0.0.1",
                        "spector.server.port", "0",
                        "spector.server.peer-port", "-1",
                        "spector.routing.redis.enabled", "false",
                        "spector.security.jwt.hmac-secret", secret));
        GatewayServer gateway;
        try {
            gateway = GatewayServer.start(settings);
        } catch (RuntimeException e) {
            ownerSocket.close();
            throw e;
        }
        List<String> answers = new ArrayList<>();
        try {
            int port = gateway.port();
            for (String path : LOCAL_PATHS) {
                answers.add(expectOk(port, "GET", path, null, null));
            }
            String token = HmacTokens.mint(secret.getBytes(StandardCharsets.UTF_8), NAMESPACE, TOKEN_TTL);
            for (Forward f : FORWARDS) {
                answers.add(expectOk(port, f.method(), "/api/v1/namespaces/" + NAMESPACE + "/echo", token, f.body()));
            }
        } catch (IOException | RuntimeException e) {
            gateway.close();
            ownerSocket.close();
            throw e;
        }
        return new GatewayTraining(ownerSocket, gateway, answers);
    }

    /**
     * Copies into {@code dir} (made if missing) each of Netty's native libraries for this machine
     * that the class path holds, under the file name Netty asks {@code System.loadLibrary} for
     * first: the epoll and io_uring transports' and netty-tcnative's ({@code
     * libnetty_transport_native_epoll_x86_64.so}, {@code libnetty_transport_native_io_uring42_x86_64.so},
     * {@code libnetty_tcnative_linux_x86_64.so} on Linux x86-64; io_uring's too, so a gateway set to
     * it does not write its library to a temporary file at each start either); returns the names
     * copied (none on a machine Netty has no library for).
     */
    static List<String> exportNativeLibraries(Path dir) throws IOException {
        Files.createDirectories(dir);
        String arch = PlatformDependent.normalizedArch();
        List<String> copied = new ArrayList<>();
        for (String name : List.of(
                "netty_transport_native_epoll_" + arch,
                "netty_transport_native_io_uring42_" + arch,
                "netty_tcnative_" + PlatformDependent.normalizedOs() + "_" + arch)) {
            String file = System.mapLibraryName(name);
            try (InputStream in =
                    GatewayTraining.class.getClassLoader().getResourceAsStream("META-INF/native/" + file)) {
                if (in != null) {
                    Files.copy(in, dir.resolve(file), StandardCopyOption.REPLACE_EXISTING);
                    copied.add(file);
                }
            }
        }
        return copied;
    }

    /** {@code "METHOD PATH STATUS"} of each training request, in the order sent. */
    List<String> answers() {
        return answers;
    }

    /** Stops the trained gateway and the stub owner. */
    @Override
    public void close() throws IOException {
        gateway.close();
        ownerSocket.close();
    }

    private static String expectOk(int port, String method, String path, @Nullable String token, @Nullable String body)
            throws IOException {
        int status = send(port, method, path, token, body);
        if (status != 200) {
            throw new IllegalStateException(method + " " + path + " answered " + status + " (expected: 200)");
        }
        return method + " " + path + " " + status;
    }

    /** One request over a fresh connection to the gateway; returns the status code (0 when none came). */
    private static int send(int port, String method, String path, @Nullable String token, @Nullable String body)
            throws IOException {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) IO_TIMEOUT.toMillis());
            socket.setSoTimeout((int) IO_TIMEOUT.toMillis());
            String request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    + (token == null ? "" : "Authorization: Bearer " + token + "\r\n")
                    + (body == null
                            ? ""
                            : "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n")
                    + "\r\n"
                    + (body == null ? "" : body);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            byte[] all = socket.getInputStream().readAllBytes(); // Connection: close ends it
            String head = new String(all, 0, Math.min(all.length, 12), StandardCharsets.US_ASCII);
            return head.startsWith("HTTP/1.1 ") ? Integer.parseInt(head.substring(9, 12)) : 0;
        }
    }

    /**
     * The stub owner: answers every request on every connection {@code 200 ok}, keeping the
     * connection open (the gateway pools it), each connection on a daemon thread of its own, until
     * the JVM exits. A read past {@link #IO_TIMEOUT} or a malformed request ends that connection.
     */
    private static void owner(ServerSocket socket) {
        while (!socket.isClosed()) {
            Socket c;
            try {
                c = socket.accept();
            } catch (IOException e) {
                return;
            }
            Thread t = new Thread(() -> serve(c), "spector-training-owner-connection");
            t.setDaemon(true);
            t.start();
        }
    }

    private static void serve(Socket connection) {
        try (Socket c = connection) {
            c.setSoTimeout((int) IO_TIMEOUT.toMillis());
            InputStream in = c.getInputStream();
            OutputStream out = c.getOutputStream();
            for (String head = readHead(in); head != null; head = readHead(in)) {
                in.skipNBytes(contentLength(head));
                out.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
            }
        } catch (IOException | RuntimeException e) {
            // this connection ends; the gateway opens another one if it needs one
        }
    }

    /** The request head up to its blank line, or null at the end of the stream. */
    private static @Nullable String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        int b;
        while ((b = in.read()) != -1) {
            head.append((char) b);
            if (head.length() >= 4 && head.lastIndexOf("\r\n\r\n") == head.length() - 4) {
                return head.toString();
            }
        }
        return null;
    }

    private static long contentLength(String head) {
        for (String line : head.lines().toList()) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase("Content-Length")) {
                return Long.parseLong(line.substring(colon + 1).trim());
            }
        }
        return 0;
    }

    private static String randomSecret() {
        byte[] key = new byte[48];
        new SecureRandom().nextBytes(key);
        return Base64.getEncoder().encodeToString(key);
    }
}
