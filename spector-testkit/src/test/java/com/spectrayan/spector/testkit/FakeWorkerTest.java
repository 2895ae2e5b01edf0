package com.spectrayan.spector.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.spectrayan.spector.testkit.FakeWorker.Answer;
import com.spectrayan.spector.testkit.FakeWorker.Relayed;
import com.spectrayan.spector.testkit.FakeWorker.Script;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolConfig;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The fake worker against a gateway this test plays with raw frames (a Netty WebSocket server on
 * loopback port 0): each rule of PROTOCOL.md the fake keeps, and each of its bounds at the limit
 * and one past it.
 */
final class FakeWorkerTest {
    private static final String TOKEN = "fake-worker-test-token";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final ScriptedGateway gateway = new ScriptedGateway();
    private final List<FakeWorker> workers = new ArrayList<>();

    @BeforeEach
    void start() throws InterruptedException {
        gateway.start();
    }

    @AfterEach
    void stop() {
        workers.forEach(FakeWorker::close);
        gateway.close();
    }

    private FakeWorker dial(Map<String, Script> targets) {
        FakeWorker w = FakeWorker.dial(gateway.uri(), "w1", TOKEN, targets);
        workers.add(w);
        Waits.done(gateway.up, "the gateway sees the upgrade");
        return w;
    }

    @Test
    void dial_sendsTokenIdAndSubprotocol_andAnswersStatusGet() {
        FakeWorker w = dial(Map.of("app", r -> Answer.of(204), "agent", r -> Answer.of(204)));

        assertThat(gateway.upgrade.get("authorization")).isEqualTo("Bearer " + TOKEN);
        assertThat(gateway.upgrade.get("x-spector-worker")).isEqualTo("w1");
        assertThat(gateway.upgrade.get("sec-websocket-protocol")).isEqualTo(FakeWorker.SUBPROTOCOL);
        long id = gateway.call("status.get", "{}");
        JsonNode answer = gateway.take();
        assertThat(answer.path("type").asText()).isEqualTo("result");
        assertThat(answer.path("id").asLong()).isEqualTo(id);
        JsonNode status = answer.path("output");
        assertThat(status.path("workerId").asText()).isEqualTo("w1");
        assertThat(status.path("targets")).extracting(JsonNode::asText).containsExactlyInAnyOrder("app", "agent");
        assertThat(status.path("activeRelays").asInt()).isZero();
        assertThat(Instant.parse(status.path("startedAt").asText())).isBeforeOrEqualTo(Instant.now());
        assertThat(w.calls("status.get")).hasSize(1);
    }

    @Test
    void dial_wrongToken_failsNamingTheRefusal() {
        assertThatThrownBy(() -> FakeWorker.dial(gateway.uri(), "w1", "not-the-token", Map.of()))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("w1's uplink")
                .cause()
                .hasMessageContaining("401")
                .hasMessageContaining("invalid worker token");
    }

    @Test
    void dial_nobodyListening_failsNamingTheUri() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        URI closed = URI.create("ws://127.0.0.1:" + port + "/uplink");

        assertThatThrownBy(() -> FakeWorker.dial(closed, "w1", TOKEN, Map.of()))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining(closed.toString());
    }

    @Test
    void dial_notAWebSocketUri_isRefused() {
        assertThatThrownBy(() -> FakeWorker.dial(URI.create("http://127.0.0.1/uplink"), "w1", TOKEN, Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("uplinkUri: http://127.0.0.1/uplink (expected: ws://host:port/uplink)");
    }

    @Test
    void relay_withABody_takesEachChunkInOrder_andAnswersHeadChunksAndResult() {
        byte[] big = new byte[FakeWorker.CHUNK_BYTES + 10];
        Arrays.fill(big, (byte) 'x');
        FakeWorker w = dial(Map.of(
                "app", r -> Answer.of(201).header("x-a", "1").length(big.length).body(big)));

        long call = gateway.relayRequest("r-1", "app", true);
        long first = gateway.call("relay.body", "{\"relayId\":\"r-1\",\"seq\":0,\"chunk\":\"aGVs\"}");
        long second = gateway.call("relay.body", "{\"relayId\":\"r-1\",\"seq\":1,\"chunk\":\"bG8=\"}");
        long end = gateway.call("relay.body", "{\"relayId\":\"r-1\",\"end\":true}");

        for (long id : List.of(first, second, end)) {
            JsonNode answer = gateway.take();
            assertThat(answer.path("id").asLong())
                    .as("relay.body %d answered in order", id)
                    .isEqualTo(id);
            assertThat(answer.path("output").isEmpty()).isTrue();
        }
        JsonNode head = gateway.take();
        assertThat(head.path("push").asText()).isEqualTo("relay-head");
        assertThat(head.path("id").asLong()).isEqualTo(call);
        assertThat(head.path("data").path("status").asInt()).isEqualTo(201);
        assertThat(head.path("data").path("headers").toString()).isEqualTo("[[\"x-a\",\"1\"]]");
        assertThat(head.path("data").path("length").asLong()).isEqualTo(big.length);
        byte[] one = chunk(gateway.take(), call);
        byte[] two = chunk(gateway.take(), call);
        assertThat(one).as("a part over 256 KiB is split").hasSize(FakeWorker.CHUNK_BYTES);
        assertThat(two).hasSize(10);
        JsonNode result = gateway.take();
        assertThat(result.path("type").asText()).isEqualTo("result");
        assertThat(result.path("id").asLong()).isEqualTo(call);

        Relayed got = w.takeRelay();
        assertThat(new String(got.body(), StandardCharsets.UTF_8)).isEqualTo("hello");
        assertThat(got.chunks()).hasSize(2);
        assertThat(got.relayId()).isEqualTo("r-1");
        assertThat(got.method()).isEqualTo("PUT");
        assertThat(got.pathAndQuery()).isEqualTo("/a?x=1");
        assertThat(got.header("X-B")).isEqualTo("2");
        assertThat(got.leaseId()).isEqualTo("l-9");
    }

    @Test
    void holdHead_untilReleased_sendsNoHead_andStillAnswersOtherCalls() {
        CompletableFuture<Void> release = new CompletableFuture<>();
        dial(Map.of("app", r -> Answer.of(200).holdHead(release).body("late")));
        long call = gateway.relayRequest("r-1", "app", false);
        long status = gateway.call("status.get", "{}");

        JsonNode first = gateway.take();
        assertThat(first.path("id").asLong())
                .as("status.get answers while the head is held")
                .isEqualTo(status);
        assertThat(first.path("output").path("activeRelays").asInt()).isEqualTo(1);
        assertThat(gateway.fromWorker).as("nothing of the held relay").isEmpty();

        release.complete(null);

        JsonNode head = gateway.take();
        assertThat(head.path("push").asText()).isEqualTo("relay-head");
        assertThat(head.path("id").asLong()).isEqualTo(call);
        assertThat(new String(chunk(gateway.take(), call), StandardCharsets.UTF_8))
                .isEqualTo("late");
        assertThat(gateway.takeAnswerTo(call).path("type").asText()).isEqualTo("result");
    }

    @Test
    void relayBody_outOfOrder_isRefusedAndAbortsTheRelay() {
        dial(Map.of("app", r -> Answer.of(204)));
        long call = gateway.relayRequest("r-1", "app", true);
        long body = gateway.call("relay.body", "{\"relayId\":\"r-1\",\"seq\":1,\"chunk\":\"aGVs\"}");

        JsonNode refused = gateway.take();
        assertThat(refused.path("id").asLong()).isEqualTo(body);
        assertThat(refused.path("code").asText()).isEqualTo("BAD_REQUEST");
        assertThat(refused.path("message").asText()).isEqualTo("seq 1 (expected: 0)");
        JsonNode aborted = gateway.take();
        assertThat(aborted.path("id").asLong()).isEqualTo(call);
        assertThat(aborted.path("code").asText()).isEqualTo("BAD_REQUEST");
    }

    @Test
    void relayCancel_ofARelayNeverAnswered_endsItCancelled() {
        dial(Map.of("app", r -> Answer.never()));
        long call = gateway.relayRequest("r-1", "app", false);
        long cancel = gateway.call("relay.cancel", "{\"relayId\":\"r-1\"}");

        JsonNode cancelAnswer = gateway.take();
        assertThat(cancelAnswer.path("id").asLong()).isEqualTo(cancel);
        JsonNode relayAnswer = gateway.take();
        assertThat(relayAnswer.path("id").asLong()).isEqualTo(call);
        assertThat(relayAnswer.path("output").path("cancelled").asBoolean()).isTrue();
    }

    @Test
    void relayRequest_unknownTarget_isRelayTargetMissingNamingIt() {
        dial(Map.of("app", r -> Answer.of(204)));
        gateway.relayRequest("r-1", "other", false);

        JsonNode answer = gateway.take();
        assertThat(answer.path("code").asText()).isEqualTo("RELAY_TARGET_MISSING");
        assertThat(answer.path("details").path("target").asText()).isEqualTo("other");
    }

    @Test
    void call_unknownOperation_isBadRequestNamingOp() {
        dial(Map.of());
        long id = gateway.call("relay.teleport", "{}");

        JsonNode answer = gateway.take();
        assertThat(answer.path("id").asLong()).isEqualTo(id);
        assertThat(answer.path("code").asText()).isEqualTo("BAD_REQUEST");
        assertThat(answer.path("details").path("field").asText()).isEqualTo("op");
    }

    @Test
    void relayRequest_sixteenActive_theSeventeenthIsBadRequest() {
        dial(Map.of("app", r -> Answer.never()));
        for (int i = 0; i < FakeWorker.ACTIVE_RELAYS; i++) {
            gateway.relayRequest("r-" + i, "app", false);
        }
        long status = gateway.call("status.get", "{}");
        JsonNode report = gateway.take();
        assertThat(report.path("id").asLong()).isEqualTo(status);
        assertThat(report.path("output").path("activeRelays").asInt()).isEqualTo(FakeWorker.ACTIVE_RELAYS);

        long seventeenth = gateway.relayRequest("r-16", "app", false);
        JsonNode refused = gateway.take();
        assertThat(refused.path("id").asLong()).isEqualTo(seventeenth);
        assertThat(refused.path("code").asText()).isEqualTo("BAD_REQUEST");
    }

    @Test
    void record_atTheBoundOfFrames_keepsTheLink_andOnePastItClosesIt() {
        FakeWorker w = dial(Map.of());
        for (int i = 0; i < FakeWorker.MAX_RECORDED_FRAMES; i++) {
            gateway.send("{\"type\":\"result\",\"id\":" + (i + 1) + ",\"output\":{}}");
        }
        Waits.until("every frame is recorded", () -> w.received().size() == FakeWorker.MAX_RECORDED_FRAMES);
        assertThat(w.isOpen()).isTrue();

        gateway.send("{\"type\":\"result\",\"id\":1,\"output\":{}}");

        FakeWorker.Closed closed = Waits.done(w.closed(), "the fake closes past its record's bound");
        assertThat(closed.code()).isEqualTo(1008);
        assertThat(w.received()).hasSize(FakeWorker.MAX_RECORDED_FRAMES);
    }

    @Test
    void body_atTheBound_isTaken_andOneBytePastItFailsTheRelay() {
        byte[] chunk = new byte[FakeWorker.CHUNK_BYTES];
        String full = Base64.getEncoder().encodeToString(chunk);
        int chunks = (int) (FakeWorker.MAX_BODY_BYTES / FakeWorker.CHUNK_BYTES);
        FakeWorker w = dial(Map.of("app", r -> Answer.of(204)));

        long atBound = gateway.relayRequest("r-1", "app", true);
        sendBody("r-1", full, chunks, null);
        assertThat(w.takeRelay().body()).hasSize((int) FakeWorker.MAX_BODY_BYTES);
        assertThat(gateway.takeAnswerTo(atBound).path("type").asText())
                .as("the relay at the bound is answered")
                .isEqualTo("result");

        long past = gateway.relayRequest("r-2", "app", true);
        sendBody("r-2", full, chunks, "AA==");
        JsonNode refused = gateway.takeAnswerTo(past);
        assertThat(refused.path("code").asText()).isEqualTo("INTERNAL");
        assertThat(refused.path("message").asText()).contains(Long.toString(FakeWorker.MAX_BODY_BYTES));
    }

    @Test
    void relays_atTheBoundUntaken_areAnswered_andOnePastItIsInternal() {
        FakeWorker w = dial(Map.of("app", r -> Answer.of(204)));
        long last = 0;
        for (int i = 0; i < FakeWorker.MAX_UNTAKEN_RELAYS; i++) {
            last = gateway.relayRequest("r-" + i, "app", false);
        }
        assertThat(gateway.takeAnswerTo(last).path("type").asText())
                .as("the relay at the bound is answered")
                .isEqualTo("result");

        long past = gateway.relayRequest("r-past", "app", false);

        JsonNode refused = gateway.takeAnswerTo(past);
        assertThat(refused.path("code").asText()).isEqualTo("INTERNAL");
        assertThat(w.takeRelay().relayId())
                .as("the first untaken relay is still there")
                .isEqualTo("r-0");
    }

    @Test
    void untakenBodies_atTheBound_areKept_andOneBytePastItFailsTheRelay() {
        String full = Base64.getEncoder().encodeToString(new byte[FakeWorker.CHUNK_BYTES]);
        int chunks = (int) (FakeWorker.MAX_BODY_BYTES / FakeWorker.CHUNK_BYTES);
        FakeWorker w = dial(Map.of("app", r -> Answer.of(204)));
        for (String relayId : List.of("r-1", "r-2")) { // 2 x 16 MiB: the bound, none taken
            long call = gateway.relayRequest(relayId, "app", true);
            sendBody(relayId, full, chunks, null);
            assertThat(gateway.takeAnswerTo(call).path("type").asText()).isEqualTo("result");
        }

        long past = gateway.relayRequest("r-3", "app", true);
        sendBody("r-3", "AA==", 1, null);
        JsonNode refused = gateway.takeAnswerTo(past);
        assertThat(refused.path("code").asText()).isEqualTo("INTERNAL");
        assertThat(refused.path("message").asText()).contains(Long.toString(FakeWorker.MAX_UNTAKEN_BODY_BYTES));

        assertThat(w.takeRelay().relayId()).isEqualTo("r-1");
        long again = gateway.relayRequest("r-4", "app", true);
        sendBody("r-4", "AA==", 1, null);
        assertThat(gateway.takeAnswerTo(again).path("type").asText())
                .as("a relay taken frees its bytes")
                .isEqualTo("result");
    }

    @Test
    void record_aChunk_keepsItsLengthOnly_andCutsTheText() {
        String full = Base64.getEncoder().encodeToString(new byte[FakeWorker.CHUNK_BYTES]);
        FakeWorker w = dial(Map.of("app", r -> Answer.of(204)));
        long call = gateway.relayRequest("r-1", "app", true);
        sendBody("r-1", full, 1, null);
        gateway.takeAnswerTo(call);

        FakeWorker.Received body = w.calls("relay.body").get(0);
        assertThat(body.payload().has("chunk")).isFalse();
        assertThat(body.payload().path("chunkChars").asInt()).isEqualTo(full.length());
        assertThat(body.text()).hasSize(FakeWorker.MAX_RECORDED_TEXT_CHARS + 3).endsWith("...");
        assertThat(w.takeRelay().body()).hasSize(FakeWorker.CHUNK_BYTES);
    }

    @Test
    void close_byTheGateway_recordsItsCodeAndReason() {
        FakeWorker w = dial(Map.of());
        gateway.closeUplink(1001, "gateway draining: reconnect");

        FakeWorker.Closed closed = Waits.done(w.closed(), "the fake sees the gateway's close");
        assertThat(closed).isEqualTo(new FakeWorker.Closed(1001, "gateway draining: reconnect", false));
        assertThat(w.isOpen()).isFalse();
    }

    /** Sends {@code count} chunks of {@code chunk}, then {@code extra} (unless null), then the end. */
    private void sendBody(String relayId, String chunk, int count, @Nullable String extra) {
        int seq = 0;
        for (; seq < count; seq++) {
            gateway.send("{\"type\":\"call\",\"id\":" + gateway.ids.incrementAndGet()
                    + ",\"op\":\"relay.body\",\"input\":{\"relayId\":\"" + relayId + "\",\"seq\":" + seq
                    + ",\"chunk\":\"" + chunk + "\"}}");
        }
        if (extra != null) {
            gateway.call(
                    "relay.body", "{\"relayId\":\"" + relayId + "\",\"seq\":" + seq + ",\"chunk\":\"" + extra + "\"}");
        }
        gateway.call("relay.body", "{\"relayId\":\"" + relayId + "\",\"end\":true}");
    }

    private static byte[] chunk(JsonNode push, long call) {
        assertThat(push.path("push").asText()).isEqualTo("relay-chunk");
        assertThat(push.path("id").asLong()).isEqualTo(call);
        return Base64.getDecoder().decode(push.path("data").path("chunk").asText());
    }

    /** The gateway end of the uplink, played with raw JSON frames; refuses any token but {@link #TOKEN}. */
    private static final class ScriptedGateway implements AutoCloseable {
        final LinkedBlockingQueue<JsonNode> fromWorker = new LinkedBlockingQueue<>();
        final CompletableFuture<Channel> up = new CompletableFuture<>();
        final AtomicLong ids = new AtomicLong();
        final Map<String, String> upgrade = new ConcurrentHashMap<>(); // by lower-case name
        private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        private @Nullable Channel server;

        void start() throws InterruptedException {
            server = new ServerBootstrap()
                    .group(group)
                    .channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel ch) {
                            ch.pipeline()
                                    .addLast(new HttpServerCodec())
                                    .addLast(new HttpObjectAggregator(64 * 1024))
                                    .addLast(new Authenticator())
                                    .addLast(new WebSocketServerProtocolHandler(
                                            WebSocketServerProtocolConfig.newBuilder()
                                                    .websocketPath("/uplink")
                                                    .subprotocols(FakeWorker.SUBPROTOCOL)
                                                    .maxFramePayloadLength(FakeWorker.MAX_MESSAGE_BYTES)
                                                    .build()))
                                    .addLast(new WebSocketFrameAggregator(FakeWorker.MAX_MESSAGE_BYTES))
                                    .addLast(new Frames());
                        }
                    })
                    .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
                    .sync()
                    .channel();
        }

        URI uri() {
            Channel s = Objects.requireNonNull(server);
            return URI.create("ws://127.0.0.1:" + ((InetSocketAddress) s.localAddress()).getPort() + "/uplink");
        }

        void send(String text) {
            Waits.done(up, "the uplink is up").writeAndFlush(new TextWebSocketFrame(text));
        }

        long call(String op, String input) {
            long id = ids.incrementAndGet();
            send("{\"type\":\"call\",\"id\":" + id + ",\"op\":\"" + op + "\",\"input\":" + input + "}");
            return id;
        }

        long relayRequest(String relayId, String target, boolean hasBody) {
            return call(
                    "relay.request",
                    "{\"relayId\":\"" + relayId + "\",\"target\":\"" + target + "\",\"method\":\"PUT\","
                            + "\"url\":\"https://app.local/a?x=1\",\"headers\":[[\"x-a\",\"1\"],[\"x-b\",\"2\"]],"
                            + "\"tenant\":\"acme\",\"leaseId\":\"l-9\",\"hasBody\":" + hasBody + "}");
        }

        JsonNode take() {
            return Waits.take(fromWorker, "a frame from the worker");
        }

        /** Takes frames until the answer to call {@code id} (a result or an error), skipping others. */
        JsonNode takeAnswerTo(long id) {
            while (true) {
                JsonNode f = take();
                if (f.path("id").asLong() == id && !f.path("type").asText().equals("push")) {
                    return f;
                }
            }
        }

        void closeUplink(int code, String reason) {
            Waits.done(up, "the uplink is up").writeAndFlush(new CloseWebSocketFrame(code, reason));
        }

        @Override
        public void close() {
            Channel s = server;
            if (s != null) {
                s.close().awaitUninterruptibly(Waits.WAIT.toMillis());
            }
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(Waits.WAIT.toMillis());
        }

        /** Records the upgrade's headers; answers 401 to a wrong token, as the gateway does. */
        private final class Authenticator extends ChannelInboundHandlerAdapter {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                if (msg instanceof FullHttpRequest request) {
                    request.headers().forEach(h -> upgrade.put(h.getKey().toLowerCase(Locale.ROOT), h.getValue()));
                    if (!("Bearer " + TOKEN).equals(request.headers().get(HttpHeaderNames.AUTHORIZATION))) {
                        request.release();
                        DefaultFullHttpResponse refusal = new DefaultFullHttpResponse(
                                HttpVersion.HTTP_1_1,
                                HttpResponseStatus.UNAUTHORIZED,
                                Unpooled.copiedBuffer(
                                        "{\"code\":\"UNAUTHENTICATED\",\"detail\":\"invalid worker token\"}",
                                        StandardCharsets.UTF_8));
                        refusal.headers()
                                .setInt(
                                        HttpHeaderNames.CONTENT_LENGTH,
                                        refusal.content().readableBytes());
                        ctx.writeAndFlush(refusal).addListener(ChannelFutureListener.CLOSE);
                        return;
                    }
                }
                ctx.fireChannelRead(msg);
            }
        }

        /** Parses each text frame the worker sends. */
        private final class Frames extends SimpleChannelInboundHandler<TextWebSocketFrame> {
            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                if (evt instanceof WebSocketServerProtocolHandler.HandshakeComplete) {
                    up.complete(ctx.channel());
                }
                ctx.fireUserEventTriggered(evt);
            }

            @Override
            protected void channelRead0(ChannelHandlerContext ctx, TextWebSocketFrame frame) throws Exception {
                fromWorker.add(JSON.readTree(frame.text()));
            }
        }
    }
}
