package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.transport.UplinkAcceptor;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.util.AttributeKey;
import java.net.SocketAddress;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Uplink handshakes ({@code GET /uplink}) in the access log: the uplink acceptor answers them
 * before any exchange of the gateway's begins, so it tells this class instead.
 *
 * <p>A handshake is held to the edge's rules for every request on the port first ({@link
 * RequestTarget}: one valid {@code Host}, a target): one that breaks them is refused 400 before the
 * acceptor looks at it. Each gets its {@code X-Request-Id} by the rule of every exchange (a trusted
 * proxy's well-formed id is kept, else one is generated; {@link RequestIds}), answered in the
 * {@code 101} or in the refusal's header and problem body, and one line, route {@value #ROUTE}:
 *
 * <ul>
 *   <li>a refusal when it has been written: its status and problem code ({@code error}), {@code
 *       bytesOut} its body;
 *   <li>an accepted link when it closes, as nginx logs a proxied WebSocket when it ends: status
 *       {@code 101}, the worker as {@code upstream}, its life as the duration, and the bytes it
 *       carried after the {@code 101} (WebSocket frames, counted inside TLS by a handler just after
 *       the TLS handler, {@value #COUNTER_NAME}, installed only while the access log is on);
 *   <li>a {@code 101} that could not be written: {@code client-gone}.
 * </ul>
 *
 * <p>Thread-safety: {@link #begin} from any event loop; a handshake's record and its counter are
 * confined to its connection's loop.
 */
final class UplinkHandshakes implements UplinkAcceptor.Handshakes {
    /** The access log's route of an uplink handshake. */
    static final String ROUTE = "uplink";

    /** The request id of the uplink handshake a connection carried (its log lines name it). */
    static final AttributeKey<String> REQUEST_ID = AttributeKey.valueOf("spector.uplink.request-id");

    /** The name of an accepted uplink's byte counter in its pipeline. */
    static final String COUNTER_NAME = "uplink-bytes";

    private final Set<String> trustedProxies;
    private final AccessLog accessLog;

    UplinkHandshakes(Set<String> trustedProxies, AccessLog accessLog) {
        this.trustedProxies = Set.copyOf(trustedProxies);
        this.accessLog = accessLog;
    }

    @Override
    public UplinkAcceptor.Handshake begin(Channel channel, HttpRequest request) {
        SocketAddress remote = channel.remoteAddress();
        String ip = ClientConnection.ip(remote);
        String client = ClientConnection.ipAndPort(remote, ip);
        String id = RequestIds.take(request.headers(), trustedProxies.contains(ip));
        channel.attr(REQUEST_ID).set(id);
        SpectorException refusal = null;
        try {
            // the edge's rules for every request on the port (RequestTarget): one valid Host, a target
            var unused =
                    RequestTarget.parse(request.method(), request.uri(), request.protocolVersion(), request.headers());
        } catch (SpectorException e) {
            refusal = e;
        }
        return new Handshake(
                channel, id, client, request.method().name(), RequestIds.traceId(request.headers()), refusal);
    }

    /** One handshake's line, filled as it ends. Confined to its connection's event loop. */
    private final class Handshake implements UplinkAcceptor.Handshake {
        private final Channel channel;
        private final String requestId;
        private final String client;
        private final String method;
        private final @Nullable String traceId;
        private final @Nullable SpectorException refusal;
        private final long startNanos = System.nanoTime();
        private final long startMillis = System.currentTimeMillis();

        Handshake(
                Channel channel,
                String requestId,
                String client,
                String method,
                @Nullable String traceId,
                @Nullable SpectorException refusal) {
            this.channel = channel;
            this.requestId = requestId;
            this.client = client;
            this.method = method;
            this.traceId = traceId;
            this.refusal = refusal;
        }

        @Override
        public String requestId() {
            return requestId;
        }

        @Override
        public @Nullable SpectorException refusal() {
            return refusal;
        }

        @Override
        public void refused(int status, ErrorCode code, int bodyBytes, ChannelFuture written) {
            if (accessLog.enabled()) {
                written.addListener(f -> line(
                        status,
                        0,
                        f.isSuccess() ? bodyBytes : 0,
                        null,
                        f.isSuccess() ? "completed" : "client-gone",
                        code.name()));
            }
        }

        @Override
        public void accepted(String workerId, int slot, ChannelFuture switched) {
            if (!accessLog.enabled()) {
                return;
            }
            switched.addListener(f -> {
                if (!f.isSuccess()) {
                    line(101, 0, 0, workerId, "client-gone", null);
                    return;
                }
                ByteCounter bytes = new ByteCounter();
                if (channel.pipeline().get(ServerTls.HANDLER_NAME) != null) {
                    channel.pipeline().addAfter(ServerTls.HANDLER_NAME, COUNTER_NAME, bytes);
                } else {
                    channel.pipeline().addFirst(COUNTER_NAME, bytes);
                }
                channel.closeFuture().addListener(c -> line(101, bytes.in, bytes.out, workerId, "completed", null));
            });
        }

        private void line(
                int status,
                long bytesIn,
                long bytesOut,
                @Nullable String upstream,
                String outcome,
                @Nullable String error) {
            accessLog.log(new AccessLog.Entry(
                    startMillis,
                    requestId,
                    client,
                    method,
                    UplinkAcceptor.PATH,
                    status,
                    bytesIn,
                    bytesOut,
                    System.nanoTime() - startNanos,
                    -1,
                    ROUTE,
                    upstream,
                    0,
                    null,
                    null,
                    outcome,
                    error,
                    traceId));
        }
    }

    /** Counts the bytes an uplink reads and writes, next to the socket (or to TLS). Confined to its loop. */
    static final class ByteCounter extends ChannelDuplexHandler {
        long in;
        long out;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof ByteBuf b) {
                in += b.readableBytes();
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof ByteBuf b) {
                out += b.readableBytes();
            }
            ctx.write(msg, promise);
        }
    }
}
