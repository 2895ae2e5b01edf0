package com.spectrayan.spector.worker;

import static com.spectrayan.spector.testkit.Waits.done;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.gateway.TransportSpec;
import com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.EarlyAnswerUpstream;
import com.spectrayan.spector.testkit.RecordingUpstream;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.wire.Header;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link HttpForwardTarget} against a real HTTP upstream on loopback (the JDK's {@link HttpServer},
 * or a raw socket for what that server cannot send): the upstream's Content-Length becomes the
 * relayed response's length, and responses without a body have none (RFC 9110 §6.4.1, §8.6).
 */
final class HttpForwardTargetTest {
    private static final Duration WAIT = Duration.ofSeconds(10);
    private static final int LENGTH = 246;
    private static final byte[] DOCUMENT = document();

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    /**
     * One connection per upstream: an exchange that does not hand its connection back in step
     * makes the next one wait out the acquire timeout and fail, instead of opening another.
     */
    private static final TransportSpec ONE_CONNECTION = new TransportSpec(
            Duration.ofSeconds(2), 1, 16, Duration.ofSeconds(2), Duration.ofSeconds(30), 16 * 1024, 8192);

    private final UpstreamHttpTransport transport =
            new UpstreamHttpTransport(ONE_CONNECTION, NioSocketChannel.class, NioDatagramChannel.class);
    private final ExecutorService rawThreads = Executors.newCachedThreadPool();
    private @Nullable HttpServer server;
    private @Nullable ServerSocket raw;
    /** Connections the raw upstream accepted. */
    private final java.util.concurrent.atomic.AtomicInteger rawAccepted =
            new java.util.concurrent.atomic.AtomicInteger();

    private @Nullable RecordingUpstream recording;

    @AfterEach
    void tearDown() throws IOException {
        transport.close();
        HttpServer s = server;
        if (s != null) {
            s.stop(0);
        }
        ServerSocket r = raw;
        if (r != null) {
            r.close();
        }
        RecordingUpstream up = recording;
        if (up != null) {
            up.close();
        }
        rawThreads.shutdownNow();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(WAIT.toMillis());
    }

    private static byte[] document() {
        byte[] data = new byte[LENGTH];
        for (int i = 0; i < data.length; i++) {
            data[i] = (byte) ('a' + i % 26);
        }
        return data;
    }

    /**
     * Starts the JDK server: {@code /doc} answers GET with {@link #DOCUMENT} and its length, HEAD
     * with the same Content-Length and no body; {@code /chunked} streams it without a length;
     * {@code /status/N} answers N, with a Content-Length of 246 for a 304 and a 5-byte body for a 205.
     */
    private HttpForwardTarget jdkUpstream() throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        s.createContext("/doc", exchange -> {
            try (exchange) {
                exchange.getRequestBody().readAllBytes();
                exchange.getResponseHeaders().set("Content-Type", "text/plain");
                if (exchange.getRequestMethod().equals("HEAD")) {
                    exchange.getResponseHeaders().set("Content-Length", Integer.toString(LENGTH));
                    exchange.sendResponseHeaders(200, -1);
                } else {
                    exchange.sendResponseHeaders(200, LENGTH);
                    exchange.getResponseBody().write(DOCUMENT);
                }
            }
        });
        s.createContext("/chunked", exchange -> {
            try (exchange) {
                exchange.sendResponseHeaders(200, 0); // 0: chunked
                exchange.getResponseBody().write(DOCUMENT);
            }
        });
        s.createContext("/status/", exchange -> {
            try (exchange) {
                statusAnswer(exchange);
            }
        });
        s.start();
        server = s;
        return new HttpForwardTarget(
                URI.create("http://127.0.0.1:" + s.getAddress().getPort()), transport, group);
    }

    private static void statusAnswer(HttpExchange exchange) throws IOException {
        String path = exchange.getRequestURI().getPath();
        int status = Integer.parseInt(path.substring("/status/".length()));
        if (status == 304) {
            exchange.getResponseHeaders().set("Content-Length", Integer.toString(LENGTH));
            exchange.sendResponseHeaders(304, -1);
        } else if (status == 205) {
            byte[] body = "wrong".getBytes(StandardCharsets.US_ASCII); // RFC 9110 §15.3.6 forbids it
            exchange.sendResponseHeaders(205, body.length);
            exchange.getResponseBody().write(body);
        } else {
            exchange.sendResponseHeaders(status, -1);
        }
    }

    /** Starts a raw upstream that answers each connection's first request with {@code bytes}. */
    private HttpForwardTarget rawUpstream(String response) throws IOException {
        ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        raw = socket;
        rawThreads.execute(() -> {
            while (!socket.isClosed()) {
                try {
                    Socket connection = socket.accept();
                    rawAccepted.incrementAndGet();
                    rawThreads.execute(() -> answerOnce(connection, response));
                } catch (IOException closed) {
                    return;
                }
            }
        });
        return new HttpForwardTarget(URI.create("http://127.0.0.1:" + socket.getLocalPort()), transport, group);
    }

    private static void answerOnce(Socket connection, String response) {
        try (connection) {
            InputStream in = connection.getInputStream();
            int matched = 0;
            byte[] end = {'\r', '\n', '\r', '\n'};
            while (matched < end.length) {
                int b = in.read();
                if (b < 0) {
                    return;
                }
                matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
            }
            OutputStream out = connection.getOutputStream();
            out.write(response.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            in.read(); // hold the connection until the client closes it (or the test ends)
        } catch (IOException gone) {
            // the client closed: nothing to answer
        }
    }

    private static RelayedRequest request(
            String method, String path, @Nullable BodySource body, @Nullable EventLoop eventLoop) {
        return request(method, path, body, eventLoop, ResponseFraming.UNKNOWN_LENGTH);
    }

    /** A request whose body declares {@code contentLength} (-1: unknown), as the relay hands it over. */
    private static RelayedRequest request(
            String method, String path, @Nullable BodySource body, @Nullable EventLoop eventLoop, long contentLength) {
        return new RelayedRequest(
                method,
                URI.create("http://app.local" + path),
                List.of(new Header("accept", "*/*")),
                "acme",
                null,
                body,
                new AbortSignal(),
                null,
                eventLoop,
                contentLength);
    }

    private static RelayedRequest request(String method, String path) {
        return new RelayedRequest(
                method,
                URI.create("http://app.local" + path),
                List.of(new Header("accept", "*/*")),
                "acme",
                null,
                null,
                new AbortSignal());
    }

    /** Reads a body to its end, one part at a time; throws the body's failure. */
    private static byte[] readAll(BodySource body, String what) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer part;
        while ((part = done(body.next(), what)) != null) {
            byte[] bytes = new byte[part.remaining()];
            part.get(bytes);
            out.writeBytes(bytes);
        }
        return out.toByteArray();
    }

    private static BodySource body(RelayedResponse response) {
        BodySource body = response.body();
        assertThat(body).as("a %d response has a body", response.status()).isNotNull();
        return java.util.Objects.requireNonNull(body);
    }

    private static List<String> headerNames(RelayedResponse response) {
        return response.headers().stream()
                .map(h -> h.name().toLowerCase(Locale.ROOT))
                .toList();
    }

    /**
     * A relay aborted after the target's event loop stopped (the worker shutting down, its
     * session settling what still runs) fails the exchange once the loop has stopped, and throws
     * nothing at the aborter: the abort's listener threw the loop's refusal on the thread that
     * aborted (an uncaught exception in the worker's pool during a test's teardown).
     */
    @Test
    void handle_abortedAfterItsLoopStopped_failsOnceItStopped_andThrowsNothingAtTheAborter() throws Exception {
        HttpForwardTarget target = rawUpstream(""); // reads the request, never answers
        RelayedRequest request = request("GET", "/never");
        CompletionStage<RelayedResponse> answer = target.handle(request);
        Waits.until("the exchange reached the upstream", () -> rawAccepted.get() == 1);
        assertThat(group.shutdownGracefully(0, 0, TimeUnit.SECONDS).await(WAIT.toMillis()))
                .as("the loop stopped")
                .isTrue();

        request.signal().abortVia(Runnable::run, new java.util.concurrent.CancellationException("the caller left"));

        // It fails: with the abort's reason once the loop stopped, or with the connection's close
        // when the loop's shutdown closed it first.
        assertThat(Waits.failure(answer, "the aborted exchange's stage"))
                .message()
                .containsAnyOf("the caller left", "closed the connection");
    }

    /**
     * A request on one of the group's loops (a v2 stream's hint) whose body hands its parts over
     * inline there, as the stream's DATA does: 24 MiB reaches the upstream whole and in order. The
     * pump writes inline parts until the connection turns unwritable and resumes when its flush
     * turns it writable again, inside the same run (the stall this defends: that writability was
     * lost and the upload waited for the body timeout).
     */
    @Test
    void handle_onTheRequestsLoop_writesAnUploadHandedOverInline_wholeAndInOrder() throws Exception {
        HttpForwardTarget target = sinkUpstream();
        EventLoop loop = group.next();
        InlineBody upload = new InlineBody(loop, 24 * 1024 * 1024, 16 * 1024);

        RelayedResponse response =
                done(target.handle(request("PUT", "/sink", upload, loop)), "PUT 24 MiB handed over inline", LONG_WAIT);

        assertThat(response.status()).isEqualTo(200);
        assertThat(new String(readAll(body(response), "the sink's answer"), StandardCharsets.US_ASCII))
                .as("what the upstream received: its length and SHA-256")
                .isEqualTo(upload.length + " " + upload.sha256());
        assertThat(upload.inline.get())
                .as("parts handed over inline on the loop")
                .isPositive();
    }

    /**
     * The response body is read ahead of a reader that stops by at most {@link
     * HttpForwardTarget#READ_AHEAD_HIGH_BYTES} plus the one socket read that crosses it (Netty reads
     * at most 64 KiB at once here), and reading resumes as the reader takes it: all 16 MiB arrive
     * in order, read on the loop with parts handed over inline.
     */
    @Test
    void handle_responseReadAhead_stopsAtItsBoundAndResumes() throws Exception {
        HttpForwardTarget target = sourceUpstream();
        EventLoop loop = group.next();
        int length = 16 * 1024 * 1024;

        RelayedResponse response = done(target.handle(request("GET", "/source/" + length, null, loop)), "GET 16 MiB");
        BodySource body = body(response);
        assertThat(body.nonBlocking()).isTrue();

        Waits.until(
                "the read-ahead fills while nobody reads",
                () -> onLoop(loop, () -> HttpForwardTarget.readAhead(body)) >= HttpForwardTarget.READ_AHEAD_HIGH_BYTES);
        org.awaitility.Awaitility.await("the read-ahead stays within its bound")
                .during(Duration.ofMillis(300))
                .atMost(Duration.ofSeconds(5))
                .until(
                        () -> onLoop(loop, () -> HttpForwardTarget.readAhead(body)),
                        n -> n <= HttpForwardTarget.READ_AHEAD_HIGH_BYTES + 64 * 1024);

        java.util.concurrent.CompletableFuture<byte[]> all = new java.util.concurrent.CompletableFuture<>();
        MessageDigestReader reader = new MessageDigestReader(body, loop, all);
        loop.execute(reader::read);
        byte[] digest = done(all, "the whole body, read on the loop", LONG_WAIT);

        assertThat(reader.bytes).isEqualTo(length);
        assertThat(digest)
                .isEqualTo(java.security.MessageDigest.getInstance("SHA-256").digest(pattern(length)));
        assertThat(reader.inline).as("parts read ahead were handed over inline").isPositive();
    }

    private static final Duration LONG_WAIT = Duration.ofSeconds(30);

    private static <T> T onLoop(EventLoop loop, java.util.concurrent.Callable<T> task) {
        try {
            return loop.submit(task).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            throw new AssertionError("the loop's task failed or was not run within " + WAIT, e);
        }
    }

    /** {@code n} bytes of a repeating pattern whose position shows (a lost or reordered part changes the digest). */
    static byte[] pattern(int n) {
        byte[] out = new byte[n];
        for (int i = 0; i < n; i++) {
            out[i] = patternByte(i);
        }
        return out;
    }

    /** The byte at {@code i} of {@link #pattern}. */
    static byte patternByte(int i) {
        return (byte) (i * 31 + (i >>> 12));
    }

    /** The JDK server's {@code /sink}: reads the whole request body, answers {@code <length> <sha256 hex>}. */
    private HttpForwardTarget sinkUpstream() throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        s.createContext("/sink", exchange -> {
            try (exchange) {
                java.security.MessageDigest sha = sha256();
                long n = 0;
                byte[] buf = new byte[64 * 1024];
                InputStream in = exchange.getRequestBody();
                for (int r; (r = in.read(buf)) > 0; ) {
                    sha.update(buf, 0, r);
                    n += r;
                }
                byte[] answer = (n + " " + java.util.HexFormat.of().formatHex(sha.digest()))
                        .getBytes(StandardCharsets.US_ASCII);
                exchange.sendResponseHeaders(200, answer.length);
                exchange.getResponseBody().write(answer);
            }
        });
        s.start();
        server = s;
        return new HttpForwardTarget(
                URI.create("http://127.0.0.1:" + s.getAddress().getPort()), transport, group);
    }

    /** The JDK server's {@code /source/N}: N bytes of {@link #pattern}, with their length. */
    private HttpForwardTarget sourceUpstream() throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        s.createContext("/source/", exchange -> {
            try (exchange) {
                int n = Integer.parseInt(exchange.getRequestURI().getPath().substring("/source/".length()));
                byte[] body = pattern(n);
                exchange.sendResponseHeaders(200, n);
                OutputStream out = exchange.getResponseBody();
                for (int off = 0; off < n; off += 64 * 1024) {
                    out.write(body, off, Math.min(64 * 1024, n - off));
                }
            }
        });
        s.start();
        server = s;
        return new HttpForwardTarget(
                URI.create("http://127.0.0.1:" + s.getAddress().getPort()), transport, group);
    }

    static java.security.MessageDigest sha256() {
        try {
            return java.security.MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * A request body that lives on {@code loop}, as a v2 stream's does: {@link #nextBufOn} there
     * hands the next part over inline, except every fifth, which comes from a later task (both
     * ways a stream's DATA arrives).
     */
    static final class InlineBody implements BodySource {
        final EventLoop loop;
        final int length;
        final int partBytes;
        final byte[] bytes;
        int offset;
        int asked;
        final java.util.concurrent.atomic.AtomicInteger inline = new java.util.concurrent.atomic.AtomicInteger();

        InlineBody(EventLoop loop, int length, int partBytes) {
            this.loop = loop;
            this.length = length;
            this.partBytes = partBytes;
            this.bytes = pattern(length);
        }

        String sha256() {
            return java.util.HexFormat.of()
                    .formatHex(HttpForwardTargetTest.sha256().digest(bytes));
        }

        @Override
        public boolean nonBlocking() {
            return true;
        }

        @Override
        public void nextBufOn(
                java.util.concurrent.Executor on,
                java.util.function.BiConsumer<io.netty.buffer.@Nullable ByteBuf, @Nullable Throwable> then) {
            if (on == loop && loop.inEventLoop() && ++asked % 5 != 0) {
                inline.incrementAndGet();
                give(then);
            } else {
                loop.execute(() -> give(then));
            }
        }

        private void give(java.util.function.BiConsumer<io.netty.buffer.@Nullable ByteBuf, @Nullable Throwable> then) {
            if (offset == length) {
                then.accept(null, null);
                return;
            }
            int n = Math.min(partBytes, length - offset);
            io.netty.buffer.ByteBuf part =
                    io.netty.buffer.Unpooled.directBuffer(n).writeBytes(bytes, offset, n);
            offset += n;
            then.accept(part, null);
        }

        @Override
        public CompletionStage<io.netty.buffer.@Nullable ByteBuf> nextBuf() {
            java.util.concurrent.CompletableFuture<io.netty.buffer.@Nullable ByteBuf> f =
                    new java.util.concurrent.CompletableFuture<>();
            loop.execute(() -> give((b, e) -> f.complete(b)));
            return f;
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            return nextBuf().thenApply(b -> {
                if (b == null) {
                    return null;
                }
                ByteBuffer copy = ByteBuffer.allocate(b.readableBytes());
                b.readBytes(copy);
                b.release();
                return copy.flip();
            });
        }

        @Override
        public void cancel(Throwable reason) {
            // the test's body is all in memory: nothing to stop
        }
    }

    /** Reads a body on its loop with {@link BodySource#nextBufOn}, looping over parts handed over inline. */
    static final class MessageDigestReader {
        final BodySource body;
        final EventLoop loop;
        final java.util.concurrent.CompletableFuture<byte[]> result;
        final java.security.MessageDigest sha = sha256();
        long bytes;
        int inline;
        private boolean reading;
        private boolean got;

        MessageDigestReader(BodySource body, EventLoop loop, java.util.concurrent.CompletableFuture<byte[]> result) {
            this.body = body;
            this.loop = loop;
            this.result = result;
        }

        void read() {
            reading = true;
            try {
                do {
                    got = false;
                    body.nextBufOn(loop, this::part);
                    if (got) {
                        inline++;
                    }
                } while (got && !result.isDone());
            } finally {
                reading = false;
            }
        }

        private void part(io.netty.buffer.@Nullable ByteBuf b, @Nullable Throwable error) {
            if (error != null) {
                result.completeExceptionally(error);
                return;
            }
            if (b == null) {
                result.complete(sha.digest());
                return;
            }
            try {
                bytes += b.readableBytes();
                sha.update(b.nioBuffer());
            } finally {
                b.release();
            }
            if (reading) {
                got = true; // inline: the loop in read() asks for the next
            } else {
                read();
            }
        }
    }

    // ---- the request's framing upstream (RFC 9112 §6.2, §6.3) ----

    /** Starts a {@link RecordingUpstream}, closed after the test, and a target forwarding to it. */
    private HttpForwardTarget recordingUpstream() throws IOException {
        RecordingUpstream up = RecordingUpstream.start();
        recording = up;
        return new HttpForwardTarget(up.uri(), transport, group);
    }

    private RecordingUpstream recorded() {
        return java.util.Objects.requireNonNull(recording, "recordingUpstream() first");
    }

    /**
     * A relayed request never names a path in place of its own toward the upstream: {@code
     * X-Original-URL} and {@code X-Rewrite-URL} (IIS, older Symfony and Zend route by them; a
     * trusted proxy in front of the gateway passes them on) are dropped, the other fields kept.
     * The target's base path bounds what a relay reaches (found by a review).
     */
    @Test
    void handle_neverSendsAPathOverrideUpstream() throws Exception {
        HttpForwardTarget target = recordingUpstream();
        RelayedRequest get = new RelayedRequest(
                "GET",
                URI.create("http://app.local/x"),
                List.of(
                        new Header("X-Original-URL", "/admin"),
                        new Header("x-rewrite-url", "/admin"),
                        new Header("X-Kept", "yes")),
                "acme",
                null,
                null,
                new AbortSignal());

        readAll(body(done(target.handle(get), "the GET")), "its answer");

        RecordingUpstream.Recorded seen = recorded().takeRequest(WAIT);
        assertThat(seen.requestLine()).isEqualTo("GET /x HTTP/1.1");
        assertThat(seen.headers("X-Original-URL")).isEmpty();
        assertThat(seen.headers("X-Rewrite-URL")).isEmpty();
        assertThat(seen.headers("X-Kept")).containsExactly("yes");
    }

    /**
     * RFC 9112 §6.2, §6.3: a relayed request that declares its length goes upstream with exactly
     * {@code Content-Length: <length>} and its bytes as they are, no Transfer-Encoding and no chunk
     * framing; one of unknown length is chunked (§7.1). Either way the upstream reads the whole
     * body (its SHA-256 answered back) and the connection stays in step: the next exchange reuses
     * it, its head the next bytes there.
     */
    @ParameterizedTest(name = "length declared: {0}")
    @ValueSource(booleans = {true, false})
    void handle_upload_isFramedUpstreamAsItsDeclaredLengthSays(boolean declared) throws Exception {
        HttpForwardTarget target = recordingUpstream();
        EventLoop loop = group.next();
        InlineBody upload = new InlineBody(loop, 300 * 1024 + 7, 16 * 1024);

        RelayedResponse response =
                done(target.handle(request("PUT", "/up", upload, loop, declared ? upload.length : -1)), "the PUT");

        assertThat(new String(readAll(body(response), "the upstream's answer"), StandardCharsets.US_ASCII))
                .as("what the upstream read: its length and SHA-256")
                .isEqualTo(upload.length + " " + upload.sha256());
        RecordingUpstream.Recorded put = recorded().takeRequest(WAIT);
        assertThat(put.requestLine()).isEqualTo("PUT /up HTTP/1.1");
        assertThat(put.complete()).isTrue();
        assertThat(put.body()).isEqualTo(upload.bytes);
        if (declared) {
            assertThat(put.headers("Content-Length")).containsExactly(Integer.toString(upload.length));
            assertThat(put.headers("Transfer-Encoding")).isEmpty();
            assertThat(put.framing()).isEqualTo(RecordingUpstream.Framing.CONTENT_LENGTH);
            assertThat(put.wire())
                    .as("exactly the body's bytes on the wire, no chunk framing")
                    .isEqualTo(upload.bytes);
        } else {
            assertThat(put.headers("Transfer-Encoding")).containsExactly("chunked");
            assertThat(put.headers("Content-Length")).isEmpty();
            assertThat(put.framing()).isEqualTo(RecordingUpstream.Framing.CHUNKED);
        }
        readAll(body(done(target.handle(request("GET", "/after", null, loop)), "the next GET")), "its answer");
        RecordingUpstream.Recorded after = recorded().takeRequest(WAIT);
        assertThat(after.requestLine()).isEqualTo("GET /after HTTP/1.1");
        assertThat(after.connection()).as("the same connection, in step").isEqualTo(put.connection());
    }

    /**
     * RFC 9110 §8.6: a request without a body that declared a length of 0 (a client's {@code
     * Content-Length: 0}) says so upstream; one that declared none sends no framing header at all.
     */
    @Test
    void handle_noBody_declaredZeroSendsContentLength0_andUndeclaredSendsNeither() throws Exception {
        HttpForwardTarget target = recordingUpstream();

        readAll(body(done(target.handle(request("POST", "/zero", null, null, 0)), "POST, length 0")), "answer");
        readAll(body(done(target.handle(request("POST", "/none", null, null)), "POST, no length")), "answer");

        RecordingUpstream.Recorded zero = recorded().takeRequest(WAIT);
        assertThat(zero.headers("Content-Length")).containsExactly("0");
        assertThat(zero.headers("Transfer-Encoding")).isEmpty();
        RecordingUpstream.Recorded none = recorded().takeRequest(WAIT);
        assertThat(none.headers("Content-Length")).isEmpty();
        assertThat(none.headers("Transfer-Encoding")).isEmpty();
        assertThat(none.connection()).isEqualTo(zero.connection());
    }

    /**
     * A body that breaks the length its request declared never completes a request upstream: one
     * that ends short of it, one whose part would run past it (never written: past the length it
     * would be read as the start of another request), or one whose read fails on the way (as the
     * relay fails it when the gateway broke the length, or its client went away) fails the
     * exchange, and the upstream's connection is closed with fewer bytes than it declared, never
     * pooled: the next exchange opens another.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"endsShort", "runsPast", "fails"})
    void handle_uploadBreakingItsDeclaredLength_abortsTheUpstreamRequest_andClosesItsConnection(String broken)
            throws Exception {
        HttpForwardTarget target = recordingUpstream();
        byte[] data = pattern(246);
        SpectorException relayFailed = SpectorException.badRequest("length", "the relay's body broke its length");
        BodySource body = switch (broken) {
            case "endsShort" ->
                PartsBody.of(
                        null, java.util.Arrays.copyOfRange(data, 0, 100), java.util.Arrays.copyOfRange(data, 100, 245));
            case "runsPast" -> PartsBody.of(null, java.util.Arrays.copyOfRange(data, 0, 200), pattern(47));
            default -> PartsBody.of(relayFailed, java.util.Arrays.copyOfRange(data, 0, 100));
        };

        Throwable failure = Waits.failure(target.handle(request("PUT", "/up", body, null, 246)), "the PUT fails");

        if (broken.equals("fails")) {
            assertThat(failure).isSameAs(relayFailed);
        } else {
            assertThat(failure)
                    .isInstanceOfSatisfying(
                            SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL))
                    .hasMessageContaining(
                            broken.equals("endsShort")
                                    ? "ended after 245 of its declared 246"
                                    : "ran to 247 of its declared 246");
        }
        RecordingUpstream.Recorded put = recorded().takeRequest(WAIT);
        assertThat(put.headers("Content-Length")).containsExactly("246");
        assertThat(put.complete())
                .as("the upstream never had the whole request: its connection closed first")
                .isFalse();
        assertThat(put.wire().length).as("fewer bytes than declared").isLessThan(246);
        assertThat(put.wire())
                .as("what it got is the body's start, nothing past the length")
                .isEqualTo(java.util.Arrays.copyOf(data, put.wire().length));
        readAll(body(done(target.handle(request("GET", "/next", null, null)), "the next GET")), "its answer");
        assertThat(recorded().takeRequest(WAIT).connection())
                .as("a new connection: the broken one was closed, not pooled")
                .isNotEqualTo(put.connection());
    }

    /** A request body of fixed parts, then its end or, instead, {@code failure}. Thread-safe. */
    private static final class PartsBody implements BodySource {
        private final java.util.ArrayDeque<byte[]> parts;
        private final @Nullable Throwable failure;

        private PartsBody(@Nullable Throwable failure, byte[]... parts) {
            this.failure = failure;
            this.parts = new java.util.ArrayDeque<>(List.of(parts));
        }

        static PartsBody of(@Nullable Throwable failure, byte[]... parts) {
            return new PartsBody(failure, parts);
        }

        @Override
        public synchronized CompletionStage<@Nullable ByteBuffer> next() {
            byte[] part = parts.poll();
            if (part != null) {
                return java.util.concurrent.CompletableFuture.completedFuture(ByteBuffer.wrap(part));
            }
            Throwable f = failure;
            return f == null
                    ? java.util.concurrent.CompletableFuture.completedFuture(null)
                    : java.util.concurrent.CompletableFuture.failedFuture(f);
        }

        @Override
        public void cancel(Throwable reason) {
            // all in memory: nothing to stop
        }
    }

    /** RFC 9110 §8.6: the upstream's Content-Length is the relayed length; the header never crosses. */
    @Test
    void handle_getWithContentLength_carriesTheLengthAndTheBody() throws IOException {
        HttpForwardTarget target = jdkUpstream();

        RelayedResponse response = done(target.handle(request("GET", "/doc")), "GET /doc");

        assertThat(response.status()).isEqualTo(200);
        assertThat(response.contentLength()).isEqualTo(LENGTH);
        assertThat(headerNames(response)).contains("content-type").doesNotContain("content-length");
        assertThat(readAll(body(response), "the GET's body")).isEqualTo(DOCUMENT);
    }

    /** RFC 9110 §9.3.2, §8.6: a HEAD's Content-Length is the GET's (246), and it has no body. */
    @Test
    void handle_head_carriesTheGetLengthAndNoBody() throws IOException {
        HttpForwardTarget target = jdkUpstream();

        RelayedResponse response = done(target.handle(request("HEAD", "/doc")), "HEAD /doc");

        assertThat(response.status()).isEqualTo(200);
        assertThat(response.contentLength()).as("the GET's length").isEqualTo(LENGTH);
        assertThat(response.body()).as("a HEAD has no body").isNull();
        RelayedResponse get = done(target.handle(request("GET", "/doc")), "GET /doc after the HEAD");
        assertThat(get.contentLength()).isEqualTo(LENGTH);
        assertThat(readAll(body(get), "the GET after the HEAD")).isEqualTo(DOCUMENT);
    }

    /** RFC 9112 §6.3 rule 4: a chunked response has no known length (-1), and its body crosses whole. */
    @Test
    void handle_chunkedResponse_givesAnUnknownLength() throws IOException {
        HttpForwardTarget target = jdkUpstream();

        RelayedResponse response = done(target.handle(request("GET", "/chunked")), "GET /chunked");

        assertThat(response.contentLength()).isEqualTo(-1);
        assertThat(headerNames(response)).doesNotContain("transfer-encoding");
        assertThat(readAll(body(response), "the chunked body")).isEqualTo(DOCUMENT);
    }

    /**
     * RFC 9110 §6.4.1, §15.3.5, §15.4.5: a 204 and a 304 have no body; RFC 9110 §8.6: a 204 has no
     * length, a 304's is the representation's.
     */
    @ParameterizedTest
    @ValueSource(ints = {204, 304})
    void handle_204Or304_hasNoBody(int status) throws IOException {
        HttpForwardTarget target = jdkUpstream();

        RelayedResponse response = done(target.handle(request("GET", "/status/" + status)), "GET " + status);

        assertThat(response.status()).isEqualTo(status);
        assertThat(response.body()).as("%d has no body", status).isNull();
        assertThat(response.contentLength()).isEqualTo(status == 304 ? LENGTH : -1);
    }

    /**
     * RFC 9110 §15.3.6: a 205 has no content; one its upstream declared anyway is dropped (length
     * 0) with its connection, and the next exchange gets another.
     */
    @Test
    void handle_205WithABody_hasNoBodyAndLengthZero_andTheNextExchangeIsServed() throws IOException {
        HttpForwardTarget target = jdkUpstream();

        RelayedResponse reset = done(target.handle(request("GET", "/status/205")), "GET 205");
        assertThat(reset.body()).isNull();
        assertThat(reset.contentLength()).isZero();

        RelayedResponse next = done(target.handle(request("GET", "/doc")), "GET /doc after the 205");
        assertThat(readAll(body(next), "the next body")).isEqualTo(DOCUMENT);
    }

    /**
     * RFC 9112 §9.3, §9.6: an upstream that answers {@code Connection: close}, or HTTP/1.0 without
     * keep-alive, closes after its answer; its connection is never pooled, so the next exchange
     * opens another. Regression (a review of the thirty-first stop): it went back to the pool, and
     * the next request was written to a connection the upstream was closing (here it holds the
     * socket open and never reads again, so that request had waited for an answer that never came).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello",
                "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello"
            })
    void handle_anUpstreamThatClosesAfterItsAnswer_isNeverAskedAgainOnThatConnection(String answer) throws IOException {
        HttpForwardTarget target = rawUpstream(answer);

        for (int i = 0; i < 2; i++) {
            RelayedResponse r = done(target.handle(request("GET", "/x")), "GET " + (i + 1));
            assertThat(new String(readAll(body(r), "its body"), StandardCharsets.US_ASCII))
                    .isEqualTo("hello");
        }
        assertThat(rawAccepted.get()).as("a connection each").isEqualTo(2);
    }

    /**
     * RFC 9112 §6.1: a transfer coding other than chunked would leave the body coded once the codec
     * de-chunked it, with nothing to say so (Transfer-Encoding is hop-by-hop): INTERNAL, as the
     * gateway answers such an owner.
     */
    @Test
    void handle_aTransferCodingOtherThanChunked_failsInternal() throws IOException {
        HttpForwardTarget target =
                rawUpstream("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");

        Throwable failure = Waits.failure(target.handle(request("GET", "/x")), "the GET fails");

        assertThat(failure)
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL))
                .hasMessageContaining("Transfer-Encoding gzip");
    }

    /**
     * RFC 9110 §15.3.6: a 205 whose stray content never ends (chunked and never ended, or five
     * declared bytes never sent) is not drained: its connection closes, and the next exchange gets another (this
     * pool holds one). Regression (a review): the connection drained it with no deadline, outside
     * the relay's count, and the next request waited out the acquire and failed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "HTTP/1.1 205 Reset Content\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                "HTTP/1.1 205 Reset Content\r\nContent-Length: 5\r\n\r\n"
            })
    void handle_205WithABodyThatNeverEnds_closesItsConnection(String answer) throws IOException {
        HttpForwardTarget target = rawUpstream(answer);

        for (int i = 0; i < 2; i++) {
            RelayedResponse r = done(target.handle(request("GET", "/x")), "GET " + (i + 1));
            assertThat(r.status()).isEqualTo(205);
            assertThat(r.body()).isNull();
        }
        assertThat(rawAccepted.get()).isEqualTo(2);
    }

    /**
     * An upstream's {@code Connection} field past its bound is the upstream's fault: INTERNAL
     * (PROTOCOL.md section 3), never the {@code BAD_REQUEST} a client's would be. Regression (a
     * review): the client got a 400 for it.
     */
    @Test
    void handle_anUpstreamConnectionFieldPastItsBound_failsInternal() throws IOException {
        StringBuilder names = new StringBuilder();
        for (int i = 0; i < 40; i++) {
            names.append(i == 0 ? "" : ", ").append("x-").append(i);
        }
        HttpForwardTarget target =
                rawUpstream("HTTP/1.1 200 OK\r\nConnection: " + names + "\r\nContent-Length: 0\r\n\r\n");

        Throwable failure = Waits.failure(target.handle(request("GET", "/x")), "the GET fails");

        assertThat(failure)
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL))
                .hasMessageContaining("Connection field");
    }

    /**
     * A request cancelled before its exchange began (the gateway's RESET or {@code relay.cancel}
     * while the start waited for the loop) sends nothing upstream, though a pooled connection was
     * ready to take it at once. Regression (a review): the head went out, a whole request for one
     * without a body, and the upstream acted on what the client had cancelled.
     */
    @Test
    void handle_aRequestCancelledBeforeItsStart_sendsNothingUpstream() throws Exception {
        HttpForwardTarget target = recordingUpstream();
        readAll(body(done(target.handle(request("GET", "/warm", null, null)), "GET /warm")), "its answer");
        recorded().takeRequest(WAIT);
        AbortSignal signal = new AbortSignal();
        signal.abort(new java.util.concurrent.CancellationException("the gateway reset the stream"));
        RelayedRequest cancelled = new RelayedRequest(
                "DELETE",
                URI.create("http://app.local/cancelled"),
                List.of(),
                "acme",
                null,
                null,
                signal,
                null,
                null,
                0);

        Throwable failure = Waits.failure(target.handle(cancelled), "the cancelled DELETE");
        readAll(body(done(target.handle(request("GET", "/after", null, null)), "GET /after")), "its answer");

        assertThat(failure).isInstanceOf(java.util.concurrent.CancellationException.class);
        assertThat(recorded().takeRequest(WAIT).requestLine())
                .as("the next request the upstream read")
                .isEqualTo("GET /after HTTP/1.1");
    }

    /** RFC 9110 §15.2: interim 1xx responses are skipped; the final response is the relayed one. */
    @Test
    void handle_interim100ThenFinal_relaysTheFinalResponse() throws IOException {
        HttpForwardTarget target = rawUpstream(String.join(
                "\r\n",
                "HTTP/1.1 100 Continue",
                "",
                "HTTP/1.1 103 Early Hints",
                "Link: </s.css>; rel=preload",
                "",
                "HTTP/1.1 200 OK",
                "Content-Length: 5",
                "",
                "hello"));

        RelayedResponse response = done(target.handle(request("GET", "/x")), "GET after two interim heads");

        assertThat(response.status()).isEqualTo(200);
        assertThat(response.contentLength()).isEqualTo(5);
        assertThat(new String(readAll(body(response), "the final body"), StandardCharsets.US_ASCII))
                .isEqualTo("hello");
    }

    /** RFC 9112 §7.1: a chunked body whose chunk size is not hex fails INTERNAL; it never ends as if complete. */
    @Test
    void handle_chunkedBodyWithABadChunkSize_failsTheBodyInternal() throws IOException {
        HttpForwardTarget target = rawUpstream(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nmore\r\n0\r\n\r\n");

        RelayedResponse response = done(target.handle(request("GET", "/x")), "GET a broken chunked body");
        BodySource body = body(response);

        assertThat(response.contentLength()).isEqualTo(-1);
        Throwable t = null;
        for (int part = 0; part < 3 && t == null; part++) { // "hello", then the failure (or it at once)
            CompletionStage<@Nullable ByteBuffer> next = body.next();
            try {
                assertThat(next.toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                        .as("a part before the broken chunk, never the end")
                        .isNotNull();
            } catch (ExecutionException e) {
                t = e.getCause();
            } catch (TimeoutException | InterruptedException e) {
                throw new AssertionError("the broken body is not settled within " + WAIT, e);
            }
        }
        assertThat(t).isInstanceOfSatisfying(SpectorException.class, e -> {
            assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL);
            assertThat(e.getMessage()).contains("could not be decoded");
        });
    }

    /**
     * An upstream nobody listens on fails the exchange INTERNAL with words a client may read: the
     * gateway puts the worker's message in the problem's detail, and the worker's network (the
     * upstream's address and port, the Java exception that named them) is not the client's to see.
     * Regression: the detail was {@code upstream http://127.0.0.1:PORT is unreachable:
     * io.netty.channel.AbstractChannel$AnnotatedConnectException: Connection refused: /127.0.0.1:PORT}.
     */
    @Test
    void handle_anUpstreamThatRefuses_failsWithNoAddressInTheMessage() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort(); // closed again: a port nobody listens on
        }
        HttpForwardTarget target =
                new HttpForwardTarget(URI.create("http://127.0.0.1:" + port + "/base"), transport, group);

        Throwable failure = Waits.failure(target.handle(request("GET", "/x")), "the GET fails");

        assertThat(failure)
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL))
                .hasMessage("the relay target's upstream is unreachable (connection refused)");
        assertThat(failure.getMessage())
                .doesNotContain("127.0.0.1")
                .doesNotContain(Integer.toString(port))
                .doesNotContain("Exception");
    }

    /**
     * RFC 9112 §9.6: an upstream may answer before it has read the request's body, and close. A
     * 413 sent after the head and part of the body, the connection then closed with the body still
     * arriving (the kernel resets it: unread bytes), is the client's answer, as nginx passes it
     * on; the rest of the body is not sent. Regression: the failed write failed the exchange
     * ({@code Broken pipe}, a 500 at the client), 3 runs of 3. An upstream that closes the same
     * way with no answer fails the exchange INTERNAL, at once, as any close before an answer does.
     */
    @ParameterizedTest(name = "answers early: {0}")
    @ValueSource(booleans = {true, false})
    void handle_anUpstreamThatClosesMidUpload_givesItsEarlyAnswer_orFails(boolean answers) throws Exception {
        try (EarlyAnswerUpstream upstream = EarlyAnswerUpstream.start(answers ? EarlyAnswerUpstream.TOO_LARGE : null)) {
            HttpForwardTarget target =
                    new HttpForwardTarget(URI.create("http://127.0.0.1:" + upstream.port()), transport, group);
            byte[][] parts = new byte[64][];
            for (int i = 0; i < parts.length; i++) {
                parts[i] = pattern(64 * 1024);
            }
            long length = 64L * 64 * 1024; // 4 MiB: far more than the sockets' buffers hold

            CompletionStage<RelayedResponse> handled =
                    target.handle(request("PUT", "/up", PartsBody.of(null, parts), null, length));

            if (answers) {
                RelayedResponse response = done(handled, "the PUT's early answer");
                assertThat(response.status()).isEqualTo(413);
                assertThat(new String(readAll(body(response), "the 413's body"), StandardCharsets.US_ASCII))
                        .isEqualTo("large");
            } else {
                assertThat(Waits.failure(handled, "the PUT fails"))
                        .isInstanceOfSatisfying(
                                SpectorException.class,
                                e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL))
                        .hasMessage("the relay target's upstream closed the connection");
            }
        }
    }

    // ---- upgrades (docs/PROTOCOL.md section 9.7; RFC 9110 §7.8 and §15.2.2; RFC 6455 §4) ----

    /** What an upgrading upstream saw of its connection: the request head's lines, and how the connection ended. */
    private static final class UpgradeSeen {
        final java.util.concurrent.CompletableFuture<List<String>> head =
                new java.util.concurrent.CompletableFuture<>();
        final java.util.concurrent.CompletableFuture<String> ended = new java.util.concurrent.CompletableFuture<>();
        /** The bytes it read after the head, at the connection's end (a FIN, a close or a reset). */
        final java.util.concurrent.CompletableFuture<byte[]> received = new java.util.concurrent.CompletableFuture<>();
        /** After a 101, it reads nothing until this completes (the test holds it back to let parts queue). */
        final java.util.concurrent.CompletableFuture<@Nullable Void> mayRead;
        /** After a 101, it echoes what it reads. */
        final boolean echo;

        UpgradeSeen() {
            this.mayRead = java.util.concurrent.CompletableFuture.completedFuture(null);
            this.echo = true;
        }

        /** An upstream that, after its 101, reads nothing until {@code mayRead} completes, and echoes nothing. */
        UpgradeSeen(java.util.concurrent.CompletableFuture<@Nullable Void> mayRead) {
            this.mayRead = mayRead;
            this.echo = false;
        }
    }

    /**
     * Starts a raw upstream that answers the handshake with {@code answer} (a 101, or a refusal),
     * then, after a 101, echoes every byte (as {@code seen} says); at the client's FIN it writes
     * {@code after-fin} and closes (a half close both ways). {@code seen} records what it saw.
     */
    private HttpForwardTarget upgradeUpstream(String answer, UpgradeSeen seen) throws IOException {
        ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        raw = socket;
        rawThreads.execute(() -> {
            ByteArrayOutputStream received = new ByteArrayOutputStream();
            try (Socket connection = socket.accept()) {
                connection.setSoTimeout((int) WAIT.toMillis() * 2);
                InputStream in = connection.getInputStream();
                OutputStream out = connection.getOutputStream();
                java.util.ArrayList<String> lines = new java.util.ArrayList<>();
                StringBuilder line = new StringBuilder();
                while (true) {
                    int b = in.read();
                    if (b < 0) {
                        seen.ended.complete("closed before the head ended");
                        return;
                    }
                    if (b == '\n') {
                        String l = line.toString().strip();
                        line.setLength(0);
                        if (l.isEmpty()) {
                            break;
                        }
                        lines.add(l);
                    } else {
                        line.append((char) b);
                    }
                }
                seen.head.complete(lines);
                out.write(answer.getBytes(StandardCharsets.US_ASCII));
                out.flush();
                if (!answer.startsWith("HTTP/1.1 101")) {
                    seen.ended.complete("answered");
                    in.read();
                    seen.received.complete(received.toByteArray());
                    return;
                }
                seen.mayRead.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                byte[] buf = new byte[8192];
                for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
                    received.write(buf, 0, n);
                    if (seen.echo) {
                        out.write(buf, 0, n);
                        out.flush();
                    }
                }
                seen.received.complete(received.toByteArray());
                out.write("after-fin".getBytes(StandardCharsets.US_ASCII)); // the client's FIN: our side goes on
                out.flush();
                seen.ended.complete("fin");
            } catch (IOException e) {
                seen.received.complete(received.toByteArray());
                seen.ended.complete("reset: " + e.getMessage());
            } catch (InterruptedException | ExecutionException | TimeoutException e) {
                seen.ended.complete("the test never let it read: " + e);
            }
        });
        return new HttpForwardTarget(URI.create("http://127.0.0.1:" + socket.getLocalPort()), transport, group);
    }

    private static final String SWITCH = String.join(
            "\r\n",
            "HTTP/1.1 101 Switching Protocols",
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
            "Sec-WebSocket-Protocol: chat",
            "",
            "");

    /** The client's side of a switched connection, fed by the test: parts queue until read, then its end. */
    private static final class ClientSide implements BodySource {
        private final java.util.concurrent.LinkedBlockingQueue<java.util.Optional<ByteBuffer>> parts =
                new java.util.concurrent.LinkedBlockingQueue<>();
        final java.util.concurrent.CompletableFuture<Throwable> cancelled =
                new java.util.concurrent.CompletableFuture<>();

        void send(String text) {
            parts.add(java.util.Optional.of(ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII))));
        }

        void end() {
            parts.add(java.util.Optional.empty());
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            return java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    java.util.Optional<ByteBuffer> p = parts.poll(WAIT.toMillis() * 3, TimeUnit.MILLISECONDS);
                    if (p == null) {
                        throw new IllegalStateException("the test sent nothing");
                    }
                    return p.orElse(null);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            });
        }

        @Override
        public void cancel(Throwable reason) {
            cancelled.complete(reason);
            end(); // a read still waiting ends
        }
    }

    private static RelayedRequest upgrade(BodySource clientSide, AbortSignal signal) {
        return new RelayedRequest(
                "GET",
                URI.create("http://app.local/ws"),
                List.of(
                        new Header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                        new Header("Sec-WebSocket-Version", "13")),
                "acme",
                null,
                clientSide,
                signal,
                "websocket");
    }

    private static String readText(BodySource body, int bytes) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (out.size() < bytes) {
            ByteBuffer part = done(body.next(), "the upstream's bytes");
            assertThat(part).as("bytes before the end").isNotNull();
            byte[] b = new byte[java.util.Objects.requireNonNull(part).remaining()];
            part.get(b);
            out.writeBytes(b);
        }
        return out.toString(StandardCharsets.US_ASCII);
    }

    /**
     * RFC 9110 §7.8 and RFC 6455 §4.1: the upstream is asked anew with Upgrade and Connection
     * (hop-by-hop, so the relay dropped them), the key passes as it is, and no body framing is
     * sent; its 101 (§15.2.2) is answered with its end-to-end headers, and the two sides are
     * spliced: the client's bytes reach it and its bytes come back, and each side's end is a half
     * close (its bytes after the client's FIN still arrive).
     */
    @Test
    void handle_upgradeAnswered101_splicesBothWaysWithHalfCloses() throws Exception {
        UpgradeSeen seen = new UpgradeSeen();
        HttpForwardTarget target = upgradeUpstream(SWITCH, seen);
        ClientSide client = new ClientSide();

        RelayedResponse response = done(target.handle(upgrade(client, new AbortSignal())), "the upgrade");

        assertThat(response.isSwitching()).isTrue();
        assertThat(response.contentLength()).isEqualTo(-1);
        assertThat(response.headers())
                .contains(
                        new Header("Sec-WebSocket-Accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
                        new Header("Sec-WebSocket-Protocol", "chat"));
        assertThat(headerNames(response)).doesNotContain("upgrade", "connection");
        List<String> head = done(seen.head, "the upstream's request head");
        assertThat(head.get(0)).isEqualTo("GET /ws HTTP/1.1");
        assertThat(head)
                .contains("upgrade: websocket", "connection: upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==")
                .noneMatch(l -> l.toLowerCase(Locale.ROOT).startsWith("transfer-encoding"))
                .noneMatch(l -> l.toLowerCase(Locale.ROOT).startsWith("content-length"));
        BodySource upstream = body(response);
        client.send("ping-1");
        assertThat(readText(upstream, 6)).isEqualTo("ping-1");
        client.send("ping-2");
        assertThat(readText(upstream, 6)).isEqualTo("ping-2");

        client.end(); // the client's FIN
        assertThat(readText(upstream, 9))
                .as("the upstream's side after the client's FIN")
                .isEqualTo("after-fin");
        assertThat(done(upstream.next(), "the upstream's end")).isNull();
        assertThat(done(seen.ended, "the upstream's connection")).isEqualTo("fin");
        com.spectrayan.spector.testkit.Waits.until(
                "the switched connection is closed, never pooled", () -> transport.openConnections() == 0);
    }

    /** RFC 9110 §7.8: an upstream may refuse; its answer is an ordinary response and the client's side is cancelled. */
    @Test
    void handle_upgradeRefused_anOrdinaryResponseAndTheClientSideCancelled() throws Exception {
        UpgradeSeen seen = new UpgradeSeen();
        HttpForwardTarget target = upgradeUpstream(
                "HTTP/1.1 426 Upgrade Required\r\nSec-WebSocket-Version: 13\r\nContent-Length: 2\r\n\r\nno", seen);
        ClientSide client = new ClientSide();

        RelayedResponse response = done(target.handle(upgrade(client, new AbortSignal())), "the upgrade");

        assertThat(response.status()).isEqualTo(426);
        assertThat(response.contentLength()).isEqualTo(2);
        assertThat(readAll(body(response), "the refusal")).isEqualTo("no".getBytes(StandardCharsets.US_ASCII));
        assertThat(done(client.cancelled, "the client's side is cancelled")).isNotNull();
    }

    /** A 101 to a request that asked for no upgrade is not a switch this target made: INTERNAL. */
    @Test
    void handle_101WithoutAnUpgrade_failsInternal() throws Exception {
        HttpForwardTarget target = upgradeUpstream(SWITCH, new UpgradeSeen());

        Throwable failure = org.assertj.core.api.Assertions.catchThrowable(() ->
                target.handle(request("GET", "/ws")).toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS));

        assertThat(failure).isInstanceOf(ExecutionException.class);
        assertThat(failure.getCause())
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL))
                .hasMessageContaining("101");
    }

    /** The request's signal (a RESET, the uplink lost) ends both sides at once: the upstream's connection closes. */
    @Test
    void handle_upgradeAborted_closesTheUpstreamConnection() throws Exception {
        UpgradeSeen seen = new UpgradeSeen();
        HttpForwardTarget target = upgradeUpstream(SWITCH, seen);
        ClientSide client = new ClientSide();
        AbortSignal signal = new AbortSignal();
        RelayedResponse response = done(target.handle(upgrade(client, signal)), "the upgrade");
        client.send("x");
        assertThat(readText(body(response), 1)).isEqualTo("x");

        signal.abort(new java.util.concurrent.CancellationException("the gateway reset the stream"));

        assertThat(done(seen.ended, "the upstream's connection ends")).isIn("fin", "reset: Connection reset");
        Throwable failed = org.assertj.core.api.Assertions.catchThrowable(
                () -> body(response).next().toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
        assertThat(failed).isInstanceOf(ExecutionException.class);
        com.spectrayan.spector.testkit.Waits.until("no connection left", () -> transport.openConnections() == 0);
    }

    /**
     * The client's side of a switched connection as a v2 stream's body is: it lives on {@code
     * loop}, and hands a queued part over inline there, inside {@link #nextBufOn}, as long as one is
     * queued ({@code parts} one-byte parts of {@link #pattern}, then its end). Each part is
     * allocated as it is handed over, so none is held when the relay stops reading.
     */
    private static final class QueuedInlineSide implements BodySource {
        final EventLoop loop;
        final int parts;
        int given;

        QueuedInlineSide(EventLoop loop, int parts) {
            this.loop = loop;
            this.parts = parts;
        }

        @Override
        public boolean nonBlocking() {
            return true;
        }

        @Override
        public void nextBufOn(
                java.util.concurrent.Executor on,
                java.util.function.BiConsumer<io.netty.buffer.@Nullable ByteBuf, @Nullable Throwable> then) {
            if (on == loop && loop.inEventLoop()) {
                give(then); // inline, as a stream's body hands over what is queued
            } else {
                loop.execute(() -> give(then));
            }
        }

        private void give(java.util.function.BiConsumer<io.netty.buffer.@Nullable ByteBuf, @Nullable Throwable> then) {
            if (given == parts) {
                then.accept(null, null);
                return;
            }
            byte b = patternByte(given++);
            then.accept(io.netty.buffer.Unpooled.directBuffer(1).writeByte(b), null);
        }

        @Override
        public CompletionStage<io.netty.buffer.@Nullable ByteBuf> nextBuf() {
            java.util.concurrent.CompletableFuture<io.netty.buffer.@Nullable ByteBuf> f =
                    new java.util.concurrent.CompletableFuture<>();
            loop.execute(() -> give((b, e) -> f.complete(b)));
            return f;
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            throw new UnsupportedOperationException("read with nextBufOn");
        }

        @Override
        public void cancel(Throwable reason) {
            // nothing held: parts are made as they are handed over
        }
    }

    /**
     * A switched connection's client side that hands many small queued parts over inline (a v2
     * stream's window of one-byte DATA frames) reaches the upstream whole: the pump loops over
     * them instead of recursing once per part, which overflowed the stack after a few thousand and
     * left the direction with no read pending, silently (found by a review). The upstream reads
     * nothing until the first pump stopped (the connection backs up: the pump resumes at its
     * writability), then takes every byte and, after them, the client's FIN (a FIN sent while the
     * connection held bytes dropped them).
     */
    @Test
    void handle_upgradeWithManySmallPartsHandedOverInline_reachesTheUpstreamWhole() throws Exception {
        java.util.concurrent.CompletableFuture<@Nullable Void> mayRead = new java.util.concurrent.CompletableFuture<>();
        UpgradeSeen seen = new UpgradeSeen(mayRead);
        HttpForwardTarget target = upgradeUpstream(SWITCH, seen);
        EventLoop loop = group.next();
        int parts = 50_000;
        QueuedInlineSide client = new QueuedInlineSide(loop, parts);

        RelayedResponse response = done(target.handle(upgradeOn(client, loop)), "the upgrade");
        assertThat(response.isSwitching()).isTrue();
        onLoop(loop, () -> client.given); // the splice's first pump ran (until the connection backed up)
        mayRead.complete(null);

        byte[] received = done(seen.received, "the client's bytes and FIN at the upstream", LONG_WAIT);
        assertThat(received.length).as("the bytes the upstream received").isEqualTo(parts);
        assertThat(received).as("what the upstream received").isEqualTo(pattern(parts));
        assertThat(done(seen.ended, "the upstream's connection")).isEqualTo("fin");
        BodySource upstream = body(response);
        assertThat(readText(upstream, 9)).isEqualTo("after-fin");
        assertThat(done(upstream.next(), "the upstream's end")).isNull();
        com.spectrayan.spector.testkit.Waits.until(
                "the switched connection is closed", () -> transport.openConnections() == 0);
    }

    /** An upgrade on {@code loop}, a v2 stream's hint, as V2ServedRelay hands it over. */
    private static RelayedRequest upgradeOn(BodySource clientSide, EventLoop loop) {
        return new RelayedRequest(
                "GET",
                URI.create("http://app.local/ws"),
                List.of(
                        new Header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                        new Header("Sec-WebSocket-Version", "13")),
                "acme",
                null,
                clientSide,
                new AbortSignal(),
                "websocket",
                loop,
                ResponseFraming.UNKNOWN_LENGTH);
    }

    /**
     * RFC 9110 §15.2.2 and §7.8: a 101 whose Upgrade names no protocol, or one the request did not
     * ask for, is no switch: an upstream that says 101 and stays HTTP (a reflected status) would
     * leave the client a raw pipe to its HTTP server, past the target's base path ("WebSocket
     * smuggling via a backend 101"). The relay fails INTERNAL (the gateway's 502), the connection
     * closes, and the client's bytes never reach the upstream.
     */
    @ParameterizedTest
    @ValueSource(
            strings = {
                "HTTP/1.1 101 Switching Protocols\r\n\r\n",
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket, h2c\r\nConnection: Upgrade\r\n\r\n"
            })
    void handle_101NotNamingTheProtocolAskedFor_failsInternal_andTunnelsNothing(String answer) throws Exception {
        UpgradeSeen seen = new UpgradeSeen();
        HttpForwardTarget target = upgradeUpstream(answer, seen);
        ClientSide client = new ClientSide();
        client.send("GET /admin HTTP/1.1\r\nHost: internal\r\n\r\n"); // queued: a switch would send it at once

        Throwable failure =
                org.assertj.core.api.Assertions.catchThrowable(() -> target.handle(upgrade(client, new AbortSignal()))
                        .toCompletableFuture()
                        .get(WAIT.toMillis(), TimeUnit.MILLISECONDS));

        assertThat(failure).isInstanceOf(ExecutionException.class);
        assertThat(failure.getCause())
                .isInstanceOfSatisfying(
                        SpectorException.class, e -> assertThat(e.code()).isEqualTo(ErrorCode.INTERNAL))
                .hasMessageContaining("101");
        assertThat(done(seen.received, "the upstream's connection ends"))
                .as("the client's bytes at the upstream")
                .isEmpty();
        com.spectrayan.spector.testkit.Waits.until(
                "the connection is closed, never pooled", () -> transport.openConnections() == 0);
    }

    /** The 101's Upgrade names the protocol asked for in another case (RFC 9110 §7.8: names compare case-insensitively): a switch. */
    @Test
    void handle_101NamingTheProtocolInAnotherCase_switches() throws Exception {
        UpgradeSeen seen = new UpgradeSeen();
        HttpForwardTarget target = upgradeUpstream(SWITCH.replace("Upgrade: websocket", "Upgrade: WebSocket"), seen);
        ClientSide client = new ClientSide();

        RelayedResponse response = done(target.handle(upgrade(client, new AbortSignal())), "the upgrade");

        assertThat(response.isSwitching()).isTrue();
        client.send("ping-1");
        assertThat(readText(body(response), 6)).isEqualTo("ping-1");
        client.end();
        assertThat(done(seen.received, "the client's bytes at the upstream"))
                .isEqualTo("ping-1".getBytes(StandardCharsets.US_ASCII));
    }

    /** {@link HttpForwardTarget#switchesAsAsked}: every protocol the 101 names was asked for, at least one. */
    @Test
    void switchesAsAsked_onlyProtocolsTheRequestListed() {
        assertThat(HttpForwardTarget.switchesAsAsked("websocket", List.of("WebSocket")))
                .isTrue();
        assertThat(HttpForwardTarget.switchesAsAsked("h2c, foo/2", List.of(" FOO/2 ")))
                .isTrue();
        assertThat(HttpForwardTarget.switchesAsAsked("websocket", List.of())).isFalse();
        assertThat(HttpForwardTarget.switchesAsAsked("websocket", List.of(""))).isFalse();
        assertThat(HttpForwardTarget.switchesAsAsked("websocket", List.of("h2c")))
                .isFalse();
        assertThat(HttpForwardTarget.switchesAsAsked("websocket", List.of("websocket", "h2c")))
                .isFalse();
        assertThat(HttpForwardTarget.switchesAsAsked("foo/2", List.of("foo"))).isFalse();
    }
}
