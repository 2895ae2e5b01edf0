package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.testkit.EarlyAnswerUpstream;
import com.spectrayan.spector.testkit.Waits;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A forwarder and a real owner on loopback (Netty's HTTP/1 server, each whole request answered 200
 * with its body, and the request's X-Request-Id and Authorization echoed as X-Seen-*): what the
 * exchange does between the two sides' sockets.
 */
final class ForwarderLoopbackTest {
    private static final int BUFFER = 100;
    private static final RoutingKey KEY = RoutingKey.of("cell", "acme", "orders");

    private final EventLoopGroup gatewayLoops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final EventLoopGroup ownerLoops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final EventLoop loop = gatewayLoops.next();
    private Channel owner;
    private UpstreamHttpTransport transport;
    private GatewayForwarder forwarder;

    @BeforeEach
    void start() throws Exception {
        owner = new ServerBootstrap()
                .group(ownerLoops)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline()
                                .addLast(new HttpServerCodec())
                                .addLast(new HttpObjectAggregator(1024 * 1024))
                                .addLast(new EchoOwner());
                    }
                })
                .bind("127.0.0.1", 0)
                .sync()
                .channel();
        transport = new UpstreamHttpTransport(
                new TransportSpec(
                        Duration.ofSeconds(2), 1, 8, Duration.ofSeconds(30), Duration.ofSeconds(30), 16 * 1024, 8192),
                NioSocketChannel.class,
                NioDatagramChannel.class);
        InetSocketAddress a = (InetSocketAddress) owner.localAddress();
        forwarder = forwarderTo(a.getPort());
    }

    /** A forwarder whose one owner, owner-a, listens on {@code port} of the loopback. */
    private GatewayForwarder forwarderTo(int port) {
        return forwarderTo(port, TestSpecs.forwarder(1024, BUFFER));
    }

    /** As {@link #forwarderTo(int)}, with {@code spec}. */
    private GatewayForwarder forwarderTo(int port, ForwarderSpec spec) {
        return new GatewayForwarder(
                WaterfallRoutingResolver.builder("cell", new OwnershipResolver(KetamaRing.of(1, List.of("owner-a"))))
                        .build(),
                Map.of("owner-a", URI.create("http://127.0.0.1:" + port)),
                transport,
                spec,
                new ForwarderMetrics());
    }

    @AfterEach
    void stop() {
        transport.close();
        owner.close().syncUninterruptibly();
        gatewayLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        ownerLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /**
     * RFC 9112 §7.1: a chunked body read first that outgrows {@code request-buffer-bytes} starts its
     * attempt at the chunk that crosses the buffer; that chunk waits, the body paused, until the
     * owner connection is up. A body source that still delivers after the pause (the client
     * connection's pause holds what its last read brought, so none does today) must not let a
     * later chunk overtake the held one: the owner receives the body in the order it was sent.
     * Before this test the branch that keeps that order had never run.
     */
    @Test
    void chunksDeliveredAfterTheCrossingChunk_reachTheOwnerBehindIt() throws Exception {
        EagerBody body = new EagerBody();
        RecordingResponseSink sink = new RecordingResponseSink();
        HttpHeaders headers = new DefaultHttpHeaders().set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        ForwardRequest request = new ForwardRequest(
                HttpMethod.POST,
                "/api/v1/namespaces/orders/echo",
                headers,
                KEY,
                body,
                -1,
                "127.0.0.1",
                false,
                "http",
                "gateway",
                null,
                null);

        loop.submit(() -> {
                    forwarder.forward(request, sink, loop); // reads the body first: start() delivers nothing yet
                    body.deliver("a".repeat(60)); // within the buffer: held in the replay copy
                    body.deliver("b".repeat(60)); // past it: the attempt starts, this chunk waits, paused
                    assertThat(body.paused)
                            .as("the body paused at the crossing chunk")
                            .isTrue();
                    body.deliver("c".repeat(30)); // a source that delivers after the pause
                    body.deliver("d".repeat(10));
                    body.end();
                })
                .get(5, TimeUnit.SECONDS);

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(200);
        sink.ended.get(5, TimeUnit.SECONDS);
        assertThat(sink.body())
                .as("the owner received the body in the order it was sent")
                .isEqualTo("a".repeat(60) + "b".repeat(60) + "c".repeat(30) + "d".repeat(10));
    }

    /**
     * The request's head is let go once the response head is the client's (issue 14: an event
     * stream held for minutes kept its request's fields, an Authorization of hundreds of bytes
     * among them, 0.8 KB of the 7 KB of heap a held stream cost): the sink sees the request's
     * fields while it writes the client's head (CORS reads them there), the map is empty after,
     * and the owner had them all.
     */
    @Test
    void theRequestsFields_areLetGoOnceTheResponseHeadIsTheClients() throws Exception {
        String bearer = "Bearer " + "t".repeat(400);
        HttpHeaders headers = new DefaultHttpHeaders()
                .set("X-Request-Id", "req-7")
                .set(HttpHeaderNames.AUTHORIZATION, bearer)
                .set(HttpHeaderNames.ACCEPT, "text/plain");
        List<String> fieldsAtHead = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.CompletableFuture<HttpHeaders> head = new java.util.concurrent.CompletableFuture<>();
        RecordingResponseSink sink = new RecordingResponseSink() {
            @Override
            public void onHead(ForwardResponse response) {
                fieldsAtHead.add(headers.get("X-Request-Id") + " " + headers.get(HttpHeaderNames.AUTHORIZATION));
                head.complete(response.headers());
                super.onHead(response);
            }
        };
        ForwardRequest request = new ForwardRequest(
                HttpMethod.GET,
                "/api/v1/namespaces/orders/echo",
                headers,
                KEY,
                RequestBody.EMPTY,
                -1,
                "127.0.0.1",
                false,
                "http",
                "gateway",
                null,
                null);

        loop.submit(() -> forwarder.forward(request, sink, loop)).get(5, TimeUnit.SECONDS);

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(200);
        sink.ended.get(5, TimeUnit.SECONDS);
        HttpHeaders seen = head.get(5, TimeUnit.SECONDS);
        assertThat(seen.get("X-Seen-X-Request-Id"))
                .as("the owner had the request id")
                .isEqualTo("req-7");
        assertThat(seen.get("X-Seen-Authorization")).as("and the token, whole").isEqualTo(bearer);
        assertThat(fieldsAtHead)
                .as("while the client's head is written, the request's fields are all there")
                .containsExactly("req-7 " + bearer);
        assertThat(loop.submit(headers::isEmpty).get(5, TimeUnit.SECONDS))
                .as("after it, the request's fields are let go")
                .isTrue();
    }

    /**
     * RFC 9112 §9.6: an owner may answer before it has read the request's body, and close (a 413
     * or a 401 to a large upload). The close resets the connection while the body still goes
     * out, and the write fails; the answer is in the socket ahead of the reset. The client gets
     * that answer, as nginx passes an early answer on, and the owner is not counted as failing.
     * Regression: the failed write failed the attempt, 502 OWNER_UNREACHABLE, and three such
     * uploads marked the owner down for every request (found with curl against a raw owner).
     */
    @Test
    void anOwnerThatAnswersEarlyAndCloses_midUpload_givesTheClientItsAnswer() throws Exception {
        try (EarlyAnswerUpstream raw = EarlyAnswerUpstream.start(EarlyAnswerUpstream.TOO_LARGE)) {
            GatewayForwarder toRaw = forwarderTo(raw.port());

            // 10 MiB each, the forwarder's cap: more than the gateway's socket buffer takes (4 MiB
            // at most, tcp_wmem) beside what a peer that reads nothing is sent, so the gateway
            // pauses the body before its end and the owner's reset ends it. With 4 MiB the socket
            // buffer took it all on a loaded machine (a CI flake of the thirtieth stop).
            int parts = 160;
            for (int i = 0; i < 3; i++) { // as many as would mark an owner down, were they failures
                StreamingBody body = new StreamingBody(loop, parts, 64 * 1024);
                RecordingResponseSink sink = new RecordingResponseSink();
                ForwardRequest request = new ForwardRequest(
                        HttpMethod.PUT,
                        "/api/v1/namespaces/orders/up",
                        new DefaultHttpHeaders(),
                        KEY,
                        body,
                        (long) parts * 64 * 1024,
                        "127.0.0.1",
                        false,
                        "http",
                        "gateway",
                        null,
                        null);

                loop.submit(() -> toRaw.forward(request, sink, loop)).get(5, TimeUnit.SECONDS);

                assertThat(sink.outcome.get(10, TimeUnit.SECONDS))
                        .as("upload %d", i + 1)
                        .isEqualTo(413);
                sink.ended.get(10, TimeUnit.SECONDS);
                assertThat(sink.body()).isEqualTo("large");
                assertThat(body.sent.get())
                        .as("the body's rest was not all sent")
                        .isLessThan((long) parts * 64 * 1024);
            }
            assertThat(toRaw.isOwnerDown("owner-a"))
                    .as("an owner that answered is not down")
                    .isFalse();
        }
    }

    /**
     * nginx's {@code proxy_send_timeout} times an owner that takes no more of the body; a request
     * held while its namespace is handed off has no owner sending, and its hold window bounds it.
     * Regression (a review of the thirtieth stop): the stall clock started when a body chunk
     * arrived during the hold and ran on through it, so the client got {@code 504 OWNER_TIMEOUT}
     * naming the old owner after {@code owner-timeout}, where the hold's {@code 503
     * handoff-hold-expired} (or, had the move ended, the new owner's answer) was due. The owner
     * here answers the hand-off at once and then stops listening, so the hold's polls find no one
     * and the body is never resumed by one.
     */
    @Test
    void aBodyArrivingWhileHeld_isNoOwnerStall_theHoldWindowBoundsIt() throws Exception {
        Duration ownerTimeout = Duration.ofMillis(300);
        Duration holdWindow = Duration.ofMillis(1500);
        Channel handingOff = new ServerBootstrap()
                .group(ownerLoops)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec()).addLast(new HandingOffOwner());
                    }
                })
                .bind("127.0.0.1", 0)
                .sync()
                .channel();
        HandingOffOwner.listener = handingOff;
        try {
            GatewayForwarder holding = forwarderTo(
                    ((InetSocketAddress) handingOff.localAddress()).getPort(),
                    // every body streams (request buffer 0): the first attempt goes before any body byte
                    TestSpecs.forwarder(1024, 0, ownerTimeout, holdWindow));
            EagerBody body = new EagerBody();
            RecordingResponseSink sink = new RecordingResponseSink();
            ForwardRequest request = new ForwardRequest(
                    HttpMethod.PUT,
                    "/api/v1/namespaces/orders/held",
                    new DefaultHttpHeaders(),
                    KEY,
                    body,
                    100,
                    "127.0.0.1",
                    false,
                    "http",
                    "gateway",
                    null,
                    null);

            long start = System.nanoTime();
            loop.submit(() -> holding.forward(request, sink, loop)).get(5, TimeUnit.SECONDS);
            Waits.until("the request is held", () -> holding.handoffHeld() == 1);
            loop.submit(() -> body.deliver("a".repeat(10))).get(5, TimeUnit.SECONDS);

            Object outcome = sink.outcome.get(10, TimeUnit.SECONDS);
            long tookMs = (System.nanoTime() - start) / 1_000_000;

            assertThat(outcome)
                    .as("the hold's answer, not the old owner's stall")
                    .isInstanceOfSatisfying(
                            SpectorException.class,
                            e -> assertThat(e.code() + " " + e.details().get("reason"))
                                    .isEqualTo("GATEWAY_ROUTING_FAILURE " + RetargetPolicy.HANDOFF_HOLD_EXPIRED));
            assertThat(tookMs).as("held for the window, %d ms", tookMs).isGreaterThanOrEqualTo(holdWindow.toMillis());
            assertThat(body.paused).as("the body waited, paused, meanwhile").isTrue();
        } finally {
            handingOff.close().syncUninterruptibly();
        }
    }

    /**
     * A hold's poll is the whole request sent to the old owner again. An old owner that took a poll
     * and closed without an answer (the move called off, the command run, then a crash) may have
     * acted on it: a POST without an Idempotency-Key is not polled again (it fails as any sent
     * attempt that lost its connection does), where it was re-sent every poll interval for the
     * whole hold window (found by a review). With a key, or for an idempotent method, the hold goes
     * on. RFC 9110 section 9.2.2.
     */
    @Test
    void aPollThatTheOldOwnerTookWithoutAnswer_isNotSentAgain_withoutAnIdempotencyKey() throws Exception {
        assertThat(requestsSeenWhileHeld(HttpMethod.POST, new DefaultHttpHeaders()))
                .as("the first request (its 503 hand-off) and one poll, never a second")
                .isEqualTo(2);
    }

    @Test
    void aPollThatTheOldOwnerTookWithoutAnswer_isSentAgain_withAnIdempotencyKey() throws Exception {
        assertThat(requestsSeenWhileHeld(
                        HttpMethod.POST, new DefaultHttpHeaders().set(SpectorHeaders.IDEMPOTENCY_KEY, "k-1")))
                .as("the hold goes on polling through its window")
                .isGreaterThan(2);
    }

    /**
     * Forwards a bodyless {@code method} to an owner that answers its first request with a 503
     * hand-off and takes every later one whole, then closes without an answer; returns how many
     * requests the owner saw by the exchange's end.
     */
    private int requestsSeenWhileHeld(HttpMethod method, HttpHeaders headers) throws Exception {
        java.util.concurrent.atomic.AtomicInteger seen = new java.util.concurrent.atomic.AtomicInteger();
        Channel owner = new ServerBootstrap()
                .group(ownerLoops)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec()).addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                boolean end = msg instanceof io.netty.handler.codec.http.LastHttpContent;
                                io.netty.util.ReferenceCountUtil.release(msg);
                                if (!end) {
                                    return;
                                }
                                if (seen.incrementAndGet() == 1) {
                                    FullHttpResponse r = new DefaultFullHttpResponse(
                                            HttpVersion.HTTP_1_1, HttpResponseStatus.SERVICE_UNAVAILABLE);
                                    r.headers()
                                            .set(HttpHeaderNames.CONTENT_LENGTH, 0)
                                            .set("X-Spector-Handoff", "owner-b");
                                    ctx.writeAndFlush(r);
                                } else {
                                    ctx.close(); // took it whole, then gone
                                }
                            }
                        });
                    }
                })
                .bind("127.0.0.1", 0)
                .sync()
                .channel();
        try {
            GatewayForwarder holding = forwarderTo(
                    ((InetSocketAddress) owner.localAddress()).getPort(),
                    TestSpecs.forwarder(1024, 1024, Duration.ofSeconds(3), Duration.ofMillis(800)));
            RecordingResponseSink sink = new RecordingResponseSink();
            ForwardRequest request = new ForwardRequest(
                    method,
                    "/api/v1/namespaces/orders/commands",
                    headers,
                    KEY,
                    RequestBody.EMPTY,
                    0,
                    "127.0.0.1",
                    false,
                    "http",
                    "gateway",
                    null,
                    null);
            loop.submit(() -> holding.forward(request, sink, loop)).get(5, TimeUnit.SECONDS);
            assertThat(sink.outcome.get(10, TimeUnit.SECONDS)).isInstanceOf(SpectorException.class);
            return seen.get();
        } finally {
            owner.close().syncUninterruptibly();
        }
    }

    /**
     * A body of {@code parts} parts of {@code size} bytes, handed over on the loop while the
     * forwarder has not paused it, as a client connection's reads would be.
     */
    private static final class StreamingBody implements RequestBody {
        private final EventLoop loop;
        private final int parts;
        private final int size;
        private RequestBody.@Nullable Consumer consumer;
        private boolean paused;
        private boolean discarded;
        private int handed;
        /** Bytes handed over; written on the loop only, read by the test after the exchange. */
        final java.util.concurrent.atomic.AtomicLong sent = new java.util.concurrent.atomic.AtomicLong();

        StreamingBody(EventLoop loop, int parts, int size) {
            this.loop = loop;
            this.parts = parts;
            this.size = size;
        }

        @Override
        public void start(Consumer c) {
            consumer = c;
            loop.execute(this::pump);
        }

        private void pump() {
            Consumer c = consumer;
            while (c != null && !paused && !discarded && handed < parts) {
                handed++;
                sent.addAndGet(size);
                c.onChunk(ByteBufAllocator.DEFAULT.buffer(size).writeZero(size));
                c.flush();
            }
            if (c != null && !discarded && handed == parts) {
                handed++;
                c.onEnd();
            }
        }

        @Override
        public void pause() {
            paused = true;
        }

        @Override
        public void resume() {
            paused = false;
            loop.execute(this::pump);
        }

        @Override
        public void discard() {
            discarded = true;
        }
    }

    /** A body that hands over each part when the test says, whether or not it was paused. */
    private static final class EagerBody implements RequestBody {
        private RequestBody.@Nullable Consumer consumer;
        boolean paused;

        @Override
        public void start(Consumer c) {
            consumer = c;
        }

        void deliver(String text) {
            ByteBuf chunk = ByteBufAllocator.DEFAULT.buffer().writeBytes(text.getBytes(StandardCharsets.US_ASCII));
            Consumer c = consumer;
            if (c == null) {
                chunk.release();
                throw new IllegalStateException("the forwarder has not started the body");
            }
            c.onChunk(chunk);
            c.flush();
        }

        void end() {
            Consumer c = consumer;
            if (c != null) {
                c.onEnd();
            }
        }

        @Override
        public void pause() {
            paused = true;
        }

        @Override
        public void resume() {
            paused = false;
        }

        @Override
        public void discard() {}
    }

    /**
     * Answers its first request's head {@code 503} with {@code X-Spector-Handoff} at once, before
     * any of the body, and closes its {@link #listener}: a hold's polls are then refused.
     */
    private static final class HandingOffOwner extends ChannelInboundHandlerAdapter {
        static volatile @Nullable Channel listener;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            boolean head = msg instanceof io.netty.handler.codec.http.HttpRequest;
            io.netty.util.ReferenceCountUtil.release(msg);
            if (head) {
                Channel l = listener;
                if (l != null) {
                    l.close();
                }
                FullHttpResponse r =
                        new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.SERVICE_UNAVAILABLE);
                r.headers().set(HttpHeaderNames.CONTENT_LENGTH, 0).set("X-Spector-Handoff", "owner-b");
                ctx.writeAndFlush(r);
            }
        }
    }

    /** Answers each whole request 200 with its body, and echoes two of its fields as X-Seen-*. */
    private static final class EchoOwner extends SimpleChannelInboundHandler<FullHttpRequest> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest msg) {
            FullHttpResponse r = new DefaultFullHttpResponse(
                    HttpVersion.HTTP_1_1, HttpResponseStatus.OK, msg.content().retainedDuplicate());
            r.headers().set(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
            for (String name : List.of("X-Request-Id", "Authorization")) {
                String v = msg.headers().get(name);
                if (v != null) {
                    r.headers().set("X-Seen-" + name, v);
                }
            }
            ctx.writeAndFlush(r);
        }
    }
}
