package com.spectrayan.spector.uplink.transport;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.websocketx.WebSocket13FrameEncoder;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshakeException;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolConfig;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.codec.http.websocketx.WebSocketFrameDecoder;
import io.netty.handler.codec.http.websocketx.WebSocketFrameEncoder;
import io.netty.handler.codec.http.websocketx.WebSocketVersion;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import javax.net.ssl.SSLException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's side of the uplink: dials {@code wss://host:port/uplink} (or {@code ws://}) with its bearer token, its
 * id and the subprotocol {@link FrameCodec#SUBPROTOCOL}, hands each connected {@link WebSocketFrameChannel}
 * to a callback that returns its receiver (the worker starts an {@code UplinkSession} on it), and
 * re-dials after a failure
 * or a close with jittered exponential backoff between {@link Limits#RECONNECT_MIN} and {@link
 * Limits#RECONNECT_MAX}, until {@link #close()}; a link the gateway closed with 1001 Going Away (its
 * drain) is re-dialled at once, within {@link #GOING_AWAY_REDIAL_JITTER}, and so is a v2 link whose
 * gateway sent GOAWAY (the drain's start): the new dial takes the slot while the old link finishes
 * its streams until the gateway closes it, which then dials nothing more. It pings the gateway every ping interval, whatever
 * else it writes, so the gateway's pongs keep arriving even while the worker only streams a
 * response out; and it closes a connection that has received nothing (pongs included) for the
 * idle timeout, three ping intervals by default, which is then re-dialled. The gateway closes an
 * uplink it receives nothing from, pings included, for its own idle timeout ({@link
 * UplinkAcceptor#DEFAULT_IDLE_TIMEOUT}).
 *
 * <p>TLS ({@code wss://}): TLS 1.3 or 1.2 only; the gateway's certificate chain is verified against
 * the JDK's trust store, or only against the PEM CA file given with {@link Builder#caFile}, and
 * its host name against the URI's host (RFC 6125, HTTPS endpoint identification). A certificate
 * that fails is a failed attempt like any other: logged with the reason, retried with backoff,
 * never downgraded to clear text. The token is sent only inside the verified TLS session. A
 * {@code ws://} dial to a host that is not a loopback address logs a warning once at start: its
 * token and every relayed byte cross the network in clear text.
 *
 * <pre>{@code
 * UplinkDialer dialer = UplinkDialer.builder(URI.create("ws://gw:8080/uplink"), "w1", token, group)
 *         .onConnected(channel -> UplinkSession.start(channel, Role.GATEWAY_UPLINK, options)) // the receiver
 *         .build();
 * dialer.start();
 * ...
 * dialer.close();
 * }</pre>
 */
public final class UplinkDialer implements AutoCloseable {
    /** The default ping interval. */
    public static final Duration DEFAULT_PING_INTERVAL = Duration.ofSeconds(20);

    /** The ping intervals without anything received after which the worker closes its uplink. */
    public static final int IDLE_PING_INTERVALS = 3;

    /** The default idle timeout: {@link #IDLE_PING_INTERVALS} default ping intervals. */
    public static final Duration DEFAULT_IDLE_TIMEOUT = DEFAULT_PING_INTERVAL.multipliedBy(IDLE_PING_INTERVALS);

    /** The default bound on the TCP connect. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(10);

    /** The default bound on the WebSocket handshake (and on the TLS handshake before it). */
    public static final Duration DEFAULT_HANDSHAKE_TIMEOUT = Duration.ofSeconds(10);

    /**
     * The most a worker waits before re-dialling a link closed with 1001 Going Away (a gateway's
     * drain): the re-dial lands on another replica while the cell's other links carry the relays.
     */
    public static final Duration GOING_AWAY_REDIAL_JITTER = Duration.ofMillis(100);

    private static final Logger log = LoggerFactory.getLogger(UplinkDialer.class);

    /** The receiver of a dialer built without {@code onConnected}: drops what it is given. */
    private static final FrameChannel.Receiver IGNORING = new FrameChannel.Receiver() {
        @Override
        public void onFrame(Frame frame) {}

        @Override
        public void onClose(@Nullable Throwable cause) {}
    };

    private final URI uri;
    private final String workerId;
    private final String token;
    private final EventLoopGroup group;
    private final Class<? extends Channel> channelType;
    private final String subprotocol;
    private final Duration reconnectMin;
    private final Duration reconnectMax;
    private final Duration pingInterval;
    private final Duration idleTimeout;
    private final Duration connectTimeout;
    private final Duration handshakeTimeout;
    private final @Nullable UplinkTls tls;
    private final @Nullable Path caFile;
    private final int slot;
    private final boolean spread;
    private final Resolver resolver;
    private final Function<? super WebSocketFrameChannel, ? extends FrameChannel.Receiver> onConnected;

    /** The receiver of a link of either version; set, the dialer offers v2 first (section 9.1). */
    private final @Nullable Function<? super FrameChannel, ? extends FrameChannel.Receiver> onUplink;

    /** Whether a v2 link masks its frames (RFC 6455 section 5.3); by default it does not (section 9.1). */
    private final boolean maskV2;

    private final Consumer<Throwable> onAttemptFailed;
    private final AtomicInteger attempts = new AtomicInteger();

    private final Object lock = new Object();
    private boolean started;
    private boolean closed;
    private int failuresInARow;
    private @Nullable Channel current;
    /**
     * Links the gateway sent away with a GOAWAY and the slot was dialled again for: each finishes
     * its streams until the gateway closes it; closed by {@link #close}. Guarded by lock.
     */
    private final Set<Channel> retiring = new HashSet<>();

    private @Nullable ScheduledFuture<?> retry;

    private UplinkDialer(Builder b) {
        this.uri = b.uri;
        this.workerId = b.workerId;
        this.token = b.token;
        this.group = b.group;
        this.channelType = b.channelType;
        this.subprotocol = b.subprotocol;
        this.reconnectMin = b.reconnectMin;
        this.reconnectMax = b.reconnectMax;
        this.pingInterval = b.pingInterval;
        Duration idle = b.idleTimeout;
        this.idleTimeout = idle != null ? idle : b.pingInterval.multipliedBy(IDLE_PING_INTERVALS);
        if (idleTimeout.compareTo(pingInterval) <= 0) {
            throw new IllegalArgumentException(
                    "idleTimeout " + idleTimeout + " must exceed the ping interval " + pingInterval);
        }
        this.connectTimeout = b.connectTimeout;
        this.handshakeTimeout = b.handshakeTimeout;
        this.caFile = b.caFile;
        this.slot = b.slot;
        this.spread = b.spread;
        this.resolver = b.resolver;
        this.tls = "wss".equals(uri.getScheme()) ? UplinkTls.of(b.caFile) : null;
        this.onConnected = b.onConnected;
        this.onUplink = b.offerV2 ? b.onUplink : null;
        this.maskV2 = b.maskV2;
        Function<? super FrameChannel, ? extends FrameChannel.Receiver> any = b.onUplink;
        if (any != null && !b.offerV2) {
            this.onConnectedOverride = any;
        }
        this.onAttemptFailed = b.onAttemptFailed;
    }

    /** The v1 receiver when {@code onUplink} was set with v2 off; null to use {@code onConnected}. */
    private @Nullable Function<? super WebSocketFrameChannel, ? extends FrameChannel.Receiver> onConnectedOverride;

    /** Starts a dialer for {@code uri} ({@code wss://host[:port]/uplink} or {@code ws://...}) on {@code group}. */
    public static Builder builder(URI uri, String workerId, String token, EventLoopGroup group) {
        return new Builder(uri, workerId, token, group);
    }

    /** Dials for the first time; later dials follow by themselves. */
    public void start() {
        synchronized (lock) {
            if (started || closed) {
                return;
            }
            started = true;
        }
        if (tls == null && !isLoopback(requireNonNull(uri.getHost(), "host"))) {
            log.warn(
                    "uplink of worker {} to {} is not encrypted: its token and every relayed byte cross the"
                            + " network in clear text; dial wss:// instead",
                    workerId,
                    uri);
        }
        dial();
    }

    /** Returns the connection attempts made so far. */
    public int attempts() {
        return attempts.get();
    }

    /**
     * Answers whether an uplink is open now: upgraded to the protocol, not merely TCP-connected. A
     * link its gateway sent away (GOAWAY) no longer counts while it finishes its streams: it takes
     * no new relay, and the slot is being dialled again.
     */
    public boolean isConnected() {
        synchronized (lock) {
            Channel c = current;
            if (c == null) {
                return false;
            }
            V2FrameChannel v2 = c.attr(Attrs.V2).get();
            if (v2 != null) {
                return v2.isOpen();
            }
            WebSocketFrameChannel frames = c.attr(Attrs.FRAMES).get();
            return frames != null && frames.isOpen(); // upgraded, not merely TCP-connected
        }
    }

    /** Stops dialling and closes the current uplink, if any. */
    @Override
    public void close() {
        Channel c;
        ScheduledFuture<?> r;
        List<Channel> old;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            c = current;
            r = retry;
            current = null;
            retry = null;
            old = List.copyOf(retiring);
            retiring.clear();
        }
        if (r != null) {
            r.cancel(false);
        }
        for (Channel o : old) {
            V2FrameChannel v2 = o.attr(Attrs.V2).get();
            if (v2 != null && v2.isOpen()) {
                v2.close("worker stopping");
            } else {
                o.close();
            }
        }
        if (c != null) {
            WebSocketFrameChannel frames = c.attr(Attrs.FRAMES).get();
            V2FrameChannel v2 = c.attr(Attrs.V2).get();
            if (v2 != null && v2.isOpen()) {
                v2.close("worker stopping");
            } else if (frames != null && frames.isOpen()) {
                frames.close("worker stopping");
            } else {
                c.close();
            }
        }
    }

    private void dial() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            retry = null;
        }
        attempts.incrementAndGet();
        WebSocketClientProtocolConfig config = handshakeConfig();
        Bootstrap bootstrap = new Bootstrap()
                .group(group)
                .channel(channelType)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) connectTimeout.toMillis())
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        // The current connection from its registration on: its handshake cannot
                        // complete before this, so connected() always finds it current.
                        synchronized (lock) {
                            if (closed) {
                                ch.close();
                                return;
                            }
                            current = ch;
                        }
                        WebSocketFrameChannel frames = new WebSocketFrameChannel(ch, opened -> connected(ch, opened));
                        ch.attr(Attrs.FRAMES).set(frames);
                        UplinkTls t = tls;
                        if (t != null) {
                            io.netty.handler.ssl.SslHandler handler =
                                    t.newHandler(ch.alloc(), host(), port(), handshakeTimeout);
                            // A TLS handshake that fails (a gateway's plain port answering in HTTP,
                            // an untrusted certificate) is the dial's failure: named in its message.
                            handler.handshakeFuture().addListener(f -> {
                                if (!f.isSuccess()) {
                                    frames.failedBeforeOpen(f.cause());
                                }
                            });
                            ch.pipeline().addLast("tls", handler);
                        }
                        if (onUplink != null) {
                            initPipelineNegotiating(ch, config, idleTimeout, frames);
                        } else {
                            initPipeline(ch, config, idleTimeout, frames);
                        }
                    }
                });
        SocketAddress remote;
        try {
            remote = remoteAddress();
        } catch (UnknownHostException e) {
            failedBeforeConnect(new IOException("cannot resolve " + host() + ": " + e.getMessage(), e));
            return;
        }
        ChannelFuture connect = bootstrap.connect(remote);
        Channel ch = connect.channel();
        synchronized (lock) {
            if (closed) {
                ch.close();
                return;
            }
        }
        // The link's end is watched once the connect has ended, so that ended() always knows how
        // it ended: a failed resolve closes the channel before it fails the connect, and a close
        // seen first read as "closed before the handshake". A channel that was never registered
        // (its socket could not be made: EMFILE; or its registration failed) has a close future
        // that never completes: without this check the slot would never be dialled again.
        connect.addListener(f -> {
            if (f.isSuccess() || ch.isRegistered() || ch.closeFuture().isDone()) {
                ch.closeFuture().addListener(c -> ended(ch, connect));
            } else {
                Throwable why = f.cause();
                while (why.getCause() != null && why.getCause() != why) {
                    why = why.getCause(); // the system's words ("Too many open files"), not the factory's
                }
                failedBeforeConnect(new IOException(
                        "could not open a socket to " + host() + ":" + port() + ": " + why.getMessage(), f.cause()));
            }
        });
    }

    /**
     * The address this dial connects to: the URI's host as the bootstrap resolves it, or, when the
     * dialer spreads over addresses and the host is a name, address {@code slot mod n} of every
     * address it resolves to (sorted, so that the worker's links agree on the order). TLS checks the
     * name either way. Resolving blocks, as Netty's default resolver does; it happens once a dial.
     */
    private SocketAddress remoteAddress() throws UnknownHostException {
        String host = host();
        if (!spread || isLiteral(host)) {
            return InetSocketAddress.createUnresolved(host, port());
        }
        InetAddress[] all = resolver.resolve(host);
        Arrays.sort(all, Comparator.comparing(InetAddress::getHostAddress));
        return new InetSocketAddress(all[slot % all.length], port());
    }

    private static boolean isLiteral(String host) {
        return host.indexOf(':') >= 0 || host.chars().allMatch(c -> c == '.' || Character.isDigit(c));
    }

    /**
     * A dial that failed before it had a channel to close (its host did not resolve, or no socket
     * could be made): retried as any other.
     */
    private void failedBeforeConnect(IOException failure) {
        long delay;
        synchronized (lock) {
            if (closed) {
                return;
            }
            failuresInARow++;
            delay = backoffMillis(failuresInARow);
            retry = group.next().schedule(this::dial, delay, TimeUnit.MILLISECONDS);
        }
        attemptFailed(failure, delay);
    }

    private void attemptFailed(Throwable cause, long delay) {
        log.warn(
                "uplink dial of worker {} to {} failed ({}); retrying in {} ms",
                workerId,
                uri,
                cause.getMessage(),
                delay);
        try {
            onAttemptFailed.accept(cause);
        } catch (RuntimeException e) {
            log.error("uplink failure listener failed", e);
        }
    }

    private String host() {
        String host = requireNonNull(uri.getHost(), "uri host");
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }

    private int port() {
        return uri.getPort() != -1 ? uri.getPort() : tls != null ? 443 : 80;
    }

    private static boolean isLoopback(String host) {
        String h = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
        if (h.equalsIgnoreCase("localhost")) {
            return true;
        }
        try {
            // Literal addresses only: a host name is never resolved here (that is the dial's job).
            return (h.indexOf(':') >= 0 || Character.isDigit(h.charAt(0)))
                    && InetAddress.getByName(h).isLoopbackAddress();
        } catch (UnknownHostException | RuntimeException e) {
            return false;
        }
    }

    /** The WebSocket handshake this dialer offers: its URI, token, worker id and subprotocol. */
    WebSocketClientProtocolConfig handshakeConfig() {
        HttpHeaders headers = new DefaultHttpHeaders()
                .set(HttpHeaderNames.AUTHORIZATION, "Bearer " + token)
                .set(UplinkAcceptor.WORKER_HEADER, workerId)
                .set(UplinkAcceptor.LINK_HEADER, Integer.toString(slot));
        return WebSocketClientProtocolConfig.newBuilder()
                .webSocketUri(uri)
                // Section 9.1: v2 first when this worker speaks it; the gateway picks one.
                .subprotocol(onUplink != null ? V2Limits.SUBPROTOCOL + ", " + subprotocol : subprotocol)
                .version(WebSocketVersion.V13)
                // FrameCodec refuses text that is not UTF-8 as it parses; Netty's validator walked
                // every byte a second time (about 80% of a worker's loop during an upload).
                .withUTF8Validator(false)
                .allowExtensions(false)
                .customHeaders(headers)
                .maxFramePayloadLength(WebSocketFrameChannel.MAX_MESSAGE_BYTES)
                .handleCloseFrames(false)
                // Every close frame of this end is written on purpose (WebSocketFrameChannel,
                // V2Connection), or by the frame decoder on a violation (EncoderFirst): none
                // added at the channel's close, where Netty's handler wrote 1000 behind the
                // decoder's 1009 or closed a failure as a normal closure.
                .sendCloseFrame(null)
                .dropPongFrames(false) // Pongs must reach the idle check; the frame handler drops them.
                .handshakeTimeoutMillis(handshakeTimeout.toMillis())
                .build();
    }

    /**
     * The worker end's pipeline: HTTP for the handshake, the WebSocket client, the idle check,
     * then the uplink's frames. The keepalive tests build it on an {@code EmbeddedChannel}.
     */
    static void initPipeline(
            Channel ch, WebSocketClientProtocolConfig config, Duration idleTimeout, WebSocketFrameChannel frames) {
        ch.pipeline()
                .addLast(new HttpClientCodec())
                .addLast(new HttpObjectAggregator(64 * 1024))
                .addLast(new WebSocketClientProtocolHandler(config))
                .addLast(new EncoderFirst())
                .addLast(Keepalive.idleCheck(idleTimeout))
                .addLast(new WebSocketFrameAggregator(WebSocketFrameChannel.MAX_MESSAGE_BYTES))
                .addLast(frames.handler());
    }

    /**
     * The pipeline of a dialer that offers v2: as {@link #initPipeline}, but the uplink's frame
     * handling is chosen when the handshake completes, by the subprotocol the gateway selected.
     */
    void initPipelineNegotiating(
            Channel ch, WebSocketClientProtocolConfig config, Duration idleTimeout, WebSocketFrameChannel frames) {
        ch.pipeline()
                .addLast(new HttpClientCodec())
                .addLast(new HttpObjectAggregator(64 * 1024))
                .addLast(new WebSocketClientProtocolHandler(config))
                .addLast(new EncoderFirst())
                .addLast("uplink-idle", Keepalive.idleCheck(idleTimeout))
                .addLast("uplink-negotiated", new Negotiated(frames));
    }

    /**
     * Puts the WebSocket frame encoder on the socket's side of the frame decoder once the handshake
     * has installed them. Netty's client handshaker puts the encoder behind the decoder, so the
     * close frame the decoder writes itself on a violation (1009 for a frame over {@link
     * WebSocketFrameChannel#MAX_MESSAGE_BYTES}, 1002, 1007; RFC 6455 §7.4.1) reached the socket
     * unencoded and failed, and the peer got no reason; the gateway's end has them in this order
     * (Netty's server handshaker). Runs once, ahead of the handlers that take the handshake's end.
     */
    static final class EncoderFirst extends io.netty.channel.ChannelInboundHandlerAdapter {
        @Override
        public void userEventTriggered(io.netty.channel.ChannelHandlerContext ctx, Object evt) {
            if (evt == WebSocketClientProtocolHandler.ClientHandshakeStateEvent.HANDSHAKE_COMPLETE) {
                io.netty.channel.ChannelPipeline p = ctx.pipeline();
                io.netty.channel.ChannelHandlerContext encoder = p.context(WebSocketFrameEncoder.class);
                io.netty.channel.ChannelHandlerContext decoder = p.context(WebSocketFrameDecoder.class);
                if (encoder != null && decoder != null) {
                    String name = encoder.name();
                    p.remove(name);
                    // a new one: Netty's encoder is not sharable, so it cannot be added twice;
                    // masked, as a client's frames are (a v2 link may unmask them next)
                    p.addBefore(decoder.name(), name, new WebSocket13FrameEncoder(true));
                }
                p.remove(this);
            }
            ctx.fireUserEventTriggered(evt);
        }
    }

    /**
     * Installs the version the gateway selected, at the handshake's end and before any frame of it
     * is read (the event comes on the loop ahead of the bytes after the 101): v2's link, or v1's
     * frame channel.
     */
    private final class Negotiated extends io.netty.channel.ChannelInboundHandlerAdapter {
        private final WebSocketFrameChannel frames;

        Negotiated(WebSocketFrameChannel frames) {
            this.frames = frames;
        }

        @Override
        public void userEventTriggered(io.netty.channel.ChannelHandlerContext ctx, Object evt) {
            if (evt != WebSocketClientProtocolHandler.ClientHandshakeStateEvent.HANDSHAKE_COMPLETE) {
                ctx.fireUserEventTriggered(evt);
                return;
            }
            Channel ch = ctx.channel();
            WebSocketClientProtocolHandler ws = ch.pipeline().get(WebSocketClientProtocolHandler.class);
            String selected = ws == null ? null : ws.handshaker().actualSubprotocol();
            if (V2Limits.SUBPROTOCOL.equals(selected)) {
                if (!maskV2) {
                    unmasked(ch);
                }
                V2FrameChannel v2 = V2FrameChannel.install(
                        ch, V2Connection.Role.WORKER, "uplink-negotiated", opened -> connectedV2(ch, opened));
                ch.attr(Attrs.V2).set(v2);
                ctx.pipeline().remove(this);
                v2.open();
            } else {
                ctx.pipeline()
                        .addAfter(
                                ctx.name(),
                                "uplink-aggregator",
                                new WebSocketFrameAggregator(WebSocketFrameChannel.MAX_MESSAGE_BYTES))
                        .addAfter("uplink-aggregator", "uplink-frames", frames.handler());
                ctx.pipeline().remove(this);
                frames.open();
            }
            ctx.fireUserEventTriggered(evt);
        }

        /**
         * A failure before the handshake completed (the gateway refused the upgrade, TLS failed):
         * kept for the dialer's message ({@link #describe}: the refusal's status and reason, the TLS
         * check that failed), and the connection closed. It reached the pipeline's tail before, where
         * Netty logged its stack and the dialer said "closed before the handshake completed".
         */
        @Override
        public void exceptionCaught(io.netty.channel.ChannelHandlerContext ctx, Throwable cause) {
            frames.failedBeforeOpen(cause);
            ctx.close();
        }
    }

    /**
     * Swaps the WebSocket encoder for one that does not mask (section 9.1). RFC 6455 section 10.3's
     * masking keeps a browser's script from steering the bytes a cleartext intermediary parses; an
     * uplink carries no script's bytes, and on {@code wss://} no intermediary reads them. Unmasked,
     * a DATA frame's bytes go to the socket as they are instead of being copied and XORed.
     */
    private static void unmasked(Channel ch) {
        io.netty.channel.ChannelHandlerContext encoder = ch.pipeline().context(WebSocketFrameEncoder.class);
        if (encoder != null) {
            ch.pipeline().replace(encoder.name(), encoder.name(), new WebSocket13FrameEncoder(false));
        }
    }

    /** Takes a v2 link whose handshake completed; returns its receiver, or null after closing it. */
    private FrameChannel.@Nullable Receiver connectedV2(Channel ch, V2FrameChannel v2) {
        synchronized (lock) {
            if (closed || current != ch) {
                v2.close("worker stopping");
                return null;
            }
            failuresInARow = 0;
        }
        v2.onGoAway(() -> sentAway(ch));
        Keepalive.pingEvery(pingInterval, ch, v2::ping);
        log.info("uplink of worker {} connected to {} over {}", workerId, uri, V2Limits.SUBPROTOCOL);
        try {
            return requireNonNull(requireNonNull(onUplink, "onUplink").apply(v2), "the receiver onUplink returned");
        } catch (RuntimeException e) {
            log.error("uplink callback failed; closing the uplink", e);
            v2.close("worker failed to start the uplink");
            return null;
        }
    }

    /** Takes a connection whose handshake completed; returns its receiver, or null after closing it. */
    private FrameChannel.@Nullable Receiver connected(Channel ch, WebSocketFrameChannel frames) {
        synchronized (lock) {
            if (closed || current != ch) {
                frames.close("worker stopping");
                return null;
            }
            failuresInARow = 0;
        }
        Keepalive.pingEvery(pingInterval, frames.channel(), frames::ping);
        log.info("uplink of worker {} connected to {}", workerId, uri);
        try {
            Function<? super FrameChannel, ? extends FrameChannel.Receiver> any = onUplink;
            Function<? super WebSocketFrameChannel, ? extends FrameChannel.Receiver> v1 = onConnectedOverride;
            FrameChannel.Receiver r =
                    any != null ? any.apply(frames) : v1 != null ? v1.apply(frames) : onConnected.apply(frames);
            return requireNonNull(r, "the receiver onConnected returned");
        } catch (RuntimeException e) {
            log.error("uplink callback failed; closing the uplink", e);
            frames.close("worker failed to start the uplink");
            return null;
        }
    }

    /**
     * The gateway's GOAWAY on a v2 link (its drain began, PROTOCOL.md section 9.8): the slot is
     * dialled again now, within {@link #GOING_AWAY_REDIAL_JITTER}, and the link goes on with the
     * streams it runs until the gateway closes it. A draining gateway accepts no uplink, so the new
     * one reaches another replica, and the worker stays reachable through the cell the whole
     * drain, not only after it. At most one link of the slot is kept finishing its streams: a
     * GOAWAY on the new link while the old one still runs waits for its close, as before (a
     * gateway that sends every link away and never closes them holds two of the worker's links,
     * not one per dial). On the link's event loop.
     */
    private void sentAway(Channel ch) {
        long delay;
        synchronized (lock) {
            if (closed || current != ch || !retiring.isEmpty()) {
                return; // stopping, a second GOAWAY (dialled again already), or one link already retiring
            }
            current = null;
            retiring.add(ch);
            delay = goingAwayDelayMillis();
            retry = group.next().schedule(this::dial, delay, TimeUnit.MILLISECONDS);
        }
        log.info(
                "uplink of worker {} sent away by the gateway (GOAWAY); dialling its slot again in {} ms while"
                        + " the link finishes its streams",
                workerId,
                delay);
    }

    private void ended(Channel ch, ChannelFuture connect) {
        WebSocketFrameChannel frames = ch.attr(Attrs.FRAMES).get();
        V2FrameChannel v2 = ch.attr(Attrs.V2).get();
        boolean wasOpen = v2 != null || (frames != null && frames.wasOpened());
        Throwable failure = v2 != null ? v2.failure() : frames == null ? null : frames.failure();
        if (failure == null && connect.isDone() && !connect.isSuccess()) {
            // The connect failed (refused, timed out, unreachable): Netty fails its promise before
            // it closes the channel, and no handler saw it. Said as it is, not as a closed handshake.
            failure = connect.cause();
        }
        int peerCode = v2 != null ? v2.peerCloseCode() : frames == null ? -1 : frames.peerCloseCode();
        boolean goingAway = wasOpen && peerCode == WebSocketCloseStatus.ENDPOINT_UNAVAILABLE.code();
        String peerReason = v2 != null ? v2.peerCloseReason() : frames == null ? null : frames.peerCloseReason();
        long delay;
        synchronized (lock) {
            if (retiring.remove(ch)) {
                return; // sent away before: its slot was dialled again then
            }
            if (current == ch) {
                current = null;
            }
            if (closed) {
                return;
            }
            if (!wasOpen) {
                failuresInARow++;
            }
            delay = goingAway ? goingAwayDelayMillis() : backoffMillis(failuresInARow);
            retry = group.next().schedule(this::dial, delay, TimeUnit.MILLISECONDS);
        }
        if (!wasOpen) {
            attemptFailed(describe(failure), delay);
        } else if (goingAway) {
            log.info(
                    "uplink of worker {} closed by the gateway going away ({}); re-dialling in {} ms",
                    workerId,
                    peerReason,
                    delay);
        } else {
            log.info("uplink of worker {} closed; re-dialling in {} ms", workerId, delay);
        }
    }

    /**
     * Returns the delay before re-dialling a link the gateway closed with 1001 Going Away (its
     * drain): at random within {@link #GOING_AWAY_REDIAL_JITTER}, so that the links a drain closes
     * at once do not all dial in the same millisecond, and no backoff: the gateway did not fail.
     */
    static long goingAwayDelayMillis() {
        return ThreadLocalRandom.current().nextLong(GOING_AWAY_REDIAL_JITTER.toMillis() + 1);
    }

    /** Returns the delay before the next dial after {@code failures} failed attempts in a row. */
    long backoffMillis(int failures) {
        long min = reconnectMin.toMillis();
        long max = reconnectMax.toMillis();
        int shift = Math.min(Math.max(failures - 1, 0), 30);
        long ceiling = Math.min(max, min << shift);
        long floor = Math.max(1, ceiling / 2);
        return floor + ThreadLocalRandom.current().nextLong(ceiling - floor + 1);
    }

    private Throwable describe(@Nullable Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof SSLException tlsFailure) {
                return new IOException(
                        "TLS with " + host() + ":" + port() + " failed, nothing was sent: "
                                + UplinkTls.reason(tlsFailure, host(), caFile),
                        failure);
            }
        }
        if (failure instanceof WebSocketClientHandshakeException refused && refused.response() != null) {
            var response = refused.response();
            String reason = response.headers().get(UplinkAcceptor.REFUSAL_HEADER);
            return new IOException(
                    "uplink refused: " + response.status() + (reason == null ? "" : ": " + reason), failure);
        }
        if (failure instanceof ConnectException || failure instanceof UnknownHostException) {
            return new IOException(connectReason(failure, host() + ":" + port(), connectTimeout), failure);
        }
        if (failure != null) {
            return failure;
        }
        return new IOException("uplink closed before the handshake completed"
                + (tls == null ? " (if the gateway's port speaks TLS, dial wss://)" : ""));
    }

    /**
     * Says why a connection to {@code address} could not be made, in plain words and with what to
     * check, instead of the transport's wording (epoll's is {@code finishConnect(..) failed with
     * error(-111): Connection refused}, NIO's {@code Connection refused: /127.0.0.1:8080}).
     */
    static String connectReason(Throwable failure, String address, Duration connectTimeout) {
        if (failure instanceof ConnectTimeoutException) {
            return "no answer to the connect from " + address + " within " + connectTimeout.toMillis()
                    + " ms (a firewall dropping it, or a host that is down)";
        }
        if (failure instanceof UnknownHostException) {
            return "cannot resolve " + address + ": " + failure.getMessage();
        }
        String message = String.valueOf(failure.getMessage());
        if (message.toLowerCase(Locale.ROOT).contains("refused")) {
            return "connection refused by " + address
                    + ": nothing listens there (a wrong port, or the gateway is down)";
        }
        // The system's words after the transport's prefix, e.g. "No route to host".
        int errno = message.indexOf("): ");
        return "connect to " + address + " failed: " + (errno >= 0 ? message.substring(errno + 3) : message);
    }

    /** Resolves a host name to every address it has. */
    @FunctionalInterface
    interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    /** Options of an {@link UplinkDialer}. */
    public static final class Builder {
        private final URI uri;
        private final String workerId;
        private final String token;
        private final EventLoopGroup group;
        private Class<? extends Channel> channelType = NioSocketChannel.class;
        private String subprotocol = FrameCodec.SUBPROTOCOL;
        private Duration reconnectMin = Limits.RECONNECT_MIN;
        private Duration reconnectMax = Limits.RECONNECT_MAX;
        private Duration pingInterval = DEFAULT_PING_INTERVAL;
        private @Nullable Duration idleTimeout;
        private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
        private Duration handshakeTimeout = DEFAULT_HANDSHAKE_TIMEOUT;
        private Function<? super WebSocketFrameChannel, ? extends FrameChannel.Receiver> onConnected = c -> IGNORING;
        private @Nullable Function<? super FrameChannel, ? extends FrameChannel.Receiver> onUplink;
        private boolean offerV2 = true;
        private boolean maskV2;
        private Consumer<Throwable> onAttemptFailed = e -> {};
        private @Nullable Path caFile;
        private int slot;
        private boolean spread;
        private Resolver resolver = InetAddress::getAllByName;

        private Builder(URI uri, String workerId, String token, EventLoopGroup group) {
            this.uri = requireNonNull(uri, "uri");
            this.workerId = requireNonNull(workerId, "workerId");
            this.token = requireNonNull(token, "token");
            this.group = requireNonNull(group, "group");
            if (!("ws".equals(uri.getScheme()) || "wss".equals(uri.getScheme())) || uri.getHost() == null) {
                throw new IllegalArgumentException("expected wss://host[:port]/uplink or ws://..., got " + uri);
            }
        }

        /**
         * Sets the slot of this link among the worker's links (default 0), sent as {@link
         * UplinkAcceptor#LINK_HEADER}: a re-dial of the slot replaces the gateway's old link in it.
         */
        public Builder slot(int slot) {
            if (slot < 0 || slot > UplinkAcceptor.MAX_SLOT) {
                throw new IllegalArgumentException("slot " + slot + " is outside 0.." + UplinkAcceptor.MAX_SLOT);
            }
            this.slot = slot;
            return this;
        }

        /**
         * Spreads the worker's links over the addresses the gateway's host name resolves to
         * (default off): this link dials address {@code slot mod n}, re-resolved at each dial.
         */
        public Builder spreadOverAddresses(boolean on) {
            this.spread = on;
            return this;
        }

        /** Sets how host names resolve (tests: a name with chosen addresses). */
        Builder resolver(Resolver r) {
            this.resolver = requireNonNull(r, "resolver");
            return this;
        }

        /**
         * Trusts only the certificates of this PEM file (a private CA) for a {@code wss://} dial,
         * instead of the JDK's trust store.
         */
        public Builder caFile(Path file) {
            this.caFile = requireNonNull(file, "file");
            return this;
        }

        /**
         * Sets the callback that takes each connected uplink and returns its receiver (on its event
         * loop, before any frame is read); without one, received frames are dropped. A callback
         * that throws closes the uplink.
         */
        public Builder onConnected(Function<? super WebSocketFrameChannel, ? extends FrameChannel.Receiver> callback) {
            this.onConnected = requireNonNull(callback, "callback");
            return this;
        }

        /**
         * Sets the callback that takes each connected uplink of either protocol version and returns
         * its receiver (a v2 frame channel when the gateway selected {@code spector-uplink.v2},
         * else a {@link WebSocketFrameChannel}); with it the dialer offers {@code
         * spector-uplink.v2, spector-uplink.v1} (docs/PROTOCOL.md section 9.1) unless {@link
         * #offerV2} turned v2 off. It replaces {@link #onConnected}.
         */
        public Builder onUplink(Function<? super FrameChannel, ? extends FrameChannel.Receiver> callback) {
            this.onUplink = requireNonNull(callback, "callback");
            return this;
        }

        /** Sets whether a dialer with {@link #onUplink} offers v2 (default true); off, it speaks v1 only. */
        public Builder offerV2(boolean on) {
            this.offerV2 = on;
            return this;
        }

        /**
         * Sets whether a v2 link masks the frames it sends (default false: section 9.1). Turn it on
         * behind an intermediary that parses WebSocket frames and insists on RFC 6455's masks.
         */
        public Builder maskV2(boolean on) {
            this.maskV2 = on;
            return this;
        }

        /** Sets the callback told of each failed attempt (refusals name the gateway's reason). */
        public Builder onAttemptFailed(Consumer<Throwable> callback) {
            this.onAttemptFailed = requireNonNull(callback, "callback");
            return this;
        }

        /** Sets the socket channel type for {@code group} (default NIO). */
        public Builder channelType(Class<? extends SocketChannel> type) {
            this.channelType = requireNonNull(type, "type");
            return this;
        }

        /** Sets the subprotocol offered (tests of refusals only). */
        public Builder subprotocol(String protocol) {
            this.subprotocol = requireNonNull(protocol, "protocol");
            return this;
        }

        /** Sets the backoff bounds between dials. */
        public Builder reconnect(Duration min, Duration max) {
            positive(min, "min");
            positive(max, "max");
            if (max.compareTo(min) < 0) {
                throw new IllegalArgumentException("reconnect max " + max + " is below min " + min);
            }
            this.reconnectMin = min;
            this.reconnectMax = max;
            return this;
        }

        /** Sets the ping interval (default {@link #DEFAULT_PING_INTERVAL}). */
        public Builder pingInterval(Duration interval) {
            this.pingInterval = positive(interval, "pingInterval");
            return this;
        }

        /**
         * Sets how long the uplink may receive nothing (pongs included) before the worker closes
         * and re-dials it; it must exceed the ping interval (default {@link #IDLE_PING_INTERVALS}
         * ping intervals, {@link #DEFAULT_IDLE_TIMEOUT} with the default interval).
         */
        public Builder idleTimeout(Duration timeout) {
            this.idleTimeout = positive(timeout, "idleTimeout");
            return this;
        }

        /** Sets the bound on the TCP connect. */
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = positive(timeout, "connectTimeout");
            return this;
        }

        /** Sets the bound on the WebSocket handshake. */
        public Builder handshakeTimeout(Duration timeout) {
            this.handshakeTimeout = positive(timeout, "handshakeTimeout");
            return this;
        }

        /** Builds the dialer (not dialling yet: call {@link UplinkDialer#start()}). */
        public UplinkDialer build() {
            return new UplinkDialer(this);
        }

        private static Duration positive(Duration d, String name) {
            requireNonNull(d, name);
            if (d.isNegative() || d.isZero()) {
                throw new IllegalArgumentException(name + " must be positive: " + d);
            }
            return d;
        }
    }

    private static final class Attrs {
        static final io.netty.util.AttributeKey<WebSocketFrameChannel> FRAMES =
                io.netty.util.AttributeKey.valueOf(UplinkDialer.class, "frames");

        /** The v2 link, once the handshake selected v2. */
        static final io.netty.util.AttributeKey<V2FrameChannel> V2 =
                io.netty.util.AttributeKey.valueOf(UplinkDialer.class, "v2");

        private Attrs() {}
    }
}
