package com.spectrayan.spector.owner;

import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.Utf8FrameValidator;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketServerHandshakerFactory;
import io.netty.util.ReferenceCountUtil;
import java.util.Base64;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /api/v1/namespaces/{ns}/ws}: a WebSocket echo (RFC 6455). Every text, binary and
 * continuation frame is written back as it came (same type, same FIN bit), a ping is answered with
 * a pong of the same payload, and a close frame is echoed before the owner closes the TCP
 * connection (RFC 6455 §5.5.1, §7.1.1: the server closes first).
 *
 * <pre>
 *   client                                  owner
 *     |-- GET .../ws, Upgrade: websocket ----->|  guard decides first: 421 / 503 stay HTTP
 *     |                                        |  recorded in /admin/requests with status 101
 *     |&lt;-- 101, Sec-WebSocket-Accept ----------|  Netty's handshaker; HTTP codec removed
 *     |== text "ping-me" (masked) ============>|
 *     |&lt;========================= text "ping-me"|
 *     |== close 1000 =========================>|
 *     |&lt;============================ close 1000|  then FIN
 * </pre>
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Handshake.</b> The handshake headers are checked here, so a bad one is a 400 problem
 *       (RFC 6455 §4.2.1) and a version other than 13 is a 426 naming 13 (§4.4); the 101 itself
 *       is Netty's {@link WebSocketServerHandshaker}'s, written once the request has ended. The
 *       exchange is {@linkplain Exchange#takeOver taken over}, so the log shows the 101.
 *   <li><b>Bounds.</b> A frame's payload is at most {@link OwnerLimits#MAX_WEBSOCKET_FRAME_BYTES};
 *       Netty's decoder answers a longer one with close 1009, an unmasked one with 1002, and the
 *       validator invalid UTF-8 text with 1007, then closes. Fragments are echoed one by one, so
 *       no message is ever aggregated.
 *   <li><b>Flow.</b> The channel does not auto-read: echoes are flushed per read batch and the
 *       next read is asked for only while the channel is writable, so a client that does not read
 *       its echoes stops being read.
 *   <li><b>Threads.</b> One instance per connection; every method runs on its event loop.
 * </ul>
 */
final class WebSocketEcho extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(WebSocketEcho.class);

    /** The only protocol version of RFC 6455. */
    static final String VERSION = "13";

    /** Bytes of a decoded {@code Sec-WebSocket-Key} (RFC 6455 §4.2.1: a 16-byte nonce). */
    static final int KEY_BYTES = 16;

    private static final WebSocketDecoderConfig DECODER = WebSocketDecoderConfig.newBuilder()
            .maxFramePayloadLength(OwnerLimits.MAX_WEBSOCKET_FRAME_BYTES)
            .expectMaskedFrames(true)
            .allowMaskMismatch(false)
            .allowExtensions(false)
            .closeOnProtocolViolation(true)
            .withUTF8Validator(true)
            .build();

    private final WebSocketServerHandshaker handshaker;
    private final String nodeId;
    private boolean closing; // Event loop only.

    private WebSocketEcho(WebSocketServerHandshaker handshaker, String nodeId) {
        this.handshaker = handshaker;
        this.nodeId = nodeId;
    }

    /**
     * Checks the opening handshake and returns the sink that upgrades the connection when the
     * request ends; a version other than 13 is answered 426 here.
     *
     * @throws SpectorException BAD_REQUEST when the request is no WebSocket handshake (no {@code
     *     Upgrade: websocket}, no {@code Connection: upgrade}, no or a malformed key, no version,
     *     HTTP/1.0, or a body)
     */
    static BodySink open(Exchange ex) {
        var headers = ex.headers;
        if (!headers.containsValue(HttpHeaderNames.UPGRADE, HttpHeaderValues.WEBSOCKET, true)) {
            throw SpectorException.badRequest(
                    "Upgrade", describe(headers.get(HttpHeaderNames.UPGRADE)) + " (expected: websocket)");
        }
        if (!headers.containsValue(HttpHeaderNames.CONNECTION, HttpHeaderValues.UPGRADE, true)) {
            throw SpectorException.badRequest(
                    "Connection", describe(headers.get(HttpHeaderNames.CONNECTION)) + " (expected: upgrade)");
        }
        if (!ex.version.equals(HttpVersion.HTTP_1_1)) {
            throw SpectorException.badRequest("version", ex.version.text() + " (expected: HTTP/1.1)");
        }
        if (Sinks.contentLength(ex) > 0
                || ex.headers.containsValue(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED, true)) {
            throw SpectorException.badRequest("body", "present (expected: none on a handshake)");
        }
        String key = headers.get(HttpHeaderNames.SEC_WEBSOCKET_KEY);
        if (!isNonce(key)) {
            throw SpectorException.badRequest(
                    "Sec-WebSocket-Key", describe(key) + " (expected: base64 of " + KEY_BYTES + " bytes)");
        }
        String version = headers.get(HttpHeaderNames.SEC_WEBSOCKET_VERSION);
        if (version == null) {
            throw SpectorException.badRequest("Sec-WebSocket-Version", "absent (expected: " + VERSION + ")");
        }
        if (!version.strip().equals(VERSION)) {
            ex.respond(
                    HttpResponseStatus.UPGRADE_REQUIRED,
                    Problem.CONTENT_TYPE,
                    OffRegistryProblems.body(
                            426,
                            OffRegistryProblems.WEBSOCKET_VERSION_UNSUPPORTED,
                            "WebSocket version unsupported",
                            "WebSocket version '" + version + "' is not supported (expected: " + VERSION + ")",
                            Map.of("version", version),
                            ex.path),
                    Map.of(HttpHeaderNames.SEC_WEBSOCKET_VERSION.toString(), VERSION));
            return Sinks.drain(ex);
        }
        return Sinks.atEnd(() -> upgrade(ex));
    }

    private static boolean isNonce(@Nullable String key) {
        if (key == null) {
            return false;
        }
        try {
            return Base64.getDecoder().decode(key.strip()).length == KEY_BYTES;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    private static String describe(@Nullable String value) {
        return value == null ? "absent" : "'" + value + "'";
    }

    /** Answers the handshake with Netty's handshaker and swaps the HTTP handlers for the echo. */
    private static void upgrade(Exchange ex) {
        Channel channel = ex.ctx.channel();
        FullHttpRequest request = new DefaultFullHttpRequest(
                ex.version, HttpMethod.GET, ex.uri, Unpooled.EMPTY_BUFFER, ex.headers, EmptyHttpHeaders.INSTANCE);
        String host = ex.headers.get(HttpHeaderNames.HOST, "localhost");
        WebSocketServerHandshaker handshaker =
                new WebSocketServerHandshakerFactory("ws://" + host + ex.path, null, DECODER).newHandshaker(request);
        if (handshaker == null) {
            throw new IllegalStateException("no handshaker for version " + VERSION);
        }
        if (!ex.takeOver(HttpResponseStatus.SWITCHING_PROTOCOLS)) {
            return;
        }
        ChannelPipeline p = channel.pipeline();
        p.remove(ReferenceOwner.EXPECT_CONTINUE);
        p.remove(ReferenceOwner.CHUNKED_WRITER);
        p.replace(ReferenceOwner.OWNER, "ws-echo", new WebSocketEcho(handshaker, ex.node.nodeId));
        // Adds "wsencoder" and "wsdecoder" before the codec, writes the 101, then removes the codec.
        handshaker.handshake(channel, request).addListener(f -> {
            if (!f.isSuccess()) {
                log.debug("{}: handshake with {} failed: {}", ex.node.nodeId, channel.remoteAddress(), f.cause());
                channel.close();
            }
        });
        p.addAfter("wsdecoder", "ws-utf8", new Utf8FrameValidator());
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        ctx.read();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (closing) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (msg instanceof PingWebSocketFrame ping) {
            ctx.write(new PongWebSocketFrame(ping.content())); // the pong takes the ping's payload
        } else if (msg instanceof PongWebSocketFrame pong) {
            pong.release();
        } else if (msg instanceof CloseWebSocketFrame close) {
            closing = true;
            handshaker.close(ctx, close); // echoes the frame (status and reason), then closes
        } else if (msg instanceof WebSocketFrame frame) {
            ctx.write(frame); // text, binary or continuation, echoed as it came
        } else {
            // Bytes the client sent before it had the 101 (RFC 6455 §4.1 forbids it), left by the
            // HTTP codec when it was removed: not a frame stream we can trust.
            ReferenceCountUtil.release(msg);
            ctx.close();
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        ctx.flush();
        if (ctx.channel().isWritable()) {
            ctx.read();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            ctx.read();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("{}: WebSocket from {} failed: {}", nodeId, ctx.channel().remoteAddress(), cause.toString());
        if (!(cause instanceof CorruptedWebSocketFrameException)) {
            ctx.close();
        }
        // A corrupt frame: the decoder has written the close frame (1002, 1007, 1009) and closes
        // once it is flushed.
    }
}
