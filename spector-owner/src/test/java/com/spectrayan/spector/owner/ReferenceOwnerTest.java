package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.nimbusds.jose.crypto.MACVerifier;
import com.nimbusds.jwt.JWTClaimsSet;
import com.nimbusds.jwt.SignedJWT;
import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.SpectorHeaders;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The reference owner's endpoints over real loopback sockets: one owner that owns every key. */
final class ReferenceOwnerTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path dataDir;

    private ReferenceOwner owner;
    private OwnerClient client;

    @BeforeEach
    void startOwner() {
        owner = ReferenceOwner.start(
                OwnerSpec.builder("owner-0").dataDir(dataDir).hmacSecret(SECRET).build());
        client = new OwnerClient(owner);
    }

    @AfterEach
    void stopOwner() {
        owner.close();
    }

    @Test
    void health_answersUpWithTheNode() throws Exception {
        HttpResponse<byte[]> r = client.get("/health");

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(OwnerClient.json(r).path("status").asText()).isEqualTo("UP");
        assertThat(OwnerClient.json(r).path("node").asText()).isEqualTo("owner-0");
        assertThat(OwnerClient.node(r))
                .as("every response carries X-Spector-Node")
                .isEqualTo("owner-0");
    }

    @Test
    void echo_reportsMethodPathQueryAndHeaders() throws Exception {
        HttpResponse<byte[]> r = client.send(client.request("/api/v1/namespaces/orders/echo?a=1&b=x%20y")
                .header("X-Test", "one")
                .header("X-Multi", "1")
                .header("X-Multi", "2")
                .method("PATCH", HttpRequest.BodyPublishers.ofString("hello"))
                .build());

        JsonNode echo = OwnerClient.json(r);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(OwnerClient.node(r)).isEqualTo("owner-0");
        assertThat(echo.path("node").asText()).isEqualTo("owner-0");
        assertThat(echo.path("method").asText()).isEqualTo("PATCH");
        assertThat(echo.path("path").asText()).isEqualTo("/api/v1/namespaces/orders/echo");
        assertThat(echo.path("query").asText()).isEqualTo("a=1&b=x%20y");
        assertThat(echo.path("headers").path("X-Test").get(0).asText()).isEqualTo("one");
        assertThat(echo.path("headers").path("X-Multi").toString()).isEqualTo("[\"1\",\"2\"]");
        assertThat(echo.path("bodyBytes").asLong()).isEqualTo(5);
        assertThat(echo.path("bodySha256").asText()).isEqualTo(sha256Hex("hello".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void echo_twentyMebibyteChunkedUpload_isHashedAsItStreams() throws Exception {
        long size = 20L * 1024 * 1024;
        MessageDigest expected = MessageDigest.getInstance("SHA-256");
        byte[] block = new byte[8192];
        for (long done = 0; done < size; done += block.length) {
            fill(block, done);
            expected.update(block);
        }

        HttpResponse<byte[]> r = client.send(client.request("/api/v1/namespaces/orders/echo")
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new PatternStream(size)))
                .build());

        JsonNode echo = OwnerClient.json(r);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(echo.path("headers").has("Content-Length"))
                .as("the upload is chunked")
                .isFalse();
        assertThat(echo.path("bodyBytes").asLong()).isEqualTo(size);
        assertThat(echo.path("bodySha256").asText()).isEqualTo(HexFormat.of().formatHex(expected.digest()));
    }

    @Test
    void stream_returnsExactlyNBytesInTheModulo251Pattern() throws Exception {
        int n = 1_000_003;
        HttpResponse<byte[]> r = client.get("/api/v1/namespaces/orders/stream?bytes=" + n + "&chunk=4099");

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/octet-stream");
        assertThat(r.headers().firstValue("Content-Length"))
                .as("chunked, not sized")
                .isEmpty();
        assertThat(OwnerClient.node(r)).isEqualTo("owner-0");
        byte[] body = r.body();
        assertThat(body).hasSize(n);
        for (int i = 0; i < n; i++) {
            if (body[i] != (byte) (i % 251)) {
                throw new AssertionError("byte " + i + ": " + body[i] + " (expected: " + (i % 251) + ")");
            }
        }
    }

    @Test
    void stream_withDelay_deliversTheFirstBytesBeforeTheLastAreWritten() throws Exception {
        HttpResponse<InputStream> r =
                client.stream(client.request("/api/v1/namespaces/orders/stream?bytes=4096&chunk=1024&delayMs=300")
                        .GET()
                        .build());

        try (InputStream in = r.body()) {
            byte[] first = in.readNBytes(1024);
            assertThat(first).hasSize(1024);
            assertThat(owner.node().activeStreams.get())
                    .as("the first chunk arrived while the stream is still being written")
                    .isEqualTo(1);
            byte[] rest = in.readAllBytes();
            assertThat(rest).hasSize(3072);
            assertThat(rest[0]).isEqualTo((byte) (1024 % 251));
        }
        await("stream finished")
                .atMost(WAIT)
                .until(() -> owner.node().activeStreams.get() == 0);
    }

    @Test
    void stream_boundsAtTheLimitPass_andOnePastFail400() throws Exception {
        String base = "/api/v1/namespaces/orders/stream?";
        assertThat(client.get(base + "bytes=0").statusCode()).as("bytes at 0").isEqualTo(200);
        assertThat(client.get(base + "bytes=-1").statusCode())
                .as("bytes one below 0")
                .isEqualTo(400);
        assertThat(client.get(base + "bytes=68719476737").statusCode())
                .as("bytes one past 64 GiB")
                .isEqualTo(400);
        assertThat(client.get(base + "bytes=10&chunk=1").statusCode())
                .as("chunk at 1")
                .isEqualTo(200);
        assertThat(client.get(base + "bytes=10&chunk=0").statusCode())
                .as("chunk one below 1")
                .isEqualTo(400);
        HttpResponse<byte[]> oneMib = client.get(base + "bytes=1048581&chunk=1048576");
        assertThat(oneMib.statusCode()).as("chunk at 1 MiB").isEqualTo(200);
        assertThat(oneMib.body()).hasSize(1048581);
        assertThat(client.get(base + "bytes=10&chunk=1048577").statusCode())
                .as("chunk one past 1 MiB")
                .isEqualTo(400);
        assertThat(client.get(base + "bytes=1&delayMs=60000").statusCode())
                .as("delayMs at 60000")
                .isEqualTo(200);
        assertThat(client.get(base + "bytes=1&delayMs=60001").statusCode())
                .as("delayMs one past")
                .isEqualTo(400);
        HttpResponse<byte[]> missing = client.get(base + "chunk=10");
        assertThat(missing.statusCode()).as("bytes missing").isEqualTo(400);
        assertThat(OwnerClient.json(missing).path("code").asText()).isEqualTo("BAD_REQUEST");
        HttpResponse<byte[]> garbage = client.get(base + "bytes=12abc");
        assertThat(OwnerClient.json(garbage).path("detail").asText()).contains("bytes", "12abc");
    }

    @Test
    void stream_atTheByteLimit_startsAndStopsWhenTheClientDisconnects() throws Exception {
        try (RawHttp raw = new RawHttp(owner)) {
            raw.write("GET /api/v1/namespaces/orders/stream?bytes=68719476736 HTTP/1.1\r\nHost: x\r\n\r\n");
            RawHttp.Head head = raw.readHead();
            assertThat(head.status()).as("bytes at 64 GiB").isEqualTo(200);
            byte[] chunk = raw.readChunk();
            assertThat(chunk).hasSize(65536);
            assertThat(owner.node().activeStreams.get()).isEqualTo(1);
        }
        await("the stream stops once the client is gone")
                .atMost(WAIT)
                .until(() -> owner.node().activeStreams.get() == 0);
    }

    @Test
    void objects_putGetDelete_roundTripByteForByte() throws Exception {
        byte[] data = new byte[3 * 1024 * 1024 + 17];
        new Random(42).nextBytes(data);
        String path = "/api/v1/namespaces/orders/objects/report-1.bin";

        HttpResponse<byte[]> put = client.send(client.request(path)
                .PUT(HttpRequest.BodyPublishers.ofByteArray(data))
                .build());
        HttpResponse<byte[]> get = client.get(path);
        HttpResponse<byte[]> replace = client.send(client.request(path)
                .PUT(HttpRequest.BodyPublishers.ofString("small"))
                .build());
        Path onDisk = dataDir.resolve("_").resolve("orders").resolve("report-1.bin");
        boolean storedWhereExpected = Files.exists(onDisk);
        HttpResponse<byte[]> delete = client.send(client.request(path).DELETE().build());
        HttpResponse<byte[]> getGone = client.get(path);
        HttpResponse<byte[]> deleteGone =
                client.send(client.request(path).DELETE().build());

        assertThat(put.statusCode()).as("first PUT creates").isEqualTo(201);
        assertThat(OwnerClient.json(put).path("bytes").asLong()).isEqualTo(data.length);
        assertThat(OwnerClient.json(put).path("sha256").asText()).isEqualTo(sha256Hex(data));
        assertThat(get.statusCode()).isEqualTo(200);
        assertThat(get.headers().firstValueAsLong("Content-Length")).hasValue(data.length);
        assertThat(Arrays.equals(get.body(), data))
                .as("GET returns the PUT's bytes")
                .isTrue();
        assertThat(replace.statusCode()).as("second PUT replaces").isEqualTo(200);
        assertThat(storedWhereExpected).as("stored under dataDir/_/orders/").isTrue();
        assertThat(delete.statusCode()).isEqualTo(204);
        assertThat(getGone.statusCode()).isEqualTo(404);
        assertThat(getGone.headers().firstValue("Content-Type")).hasValue(Problem.CONTENT_TYPE);
        assertThat(deleteGone.statusCode()).isEqualTo(404);
        for (HttpResponse<byte[]> r : List.of(put, get, replace, delete, getGone, deleteGone)) {
            assertThat(OwnerClient.node(r)).as("X-Spector-Node on %s", r).isEqualTo("owner-0");
        }
        try (var tmp = Files.list(dataDir.resolve(".tmp"))) {
            assertThat(tmp.count()).as("no temporary upload left behind").isZero();
        }
    }

    @Test
    void objects_keyAtTheLimitPasses_andOnePastFails400() throws Exception {
        String base = "/api/v1/namespaces/orders/objects/";
        String atLimit = "k".repeat(128);

        HttpResponse<byte[]> ok = client.send(client.request(base + atLimit)
                .PUT(HttpRequest.BodyPublishers.ofString("x"))
                .build());
        HttpResponse<byte[]> tooLong = client.send(client.request(base + atLimit + "k")
                .PUT(HttpRequest.BodyPublishers.ofString("x"))
                .build());
        HttpResponse<byte[]> dotDot = client.get(base + "..");
        HttpResponse<byte[]> badChar = client.get(base + "a%24b");

        assertThat(ok.statusCode()).as("key of 128 chars").isEqualTo(201);
        assertThat(tooLong.statusCode()).as("key of 129 chars").isEqualTo(400);
        assertThat(dotDot.statusCode()).as("'..' is never a key").isIn(400, 404);
        assertThat(badChar.statusCode()).as("'$' is not a key char").isEqualTo(400);
    }

    @Test
    void commands_sameKeySameBody_replaysTheStoredResponseAndExecutesOnce() throws Exception {
        String path = "/api/v1/namespaces/orders/commands";
        HttpRequest first = client.request(path)
                .header(SpectorHeaders.IDEMPOTENCY_KEY, "key-1")
                .POST(HttpRequest.BodyPublishers.ofString("{\"op\":\"charge\",\"amount\":5}"))
                .build();

        HttpResponse<byte[]> a = client.send(first);
        HttpResponse<byte[]> b = client.send(first);
        HttpResponse<byte[]> different = client.send(client.request(path)
                .header(SpectorHeaders.IDEMPOTENCY_KEY, "key-1")
                .POST(HttpRequest.BodyPublishers.ofString("{\"op\":\"charge\",\"amount\":6}"))
                .build());

        assertThat(a.statusCode()).isEqualTo(200);
        assertThat(a.headers().firstValue(SpectorHeaders.IDEMPOTENT_REPLAYED)).isEmpty();
        assertThat(OwnerClient.json(a).path("command").path("amount").asInt()).isEqualTo(5);
        assertThat(b.statusCode()).isEqualTo(200);
        assertThat(b.headers().firstValue(SpectorHeaders.IDEMPOTENT_REPLAYED)).hasValue("true");
        assertThat(OwnerClient.json(b).path("sequence").asLong())
                .as("a replay shows the first execution's sequence")
                .isEqualTo(OwnerClient.json(a).path("sequence").asLong());
        assertThat(different.statusCode()).as("same key, different body").isEqualTo(422);
        assertThat(OwnerClient.json(different).path("code").asText()).isEqualTo("IDEMPOTENCY_KEY_REUSED");
        assertThat(owner.commandExecutions()).as("executed once").isEqualTo(1);
    }

    @Test
    void commands_keysArePerTenant_andTheLegacyHeaderCounts() throws Exception {
        String path = "/api/v1/namespaces/orders/commands";
        HttpResponse<byte[]> acme = client.send(client.request(path)
                .header(SpectorHeaders.TENANT, "acme")
                .header(SpectorHeaders.X_IDEMPOTENCY_KEY, "k")
                .POST(HttpRequest.BodyPublishers.ofString("{}"))
                .build());
        HttpResponse<byte[]> globex = client.send(client.request(path)
                .header(SpectorHeaders.TENANT, "globex")
                .header(SpectorHeaders.IDEMPOTENCY_KEY, "k")
                .POST(HttpRequest.BodyPublishers.ofString("{}"))
                .build());
        HttpResponse<byte[]> acmeAgain = client.send(client.request(path)
                .header(SpectorHeaders.TENANT, "acme")
                .header(SpectorHeaders.IDEMPOTENCY_KEY, "k")
                .POST(HttpRequest.BodyPublishers.ofString("{}"))
                .build());

        assertThat(globex.headers().firstValue(SpectorHeaders.IDEMPOTENT_REPLAYED))
                .as("another tenant")
                .isEmpty();
        assertThat(acmeAgain.headers().firstValue(SpectorHeaders.IDEMPOTENT_REPLAYED))
                .hasValue("true");
        assertThat(OwnerClient.json(acmeAgain).path("sequence").asLong())
                .isEqualTo(OwnerClient.json(acme).path("sequence").asLong());
        assertThat(owner.commandExecutions()).isEqualTo(2);
    }

    @Test
    void commands_repeatWhileTheFirstRuns_is409() throws Exception {
        HttpRequest slow = client.request("/api/v1/namespaces/orders/commands?delayMs=2000")
                .header(SpectorHeaders.IDEMPOTENCY_KEY, "slow-1")
                .POST(HttpRequest.BodyPublishers.ofString("{\"op\":\"slow\"}"))
                .build();

        var first = client.sendAsync(slow);
        await("the first command runs")
                .atMost(WAIT)
                .until(() -> owner.node().commandsInFlight.get() == 1);
        HttpResponse<byte[]> repeat = client.send(slow);
        HttpResponse<byte[]> done = first.get(OwnerClient.TIMEOUT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
        HttpResponse<byte[]> replay = client.send(slow);

        assertThat(repeat.statusCode()).as("a repeat while in flight").isEqualTo(409);
        assertThat(OwnerClient.json(repeat).path("code").asText()).isEqualTo("IDEMPOTENCY_KEY_IN_FLIGHT");
        assertThat(done.statusCode()).isEqualTo(200);
        assertThat(replay.headers().firstValue(SpectorHeaders.IDEMPOTENT_REPLAYED))
                .hasValue("true");
        assertThat(owner.commandExecutions()).isEqualTo(1);
    }

    @Test
    void commands_bodyAtTheCapPasses_andOnePastIs413() throws Exception {
        String path = "/api/v1/namespaces/orders/commands";
        byte[] atCap = new byte[64 * 1024];
        Arrays.fill(atCap, (byte) 'a');
        byte[] pastCap = Arrays.copyOf(atCap, atCap.length + 1);

        HttpResponse<byte[]> ok = client.send(client.request(path)
                .POST(HttpRequest.BodyPublishers.ofByteArray(atCap))
                .build());
        HttpResponse<byte[]> declared = client.send(client.request(path)
                .POST(HttpRequest.BodyPublishers.ofByteArray(pastCap))
                .build());
        HttpResponse<byte[]> streamed = client.send(client.request(path)
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new java.io.ByteArrayInputStream(pastCap)))
                .build());

        assertThat(ok.statusCode()).as("65536 bytes").isEqualTo(200);
        assertThat(OwnerClient.json(ok).path("command").path("bytes").asInt()).isEqualTo(atCap.length);
        assertThat(declared.statusCode()).as("65537 bytes, Content-Length").isEqualTo(413);
        assertThat(OwnerClient.json(declared).path("code").asText()).isEqualTo("PAYLOAD_TOO_LARGE");
        assertThat(streamed.statusCode()).as("65537 bytes, chunked").isEqualTo(413);
        assertThat(owner.commandExecutions()).isEqualTo(1);
    }

    @Test
    void token_issuedForATenant_verifiesWithTheSecret() throws Exception {
        HttpResponse<byte[]> r = client.postJson("/api/v1/auth/token", "{\"tenant\":\"acme\"}");

        assertThat(r.statusCode()).isEqualTo(200);
        SignedJWT jwt = SignedJWT.parse(OwnerClient.json(r).path("token").asText());
        assertThat(jwt.verify(new MACVerifier(SECRET)))
                .as("signed with the spec's secret")
                .isTrue();
        assertThat(jwt.getHeader().getAlgorithm().getName()).isEqualTo("HS256");
        JWTClaimsSet claims = jwt.getJWTClaimsSet();
        assertThat(claims.getStringClaim("tenant")).isEqualTo("acme");
        assertThat(claims.getSubject()).isEqualTo("acme");
        var payload = jwt.getPayload().toJSONObject();
        assertThat(((Number) requireNonNull(payload.get("exp"))).longValue()
                        - ((Number) requireNonNull(payload.get("iat"))).longValue())
                .as("exp is one hour after iat")
                .isEqualTo(3600);
    }

    @Test
    void token_forAMalformedTenant_is400() throws Exception {
        HttpResponse<byte[]> bad = client.postJson("/api/v1/auth/token", "{\"tenant\":\"Acme!\"}");
        HttpResponse<byte[]> missing = client.postJson("/api/v1/auth/token", "{}");
        HttpResponse<byte[]> notJson = client.postJson("/api/v1/auth/token", "tenant=acme");

        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(OwnerClient.json(bad).path("details").path("field").asText()).isEqualTo("tenant");
        assertThat(missing.statusCode()).isEqualTo(400);
        assertThat(notJson.statusCode()).isEqualTo(400);
    }

    @Test
    void unknownPath_is404ProblemJsonWithACode() throws Exception {
        for (String path : List.of("/nope", "/api/v1/namespaces/orders/unknown", "/api/v1/things")) {
            HttpResponse<byte[]> r = client.get(path);

            assertThat(r.statusCode()).as(path).isEqualTo(404);
            assertThat(r.headers().firstValue("Content-Type")).as(path).hasValue(Problem.CONTENT_TYPE);
            assertThat(OwnerClient.json(r).path("code").asText()).as(path).isEqualTo("NOT_FOUND");
            assertThat(OwnerClient.node(r)).as(path).isEqualTo("owner-0");
        }
    }

    @Test
    void namespaceHeader_contradictingThePath_is400() throws Exception {
        HttpResponse<byte[]> r = client.send(client.request("/api/v1/namespaces/orders/echo")
                .header(SpectorHeaders.NAMESPACE, "billing")
                .GET()
                .build());

        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(OwnerClient.json(r).path("details").path("field").asText()).isEqualTo(SpectorHeaders.NAMESPACE);
    }

    @Test
    void keepAlive_manyRequestsOnOneConnection_areAnsweredInOrder() throws Exception {
        try (RawHttp raw = new RawHttp(owner)) {
            StringBuilder pipelined = new StringBuilder();
            pipelined.append(
                    "GET /api/v1/namespaces/orders/stream?bytes=300&chunk=100&delayMs=50 HTTP/1.1\r\nHost: x\r\n\r\n");
            pipelined.append("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
            raw.write(pipelined.toString());

            RawHttp.Head stream = raw.readHead();
            int streamed = 0;
            for (byte[] chunk = raw.readChunk(); chunk.length > 0; chunk = raw.readChunk()) {
                streamed += chunk.length;
            }
            RawHttp.Head health = raw.readHead();

            assertThat(stream.status()).isEqualTo(200);
            assertThat(streamed)
                    .as("the stream is whole before the next response")
                    .isEqualTo(300);
            assertThat(health.status()).isEqualTo(200);
            assertThat(new String(raw.readBody(health), StandardCharsets.UTF_8)).contains("UP");
        }
    }

    private static String sha256Hex(byte[] data) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
    }

    /** Byte {@code i} of the upload: a pattern that differs from the stream's. */
    private static void fill(byte[] block, long offset) {
        for (int i = 0; i < block.length; i++) {
            block[i] = (byte) ((offset + i) * 31 + 7);
        }
    }

    /** An upload generated block by block, never held whole. */
    private static final class PatternStream extends InputStream {
        private final long size;
        private final byte[] block = new byte[8192];
        private long offset;
        private int pos = block.length;

        PatternStream(long size) {
            this.size = size;
        }

        @Override
        public int read() {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (offset >= size) {
                return -1;
            }
            if (pos == block.length) {
                fill(block, offset);
                pos = 0;
            }
            int n = (int) Math.min(Math.min(len, block.length - pos), size - offset);
            System.arraycopy(block, pos, b, off, n);
            pos += n;
            offset += n;
            return n;
        }
    }
}
