package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
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
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A 421 that arrives before the client's body, on a body one byte past the replay copy, with every
 * step ordered by the test: the retarget's connection is held (one connection per owner, taken),
 * so the body arrives while the retry still waits for it. That body can no longer be sent whole, so
 * the exchange must answer 503 ({@code body-too-large-to-replay}) at once and the reported owner
 * must never see the request. (Before the fix the retry sent the head and no body: with a
 * Content-Length the owner waited for it until the owner timeout, 504 to the client, the flake of
 * {@code ReplayAndLimitsTest}; chunked, the owner took an empty body for the whole one and said 200.)
 */
final class GatewayForwarderReplayTest {
    private static final int REPLAY_BYTES = 1024;
    private static final RoutingKey KEY = RoutingKey.of("cell", "acme", "orders");

    private final EventLoopGroup gatewayLoops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final EventLoopGroup ownerLoops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final EventLoop loop = gatewayLoops.next();
    private final AtomicInteger requestsAtReportedOwner = new AtomicInteger();
    private final ForwarderMetrics metrics = new ForwarderMetrics();
    private Channel misdirecting;
    private Channel reported;
    private UpstreamHttpTransport transport;
    private GatewayForwarder forwarder;

    @BeforeEach
    void start() throws Exception {
        misdirecting = serve(p -> p.addLast(new HttpServerCodec()).addLast(new MisdirectingOwner()));
        reported = serve(p -> p.addLast(new HttpServerCodec())
                .addLast(new HttpObjectAggregator(1024 * 1024))
                .addLast(new ReportedOwner()));
        transport = new UpstreamHttpTransport(
                new TransportSpec(
                        Duration.ofSeconds(2),
                        1, // one connection per owner and loop, so the test can hold owner-b's
                        8,
                        Duration.ofSeconds(30),
                        Duration.ofSeconds(30),
                        16 * 1024,
                        8192),
                NioSocketChannel.class,
                NioDatagramChannel.class);
        forwarder = new GatewayForwarder(
                WaterfallRoutingResolver.builder("cell", new OwnershipResolver(KetamaRing.of(1, List.of("owner-a"))))
                        .build(),
                Map.of("owner-a", uri(misdirecting), "owner-b", uri(reported)),
                transport,
                TestSpecs.forwarder(
                        REPLAY_BYTES, 0), // bodies stream: the first attempt goes before any body byte, as tested here
                metrics);
    }

    @AfterEach
    void stop() {
        transport.close();
        misdirecting.close().syncUninterruptibly();
        reported.close().syncUninterruptibly();
        gatewayLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        ownerLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void misdirectBeforeTheBody_contentLength_bodyOutgrowsTheReplayWhileTheRetryConnects_answers503AtOnce()
            throws Exception {
        bodyOutgrowsTheReplayWhileTheRetryConnects(REPLAY_BYTES + 1);
    }

    @Test
    void misdirectBeforeTheBody_chunked_bodyOutgrowsTheReplayWhileTheRetryConnects_answers503AtOnce() throws Exception {
        bodyOutgrowsTheReplayWhileTheRetryConnects(-1);
    }

    private void bodyOutgrowsTheReplayWhileTheRetryConnects(long declaredLength) throws Exception {
        URI ownerB = uri(reported);
        Channel held = transport.acquire(loop, ownerB).get(5, TimeUnit.SECONDS);
        ScriptedBody body = new ScriptedBody();
        RecordingResponseSink sink = new RecordingResponseSink();
        HttpHeaders headers = new DefaultHttpHeaders();
        if (declaredLength >= 0) {
            headers.set(HttpHeaderNames.CONTENT_LENGTH, declaredLength);
        } else {
            headers.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        }
        ForwardRequest request = new ForwardRequest(
                HttpMethod.POST,
                "/api/v1/namespaces/orders/echo",
                headers,
                KEY,
                body,
                declaredLength,
                "127.0.0.1",
                false,
                "http",
                "gateway",
                null,
                null);

        loop.submit(() -> forwarder.forward(request, sink, loop)).get(5, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(5)).until(() -> metrics.retargetMisdirected() == 1);
        // owner-a answered 421 before any body byte: the retry to owner-b waits for the held
        // connection. Now the whole body arrives, one byte past the replay copy.
        loop.submit(() -> {
                    body.deliver(REPLAY_BYTES + 1);
                    body.end();
                })
                .get(5, TimeUnit.SECONDS);

        assertThat(sink.outcome)
                .as("the answer, as the body outgrows the replay copy while the retry still connects")
                .isDone();
        Object outcome = sink.outcome.get();
        assertThat(outcome).isInstanceOf(SpectorException.class);
        SpectorException error = (SpectorException) outcome;
        assertThat(error.code()).isEqualTo(ErrorCode.GATEWAY_ROUTING_FAILURE);
        assertThat(error.details())
                .containsEntry("reason", "body-too-large-to-replay")
                .containsEntry("retryAfterSeconds", 0L);
        assertThat(body.discarded).as("the rest of the body is dropped").isTrue();
        assertThat(metrics.replayRefusals()).isEqualTo(1);

        // The abandoned retry takes the connection once it is free, and gives it back unused.
        loop.submit(() -> transport.release(loop, ownerB, held, true)).get(5, TimeUnit.SECONDS);
        Channel again = transport.acquire(loop, ownerB).get(5, TimeUnit.SECONDS);
        assertThat(again).as("owner-b's one connection, back in the pool").isSameAs(held);
        loop.submit(() -> transport.release(loop, ownerB, again, true)).get(5, TimeUnit.SECONDS);
        assertThat(requestsAtReportedOwner).as("requests owner-b received").hasValue(0);
    }

    private Channel serve(java.util.function.Consumer<ChannelPipeline> pipeline) throws InterruptedException {
        return new ServerBootstrap()
                .group(ownerLoops)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        pipeline.accept(ch.pipeline());
                    }
                })
                .bind("127.0.0.1", 0)
                .sync()
                .channel();
    }

    private static URI uri(Channel server) {
        InetSocketAddress a = (InetSocketAddress) server.localAddress();
        return URI.create("http://127.0.0.1:" + a.getPort());
    }

    /** Answers 421 naming owner-b at the request head, before its body (as the reference owner does). */
    private static final class MisdirectingOwner extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest) {
                FullHttpResponse r =
                        new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.MISDIRECTED_REQUEST);
                r.headers()
                        .set(SpectorHeaders.OWNER, "owner-b")
                        .set(SpectorHeaders.EPOCH, 2)
                        .set(SpectorHeaders.FENCE, 0)
                        .set(HttpHeaderNames.CONTENT_LENGTH, 0);
                ctx.writeAndFlush(r);
            }
            ReferenceCountUtil.release(msg);
        }
    }

    /** Counts whole requests and answers each 200. */
    private final class ReportedOwner extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof FullHttpRequest) {
                requestsAtReportedOwner.incrementAndGet();
                FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
                r.headers().set(HttpHeaderNames.CONTENT_LENGTH, 0);
                ctx.writeAndFlush(r);
            }
            ReferenceCountUtil.release(msg);
        }
    }

    /** The client side's body, delivered when the test says (on the loop). */
    private static final class ScriptedBody implements RequestBody {
        private RequestBody.@Nullable Consumer consumer;
        boolean discarded;

        @Override
        public void start(Consumer c) {
            consumer = c;
        }

        void deliver(int bytes) {
            ByteBuf chunk = ByteBufAllocator.DEFAULT.buffer(bytes).writeZero(bytes);
            Consumer c = consumer;
            if (c == null || discarded) {
                chunk.release();
                return;
            }
            c.onChunk(chunk);
            c.flush();
        }

        void end() {
            Consumer c = consumer;
            if (c != null && !discarded) {
                c.onEnd();
            }
        }

        @Override
        public void pause() {}

        @Override
        public void resume() {}

        @Override
        public void discard() {
            discarded = true;
        }
    }
}
