package com.spectrayan.spector.uplink.transport;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.LogGate;
import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.ProblemJson;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshaker13;
import io.netty.util.ReferenceCountUtil;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Accepts worker uplinks on the gateway's HTTP pipeline. Mount it after the HTTP server codec:
 *
 * <pre>{@code
 * UplinkAcceptor acceptor = UplinkAcceptor.builder(
 *                 (workerId, token) -> TokenHashes.matches(hashOf(workerId), token),
 *                 (workerId, channel) -> {
 *                     GatewayWorkerClient client = GatewayWorkerClient.over(workerId, channel);
 *                     directory.register(new WorkerLink(workerId, client));
 *                     return client; // receives the uplink's frames and its close
 *                 })
 *         .build();
 * pipeline.addLast(new HttpServerCodec());
 * pipeline.addLast(acceptor.newHandler()); // one per connection
 * pipeline.addLast(...the gateway's own HTTP handlers...);
 * }</pre>
 *
 * <p>A request for {@link #PATH} is checked before any upgrade, and every check that fails is
 * answered (problem+json, then close), never left hanging. In order: an RFC 6455 opening handshake
 * (section 4.2.1: an HTTP/1.1 GET with {@code Upgrade: websocket}, {@code Connection} naming {@code upgrade},
 * a {@code Sec-WebSocket-Key} of 16 bytes in base64, {@code Sec-WebSocket-Version: 13}; else 400,
 * with the versions spoken in {@code Sec-WebSocket-Version} as section 4.4 asks, and as Jetty
 * answers with a 400); {@code X-Spector-Worker} and {@code Authorization: Bearer} through the
 * {@link TokenCheck} (401); the slot and the {@link Admission} (400, 409); the offered subprotocols
 * must include one the gateway speaks (400 naming them). Then the handshake completes, the handler
 * replaces itself with the uplink's frame handling, and {@link UplinkHandler#onUplink} gets the
 * connection and returns its receiver, before any frame is read. Other requests pass through
 * untouched. An uplink that sends nothing (pings included) for {@link #DEFAULT_IDLE_TIMEOUT} is
 * closed.
 *
 * <p>Each handshake is an exchange of the gateway's: {@link Handshakes} gives it a request id
 * (answered in {@code X-Request-Id}, on the {@code 101} or the refusal, and in a refusal's {@code
 * requestId}) and learns how it ended, for the access log.
 */
public final class UplinkAcceptor {
    /** The path workers dial. */
    public static final String PATH = "/uplink";

    /** The header naming the worker. */
    public static final String WORKER_HEADER = "X-Spector-Worker";

    /**
     * The header naming the worker's slot for this link, {@code 0} to {@link #MAX_SLOT}; absent
     * means slot 0. A worker with several links numbers them; a re-dial of a slot replaces the
     * gateway's old link in it.
     */
    public static final String LINK_HEADER = "X-Spector-Link";

    /** The highest slot {@link #LINK_HEADER} may name (the directory may take fewer). */
    public static final int MAX_SLOT = 63;

    /** The header of a refusal naming the subprotocols this gateway speaks. */
    public static final String VERSIONS_HEADER = "X-Spector-Uplink-Versions";

    /** The header of a refusal carrying its reason (the body is JSON). */
    public static final String REFUSAL_HEADER = "X-Spector-Refusal";

    /** An uplink that sends nothing for this long is closed (workers ping every 20 s). */
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(90);

    /** The one WebSocket version an uplink speaks (RFC 6455); a handshake for another is refused 400 naming it. */
    public static final String WEBSOCKET_VERSION = "13";

    /** Chars of a token accepted for checking. */
    static final int MAX_TOKEN_CHARS = 4096;

    private static final Pattern WORKER_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    private static final String BEARER = "Bearer ";
    private static final Logger log = LoggerFactory.getLogger(UplinkAcceptor.class);

    /** The problem codes a refused handshake is answered with (the status is the code's), each counted. */
    public static final Set<ErrorCode> REFUSAL_CODES = Collections.unmodifiableSet(
            EnumSet.of(ErrorCode.BAD_REQUEST, ErrorCode.UNAUTHENTICATED, ErrorCode.UPLINK_LIMIT));

    /** Handshakes refused for a bad token are logged in one line at most this often, with how many. */
    public static final Duration BAD_TOKEN_LOG_INTERVAL = Duration.ofSeconds(10);

    /** Decides whether a token authenticates a worker; runs on the event loop, so keep it fast. */
    @FunctionalInterface
    public interface TokenCheck {
        /** Answers whether {@code token} is the token of {@code workerId}. */
        boolean matches(String workerId, String token);
    }

    /** Receives each accepted uplink. */
    @FunctionalInterface
    public interface UplinkHandler {
        /**
         * Takes link {@code slot} of {@code workerId} whose handshake completed and returns the
         * receiver of its frames and its close; runs on the connection's event loop, before any
         * frame is read. A handler that throws closes the uplink (1011).
         */
        FrameChannel.Receiver onUplink(String workerId, int slot, FrameChannel channel);
    }

    /** Decides, once the token is checked and before the handshake, whether a link is taken. */
    @FunctionalInterface
    public interface Admission {
        /** Returns why link {@code slot} of {@code workerId} is refused (409 UPLINK_LIMIT), or null. */
        @Nullable
        String refusal(String workerId, int slot);
    }

    /**
     * Learns of each handshake on {@link #PATH}, from its head to its end: the gateway gives it
     * its request id and writes its access log line (issue 14).
     */
    @FunctionalInterface
    public interface Handshakes {
        /** Learns nothing: handshakes carry no request id. */
        Handshakes NONE = (channel, request) -> Handshake.NONE;

        /**
         * A handshake's head arrived, before any check: returns its record. Runs on the
         * connection's event loop, once per handshake; keep it fast.
         */
        Handshake begin(Channel channel, HttpRequest request);
    }

    /** One handshake, as the gateway's access log shows it. Its methods run on the connection's event loop. */
    public interface Handshake {
        /** A handshake nobody follows. */
        Handshake NONE = new Handshake() {
            @Override
            public @Nullable String requestId() {
                return null;
            }

            @Override
            public void refused(int status, ErrorCode code, int bodyBytes, ChannelFuture written) {}

            @Override
            public void accepted(String workerId, int slot, ChannelFuture switched) {}
        };

        /** Returns its request id, answered in {@code X-Request-Id} and in a refusal's {@code requestId}, or null. */
        @Nullable
        String requestId();

        /**
         * Returns why the gateway refuses the request before any check of the acceptor's, as it
         * refuses every request on its port (its target or {@code Host}, RFC 9112 section 3.2: a
         * {@code BAD_REQUEST}), or null.
         */
        default @Nullable SpectorException refusal() {
            return null;
        }

        /**
         * It was refused: {@code status} with problem {@code code} and a body of {@code bodyBytes};
         * {@code written} completes when the refusal is written (or could not be), and the
         * connection closes after it.
         */
        void refused(int status, ErrorCode code, int bodyBytes, ChannelFuture written);

        /**
         * It was taken as link {@code slot} of {@code workerId}: {@code switched} completes when the
         * {@code 101} is written, or fails (the connection is then closed); the link lasts until
         * the channel closes.
         */
        void accepted(String workerId, int slot, ChannelFuture switched);
    }

    private final TokenCheck tokenCheck;
    private final UplinkHandler uplinkHandler;
    private final Admission admission;
    private final Handshakes handshakes;
    private final Duration idleTimeout;
    private final boolean v2;
    /**
     * Refused handshakes by problem code ({@link #REFUSAL_CODES}, fixed at construction; another
     * code a {@link Handshake#refusal} gives counts as BAD_REQUEST), from any loop.
     */
    private final Map<ErrorCode, LongAdder> refused = new EnumMap<>(ErrorCode.class);
    /** Bad-token refusals, from any loop: anyone can send them, as fast as it connects. */
    private final LogGate badTokenLog = new LogGate(BAD_TOKEN_LOG_INTERVAL, System.nanoTime());

    private UplinkAcceptor(Builder builder) {
        this.tokenCheck = builder.tokenCheck;
        this.uplinkHandler = builder.uplinkHandler;
        this.admission = builder.admission;
        this.handshakes = builder.handshakes;
        this.idleTimeout = builder.idleTimeout;
        this.v2 = builder.v2;
        for (ErrorCode code : REFUSAL_CODES) {
            refused.put(code, new LongAdder());
        }
    }

    /** Returns the handshakes refused so far with problem {@code code} (one of {@link #REFUSAL_CODES}, else 0). */
    public long refusals(ErrorCode code) {
        LongAdder n = refused.get(code);
        return n == null ? 0 : n.sum();
    }

    /** The subprotocols this gateway speaks, as its refusals name them (best first). */
    private String versions() {
        return v2 ? V2Limits.SUBPROTOCOL + ", " + FrameCodec.SUBPROTOCOL : FrameCodec.SUBPROTOCOL;
    }

    /** Starts an acceptor that checks tokens with {@code tokenCheck} and hands uplinks to {@code onUplink}. */
    public static Builder builder(TokenCheck tokenCheck, UplinkHandler onUplink) {
        return new Builder(tokenCheck, onUplink);
    }

    /** Returns a new handler for one connection's pipeline, after the HTTP server codec. */
    public ChannelHandler newHandler() {
        return new Handler();
    }

    /** Options of an {@link UplinkAcceptor}. */
    public static final class Builder {
        private final TokenCheck tokenCheck;
        private final UplinkHandler uplinkHandler;
        private Admission admission = (workerId, slot) -> null;
        private Handshakes handshakes = Handshakes.NONE;
        private Duration idleTimeout = DEFAULT_IDLE_TIMEOUT;
        private boolean v2 = true;

        private Builder(TokenCheck tokenCheck, UplinkHandler uplinkHandler) {
            this.tokenCheck = requireNonNull(tokenCheck, "tokenCheck");
            this.uplinkHandler = requireNonNull(uplinkHandler, "uplinkHandler");
        }

        /** Sets the check of a link's admission (default: every authenticated link is taken). */
        public Builder admission(Admission check) {
            this.admission = requireNonNull(check, "check");
            return this;
        }

        /** Sets what learns of each handshake: its request id and its end (default: nothing). */
        public Builder handshakes(Handshakes log) {
            this.handshakes = requireNonNull(log, "log");
            return this;
        }

        /** Sets how long an uplink may send nothing before it is closed. */
        public Builder idleTimeout(Duration timeout) {
            requireNonNull(timeout, "timeout");
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("idleTimeout must be positive: " + timeout);
            }
            this.idleTimeout = timeout;
            return this;
        }

        /**
         * Sets whether a worker that offers {@code spector-uplink.v2} gets it (default true); off,
         * every link speaks v1 (docs/PROTOCOL.md section 9.1).
         */
        public Builder v2(boolean on) {
            this.v2 = on;
            return this;
        }

        /** Builds the acceptor. */
        public UplinkAcceptor build() {
            return new UplinkAcceptor(this);
        }
    }

    private final class Handler extends ChannelInboundHandlerAdapter {
        private boolean discarding;
        /**
         * A request came before: an uplink's handshake is its connection's first request only. One
         * pipelined behind another was answered here at once, ahead of the answer to the request
         * before it (RFC 9112 §9.3.2: in order), and its close left that one unanswered (found by a
         * review); behind another it is an ordinary request, answered in its turn.
         */
        private boolean seenRequest;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            boolean first = msg instanceof HttpRequest && !seenRequest;
            if (msg instanceof HttpRequest) {
                seenRequest = true;
            }
            if (first && isUplinkPath(((HttpRequest) msg).uri())) {
                HttpRequest request = (HttpRequest) msg;
                FullHttpRequest copy = new DefaultFullHttpRequest(
                        request.protocolVersion(), request.method(), request.uri(), Unpooled.EMPTY_BUFFER);
                copy.headers().set(request.headers());
                discarding = !(msg instanceof LastHttpContent);
                ReferenceCountUtil.release(msg);
                accept(ctx, copy, handshakes.begin(ctx.channel(), copy));
            } else if (discarding && msg instanceof HttpContent) {
                discarding = !(msg instanceof LastHttpContent);
                ReferenceCountUtil.release(msg);
            } else {
                ctx.fireChannelRead(msg);
            }
        }

        /**
         * Answers whether a request target's decoded path is {@link #PATH}. A target that neither
         * starts with it nor holds an escape cannot decode to it: the usual request is answered by
         * that look alone, with no decoder made (issue 14). A path with a broken escape ({@code
         * /a%}, {@code %zz}) is not the uplink's: the request goes on to the edge's checks, which
         * answer it 400 (this threw, and the connection closed with no answer at all, taking a
         * pipelined predecessor's answer with it).
         */
        static boolean isUplinkPath(String uri) {
            if (!uri.startsWith(PATH) && uri.indexOf('%') < 0) {
                return false;
            }
            try {
                return PATH.equals(new QueryStringDecoder(uri).path());
            } catch (IllegalArgumentException e) {
                return false; // a malformed escape
            }
        }

        private void accept(ChannelHandlerContext ctx, FullHttpRequest request, Handshake handshake) {
            SpectorException edge = handshake.refusal();
            if (edge != null) {
                refuse(ctx, handshake, edge.code(), String.valueOf(edge.getMessage()), edge.details());
                return;
            }
            HttpHeaders headers = request.headers();
            // RFC 6455 section 4.2.1: what is not a WebSocket opening handshake is answered 400,
            // before the token is looked at. Netty's handshaker checks the same and throws, which
            // would leave the client without an answer. HTTP/1.1 only: a server ignores the Upgrade
            // of an HTTP/1.0 request (RFC 9110 section 7.8), and what is left is no handshake.
            if (!HttpVersion.HTTP_1_1.equals(request.protocolVersion())
                    || !HttpMethod.GET.equals(request.method())
                    || !headers.containsValue(HttpHeaderNames.UPGRADE, HttpHeaderValues.WEBSOCKET, true)
                    || !headers.containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE, true)) {
                badRequest(ctx, handshake, "Upgrade", "expected a WebSocket upgrade (HTTP/1.1 GET)");
                return;
            }
            String version = headers.get(HttpHeaderNames.SEC_WEBSOCKET_VERSION);
            if (!WEBSOCKET_VERSION.equals(version)) {
                // Section 4.4: the versions this server speaks, in Sec-WebSocket-Version (400, as Jetty).
                badRequest(
                        ctx,
                        handshake,
                        "Sec-WebSocket-Version",
                        "unsupported WebSocket version " + (version == null ? "(none)" : clip(version))
                                + ": this gateway speaks " + WEBSOCKET_VERSION);
                return;
            }
            if (!isKey(headers.get(HttpHeaderNames.SEC_WEBSOCKET_KEY))) {
                badRequest(
                        ctx,
                        handshake,
                        "Sec-WebSocket-Key",
                        "malformed Sec-WebSocket-Key: expected 16 bytes in base64");
                return;
            }
            String workerId = headers.get(WORKER_HEADER);
            String authorization = headers.get(HttpHeaderNames.AUTHORIZATION);
            if (workerId == null || !WORKER_ID.matcher(workerId).matches()) {
                unauthenticated(ctx, handshake, "malformed-worker", "missing or malformed " + WORKER_HEADER);
                return;
            }
            if (authorization == null
                    || !authorization.regionMatches(true, 0, BEARER, 0, BEARER.length())
                    || authorization.length() > BEARER.length() + MAX_TOKEN_CHARS) {
                unauthenticated(ctx, handshake, "missing-token", "missing bearer token");
                return;
            }
            String token = authorization.substring(BEARER.length()).trim();
            boolean valid;
            try {
                valid = !token.isEmpty() && tokenCheck.matches(workerId, token);
            } catch (RuntimeException e) {
                log.error("uplink token check failed for worker {}, request id {}", workerId, handshake.requestId(), e);
                valid = false;
            }
            if (!valid) {
                long refused = badTokenLog.event(System.nanoTime());
                if (refused > 0) {
                    log.warn(
                            "uplink refused: bad token for worker {} from {} ({} such refusal(s) since the last"
                                    + " such line, logged at most every {} s), request id {}",
                            workerId,
                            ctx.channel().remoteAddress(),
                            refused,
                            BAD_TOKEN_LOG_INTERVAL.toSeconds(),
                            handshake.requestId());
                }
                unauthenticated(ctx, handshake, "bad-token", "invalid worker token");
                return;
            }
            int slot = slot(headers.get(LINK_HEADER));
            if (slot < 0) {
                badRequest(
                        ctx, handshake, LINK_HEADER, "malformed " + LINK_HEADER + ": expected a slot 0.." + MAX_SLOT);
                return;
            }
            String refusal;
            try {
                refusal = admission.refusal(workerId, slot);
            } catch (RuntimeException e) {
                log.error("uplink admission failed for worker {}, request id {}", workerId, handshake.requestId(), e);
                refusal = "the gateway failed to admit the link";
            }
            if (refusal != null) {
                log.warn(
                        "uplink refused: worker {} slot {} from {}: {}, request id {}",
                        workerId,
                        slot,
                        ctx.channel().remoteAddress(),
                        refusal,
                        handshake.requestId());
                refuse(ctx, handshake, ErrorCode.UPLINK_LIMIT, refusal, Map.of("workerId", workerId));
                return;
            }
            List<String> offered = offered(headers.getAll(HttpHeaderNames.SEC_WEBSOCKET_PROTOCOL));
            // Section 9.1: v2 when both ends speak it, else v1; the worker's order does not matter.
            boolean speakV2 = v2 && offered.contains(V2Limits.SUBPROTOCOL);
            if (!speakV2 && !offered.contains(FrameCodec.SUBPROTOCOL)) {
                badRequest(
                        ctx,
                        handshake,
                        "Sec-WebSocket-Protocol",
                        "no common uplink protocol: this gateway speaks " + versions() + ", offered "
                                + (offered.isEmpty() ? "none" : String.join(", ", offered)));
                return;
            }
            WebSocketServerHandshaker handshaker = new WebSocketServerHandshaker13(
                    PATH,
                    speakV2 ? V2Limits.SUBPROTOCOL : FrameCodec.SUBPROTOCOL,
                    WebSocketDecoderConfig.newBuilder()
                            .maxFramePayloadLength(WebSocketFrameChannel.MAX_MESSAGE_BYTES)
                            .allowExtensions(false)
                            // The handlers send the close for a frame Netty's decoder refuses
                            // (1009, 1002), and linger behind it (LingeringClose): the decoder's
                            // own close ended the socket with the worker's bytes unread.
                            .closeOnProtocolViolation(false)
                            // FrameCodec refuses text that is not UTF-8 (1007) as it parses;
                            // Netty's validator walked every byte a second time.
                            .withUTF8Validator(false)
                            // Section 9.1: a v2 worker sends its frames unmasked (its
                            // choice; masked ones are taken too).
                            .allowMaskMismatch(speakV2)
                            .build());
            Channel channel = ctx.channel();
            if (speakV2) {
                acceptV2(ctx, request, handshaker, handshake, workerId, slot);
                return;
            }
            WebSocketFrameChannel frames = new WebSocketFrameChannel(channel, false, opened -> {
                try {
                    return uplinkHandler.onUplink(workerId, slot, opened);
                } catch (RuntimeException e) {
                    log.error("uplink handler failed for worker {}", workerId, e);
                    opened.closeAfterFailure(WebSocketCloseStatus.INTERNAL_SERVER_ERROR, "gateway failed", e);
                    return null;
                }
            });
            ctx.pipeline()
                    .addAfter(ctx.name(), "uplink-idle", Keepalive.idleCheck(idleTimeout))
                    .addAfter(
                            "uplink-idle",
                            "uplink-aggregator",
                            new io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator(
                                    WebSocketFrameChannel.MAX_MESSAGE_BYTES))
                    .addAfter("uplink-aggregator", "uplink-frames", frames.handler());
            ctx.pipeline().remove(this);
            switchProtocols(channel, request, handshaker, handshake, workerId, slot, frames::open);
        }

        /** Completes a v2 handshake: the idle check, then the v2 link, whose receiver is made at the 101. */
        private void acceptV2(
                ChannelHandlerContext ctx,
                FullHttpRequest request,
                WebSocketServerHandshaker handshaker,
                Handshake handshake,
                String workerId,
                int slot) {
            Channel channel = ctx.channel();
            ctx.pipeline().addAfter(ctx.name(), "uplink-idle", Keepalive.idleCheck(idleTimeout));
            V2FrameChannel frames =
                    V2FrameChannel.install(channel, V2Connection.Role.GATEWAY, "uplink-idle", opened -> {
                        try {
                            return uplinkHandler.onUplink(workerId, slot, opened);
                        } catch (RuntimeException e) {
                            log.error("uplink handler failed for worker {}", workerId, e);
                            opened.connection().close(WebSocketCloseStatus.INTERNAL_SERVER_ERROR, "gateway failed");
                            return null;
                        }
                    });
            ctx.pipeline().remove(this);
            switchProtocols(channel, request, handshaker, handshake, workerId, slot, frames::open);
        }

        /** Writes the {@code 101} (with the handshake's request id), then opens the link; closes when it fails. */
        private void switchProtocols(
                Channel channel,
                FullHttpRequest request,
                WebSocketServerHandshaker handshaker,
                Handshake handshake,
                String workerId,
                int slot,
                Runnable open) {
            HttpHeaders extra = new DefaultHttpHeaders();
            String id = handshake.requestId();
            if (id != null) {
                extra.set(SpectorHeaders.REQUEST_ID, id);
            }
            ChannelFuture switched = handshaker.handshake(channel, request, extra, channel.newPromise());
            handshake.accepted(workerId, slot, switched);
            switched.addListener(f -> {
                if (!f.isSuccess()) {
                    log.warn(
                            "uplink handshake failed for worker {}, request id {}",
                            workerId,
                            handshake.requestId(),
                            f.cause());
                    channel.close();
                    return;
                }
                open.run();
            });
        }

        /** Returns the slot {@code value} names (absent: 0), or -1 when it is malformed. */
        private static int slot(@Nullable String value) {
            if (value == null) {
                return 0;
            }
            if (value.isEmpty() || value.length() > 2) {
                return -1;
            }
            int n = 0;
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c < '0' || c > '9') {
                    return -1;
                }
                n = n * 10 + (c - '0');
            }
            return n <= MAX_SLOT ? n : -1;
        }

        /** A 400 whose details name the header ({@code field}) and why ({@code reason}, the detail). */
        private void badRequest(ChannelHandlerContext ctx, Handshake handshake, String field, String detail) {
            refuse(ctx, handshake, ErrorCode.BAD_REQUEST, detail, Map.of("field", field, "reason", detail));
        }

        /**
         * A 401 whose {@code details.reason} says why: {@code malformed-worker}, {@code
         * missing-token} or {@code bad-token}.
         */
        private void unauthenticated(ChannelHandlerContext ctx, Handshake handshake, String reason, String detail) {
            refuse(ctx, handshake, ErrorCode.UNAUTHENTICATED, detail, Map.of("reason", reason));
        }

        /**
         * Answers {@code code}'s status with a problem naming it, its {@code details} and the
         * handshake's request id, counts it, and closes.
         */
        private void refuse(
                ChannelHandlerContext ctx, Handshake handshake, ErrorCode code, String detail, Map<String, ?> details) {
            LongAdder counted = refused.get(code);
            (counted != null ? counted : requireNonNull(refused.get(ErrorCode.BAD_REQUEST))).increment();
            String id = handshake.requestId();
            byte[] body = ProblemJson.toBytes(
                    SpectorException.of(code, detail, details).toProblem(PATH).withRequestId(id));
            FullHttpResponse response = new DefaultFullHttpResponse(
                    HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(code.httpStatus()), Unpooled.wrappedBuffer(body));
            response.headers()
                    .set(HttpHeaderNames.CONTENT_TYPE, Problem.CONTENT_TYPE)
                    .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE)
                    .set(VERSIONS_HEADER, versions())
                    .set(REFUSAL_HEADER, detail)
                    .set(HttpHeaderNames.SEC_WEBSOCKET_VERSION, WEBSOCKET_VERSION);
            if (id != null) {
                response.headers().set(SpectorHeaders.REQUEST_ID, id);
            }
            if (code == ErrorCode.UNAUTHENTICATED) {
                response.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer");
            }
            HttpUtil.setContentLength(response, body.length);
            ChannelFuture written = ctx.writeAndFlush(response);
            handshake.refused(code.httpStatus(), code, body.length, written);
            written.addListener(ChannelFutureListener.CLOSE);
        }
    }

    /** Answers whether {@code key} is a Sec-WebSocket-Key: 16 bytes in base64 (RFC 6455 section 4.2.1, item 5). */
    private static boolean isKey(@Nullable String key) {
        if (key == null || key.length() != 24 || !key.endsWith("==")) {
            return false;
        }
        try {
            return Base64.getDecoder().decode(key).length == 16;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** Returns at most 16 chars of {@code s} (what a refusal repeats of a client's value). */
    private static String clip(String s) {
        return s.length() > 16 ? s.substring(0, 16) + "..." : s;
    }

    private static List<String> offered(List<String> headers) {
        List<String> offered = new ArrayList<>();
        for (String header : headers) {
            for (String part : header.split(",", -1)) {
                String p = part.trim();
                if (!p.isEmpty() && offered.size() < 16) {
                    offered.add(p.length() > 64 ? p.substring(0, 64) : p);
                }
            }
        }
        return offered;
    }
}
