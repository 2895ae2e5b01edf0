package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin listener ({@code spector.server.admin-port}): health and Prometheus metrics on a thread
 * of their own, apart from the traffic.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>Why a port of its own.</b> On the client port a health check is one more connection of
 *       a traffic event loop, answered when the loop reaches it. A loop relaying a burst (10 000 SSE
 *       streams whose owner publishes to all of them at once: about 5 000 events per loop, back to
 *       back) reached it after 40-368 ms (bench/README, "Idle SSE streams"). Here requests run on
 *       one thread ({@value #THREAD_NAME}, accepting and serving) that no traffic runs on, and it
 *       waits on no traffic loop: it reads the health's state (volatile snapshots) directly, and
 *       the scrape is rendered by the render thread both ports share ({@link ScrapeRenderer}),
 *       its answer written back here. Envoy keeps its admin listener off its workers the same way
 *       (on its main thread); nginx has no such split.
 *   <li><b>What it serves.</b> {@code /actuator/health} and its {@code liveness} and {@code
 *       readiness} groups, {@code /actuator/prometheus}: the same answers as on the client port
 *       ({@link LocalEndpoints}), for {@code GET} and {@code HEAD} (no body), in order: a request
 *       that comes while a scrape waits for its render waits behind it, decoding and reading
 *       stopped. A client that half-closes while its scrape waits gets the answer, then the close.
 *       Any other path is 404, any other method 405 with {@code Allow}, each a problem+json with
 *       its {@code code}. No auth, no CORS, no access log: it is the operator's port (bind it where
 *       only probes and scrapers reach, as Envoy's documentation says of its admin).
 *   <li><b>Bounds.</b> At most {@link #MAX_CONNECTIONS} open at once: one more closes the open
 *       connection that has waited longest for a head ({@link #evictLongestWaiting}), so clients
 *       that hold connections without asking cannot keep a probe out; heads within {@link
 *       #MAX_HEAD_BYTES} and lines within {@link #MAX_LINE_BYTES} (431 and 414, then close); a
 *       request read while the answers its client has not taken pass {@link #WATER_MARK}'s high
 *       mark closes the connection unanswered (a probe or a scraper asks one thing at a time; a
 *       client pipelining scrapes it never reads would otherwise have the gateway render and hold
 *       them all); a head must arrive within {@code spector.server.header-timeout} of the
 *       connection or of the last answer, so an idle keep-alive connection closes after it too
 *       (nginx's {@code client_header_timeout} and {@code keepalive_timeout} in one); no request
 *       body (413, then close: none of its routes takes one).
 *   <li><b>The drain.</b> It stays up while the gateway drains, so the readiness probe sees {@code
 *       OUT_OF_SERVICE}; {@link #close} runs after the drain.
 * </ul>
 *
 * <p>Thread-safety: every connection runs on the listener's one thread (a scrape's answer comes
 * back to it); {@link #close} on any thread, once.
 *
 * @param group the listener's one thread
 * @param server the bound listener
 * @param connections the open admin connections, closed with it
 */
record AdminListener(EventLoopGroup group, Channel server, ChannelGroup connections) implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AdminListener.class);

    /** The admin thread's name. */
    static final String THREAD_NAME = "spector-admin";

    /** Admin connections open at once: probes and a scraper or two; more are closed as accepted. */
    static final int MAX_CONNECTIONS = 16;

    /** The longest request line (414 past it): the routes are short. */
    static final int MAX_LINE_BYTES = 4096;

    /** The largest request head (431 past it). */
    static final int MAX_HEAD_BYTES = 8192;

    /**
     * The answers a connection may hold unsent: a request read while its client has not taken the
     * answers before it down from the high mark closes the connection instead of being answered.
     */
    static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(32 * 1024, 64 * 1024);

    /** The methods the routes answer. */
    static final String ALLOW = "GET, HEAD";

    /** How long {@link #close} lets the thread finish. */
    private static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(2);

    /**
     * Binds {@code port} on {@code host} with a thread of its own.
     *
     * @param headerTimeout a head must arrive within it of the connection or of the last answer
     *     ({@code spector.server.header-timeout})
     */
    static AdminListener bind(
            String host,
            int port,
            LocalEndpoints local,
            IoHandlerFactory io,
            Class<? extends ServerChannel> serverClass,
            Duration headerTimeout) {
        requireNonNull(local, "local");
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory(THREAD_NAME, true), io);
        // stayClosed: a connection accepted while the listener closes is closed as it joins, not kept
        ChannelGroup open = new DefaultChannelGroup("admin", GlobalEventExecutor.INSTANCE, true);
        AtomicInteger count = new AtomicInteger();
        HttpDecoderConfig decoder = new HttpDecoderConfig()
                .setMaxInitialLineLength(MAX_LINE_BYTES)
                .setMaxHeaderSize(MAX_HEAD_BYTES)
                .setStrictLineParsing(true);
        try {
            ServerBootstrap bootstrap = new ServerBootstrap()
                    .group(group)
                    .channel(serverClass)
                    .option(ChannelOption.SO_BACKLOG, MAX_CONNECTIONS)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
                    .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true) // a scrape's answer outlives the FIN
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            if (count.incrementAndGet() > MAX_CONNECTIONS && !evictLongestWaiting(open)) {
                                count.decrementAndGet();
                                log.warn("admin port: refused a connection, {} open", MAX_CONNECTIONS);
                                ch.close();
                                return;
                            }
                            ch.closeFuture().addListener(f -> count.decrementAndGet());
                            open.add(ch);
                            ClientCodec codec = new ClientCodec(
                                    decoder, false); // it can stop between requests; it passes no upgrade
                            ch.pipeline()
                                    .addLast("codec", codec.decoder())
                                    .addLast(ClientCodec.ENCODER_NAME, codec.encoder())
                                    .addLast("admin", new Handler(local, headerTimeout, codec.decoder()));
                        }
                    });
            Channel server = Listen.bind(bootstrap, new InetSocketAddress(host, port), "spector.server.admin-port");
            log.info("admin listening on {} (health and metrics on thread {})", server.localAddress(), THREAD_NAME);
            return new AdminListener(group, server, open);
        } catch (RuntimeException e) {
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            throw e;
        }
    }

    /**
     * Makes room for a connection past {@link #MAX_CONNECTIONS}: closes the open one that has waited
     * longest for a head (an idle keep-alive, or a client sending its head a byte at a time), as
     * nginx closes its reusable connections when it runs out ({@code ngx_drain_connections}). On
     * the admin thread every open connection but one whose scrape waits for its render is waiting
     * for a head (every other answer is made and written within its read), so the oldest wait is
     * the one least likely to be a probe: a probe sends its head as it connects. Without this, 16
     * connections that dribble their heads kept every probe out for a header timeout (30 s: a
     * liveness probe failing three times restarts the pod).
     * Returns false when no connection could be closed (none found waiting).
     */
    private static boolean evictLongestWaiting(ChannelGroup open) {
        Channel victim = null;
        long since = Long.MAX_VALUE;
        for (Channel c : open) {
            Handler h = c.pipeline().get(Handler.class);
            if (h != null && c.isActive() && !h.awaitingScrape && h.waitingSince < since) {
                since = h.waitingSince;
                victim = c;
            }
        }
        if (victim == null) {
            return false;
        }
        log.debug(
                "admin port: {} connections open, closed {} (waiting for a head for {} ms) for a new one",
                MAX_CONNECTIONS,
                victim.remoteAddress(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - since));
        victim.close();
        return true;
    }

    /** Returns the bytes of answers written and not yet taken by the clients, over every connection (tests). */
    long unsentBytes() {
        long sum = 0;
        for (Channel c : connections) {
            var buffer = c.unsafe().outboundBuffer();
            sum += buffer == null ? 0 : buffer.totalPendingWriteBytes();
        }
        return sum;
    }

    /** Returns the bound port. */
    int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** Stops accepting, closes the open connections and stops the thread (bounded). */
    @Override
    public void close() {
        server.close().awaitUninterruptibly(SHUTDOWN_TIMEOUT.toMillis());
        connections.close().awaitUninterruptibly(SHUTDOWN_TIMEOUT.toMillis());
        group.shutdownGracefully(0, SHUTDOWN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .awaitUninterruptibly(SHUTDOWN_TIMEOUT.toMillis() + 1000);
    }

    /**
     * One admin connection: answers each request as its head arrives, in order (HTTP/1.1
     * keep-alive and pipelining; HTTP/1.0 closes unless it asked to keep the connection).
     *
     * <pre>
     *  WAITING_HEAD --head--> answered (keep-alive: WAITING_HEAD again, timer re-armed)
     *       |                    \--(body, decoder failure, close asked)--> closing
     *       |--scrape--> AWAITING_SCRAPE --render done--> answered, then the head that came meanwhile
     *       |                (one head is held, decoding and reading stopped; no head timer, not evicted;
     *       |                 a FIN meanwhile makes the scrape's answer the last)
     *       |--FIN--> closed
     *       |--head, the answers before it not taken (past the high water mark)--> closed
     *       |--header-timeout--> closed
     *       \--a connection past the limit, this one the longest waiting--> closed
     * </pre>
     */
    private static final class Handler extends ChannelInboundHandlerAdapter {
        private final LocalEndpoints local;
        private final Duration headerTimeout;
        /** The head timer while a head is awaited, else null. Confined to the admin thread. */
        private @Nullable Future<?> headTimer;
        /** Set once the connection's last answer is written: what follows is dropped. */
        private boolean closing;
        /** When the connection began to wait for its next head ({@link System#nanoTime}). Confined to the admin thread. */
        long waitingSince = System.nanoTime();
        /** Set while a scrape waits for its render ({@link LocalEndpoints#scrape}). Confined to the admin thread. */
        boolean awaitingScrape;
        /**
         * A request that came while a scrape waited, answered after it; else null. Decoding and
         * reading stop as it comes, so it is the only one ({@link ClientCodec}).
         */
        private @Nullable Object held;
        /** The client half-closed while a scrape waited: its answer is the last. Confined to the admin thread. */
        private boolean inputShut;

        private final ClientCodec.Decoder decoder;

        Handler(LocalEndpoints local, Duration headerTimeout, ClientCodec.Decoder decoder) {
            this.local = local;
            this.headerTimeout = headerTimeout;
            this.decoder = decoder;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            armHeadTimer(ctx);
            ctx.fireChannelActive();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            cancelHeadTimer();
            Object h = held;
            held = null;
            ReferenceCountUtil.release(h);
            ctx.fireChannelInactive();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt instanceof ChannelInputShutdownEvent) {
                if (awaitingScrape) {
                    inputShut = true; // it asked, and sends no more: the answer goes, then the close
                } else {
                    ctx.close(); // as a FIN closed the connection before half-closure was allowed
                }
            }
            ctx.fireUserEventTriggered(evt);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (awaitingScrape && msg instanceof HttpRequest) {
                held = msg; // what follows it stays bytes until its turn
                decoder.pause();
                ctx.channel().config().setAutoRead(false);
                return;
            }
            onMessage(ctx, msg);
        }

        private void onMessage(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof HttpRequest request && !closing) {
                    cancelHeadTimer();
                    if (ctx.channel().isWritable()) {
                        answer(ctx, request);
                    } else {
                        closing = true; // its client reads nothing of what it asked before
                        log.debug(
                                "admin connection {}: {} bytes of answers not taken, closed",
                                ctx.channel().remoteAddress(),
                                WATER_MARK.high());
                        ctx.close();
                    }
                }
            } finally {
                ReferenceCountUtil.release(msg); // a request's body, if any, is refused, never read
            }
        }

        private void answer(ChannelHandlerContext ctx, HttpRequest request) {
            FullHttpResponse r;
            boolean keepAlive = HttpUtil.isKeepAlive(request);
            String path = path(request.uri());
            String badHost = hostProblem(request);
            if (request.decoderResult().isFailure()) {
                r = Responses.decoderFailure(request.decoderResult().cause(), null);
                keepAlive = false; // the decoder discards the rest of the connection
            } else if (request.protocolVersion().majorVersion() != 1) {
                r = Responses.problem( // RFC 9112 §2.3: not served as HTTP/1.1, as on the client port
                        SpectorException.badRequest(
                                "version", request.protocolVersion().text() + " (expected: HTTP/1.0 or HTTP/1.1)"),
                        path,
                        null,
                        HttpResponseStatus.HTTP_VERSION_NOT_SUPPORTED);
                keepAlive = false;
            } else if (badHost != null) {
                r = Responses.problem(SpectorException.badRequest("Host", badHost), path, null);
                keepAlive = false; // RFC 9112 §3.2: 400; nginx closes after it too
            } else if (HttpUtil.getContentLength(request, 0L) > 0 || HttpUtil.isTransferEncodingChunked(request)) {
                r = Responses.problem(
                        SpectorException.of(
                                ErrorCode.PAYLOAD_TOO_LARGE,
                                "the admin port takes no request body",
                                Map.of("limitBytes", 0L)),
                        path,
                        null);
                keepAlive = false; // the body is not read: the connection's framing ends here
            } else {
                if (!isAdminRoute(path)) {
                    r = Responses.problem(
                            SpectorException.of(
                                    ErrorCode.NOT_FOUND,
                                    "the admin port serves /actuator/health and /actuator/prometheus",
                                    Map.of("path", path)),
                            path,
                            null);
                } else if (!HttpMethod.GET.equals(request.method()) && !HttpMethod.HEAD.equals(request.method())) {
                    r = Responses.problem(
                            SpectorException.badRequest("method", ALLOW + " only"),
                            path,
                            null,
                            HttpResponseStatus.METHOD_NOT_ALLOWED);
                    r.headers().set(HttpHeaderNames.ALLOW, ALLOW); // RFC 9110 §15.5.6
                } else if (path.equals(LocalEndpoints.PROMETHEUS)) {
                    awaitingScrape = true; // rendered off this thread: the answer comes in a task of its own
                    boolean keep = keepAlive;
                    HttpVersion version = request.protocolVersion();
                    local.scrape(
                            ctx.channel(),
                            HttpMethod.HEAD.equals(request.method()),
                            null,
                            scrape -> onScrape(ctx, version, scrape, keep));
                    return;
                } else {
                    r = requireNonNull(local.answer(request.method(), path, request.headers()), path); // a route's
                }
            }
            send(ctx, request.protocolVersion(), r, keepAlive);
        }

        /** Sends a scrape's answer, then answers the request that came while it waited, and goes on reading. */
        private void onScrape(ChannelHandlerContext ctx, HttpVersion version, FullHttpResponse r, boolean keepAlive) {
            awaitingScrape = false;
            send(ctx, version, r, keepAlive && !inputShut);
            Object next = held;
            held = null;
            if (next != null) {
                onMessage(ctx, next); // a scrape again keeps decoding and reading stopped
            }
            if (!awaitingScrape) {
                decoder.resume();
                ctx.channel().config().setAutoRead(true);
            }
        }

        /** Writes an answer: the connection's last unless {@code keepAlive}, else the head timer re-armed. */
        private void send(ChannelHandlerContext ctx, HttpVersion version, FullHttpResponse r, boolean keepAlive) {
            if (!keepAlive) {
                closing = true;
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            if (version.equals(HttpVersion.HTTP_1_0)) {
                r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE); // RFC 9112 §9.3
            }
            ctx.writeAndFlush(r);
            armHeadTimer(ctx);
        }

        /**
         * Returns why a request's {@code Host} is refused, or null (RFC 9112 §3.2: an HTTP/1.1
         * request carries exactly one; an HTTP/1.0 request at most one). The value itself names
         * nothing here: the admin port serves one set of routes under any name.
         */
        private static @Nullable String hostProblem(HttpRequest request) {
            int hosts = request.headers().getAll(HttpHeaderNames.HOST).size();
            if (hosts > 1) {
                return "sent on " + hosts + " field lines (expected: one)";
            }
            return hosts == 0 && request.protocolVersion().minorVersion() >= 1
                    ? "missing (required in " + request.protocolVersion().text() + ")"
                    : null;
        }

        /** The routes served here: the actuator's, never a namespace's or a relay's. */
        private static boolean isAdminRoute(String path) {
            return LocalEndpoints.isActuator(path);
        }

        /** The target's path: an origin-form target up to its query (anything else matches no route). */
        private static String path(String uri) {
            int q = uri.indexOf('?');
            return q < 0 ? uri : uri.substring(0, q);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            log.debug("admin connection {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
            ctx.close();
        }

        private void armHeadTimer(ChannelHandlerContext ctx) {
            cancelHeadTimer();
            waitingSince = System.nanoTime();
            headTimer = ctx.executor()
                    .schedule(
                            () -> {
                                log.debug(
                                        "admin connection {}: no head within {} ms, closed",
                                        ctx.channel().remoteAddress(),
                                        headerTimeout.toMillis());
                                ctx.close();
                            },
                            headerTimeout.toMillis(),
                            TimeUnit.MILLISECONDS);
        }

        private void cancelHeadTimer() {
            Future<?> t = headTimer;
            if (t != null) {
                t.cancel(false);
                headTimer = null;
            }
        }
    }
}
