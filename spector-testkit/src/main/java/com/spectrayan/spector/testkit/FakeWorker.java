package com.spectrayan.spector.testkit;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshakerFactory;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.codec.http.websocketx.WebSocketVersion;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * A worker written from the uplink specification ({@code docs/PROTOCOL.md}, v1) alone, never from
 * the project's own classes: it dials a gateway's {@code /uplink} WebSocket as the worker daemon
 * does and answers each relay from a {@link Script}, so a gateway test meets a peer its own code
 * did not write.
 *
 * <pre>{@code
 * try (FakeWorker w = FakeWorker.dial(URI.create("ws://127.0.0.1:" + port + "/uplink"), "w1", token,
 *         Map.of("app", relayed -> Answer.of(200).header("content-type", "text/plain").body("hi")))) {
 *     ... a client calls /relay/w1/app/x ...
 *     Relayed got = w.takeRelay();   // method, url, headers, the request body it pulled
 * }
 * }</pre>
 *
 * <p>What it does, by section of the specification:
 *
 * <ul>
 *   <li>§1: dials {@code GET /uplink} with {@code Authorization: Bearer <token>}, {@code
 *       X-Spector-Worker: <id>} and the subprotocol {@value #SUBPROTOCOL}, which the gateway must
 *       select; never re-dials. It answers every ping with a pong and pings only when told ({@link
 *       #ping}); the gateway closes an uplink that sends nothing for 90 s, far beyond a test. A
 *       binary frame closes the link 1003, a message over {@link #MAX_MESSAGE_BYTES} 1009.
 *   <li>§2: one JSON object per text frame; a frame that is not one (recorded as {@code
 *       corrupt}), or a call without a readable {@code id}, closes the link (1000, {@code corrupt
 *       frame: ...}); a call naming an operation it does not have is answered {@code BAD_REQUEST}.
 *   <li>§3: {@code status.get} is answered with its id, targets, active relays and start time.
 *       {@code relay.request} opens a relay (a reused id or a 17th active relay is {@code
 *       BAD_REQUEST}, a target not in the map {@code RELAY_TARGET_MISSING} with {@code
 *       details.target}); each {@code relay.body} is answered {@code {}} as soon as it arrives (the
 *       fake's target takes every part at once), out of order or after the end {@code BAD_REQUEST},
 *       which aborts the relay; for an unknown relay id {@code {}}. Once the request body ended (at
 *       once without one) the relay's {@link Relayed} is recorded for {@link #takeRelay} and its
 *       script asked. {@code relay.cancel} is answered {@code {}} and ends a relay still open with
 *       {@code {"cancelled":true}}.
 *   <li>§4: the answer goes out as one {@code relay-head} (with {@code length} when the script set
 *       one), the body parts as {@code relay-chunk}s of at most {@link #CHUNK_BYTES} decoded bytes,
 *       then the {@code {}} result, all under the {@code relay.request}'s id. The fake sends what
 *       the script says without checking it, so a test can make it break the rules (headers over
 *       the bounds, a length it does not keep).
 * </ul>
 *
 * <p>Design notes. Threading: every frame, every relay's state and every scripted action runs on
 * the fake's own event loop (one thread, stopped by {@link #close}); a script runs there too, so it
 * must not block. Tests read the records from any thread; a released {@link Answer#holdHead hold}
 * hops onto the loop. Bounds: it records at most {@link #MAX_RECORDED_FRAMES} frames (past them it
 * closes the link, 1008), each with at most {@link #MAX_RECORDED_TEXT_CHARS} of its text and a
 * {@code chunk} member as its length only; keeps at most {@link #MAX_UNTAKEN_RELAYS} relays, and
 * {@link #MAX_UNTAKEN_BODY_BYTES} of their bodies, that no test took (past them a relay is
 * answered {@code INTERNAL}); and takes at most {@link #MAX_BODY_BYTES} of one request
 * body (past them the relay is answered {@code INTERNAL}). Every wait is bounded by {@link #WAIT}.
 */
public final class FakeWorker implements AutoCloseable {
    /** The subprotocol offered and required, spector-uplink v1 (§1). */
    public static final String SUBPROTOCOL = "spector-uplink.v1";

    /** The longest text message read, in UTF-8 bytes: 3 × 368 640 (a frame's chars, at most 3 bytes each, §1). */
    public static final int MAX_MESSAGE_BYTES = 3 * 368_640;

    /** The decoded bytes of one {@code relay-chunk} push at most: 256 KiB (§3 {@code relay.body}, §7). */
    public static final int CHUNK_BYTES = 256 * 1024;

    /** The relays active at once on one connection (§3): 16; the 17th is {@code BAD_REQUEST}. */
    public static final int ACTIVE_RELAYS = 16;

    /** The frames recorded at most: 10 000, far more than a scenario sends; past them the link closes. */
    public static final int MAX_RECORDED_FRAMES = 10_000;

    /** The relays recorded and not yet taken at most: 1 024; past them a relay is answered {@code INTERNAL}. */
    public static final int MAX_UNTAKEN_RELAYS = 1_024;

    /** The request body bytes one relay takes at most: 16 MiB; past them the relay is answered {@code INTERNAL}. */
    public static final long MAX_BODY_BYTES = 16L * 1024 * 1024;

    /** The request body bytes of relays not yet taken at most: 32 MiB; past them a relay is answered {@code INTERNAL}. */
    public static final long MAX_UNTAKEN_BODY_BYTES = 2 * MAX_BODY_BYTES;

    /** The chars of a frame's text recorded at most: 1 024, enough to read it, never a body. */
    public static final int MAX_RECORDED_TEXT_CHARS = 1_024;

    /** The bound on the dial, on {@link #takeRelay()} and on the close. */
    public static final Duration WAIT = Waits.WAIT;

    /** The close code of a TCP close without a close frame (RFC 6455 §7.1.5). */
    public static final int ABNORMAL_CLOSURE = 1006;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private final URI uri;
    private final String workerId;
    private final Map<String, Script> targets;
    private final Instant startedAt = Instant.now();
    private final EventLoopGroup group;
    private final CompletableFuture<Void> up = new CompletableFuture<>();
    private final CompletableFuture<Closed> closed = new CompletableFuture<>();
    private final List<Received> received = new ArrayList<>(); // Guarded by itself.
    private final BlockingQueue<Relayed> relayed = new ArrayBlockingQueue<>(MAX_UNTAKEN_RELAYS);
    private final AtomicLong untakenBodyBytes = new AtomicLong(); // Of the relays in `relayed`.
    private final AtomicBoolean closing = new AtomicBoolean();
    private final ArrayDeque<CompletableFuture<Void>> pongs = new ArrayDeque<>(); // On the loop.
    private final Map<String, Relay> relays = new HashMap<>(); // On the loop; the relays not settled.
    private volatile @Nullable Channel channel; // Set once, on the loop, as the channel registers.
    private volatile boolean open;

    /** Answers a relay: asked on the fake's event loop once the request body ended; must not block. */
    @FunctionalInterface
    public interface Script {
        /** Returns the answer to {@code request}. */
        Answer answer(Relayed request);
    }

    /**
     * A relay as the fake received it: the {@code relay.request}'s fields and the request body it
     * pulled through {@code relay.body} calls, in order.
     *
     * @param callId the {@code relay.request}'s frame id, under which the answer goes
     * @param relayId the relay's id
     * @param target the target named
     * @param method the request's method
     * @param url the request's absolute URL
     * @param headers the request's headers, in order, names as sent
     * @param tenant the tenant
     * @param leaseId the lease id, or null
     * @param hasBody whether the relay was opened with a body
     * @param chunks the decoded {@code relay.body} chunks, in {@code seq} order
     */
    public record Relayed(
            long callId,
            String relayId,
            String target,
            String method,
            String url,
            List<Map.Entry<String, String>> headers,
            String tenant,
            @Nullable String leaseId,
            boolean hasBody,
            List<byte[]> chunks) {
        public Relayed {
            headers = List.copyOf(headers);
            chunks = List.copyOf(chunks);
        }

        /** Returns the request body: every chunk, in order. */
        public byte[] body() {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            chunks.forEach(out::writeBytes);
            return out.toByteArray();
        }

        /** Returns the first value of a header, by name in any case, or null. */
        public @Nullable String header(String name) {
            for (Map.Entry<String, String> h : headers) {
                if (h.getKey().equalsIgnoreCase(name)) {
                    return h.getValue();
                }
            }
            return null;
        }

        /** Returns the URL's path and query, e.g. {@code /a/b?x=1}. */
        public String pathAndQuery() {
            URI u = URI.create(url);
            return u.getRawPath() + (u.getRawQuery() == null ? "" : "?" + u.getRawQuery());
        }
    }

    /**
     * One frame as it arrived: a text frame's JSON, or a control frame.
     *
     * @param kind {@code call}, {@code result}, {@code error} or {@code push} (the frame's {@code
     *     type}); {@code ping}, {@code pong}, {@code close} or {@code binary} for the others, {@code
     *     corrupt} for text that is not one JSON object
     * @param id the frame's {@code id} (0 when it has none)
     * @param name the {@code op}, {@code push} or {@code code} member (empty when it has none)
     * @param payload the {@code input}, {@code output}, {@code data} or {@code details} object
     *     (empty when it has none); a {@code chunk} member is replaced by {@code chunkChars}, its
     *     length (the bytes are in {@link Relayed#chunks})
     * @param text the frame's text, cut at {@link #MAX_RECORDED_TEXT_CHARS} (a close frame: its
     *     code and reason)
     */
    public record Received(String kind, long id, String name, JsonNode payload, String text) {
        /** Returns a text member of the payload, or the empty string. */
        public String field(String member) {
            return payload.path(member).asText("");
        }

        @Override
        public String toString() {
            return text.length() > 300 ? text.substring(0, 300) + "..." : text;
        }
    }

    /**
     * How the link closed.
     *
     * @param code the close frame's code, {@link #ABNORMAL_CLOSURE} when the TCP connection closed
     *     without one
     * @param reason its reason
     * @param byWorker whether the fake closed it (its own {@link #close} or a script)
     */
    public record Closed(int code, String reason, boolean byWorker) {}

    /**
     * What a {@link Script} answers: a response ({@link #of}), an error frame ({@link #error}),
     * nothing ({@link #never}) or the link's close ({@link #closeLink}). A response is built on;
     * it is handed to the fake once and not changed after.
     */
    public static final class Answer {
        private enum Kind {
            RESPOND,
            ERROR,
            NEVER,
            CLOSE_LINK
        }

        private final Kind kind;
        private final int status;
        private final String code;
        private final String message;
        private final Map<String, String> details = new LinkedHashMap<>();
        private final List<Map.Entry<String, String>> headers = new ArrayList<>();
        private final List<byte[]> parts = new ArrayList<>();
        private long length = -1;
        private @Nullable CompletionStage<?> holdHead;
        private boolean closeAfterParts;

        private Answer(Kind kind, int status, String code, String message) {
            this.kind = kind;
            this.status = status;
            this.code = code;
            this.message = message;
        }

        /** A response with {@code status}: a head, the body parts, then the {@code {}} result. */
        public static Answer of(int status) {
            return new Answer(Kind.RESPOND, status, "", "");
        }

        /** An error frame answering the {@code relay.request}, before any head (§6's codes, or any other). */
        public static Answer error(String code, String message) {
            return new Answer(Kind.ERROR, 0, requireNonNull(code, "code"), requireNonNull(message, "message"));
        }

        /** No answer at all: neither head nor result, until a {@code relay.cancel} or the link's close. */
        public static Answer never() {
            return new Answer(Kind.NEVER, 0, "", "");
        }

        /** The link's close (1000) instead of any answer: no head, no result. */
        public static Answer closeLink() {
            return new Answer(Kind.CLOSE_LINK, 0, "", "");
        }

        /** Adds a response header (sent as given, never filtered or checked). */
        public Answer header(String name, String value) {
            headers.add(Map.entry(requireNonNull(name, "name"), requireNonNull(value, "value")));
            return this;
        }

        /** Adds body parts; each goes out as {@code relay-chunk}s of at most {@link #CHUNK_BYTES}. */
        public Answer body(byte[]... bodyParts) {
            for (byte[] p : bodyParts) {
                parts.add(requireNonNull(p, "part").clone());
            }
            return this;
        }

        /** Adds a UTF-8 body part. */
        public Answer body(String text) {
            return body(text.getBytes(StandardCharsets.UTF_8));
        }

        /** Declares the response's length in the head's {@code length} (§4), whether or not the parts keep it. */
        public Answer length(long declared) {
            this.length = declared;
            return this;
        }

        /** Holds the head (and all after it) until {@code release} completes, however it completes. */
        public Answer holdHead(CompletionStage<?> release) {
            this.holdHead = requireNonNull(release, "release");
            return this;
        }

        /** Closes the link (1000) after the head and the parts, instead of the {@code {}} result. */
        public Answer thenCloseLink() {
            this.closeAfterParts = true;
            return this;
        }

        /** Adds a member of an error frame's {@code details}. */
        public Answer detail(String name, String value) {
            details.put(requireNonNull(name, "name"), requireNonNull(value, "value"));
            return this;
        }
    }

    /** One relay the fake holds, from its {@code relay.request} until it settles. */
    private final class Relay {
        private final long callId;
        private final JsonNode input;
        private final boolean hasBody;
        private final List<byte[]> chunks = new ArrayList<>();
        private long bodyBytes;
        private int nextSeq;
        private RelayState state;

        Relay(long callId, JsonNode input, boolean hasBody) {
            this.callId = callId;
            this.input = input;
            this.hasBody = hasBody;
            this.state = hasBody ? RelayState.RECEIVING_BODY : RelayState.ANSWERING;
        }

        String relayId() {
            return input.path("relayId").asText();
        }

        /** RECEIVING_BODY -> ANSWERING: the request body ended. */
        void bodyEnded() {
            if (state != RelayState.RECEIVING_BODY) {
                throw new IllegalStateException("relay " + relayId() + ": body ended in " + state);
            }
            state = RelayState.ANSWERING;
        }

        /** Any state -> SETTLED, once: the relay frees its id. */
        boolean settle() {
            if (state == RelayState.SETTLED) {
                return false;
            }
            state = RelayState.SETTLED;
            relays.remove(relayId(), this);
            return true;
        }

        Relayed record() {
            List<Map.Entry<String, String>> headers = new ArrayList<>();
            for (JsonNode pair : input.path("headers")) {
                headers.add(Map.entry(pair.path(0).asText(), pair.path(1).asText()));
            }
            JsonNode lease = input.path("leaseId");
            return new Relayed(
                    callId,
                    relayId(),
                    input.path("target").asText(),
                    input.path("method").asText(),
                    input.path("url").asText(),
                    headers,
                    input.path("tenant").asText(),
                    lease.isTextual() ? lease.asText() : null,
                    hasBody,
                    chunks);
        }
    }

    /**
     * The states of one relay: {@code RECEIVING_BODY} (relay.body calls arrive) -> {@code
     * ANSWERING} (the script was asked; a head may be held) -> {@code SETTLED} (answered,
     * cancelled, refused or its link closed). Without a body a relay starts in {@code ANSWERING}.
     */
    private enum RelayState {
        RECEIVING_BODY,
        ANSWERING,
        SETTLED
    }

    private FakeWorker(URI uri, String workerId, Map<String, Script> targets) {
        this.uri = uri;
        this.workerId = workerId;
        this.targets = new LinkedHashMap<>(targets);
        this.group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    }

    /**
     * Dials {@code uplinkUri} ({@code ws://host:port/uplink}) as worker {@code workerId} with its
     * token and serves {@code targets} by name; returns once the WebSocket is up, within {@link
     * #WAIT}. The gateway may register the link a moment after: a test that relays at once waits
     * for its directory.
     *
     * @throws AssertionError when the dial fails or is refused (naming the status and the body), or
     *     the gateway selected no {@value #SUBPROTOCOL}
     */
    public static FakeWorker dial(URI uplinkUri, String workerId, String token, Map<String, Script> targets) {
        requireNonNull(uplinkUri, "uplinkUri");
        requireNonNull(workerId, "workerId");
        requireNonNull(token, "token");
        requireNonNull(targets, "targets");
        if (!"ws".equals(uplinkUri.getScheme()) || uplinkUri.getHost() == null) {
            throw new IllegalArgumentException("uplinkUri: " + uplinkUri + " (expected: ws://host:port/uplink)");
        }
        FakeWorker w = new FakeWorker(uplinkUri, workerId, targets);
        try {
            w.connect(token);
            Waits.done(w.up, "worker " + workerId + "'s uplink to " + uplinkUri + " is up", WAIT);
        } catch (RuntimeException | Error e) {
            w.shutdown();
            throw e;
        }
        return w;
    }

    /** Returns the worker id it dialled with. */
    public String workerId() {
        return workerId;
    }

    /** Answers whether the link is open. */
    public boolean isOpen() {
        return open;
    }

    /** Returns how the link closed, once it did. */
    public CompletionStage<Closed> closed() {
        return closed;
    }

    /** Takes the next relay whose request body ended, waiting at most {@link #WAIT}. */
    public Relayed takeRelay() {
        Relayed r = Waits.take(relayed, "worker " + workerId + " receives a relay");
        untakenBodyBytes.addAndGet(-r.body().length);
        return r;
    }

    /** Returns every frame received so far, in order. */
    public List<Received> received() {
        synchronized (received) {
            return List.copyOf(received);
        }
    }

    /** Returns the calls of {@code op} received so far, in order. */
    public List<Received> calls(String op) {
        return received().stream()
                .filter(f -> f.kind().equals("call") && f.name().equals(op))
                .toList();
    }

    /** Sends a ping; the stage completes at the next pong (the gateway answers pings, §1). */
    public CompletionStage<Void> ping() {
        CompletableFuture<Void> pong = new CompletableFuture<>();
        loop().execute(() -> {
            Channel ch = channel;
            if (ch == null || !open) {
                pong.completeExceptionally(new IOException("the uplink is closed"));
                return;
            }
            pongs.add(pong);
            ch.writeAndFlush(new PingWebSocketFrame(Unpooled.copiedBuffer("fake", StandardCharsets.US_ASCII)));
        });
        return pong;
    }

    /** Closes the link (1000, {@code fake worker closing}) and waits at most {@link #WAIT} for it to close. */
    @Override
    public void close() {
        if (!closing.compareAndSet(false, true)) {
            return;
        }
        try {
            loop().execute(() -> closeLink(1000, "fake worker closing"));
            Waits.done(closed, "worker " + workerId + "'s uplink closes", WAIT);
        } finally {
            shutdown();
        }
    }

    /** The one event loop of the fake's group: the channel's. */
    private io.netty.channel.EventLoop loop() {
        return group.next();
    }

    private void shutdown() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(WAIT.toMillis());
    }

    // ---- the dial (§1) ----

    private void connect(String token) {
        WebSocketClientHandshaker handshaker = WebSocketClientHandshakerFactory.newHandshaker(
                uri,
                WebSocketVersion.V13,
                SUBPROTOCOL,
                false,
                new DefaultHttpHeaders().set("Authorization", "Bearer " + token).set("X-Spector-Worker", workerId),
                MAX_MESSAGE_BYTES);
        Bootstrap bootstrap = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) WAIT.toMillis())
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        channel = ch;
                        ch.closeFuture().addListener(c -> linkClosed(new Closed(ABNORMAL_CLOSURE, "", false)));
                        ch.pipeline()
                                .addLast(new HttpClientCodec())
                                .addLast(new HttpObjectAggregator(64 * 1024))
                                .addLast(new WebSocketFrameAggregator(MAX_MESSAGE_BYTES))
                                .addLast(new Handler(handshaker));
                    }
                });
        int port = uri.getPort() == -1 ? 80 : uri.getPort();
        bootstrap.connect(requireNonNull(uri.getHost()), port).addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) {
                up.completeExceptionally(new IOException("cannot connect to " + uri, f.cause()));
                linkClosed(new Closed(ABNORMAL_CLOSURE, "never connected", false));
            }
        });
    }

    /** The pipeline's last handler: the handshake, then every frame. On the loop. */
    private final class Handler extends SimpleChannelInboundHandler<Object> {
        private final WebSocketClientHandshaker handshaker;

        Handler(WebSocketClientHandshaker handshaker) {
            this.handshaker = handshaker;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            handshaker.handshake(ctx.channel());
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, Object msg) {
            if (!handshaker.isHandshakeComplete()) {
                if (msg instanceof FullHttpResponse response) {
                    handshake(ctx, response);
                }
                return;
            }
            if (msg instanceof TextWebSocketFrame text) {
                onText(text.text());
            } else if (msg instanceof PingWebSocketFrame ping) {
                record(new Received("ping", 0, "", NODES.objectNode(), ByteBufUtil.hexDump(ping.content())));
                ctx.writeAndFlush(new PongWebSocketFrame(ping.content().retainedDuplicate()));
            } else if (msg instanceof PongWebSocketFrame pong) {
                record(new Received("pong", 0, "", NODES.objectNode(), ByteBufUtil.hexDump(pong.content())));
                CompletableFuture<Void> waiting = pongs.poll();
                if (waiting != null) {
                    waiting.complete(null);
                }
            } else if (msg instanceof CloseWebSocketFrame close) {
                Closed c = new Closed(close.statusCode(), close.reasonText(), false);
                record(new Received("close", 0, "", NODES.objectNode(), c.code() + " " + c.reason()));
                linkClosed(c);
                // RFC 6455 §5.5.1: the answer echoes the close's status code.
                ctx.writeAndFlush(
                                new CloseWebSocketFrame(true, 0, close.content().retainedDuplicate()))
                        .addListener(ChannelFutureListener.CLOSE);
            } else if (msg instanceof BinaryWebSocketFrame binary) {
                record(new Received("binary", 0, "", NODES.objectNode(), ByteBufUtil.hexDump(binary.content())));
                closeLink(1003, "binary frames carry no protocol");
            } else if (msg instanceof WebSocketFrame frame) {
                closeLink(1002, "unexpected frame " + frame.getClass().getSimpleName());
            }
        }

        private void handshake(ChannelHandlerContext ctx, FullHttpResponse response) {
            if (response.status().code() != 101) {
                up.completeExceptionally(new IOException("uplink refused: " + response.status() + ": "
                        + response.content().toString(StandardCharsets.UTF_8)));
                ctx.close();
                return;
            }
            try {
                handshaker.finishHandshake(ctx.channel(), response);
            } catch (RuntimeException e) {
                up.completeExceptionally(e);
                ctx.close();
                return;
            }
            if (!SUBPROTOCOL.equals(handshaker.actualSubprotocol())) {
                up.completeExceptionally(new IOException(
                        "the gateway selected subprotocol " + handshaker.actualSubprotocol() + ", not " + SUBPROTOCOL));
                ctx.close();
                return;
            }
            open = true;
            up.complete(null);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (!up.isDone()) {
                up.completeExceptionally(cause);
                ctx.close();
                return;
            }
            // A message over the bound (TooLongFrameException) or a broken frame.
            closeLink(1009, "fake worker: " + cause);
        }
    }

    // ---- frames (§2) ----

    private void onText(String text) {
        JsonNode frame;
        try {
            frame = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            frame = null;
        }
        if (frame == null || !frame.isObject()) {
            record(new Received("corrupt", 0, "", NODES.objectNode(), cut(text)));
            closeLink(1000, "corrupt frame: not one JSON object");
            return;
        }
        String type = frame.path("type").asText("");
        long id = frame.path("id").canConvertToLong() ? frame.path("id").asLong() : 0;
        String name = frame.path(
                        switch (type) {
                            case "call" -> "op";
                            case "push" -> "push";
                            case "error" -> "code";
                            default -> "";
                        })
                .asText("");
        JsonNode payload = frame.path(
                switch (type) {
                    case "call" -> "input";
                    case "result" -> "output";
                    case "push" -> "data";
                    case "error" -> "details";
                    default -> "";
                });
        if (!record(new Received(type, id, name, recorded(payload), cut(text)))) {
            return;
        }
        if (!type.equals("call")) {
            return; // The worker makes no calls: results, errors and pushes have nothing to answer.
        }
        if (!frame.path("id").isIntegralNumber() || id < 1) {
            closeLink(1000, "corrupt frame: a call without a readable id");
            return;
        }
        if (!payload.isObject()) {
            error(id, "BAD_REQUEST", "input: not an object", "input");
            return;
        }
        switch (name) {
            case "status.get" -> result(id, statusReport());
            case "relay.request" -> relayRequest(id, payload);
            case "relay.body" -> relayBody(id, payload);
            case "relay.cancel" -> relayCancel(id, payload);
            default -> error(id, "BAD_REQUEST", "no operation '" + name + "'", "op");
        }
    }

    /** Returns what is recorded of a payload: a copy without the bytes of a {@code chunk}. */
    private static JsonNode recorded(JsonNode payload) {
        if (!payload.isObject()) {
            return NODES.objectNode();
        }
        JsonNode chunk = payload.get("chunk");
        if (chunk == null || !chunk.isTextual()) {
            return payload;
        }
        ObjectNode copy = ((ObjectNode) payload).deepCopy();
        copy.remove("chunk");
        return copy.put("chunkChars", chunk.textValue().length());
    }

    private static String cut(String text) {
        return text.length() <= MAX_RECORDED_TEXT_CHARS ? text : text.substring(0, MAX_RECORDED_TEXT_CHARS) + "...";
    }

    /** Records a frame; past the bound, closes the link and answers false. */
    private boolean record(Received frame) {
        boolean full;
        synchronized (received) {
            full = received.size() >= MAX_RECORDED_FRAMES;
            if (!full) {
                received.add(frame);
            }
        }
        if (full) {
            closeLink(1008, "fake worker: more than " + MAX_RECORDED_FRAMES + " frames recorded");
        }
        return !full;
    }

    // ---- operations (§3) ----

    private ObjectNode statusReport() {
        ObjectNode out = NODES.objectNode().put("workerId", workerId);
        ArrayNode names = out.putArray("targets");
        targets.keySet().forEach(names::add);
        return out.put("activeRelays", relays.size()).put("startedAt", startedAt.toString());
    }

    private void relayRequest(long id, JsonNode input) {
        for (String member : List.of("relayId", "target", "method", "url", "tenant")) {
            if (!input.path(member).isTextual()) {
                error(id, "BAD_REQUEST", member + ": missing or not a string", member);
                return;
            }
        }
        if (!input.path("headers").isArray() || !input.path("hasBody").isBoolean()) {
            error(id, "BAD_REQUEST", "headers or hasBody missing", "headers");
            return;
        }
        String relayId = input.path("relayId").asText();
        String target = input.path("target").asText();
        if (relays.containsKey(relayId)) {
            error(id, "BAD_REQUEST", "relayId '" + relayId + "' is already active", "relayId");
            return;
        }
        if (relays.size() >= ACTIVE_RELAYS) {
            error(id, "BAD_REQUEST", "more than " + ACTIVE_RELAYS + " active relays", "relayId");
            return;
        }
        if (!targets.containsKey(target)) {
            send(errorFrame(id, "RELAY_TARGET_MISSING", "no relay target " + target)
                    .set("details", NODES.objectNode().put("target", target)));
            return;
        }
        Relay relay = new Relay(id, input, input.path("hasBody").asBoolean());
        relays.put(relayId, relay);
        if (!relay.hasBody) {
            ask(relay);
        }
    }

    private void relayBody(long id, JsonNode input) {
        Relay relay = relays.get(input.path("relayId").asText());
        if (relay == null) {
            result(id, NODES.objectNode()); // §3: a relay id the worker does not hold answers {}.
            return;
        }
        boolean end = input.path("end").asBoolean(false);
        String refusal = null;
        if (!relay.hasBody) {
            refusal = "the relay has no request body";
        } else if (relay.state != RelayState.RECEIVING_BODY) {
            refusal = "the request body already ended";
        } else if (!end && input.path("seq").asInt(-1) != relay.nextSeq) {
            refusal = "seq " + input.path("seq") + " (expected: " + relay.nextSeq + ")";
        }
        if (refusal != null) {
            error(id, "BAD_REQUEST", refusal, end ? "end" : "seq");
            if (relay.settle()) {
                error(relay.callId, "BAD_REQUEST", "relay '" + relay.relayId() + "' aborted: " + refusal, "seq");
            }
            return;
        }
        if (end) {
            result(id, NODES.objectNode());
            relay.bodyEnded();
            ask(relay);
            return;
        }
        byte[] chunk;
        try {
            chunk = Base64.getDecoder().decode(input.path("chunk").asText(""));
        } catch (IllegalArgumentException e) {
            error(id, "BAD_REQUEST", "chunk: not base64", "chunk");
            return;
        }
        relay.nextSeq++;
        relay.bodyBytes += chunk.length;
        result(id, NODES.objectNode()); // The fake's target took the part at once.
        if (relay.bodyBytes > MAX_BODY_BYTES) {
            if (relay.settle()) {
                send(errorFrame(
                        relay.callId, "INTERNAL", "fake worker: a request body over " + MAX_BODY_BYTES + " bytes"));
            }
            return;
        }
        relay.chunks.add(chunk);
    }

    private void relayCancel(long id, JsonNode input) {
        result(id, NODES.objectNode());
        Relay relay = relays.get(input.path("relayId").asText());
        if (relay != null && relay.settle()) {
            result(relay.callId, NODES.objectNode().put("cancelled", true));
        }
    }

    /** Records the relay for {@link #takeRelay} and plays its script's answer. */
    private void ask(Relay relay) {
        Relayed request = relay.record();
        long bytes = relay.bodyBytes;
        if (untakenBodyBytes.addAndGet(bytes) > MAX_UNTAKEN_BODY_BYTES) {
            untakenBodyBytes.addAndGet(-bytes);
            relay.settle();
            send(errorFrame(
                    relay.callId,
                    "INTERNAL",
                    "fake worker: more than " + MAX_UNTAKEN_BODY_BYTES + " request body bytes not taken"));
            return;
        }
        if (!relayed.offer(request)) {
            untakenBodyBytes.addAndGet(-bytes);
            relay.settle();
            send(errorFrame(relay.callId, "INTERNAL", "fake worker: " + MAX_UNTAKEN_RELAYS + " relays not taken"));
            return;
        }
        Answer answer;
        try {
            answer = requireNonNull(targets.get(request.target())).answer(request);
        } catch (RuntimeException e) {
            relay.settle();
            send(errorFrame(relay.callId, "INTERNAL", "relay target '" + request.target() + "' failed: " + e));
            return;
        }
        switch (answer.kind) {
            case ERROR -> {
                relay.settle();
                ObjectNode details = NODES.objectNode();
                answer.details.forEach(details::put);
                send(errorFrame(relay.callId, answer.code, answer.message).set("details", details));
            }
            case NEVER -> {
                // Nothing until a relay.cancel or the link's close.
            }
            case CLOSE_LINK -> closeLink(1000, "fake worker: scripted close before the head");
            case RESPOND -> {
                CompletionStage<?> hold = answer.holdHead;
                if (hold == null) {
                    respond(relay, answer);
                } else {
                    hold.whenComplete((v, e) -> loop().execute(() -> respond(relay, answer)));
                }
            }
        }
    }

    // ---- pushes (§4) ----

    private void respond(Relay relay, Answer answer) {
        if (relay.state == RelayState.SETTLED || !open) {
            return; // Cancelled or the link closed while the head was held.
        }
        ObjectNode head = NODES.objectNode().put("status", answer.status);
        ArrayNode headers = head.putArray("headers");
        answer.headers.forEach(h -> headers.addArray().add(h.getKey()).add(h.getValue()));
        if (answer.length >= 0) {
            head.put("length", answer.length);
        }
        send(push(relay.callId, "relay-head", head));
        for (byte[] part : answer.parts) {
            for (int off = 0; off < part.length; off += CHUNK_BYTES) {
                byte[] chunk = Arrays.copyOfRange(part, off, Math.min(part.length, off + CHUNK_BYTES));
                send(push(
                        relay.callId,
                        "relay-chunk",
                        NODES.objectNode().put("chunk", Base64.getEncoder().encodeToString(chunk))));
            }
        }
        if (answer.closeAfterParts) {
            closeLink(1000, "fake worker: scripted close after the head");
            return;
        }
        relay.settle();
        result(relay.callId, NODES.objectNode());
    }

    // ---- writing ----

    private static ObjectNode push(long id, String name, ObjectNode data) {
        ObjectNode f = NODES.objectNode().put("type", "push").put("id", id).put("push", name);
        f.set("data", data);
        return f;
    }

    private void result(long id, ObjectNode output) {
        ObjectNode f = NODES.objectNode().put("type", "result").put("id", id);
        f.set("output", output);
        send(f);
    }

    private void error(long id, String code, String message, String field) {
        send(errorFrame(id, code, message)
                .set("details", NODES.objectNode().put("field", field).put("reason", message)));
    }

    private static ObjectNode errorFrame(long id, String code, String message) {
        ObjectNode f = NODES.objectNode()
                .put("type", "error")
                .put("id", id)
                .put("code", code)
                .put("message", message);
        f.set("details", NODES.objectNode());
        return f;
    }

    private void send(JsonNode frame) {
        Channel ch = channel;
        if (ch != null && open) {
            ch.writeAndFlush(new TextWebSocketFrame(frame.toString()));
        }
    }

    // ---- the close ----

    /** Closes the link from the fake's side: a close frame, then the TCP close. On the loop. */
    private void closeLink(int code, String reason) {
        Channel ch = channel;
        if (ch == null || !open) {
            if (ch != null) {
                ch.close();
            }
            return;
        }
        linkClosed(new Closed(code, reason, true));
        ch.writeAndFlush(new CloseWebSocketFrame(code, reason)).addListener(ChannelFutureListener.CLOSE);
    }

    /** The link is closed (the first close seen wins): every relay ends, with nothing sent. On the loop. */
    private void linkClosed(Closed how) {
        if (closed.isDone()) {
            return;
        }
        open = false; // before the close is told: a test that saw it sees the link closed
        relays.clear();
        CompletableFuture<Void> pong;
        while ((pong = pongs.poll()) != null) {
            pong.completeExceptionally(new IOException("the uplink closed: " + how));
        }
        if (!up.isDone()) {
            up.completeExceptionally(new IOException("the uplink closed before the handshake: " + how));
        }
        closed.complete(how);
    }

    @Override
    public String toString() {
        return "FakeWorker[" + workerId + " on " + uri + (open ? ", open" : ", closed") + "]";
    }
}
