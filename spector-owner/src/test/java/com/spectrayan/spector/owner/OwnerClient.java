package com.spectrayan.spector.owner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.contract.SpectorHeaders;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A real HTTP/1.1 client for a {@link ReferenceOwner}, every call bounded by {@link #TIMEOUT}. */
final class OwnerClient {
    /** Longest wait for any one exchange. */
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();
    private final URI base;

    OwnerClient(URI base) {
        this.base = base;
    }

    OwnerClient(ReferenceOwner owner) {
        this(owner.baseUri());
    }

    /** Returns a request builder for a path (with query) on the owner. */
    HttpRequest.Builder request(String pathAndQuery) {
        return HttpRequest.newBuilder(base.resolve(pathAndQuery)).timeout(TIMEOUT);
    }

    /** Sends a request and reads the whole body, within {@link #TIMEOUT}. */
    HttpResponse<byte[]> send(HttpRequest request) throws Exception {
        return sendAsync(request).get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Sends a request; the caller bounds the wait. */
    CompletableFuture<HttpResponse<byte[]>> sendAsync(HttpRequest request) {
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofByteArray());
    }

    /** Sends a request whose body is read as a stream; the headers arrive within {@link #TIMEOUT}. */
    HttpResponse<java.io.InputStream> stream(HttpRequest request) throws Exception {
        return http.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream())
                .get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    HttpResponse<byte[]> get(String path) throws Exception {
        return send(request(path).GET().build());
    }

    HttpResponse<byte[]> postJson(String path, String json) throws Exception {
        return send(request(path)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build());
    }

    static JsonNode json(HttpResponse<byte[]> response) {
        try {
            return JSON.readTree(response.body());
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "not JSON: " + new String(response.body(), java.nio.charset.StandardCharsets.UTF_8), e);
        }
    }

    /** Returns the response's {@code X-Spector-Node}, or "" when absent. */
    static String node(HttpResponse<?> response) {
        return response.headers().firstValue(SpectorHeaders.NODE).orElse("");
    }
}
