package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.uplink.transport.Waits.done;
import static com.spectrayan.spector.uplink.transport.Waits.take;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.gateway.RelayCall;
import com.spectrayan.spector.uplink.gateway.UplinkWorkerClient;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.StatusReport;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import com.spectrayan.spector.uplink.worker.WorkerOptions;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The relay engines of both halves over the real WebSocket transport on loopback. */
final class UplinkEndToEndTest {
    private static final int MIB = 1024 * 1024;
    private static final int PART = 64 * 1024;

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
    private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2);
    private final WorkerDirectory directory = new WorkerDirectory();
    private final Map<String, byte[]> store = new ConcurrentHashMap<>();
    private final BlockingQueue<WebSocketFrameChannel> connected = new LinkedBlockingQueue<>();
    private final TestGateway gateway = new TestGateway(
            group, 0, (id, channel) -> directory.register(new WorkerLink(id, UplinkWorkerClient.over(id, channel))));
    private final WorkerOptions options =
            WorkerOptions.builder("w1").relayTarget("app", this::target).build();
    private final UplinkDialer dialer = UplinkDialer.builder(gateway.uri(), "w1", TestGateway.TOKEN, group)
            .onConnected(channel -> {
                UplinkSession session = UplinkSession.start(channel, UplinkSession.Role.GATEWAY_UPLINK, options);
                channel.onCorrupt(session::corruptFrame);
                connected.add(channel);
            })
            .build();
    private final GatewayRelay relay = new GatewayRelay(directory, scheduler);

    @AfterEach
    void tearDown() {
        dialer.close();
        gateway.close();
        scheduler.shutdownNow();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
    }

    /** A fake upstream: PUT stores the body under the path, GET returns it (or "hello" for /hello). */
    private CompletionStage<RelayedResponse> target(RelayedRequest request) {
        String path = request.url().getPath();
        if ("PUT".equals(request.method())) {
            BodySource body = request.body();
            CompletionStage<byte[]> read =
                    body == null ? CompletableFuture.completedFuture(new byte[0]) : readAll(body);
            return read.thenApply(bytes -> {
                store.put(path, bytes);
                return new RelayedResponse(204, List.of(), null);
            });
        }
        byte[] data = "/hello".equals(path) ? "hello".getBytes(StandardCharsets.UTF_8) : store.get(path);
        if (data == null) {
            return CompletableFuture.completedFuture(new RelayedResponse(404, List.of(), new ArrayBody(new byte[0])));
        }
        return CompletableFuture.completedFuture(new RelayedResponse(
                200, List.of(new Header("content-type", "application/octet-stream")), new ArrayBody(data)));
    }

    private void connect() {
        dialer.start();
        take(connected, "the worker's uplink connects");
        gateway.nextUplink("the gateway accepts the uplink");
        assertThat(directory.live("w1"))
                .as("the accepted uplink is registered as live")
                .isNotNull();
    }

    private static RelayCall call(String method, String path, @Nullable BodySource body) {
        return new RelayCall(
                "app",
                new RelayedRequest(
                        method,
                        URI.create("http://app.local" + path),
                        List.of(),
                        "acme",
                        null,
                        body,
                        new AbortSignal()));
    }

    @Test
    void relay_getAndTwentyMibPutAndGet_byteForByte() {
        connect();
        RelayedResponse hello = done(relay.relay("w1", call("GET", "/hello", null)), "GET /hello relays");
        assertThat(hello.status()).as("GET status").isEqualTo(200);
        assertThat(new String(readBody(hello, "GET /hello body"), StandardCharsets.UTF_8))
                .as("GET body")
                .isEqualTo("hello");

        byte[] data = pattern(20 * MIB);
        RelayedResponse put = done(relay.relay("w1", call("PUT", "/blob", new ArrayBody(data))), "a 20 MiB PUT relays");
        assertThat(put.status()).as("PUT status").isEqualTo(204);
        assertThat(store.get("/blob"))
                .as("the target got the 20 MiB byte for byte")
                .isEqualTo(data);

        RelayedResponse get = done(relay.relay("w1", call("GET", "/blob", null)), "a 20 MiB GET relays");
        assertThat(get.status()).as("GET /blob status").isEqualTo(200);
        assertThat(readBody(get, "20 MiB GET body"))
                .as("the 20 MiB comes back byte for byte")
                .isEqualTo(data);
    }

    @Test
    void statusGet_answersWhileATwentyMibRelayRuns() {
        connect();
        byte[] data = pattern(20 * MIB);
        store.put("/big", data);
        RelayedResponse get = done(relay.relay("w1", call("GET", "/big", null)), "a 20 MiB GET starts");
        BodySource body = get.body();
        assertThat(body).as("the 20 MiB GET has a body").isNotNull();
        if (body == null) {
            return;
        }
        ByteBuffer first = done(body.next(), "the first part of the 20 MiB body");
        assertThat(first).as("a first part, not the end").isNotNull();

        WorkerLink link = directory.live("w1");
        assertThat(link).as("the link is live").isNotNull();
        if (link == null) {
            return;
        }
        StatusReport status = done(link.admin().statusGet(), "status.get answers while the relay runs");
        assertThat(status.workerId()).as("status names the worker").isEqualTo("w1");
        assertThat(status.activeRelays())
                .as("the 20 MiB relay is still running")
                .isEqualTo(1);

        ByteArrayOutputStream rest = new ByteArrayOutputStream();
        if (first != null) {
            byte[] head = new byte[first.remaining()];
            first.get(head);
            rest.writeBytes(head);
        }
        rest.writeBytes(done(readAll(body), "the rest of the 20 MiB body"));
        assertThat(rest.toByteArray())
                .as("the whole 20 MiB arrives byte for byte")
                .isEqualTo(data);
    }

    private static byte[] readBody(RelayedResponse response, String what) {
        BodySource body = response.body();
        if (body == null) {
            throw new AssertionError(what + ": a " + response.status() + " response has a body");
        }
        return done(readAll(body), what);
    }

    static CompletableFuture<byte[]> readAll(BodySource body) {
        CompletableFuture<byte[]> all = new CompletableFuture<>();
        readNext(body, new ByteArrayOutputStream(), all);
        return all;
    }

    private static void readNext(BodySource body, ByteArrayOutputStream out, CompletableFuture<byte[]> all) {
        body.next().whenComplete((part, error) -> {
            if (error != null) {
                all.completeExceptionally(error);
            } else if (part == null) {
                all.complete(out.toByteArray());
            } else {
                byte[] bytes = new byte[part.remaining()];
                part.get(bytes);
                out.write(bytes, 0, bytes.length);
                readNext(body, out, all);
            }
        });
    }

    static byte[] pattern(int size) {
        byte[] data = new byte[size];
        for (int i = 0; i < size; i++) {
            data[i] = (byte) (i * 31 + (i >>> 8));
        }
        return data;
    }

    /** A body handing out an array in parts. */
    static final class ArrayBody implements BodySource {
        private final byte[] data;
        private int offset;

        ArrayBody(byte[] data) {
            this.data = data;
        }

        @Override
        public synchronized CompletionStage<@Nullable ByteBuffer> next() {
            if (offset >= data.length) {
                return CompletableFuture.completedFuture(null);
            }
            int n = Math.min(PART, data.length - offset);
            ByteBuffer part = ByteBuffer.wrap(data, offset, n).slice();
            offset += n;
            return CompletableFuture.completedFuture(part);
        }

        @Override
        public void cancel(Throwable reason) {}
    }
}
