package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A pinned exchange ({@link PinnedTarget}) over the real transport to a scripted upstream on
 * loopback: no resolver, a 421 is an answer, the forwarder's body cap is not applied, the one
 * deadline ends it before and after the head, and a connection not made within the connect bound
 * fails it long before the transport's own connect timeout.
 */
final class PinnedExchangeTest {
    /** The forwarder's body cap in this test: a pinned exchange must not apply it. */
    private static final long BODY_CAP = 1024;

    /** The transport's own connect timeout: the pinned bound must end a hanging connect well before it. */
    private static final Duration TRANSPORT_CONNECT_TIMEOUT =
            TransportSpec.defaults().connectTimeout();

    private static final Duration DEADLINE = Duration.ofMillis(400);
    private static final Duration CONNECT_BOUND = Duration.ofMillis(300);

    private final EventLoopGroup gatewayLoops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final EventLoopGroup upstreamLoops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final EventLoop loop = gatewayLoops.next();
    private final BlockingQueue<Received> received = new LinkedBlockingQueue<>();
    private final ForwarderMetrics metrics = new ForwarderMetrics();
    private final List<Channel> servers = new ArrayList<>();
    private UpstreamHttpTransport transport;
    private GatewayForwarder forwarder;

    @BeforeEach
    void start() {
        transport =
                new UpstreamHttpTransport(TransportSpec.defaults(), NioSocketChannel.class, NioDatagramChannel.class);
        forwarder = new GatewayForwarder(
                WaterfallRoutingResolver.builder("cell", new OwnershipResolver(KetamaRing.of(1, List.of("owner-a"))))
                        .build(),
                Map.of(), // no ring member can be dialled: a pinned request never asks the ring
                transport,
                new ForwarderSpec(
                        2,
                        BODY_CAP,
                        BODY_CAP,
                        64L * 1024 * 1024,
                        Duration.ofMillis(100), // owner timeout: far below the pinned deadline, never used
                        Duration.ofMillis(100),
                        Duration.ofMillis(100),
                        Duration.ofMillis(100)),
                metrics);
    }

    @AfterEach
    void stop() {
        transport.close();
        for (Channel s : servers) {
            s.close().syncUninterruptibly();
        }
        gatewayLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        upstreamLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void pinned_upstreamSays421_isPassedOnAsTheAnswer() throws Exception {
        URI upstream = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.MISDIRECTED_REQUEST, "no")));

        RecordingResponseSink sink =
                forward(HttpMethod.GET, "/relay/w/app/x?y=1", new DefaultHttpHeaders(), null, upstream);

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(421);
        sink.ended.get(5, TimeUnit.SECONDS);
        assertThat(sink.body()).isEqualTo("no");
        assertThat(metrics.retargetMisdirected()).as("no retarget").isZero();
        Received got = take();
        assertThat(got.uri()).isEqualTo("/relay/w/app/x?y=1");
        assertThat(got.headers().get("X-Peer")).as("the target's header").isEqualTo("one");
        assertThat(got.headers().contains(SpectorHeaders.ATTEMPT)).isFalse();
        assertThat(got.headers().contains(SpectorHeaders.EPOCH)).isFalse();
        assertThat(got.headers().contains("X-Forwarded-For")).isFalse();
    }

    @Test
    void pinned_bodyPastTheForwardersCap_isStreamedWhole() throws Exception {
        URI upstream = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.OK, "took")));
        int size = (int) BODY_CAP + 1;
        HttpHeaders headers = new DefaultHttpHeaders().set(HttpHeaderNames.CONTENT_LENGTH, size);

        RecordingResponseSink sink = forward(HttpMethod.POST, "/relay/w/app/up", headers, new byte[size], upstream);

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(200);
        Received got = take();
        assertThat(got.bodyBytes()).isEqualTo(size);
        assertThat(got.headers().getInt(HttpHeaderNames.CONTENT_LENGTH)).isEqualTo(size);
    }

    @Test
    void pinned_upstreamNeverAnswers_failsAtTheDeadline() throws Exception {
        URI upstream = serve((ctx, req) -> {}); // takes the request, says nothing
        long started = System.nanoTime();

        RecordingResponseSink sink =
                forward(HttpMethod.GET, "/relay/w/app/slow", new DefaultHttpHeaders(), null, upstream);

        SpectorException e = failure(sink, ErrorCode.OWNER_TIMEOUT);
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertThat(e.getMessage()).contains("peer one did not finish the exchange within 400 ms");
        assertThat(tookMs)
                .as("the deadline, not the owner timeout (100 ms)")
                .isGreaterThanOrEqualTo(DEADLINE.toMillis());
        assertThat(sink.errorAfterHead()).isFalse();
        assertThat(metrics.ownerTimeouts()).as("not an owner's timeout").isZero();
    }

    @Test
    void pinned_upstreamStallsAfterTheHead_isCutAtTheDeadline() throws Exception {
        URI upstream = serve((ctx, req) -> {
            DefaultHttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.TRANSFER_ENCODING, "chunked");
            ctx.writeAndFlush(head); // and no body: quiet past the response idle timeout (100 ms)
        });

        RecordingResponseSink sink =
                forward(HttpMethod.GET, "/relay/w/app/stall", new DefaultHttpHeaders(), null, upstream);

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(200);
        SpectorException e = sink.error.get(5, TimeUnit.SECONDS);
        assertThat(e.code()).isEqualTo(ErrorCode.OWNER_TIMEOUT);
        assertThat(e.getMessage()).contains("within 400 ms");
        assertThat(sink.errorAfterHead())
                .as("after the head: the client connection is reset")
                .isTrue();
    }

    @Test
    void pinned_connectionNotMadeWithinItsBound_failsUnreachable() throws Exception {
        try (FullBacklog hanging = FullBacklog.open()) {
            long started = System.nanoTime();

            RecordingResponseSink sink =
                    forward(HttpMethod.GET, "/relay/w/app/x", new DefaultHttpHeaders(), null, hanging.uri());

            SpectorException e = failure(sink, ErrorCode.OWNER_UNREACHABLE);
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            assertThat(e.getMessage()).contains("no connection within 300 ms");
            assertThat(tookMs)
                    .as("the connect bound, not the transport's connect timeout")
                    .isBetween(CONNECT_BOUND.toMillis(), TRANSPORT_CONNECT_TIMEOUT.toMillis() / 2);
            assertThat(metrics.ownerUnreachable()).as("not an owner").isZero();
        }
    }

    // ---- the fallback (the peer hop's next holder) ----

    /** What a fallback was asked: the target that refused and why. */
    private record Asked(String name, URI uri, String why) {}

    private final List<Asked> asked = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** A fallback that records each question and answers with {@code next}, one per call, then fails. */
    private PinnedTarget.Fallback fallingBackTo(URI... next) {
        java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        return PinnedTarget.fallback(REFUSED, (refused, why) -> {
            asked.add(new Asked(refused.name(), refused.uri(), why));
            int i = calls.getAndIncrement();
            if (i >= next.length) {
                return java.util.concurrent.CompletableFuture.failedFuture(
                        SpectorException.of(ErrorCode.WORKER_UNREACHABLE, "no other holder", Map.of("workerId", "w")));
            }
            return java.util.concurrent.CompletableFuture.completedFuture(
                    new PinnedTarget.Next("peer " + (i + 2), next[i]));
        });
    }

    /** The header a target's own refusal carries in these tests. */
    private static final String REFUSED = "X-Refused";

    private static FullHttpResponse refusal() {
        FullHttpResponse r = full(HttpResponseStatus.MISDIRECTED_REQUEST, "not here");
        r.headers().set(REFUSED, "no-link");
        return r;
    }

    @Test
    void fallback_a421WithoutTheRefusalHeader_isTheTargetsAnswer_passedOn() throws Exception {
        URI answering = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.MISDIRECTED_REQUEST, "mine")));
        URI holding = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.OK, "here")));

        RecordingResponseSink sink = forward(
                HttpMethod.POST, "/relay/w/app/x", new DefaultHttpHeaders(), null, answering, fallingBackTo(holding));

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(421);
        sink.ended.get(5, TimeUnit.SECONDS);
        assertThat(sink.body()).isEqualTo("mine");
        assertThat(asked)
                .as("a relayed target's own 421 is never sent elsewhere")
                .isEmpty();
    }

    /**
     * A pinned target's headers are made as each attempt starts: a peer hop's MAC carries the
     * attempt's time, so a fallback after a slow replica, or a body read first, is not refused
     * {@code stale} by the next replica. Regression (a review): signed once, before the body was
     * read, and sent along unchanged.
     */
    @Test
    void fallback_theNextAttemptGetsHeadersMadeForIt() throws Exception {
        URI refusing = serve((ctx, req) -> ctx.writeAndFlush(refusal()));
        URI holding = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.CREATED, "took")));
        java.util.concurrent.atomic.AtomicInteger made = new java.util.concurrent.atomic.AtomicInteger();

        RecordingResponseSink sink = forward(
                HttpMethod.GET,
                "/relay/w/app/x",
                new DefaultHttpHeaders(),
                null,
                refusing,
                fallingBackTo(holding),
                () -> new DefaultHttpHeaders().set("X-Peer", "attempt-" + made.incrementAndGet()));

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(201);
        assertThat(take().headers().get("X-Peer")).isEqualTo("attempt-1");
        assertThat(take().headers().get("X-Peer")).isEqualTo("attempt-2");
    }

    @Test
    void fallback_afterA421_sendsTheWholeBodyToTheNextTarget_andOnlyItsAnswerReachesTheClient() throws Exception {
        URI refusing = serve((ctx, req) -> ctx.writeAndFlush(refusal()));
        URI holding = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.CREATED, "took")));
        byte[] body = new byte[(int) BODY_CAP]; // at the replay copy's bound: still replayable
        HttpHeaders headers = new DefaultHttpHeaders().set(HttpHeaderNames.CONTENT_LENGTH, body.length);

        RecordingResponseSink sink =
                forward(HttpMethod.POST, "/relay/w/app/up", headers, body, refusing, fallingBackTo(holding));

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(201);
        sink.ended.get(5, TimeUnit.SECONDS);
        assertThat(sink.body()).isEqualTo("took");
        assertThat(take().uri()).as("the first target saw the request").isEqualTo("/relay/w/app/up");
        Received second = take();
        assertThat(second.bodyBytes()).as("the next target got the whole body").isEqualTo(body.length);
        assertThat(second.headers().get("X-Peer"))
                .as("the first target's headers go along")
                .isEqualTo("one");
        assertThat(asked).singleElement().satisfies(a -> {
            assertThat(a.name()).isEqualTo("peer one");
            assertThat(a.uri()).isEqualTo(refusing);
            assertThat(a.why()).contains("421");
        });
    }

    @Test
    void fallback_afterARefusedConnection_goesToTheNextTarget() throws Exception {
        URI closed;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closed = URI.create("http://127.0.0.1:" + s.getLocalPort());
        }
        URI holding = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.OK, "here")));

        RecordingResponseSink sink = forward(
                HttpMethod.GET, "/relay/w/app/x", new DefaultHttpHeaders(), null, closed, fallingBackTo(holding));

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(200);
        assertThat(asked).singleElement().satisfies(a -> assertThat(a.why()).startsWith("no connection to peer one"));
    }

    @Test
    void fallback_afterAConnectionNotMadeWithinItsBound_goesToTheNextTarget() throws Exception {
        URI holding = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.OK, "here")));
        try (FullBacklog hanging = FullBacklog.open()) {
            RecordingResponseSink sink = forward(
                    HttpMethod.GET,
                    "/relay/w/app/x",
                    new DefaultHttpHeaders(),
                    null,
                    hanging.uri(),
                    fallingBackTo(holding));

            assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(200);
            assertThat(asked).singleElement().satisfies(a -> assertThat(a.why()).contains("within 300 ms"));
        }
    }

    @Test
    void fallback_withNothingToOffer_answersTheProblemItFailedWith() throws Exception {
        URI refusing = serve((ctx, req) -> ctx.writeAndFlush(refusal()));

        RecordingResponseSink sink =
                forward(HttpMethod.GET, "/relay/w/app/x", new DefaultHttpHeaders(), null, refusing, fallingBackTo());

        SpectorException e = failure(sink, ErrorCode.WORKER_UNREACHABLE);
        assertThat(e.getMessage()).isEqualTo("no other holder");
    }

    @Test
    void fallback_isTakenAtMostMaxFallbacksTimes_thenThe421IsTheAnswer() throws Exception {
        URI refusing = serve((ctx, req) -> ctx.writeAndFlush(refusal()));

        RecordingResponseSink sink = forward(
                HttpMethod.GET,
                "/relay/w/app/x",
                new DefaultHttpHeaders(),
                null,
                refusing,
                fallingBackTo(refusing, refusing, refusing));

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(421);
        assertThat(asked).hasSize(PinnedTarget.MAX_FALLBACKS);
        for (int i = 0; i <= PinnedTarget.MAX_FALLBACKS; i++) {
            take(); // the first target, then one per fallback
        }
        assertThat(received).as("no attempt past the last fallback").isEmpty();
    }

    @Test
    void fallback_bodyPastTheReplayCopy_isNotTaken_the421IsTheAnswer() throws Exception {
        URI refusing = serve((ctx, req) -> ctx.writeAndFlush(refusal()));
        URI holding = serve((ctx, req) -> ctx.writeAndFlush(full(HttpResponseStatus.OK, "here")));
        byte[] body = new byte[(int) BODY_CAP + 1]; // one past the replay copy
        HttpHeaders headers = new DefaultHttpHeaders().set(HttpHeaderNames.CONTENT_LENGTH, body.length);

        RecordingResponseSink sink =
                forward(HttpMethod.POST, "/relay/w/app/up", headers, body, refusing, fallingBackTo(holding));

        assertThat(sink.outcome.get(5, TimeUnit.SECONDS)).isEqualTo(421);
        assertThat(asked)
                .as("a body that cannot be sent again is never sent elsewhere")
                .isEmpty();
    }

    private RecordingResponseSink forward(
            HttpMethod method, String uri, HttpHeaders headers, byte @Nullable [] body, URI to) throws Exception {
        return forward(method, uri, headers, body, to, null);
    }

    private RecordingResponseSink forward(
            HttpMethod method,
            String uri,
            HttpHeaders headers,
            byte @Nullable [] body,
            URI to,
            PinnedTarget.@Nullable Fallback fallback)
            throws Exception {
        HttpHeaders target = new DefaultHttpHeaders().set("X-Peer", "one");
        return forward(method, uri, headers, body, to, fallback, () -> target);
    }

    private RecordingResponseSink forward(
            HttpMethod method,
            String uri,
            HttpHeaders headers,
            byte @Nullable [] body,
            URI to,
            PinnedTarget.@Nullable Fallback fallback,
            java.util.function.Supplier<HttpHeaders> target)
            throws Exception {
        RecordingResponseSink sink = new RecordingResponseSink();
        RequestBody requestBody = body == null ? RequestBody.EMPTY : RecordingRequestBody.delivering(body);
        ForwardRequest request = ForwardRequest.pinned(
                method,
                uri,
                headers,
                requestBody,
                body == null ? -1 : body.length,
                "127.0.0.1",
                new PinnedTarget("peer one", to, target, DEADLINE, CONNECT_BOUND, fallback));
        loop.submit(() -> forwarder.forward(request, sink, loop)).get(5, TimeUnit.SECONDS);
        return sink;
    }

    /** What the upstream received: the request line's target, the headers, the body's size. */
    private record Received(String uri, HttpHeaders headers, int bodyBytes) {}

    /** Returns the exchange's first outcome, which must be an error with {@code code}. */
    private static SpectorException failure(RecordingResponseSink sink, ErrorCode code) throws Exception {
        Object outcome = sink.outcome.get(5, TimeUnit.SECONDS);
        assertThat(outcome).isInstanceOf(SpectorException.class);
        SpectorException e = (SpectorException) outcome;
        assertThat(e.code()).isEqualTo(code);
        return e;
    }

    private Received take() throws InterruptedException {
        Received r = received.poll(5, TimeUnit.SECONDS);
        assertThat(r).as("the upstream received the request").isNotNull();
        return r;
    }

    private URI serve(BiConsumer<ChannelHandlerContext, FullHttpRequest> answer) throws InterruptedException {
        Channel server = new ServerBootstrap()
                .group(upstreamLoops)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline()
                                .addLast(new HttpServerCodec())
                                .addLast(new HttpObjectAggregator(1024 * 1024))
                                .addLast(new ChannelInboundHandlerAdapter() {
                                    @Override
                                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                        if (msg instanceof FullHttpRequest r) {
                                            received.add(new Received(
                                                    r.uri(),
                                                    r.headers().copy(),
                                                    r.content().readableBytes()));
                                            answer.accept(ctx, r);
                                        }
                                        ReferenceCountUtil.release(msg);
                                    }
                                });
                    }
                })
                .bind("127.0.0.1", 0)
                .sync()
                .channel();
        servers.add(server);
        return URI.create("http://127.0.0.1:" + ((InetSocketAddress) server.localAddress()).getPort());
    }

    private static FullHttpResponse full(HttpResponseStatus status, String body) {
        FullHttpResponse r = new DefaultFullHttpResponse(
                HttpVersion.HTTP_1_1, status, Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        r.headers().set(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
        return r;
    }

    /**
     * A listening socket that never accepts, its accept queue filled first: the kernel then drops
     * further SYNs, so a connect to it hangs (Linux, {@code tcp_abort_on_overflow} 0).
     */
    private static final class FullBacklog implements AutoCloseable {
        private final ServerSocket server;
        private final List<Socket> fillers = new ArrayList<>();

        private FullBacklog(ServerSocket server) {
            this.server = server;
        }

        static FullBacklog open() throws IOException {
            FullBacklog b = new FullBacklog(new ServerSocket(0, 1, InetAddress.getLoopbackAddress()));
            for (int i = 0; i < 4; i++) {
                Socket s = new Socket();
                b.fillers.add(s);
                try {
                    s.connect(b.server.getLocalSocketAddress(), 200);
                } catch (IOException e) {
                    break; // the queue is full: connects hang from here on
                }
            }
            return b;
        }

        URI uri() {
            return URI.create("http://127.0.0.1:" + server.getLocalPort());
        }

        @Override
        public void close() throws IOException {
            for (Socket s : fillers) {
                s.close();
            }
            server.close();
        }
    }
}
