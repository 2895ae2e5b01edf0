package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.owner.RecordedRequest;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real browser against the gateway: headless Chromium loads a page from another origin (a page
 * server on a port of its own) that calls the gateway as a browser application does, and reports
 * what its script could do (the page: {@code src/test/resources/browser/page.html}, also run by
 * {@code bench/browser-check.sh}). It checks what no raw-socket test can: that the browser accepts
 * the edge's CORS answers (the preflight of a {@code fetch} with {@code Authorization}), lets the
 * script read the headers it needs, reads a problem body, streams a download through a {@code
 * ReadableStream}, keeps an {@code EventSource} open, and completes a WebSocket upgrade; and, on the
 * owner's side, what arrived. Found with it: the request id was hidden from the page (no {@code
 * Access-Control-Expose-Headers}).
 *
 * <p>Needs {@code chromium} on the {@code PATH} ({@code .ci/run} installs Debian's package when it
 * is missing); without it the test is skipped, and says why.
 */
final class BrowserTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The longest the page may take to report: it waits for two events of a one-a-second stream. */
    private static final long REPORT_SECONDS = 90;

    @Test
    void aPageOnAnotherOrigin_usesTheGatewayAsABrowserApplicationDoes(@TempDir Path dir) throws Exception {
        String chromium = onPath("chromium");
        assumeTrue(
                chromium != null, "no chromium on the PATH (Debian: apt-get install -y chromium; .ci/run installs it)");

        CompletableFuture<String> report = new CompletableFuture<>();
        HttpServer pages = pageServer(report);
        String pageOrigin = "http://127.0.0.1:" + pages.getAddress().getPort();
        try (Cell cell = Cell.builder()
                .owners(1)
                .set("spector.cors.allowed-origins", pageOrigin)
                .set("spector.security.jwt.allow-query-token", "true")
                .start()) {
            String url = pageOrigin + "/page.html?g=" + cell.gateway.port() + "&t=" + Cell.token(Cell.TENANT);
            JsonNode r = JSON.readTree(runPage(Objects.requireNonNull(chromium), url, dir, report));

            JsonNode echo = r.path("echo");
            assertThat(echo.path("status").asInt()).as("%s", r).isEqualTo(200);
            assertThat(echo.path("requestId").asText())
                    .as("the request id, readable by the script")
                    .hasSize(32);
            assertThat(echo.path("spectorNode").asText()).isEqualTo("owner-0");
            assertThat(r.path("problemRequestId").path("same").asBoolean())
                    .as("a 401's requestId is the header the script reads: %s", r.path("problemRequestId"))
                    .isTrue();
            assertThat(r.path("unauthenticated").path("code").asText()).isEqualTo("UNAUTHENTICATED");
            JsonNode command = r.path("command");
            assertThat(command)
                    .as("two POSTs with one Idempotency-Key: %s", command)
                    .hasSize(2);
            assertThat(command.get(0).asText()).startsWith("200 - {").contains("\"op\":\"x\"");
            assertThat(command.get(1).asText())
                    .as("the second a replay, which the script can tell (Idempotent-Replayed exposed)")
                    .startsWith("200 true {");
            assertThat(r.path("object").path("same").asBoolean())
                    .as("3 MiB + 7 bytes up and back: %s", r.path("object"))
                    .isTrue();
            assertThat(r.path("tooLarge").path("status").asInt()).isEqualTo(413);
            assertThat(r.path("tooLarge").path("code").asText())
                    .as("the 413's problem, readable cross-origin")
                    .isEqualTo("PAYLOAD_TOO_LARGE");
            assertThat(r.path("stream").path("bytes").asLong()).isEqualTo(5_000_000);
            assertThat(r.path("stream").path("bad").asLong())
                    .as("bytes out of the pattern")
                    .isZero();
            assertThat(r.path("eventSource").path("events"))
                    .as("two events of an EventSource: %s", r.path("eventSource"))
                    .hasSize(2);
            assertThat(r.path("eventSource").has("timeout")).isFalse();
            assertThat(r.path("webSocket").path("echo").asText()).isEqualTo("hello through the gateway");

            // What the owner got: the upload whole, the key on both commands, the browser's Origin.
            List<RecordedRequest> puts = cell.served("owner-0", "PUT", "/api/v1/namespaces/acme/objects/o1");
            assertThat(puts)
                    .singleElement()
                    .satisfies(q ->
                            assertThat(q.header("Content-Length")).isEqualTo(Integer.toString(3 * 1024 * 1024 + 7)));
            assertThat(cell.served("owner-0", "PUT", "/api/v1/namespaces/acme/objects/o2"))
                    .as("the 11 MiB upload stopped at the edge")
                    .isEmpty();
            List<RecordedRequest> commands = cell.served("owner-0", "POST", "/api/v1/namespaces/acme/commands");
            assertThat(commands).hasSize(2).allSatisfy(q -> {
                assertThat(q.header("Idempotency-Key")).startsWith("k-");
                assertThat(q.header("Origin")).isEqualTo(pageOrigin);
            });
        } finally {
            pages.stop(0);
        }
    }

    /** Serves the page and takes its report (a POST to /result). */
    private static HttpServer pageServer(CompletableFuture<String> report) throws IOException {
        byte[] page;
        try (InputStream in = Objects.requireNonNull(
                BrowserTest.class.getResourceAsStream("/browser/page.html"), "browser/page.html")) {
            page = in.readAllBytes();
        }
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8);
        server.createContext("/page.html", ex -> answer(ex, 200, "text/html; charset=utf-8", page));
        server.createContext("/result", ex -> {
            try (InputStream in = ex.getRequestBody()) {
                report.complete(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            }
            answer(ex, 204, null, new byte[0]);
        });
        server.start();
        return server;
    }

    private static void answer(HttpExchange ex, int status, @Nullable String type, byte[] body) throws IOException {
        if (type != null) {
            ex.getResponseHeaders().set("Content-Type", type);
        }
        ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    /** Runs headless Chromium on {@code url} until the page reports, then stops it and its children. */
    private static String runPage(String chromium, String url, Path dir, CompletableFuture<String> report)
            throws Exception {
        Path log = dir.resolve("chromium.log");
        List<String> command = new ArrayList<>(List.of(
                chromium,
                "--headless=new",
                "--no-sandbox", // as root in a container: the sandbox needs namespaces it may not have
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--user-data-dir=" + dir.resolve("profile"),
                url));
        Process browser = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        try {
            return report.get(REPORT_SECONDS, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(
                    "the page reported nothing within " + REPORT_SECONDS + " s; chromium said: " + tail(log), e);
        } finally {
            browser.descendants().forEach(ProcessHandle::destroyForcibly);
            browser.destroyForcibly();
            browser.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static String tail(Path log) throws IOException {
        String text = Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
        return text.length() > 2000 ? text.substring(text.length() - 2000) : text;
    }

    /** Returns the path of {@code name} on the PATH, or null. */
    private static @Nullable String onPath(String name) {
        for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator, -1)) {
            File f = new File(d, name);
            if (f.canExecute()) {
                return f.getPath();
            }
        }
        return null;
    }
}
