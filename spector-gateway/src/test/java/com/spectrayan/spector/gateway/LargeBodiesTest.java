package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.ReferenceOwner;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Bodies far larger than the gateway's heap stream through it: the gateway runs as its own JVM
 * with {@code -Xmx128m} (GatewayMain), the owner in this one.
 */
final class LargeBodiesTest {
    private static final long GIB = 1024L * 1024 * 1024;
    private static final Duration READY = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();

    private static ReferenceOwner owner;
    private static Process gateway;
    private static int port;
    private static final List<String> gatewayOutput = new CopyOnWriteArrayList<>();
    private static final HttpClient http =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @BeforeAll
    static void start() throws Exception {
        owner = ReferenceOwner.start(OwnerSpec.builder("owner-0")
                .cellId(Cell.CELL_ID)
                .port(0)
                .ringMembers(List.of("owner-0"))
                .hmacSecret(Cell.SECRET.getBytes(StandardCharsets.UTF_8))
                .build());
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-XX:MaxDirectMemorySize=128m",
                "-cp",
                System.getProperty("java.class.path"),
                GatewayMain.class.getName()));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        env.put("SPECTOR_CELL_ROLE", "gateway");
        env.put("SPECTOR_CELL_ID", Cell.CELL_ID);
        env.put("SPECTOR_CELL_RING_MEMBERS", "owner-0=http://127.0.0.1:" + owner.port());
        env.put("SPECTOR_SERVER_PORT", Integer.toString(port));
        env.put("SPECTOR_SERVER_HOST", "127.0.0.1");
        env.put("SPECTOR_ROUTING_REDIS_ENABLED", "false");
        env.put("SPECTOR_SECURITY_JWT_HMAC_SECRET", Cell.SECRET);
        gateway = pb.start();
        CompletableFuture<Void> ready = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in =
                    new BufferedReader(new InputStreamReader(gateway.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    gatewayOutput.add(line);
                    if (line.contains("spector gateway ready")) {
                        ready.complete(null);
                    }
                }
                ready.completeExceptionally(new IllegalStateException("gateway exited: " + gatewayOutput));
            } catch (java.io.IOException e) {
                ready.completeExceptionally(e);
            }
        });
        reader.setDaemon(true);
        reader.start();
        ready.get(READY.toSeconds(), TimeUnit.SECONDS);
    }

    @AfterAll
    static void stop() throws Exception {
        gateway.destroy();
        gateway.waitFor(10, TimeUnit.SECONDS);
        owner.close();
        assertThat(gatewayOutput)
                .as("the gateway reported no buffer leak and no out-of-memory")
                .noneMatch(l -> l.contains("LEAK") || l.contains("OutOfMemoryError"));
    }

    private static HttpRequest.Builder request(String path) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofMinutes(2))
                .header("Authorization", "Bearer " + Cell.token(Cell.TENANT));
    }

    @Test
    void shouldStreamA1GiBDownloadThroughAGatewayWith128MiBOfHeap() throws Exception {
        HttpResponse<InputStream> r = http.send(
                request("/api/v1/namespaces/big/stream?bytes=" + GIB + "&chunk=262144")
                        .build(),
                HttpResponse.BodyHandlers.ofInputStream());
        assertThat(r.statusCode()).isEqualTo(200);
        long n = 0;
        byte[] buf = new byte[1 << 16];
        try (InputStream in = r.body()) {
            for (int read; (read = in.read(buf)) != -1; ) {
                for (int i = 0; i < read; i++) {
                    if (buf[i] != (byte) ((n + i) % 251)) {
                        throw new AssertionError("byte " + (n + i) + " is " + buf[i] + " (expected: (i mod 251))");
                    }
                }
                n += read;
            }
        }
        assertThat(n).as("bytes received").isEqualTo(GIB);
        assertThat(gateway.isAlive()).as("the gateway survived").isTrue();
    }

    @Test
    void shouldStreamA10MiBUploadThroughAGatewayWith128MiBOfHeap() throws Exception {
        byte[] body = new byte[10 * 1024 * 1024];
        new java.util.Random(7).nextBytes(body);
        HttpResponse<String> put = http.send(
                request("/api/v1/namespaces/big/objects/blob")
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(put.statusCode()).isBetween(200, 204);
        HttpResponse<byte[]> get = http.send(
                request("/api/v1/namespaces/big/objects/blob").build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(get.statusCode()).isEqualTo(200);
        assertThat(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(get.body())))
                .as("the object comes back byte for byte")
                .isEqualTo(HexFormat.of()
                        .formatHex(MessageDigest.getInstance("SHA-256").digest(body)));
        assertThat(JSON.readTree(put.body()).toString()).isNotEmpty();
    }
}
