package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.EventLoop;
import io.netty.channel.pool.ChannelPoolHandler;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.resolver.dns.DnsAddressResolverGroup;
import io.netty.resolver.dns.DnsServerAddressStreamProviders;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.FastThreadLocal;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import io.netty.util.concurrent.ScheduledFuture;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kept-alive HTTP/1.1 connections to owners: one pool per (event loop, owner), confined to its
 * loop, so an exchange's owner connection runs on the same event loop as its client connection
 * and no byte crosses threads.
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li>Bounded: {@link TransportSpec#maxConnectionsPerOwner()} connections (open or connecting)
 *       and {@link TransportSpec#maxPendingAcquires()} waiters per pool; a waiter gives up after
 *       {@link TransportSpec#acquireTimeout()} (the forwarder answers 503).
 *   <li>Stale connections: LIFO reuse keeps the hottest connections busy and lets the rest go
 *       idle; the pool closes one that stayed in its deque {@link TransportSpec#maxIdleTime()}
 *       (background eviction: the deque's tail is the oldest, and one timer per pool is armed for
 *       it while the deque holds any), and acquire checks that a pooled one is still open. A
 *       connection that dies as it is reused is retried once by the forwarder. (An idle handler in
 *       each connection's pipeline did the same at the cost of a hop per read and write: issue 14.)
 *   <li>Cheap reuse: the pool is a deque on its loop, so taking an idle connection costs one
 *       succeeded future and giving it back none (Netty's {@code FixedChannelPool} made about eight
 *       promises and listeners per acquire and release, and a health-check future each way: issue
 *       14). A connection's states: connecting (counted) -> in use -> idle (in the deque) -> in use
 *       ... -> closed; its close future takes it out of the count and the deque, and lets a waiter
 *       connect in its place.
 *   <li>Event streams leave the count (issue 14): an exchange whose response turns out to be an
 *       event stream ({@link #stream}) takes its connection out of the pool's {@code open} and
 *       into its {@code streams}, bounded apart ({@link TransportSpec#maxStreamsPerOwner()}), and a
 *       waiter may connect in its place. Before, 256 subscribers of one owner on a loop held every
 *       connection its pool would open, and each other request to that owner on the loop waited
 *       2 s for a 503: a lockout any client could cause with a few hundred GETs. A stream given
 *       back reusable comes back into {@code open} when there is room, else it is closed. Envoy's
 *       and HAProxy's per-upstream bounds count a stream as any request; nginx sets none. Slow
 *       uploads still count (nginx avoids that by buffering whole request bodies first; this
 *       gateway streams them).
 *   <li>Each channel carries one permanent {@link OwnerChannelHandler} whose {@link Listener} is
 *       set while an exchange holds the channel; anything an owner sends while no exchange holds
 *       it is released and the connection closed.
 *   <li>Pools are retired: one left with no connection, stream or waiter for {@link
 *       TransportSpec#maxIdleTime()} leaves the map, so the pools of addresses that went away (a
 *       rollout's old pods, a peer replica that left) do not pile up for the process's life. An
 *       acquire that reaches a retired pool (it looked it up just before) asks the map again, on
 *       the loop, where no retirement can come between.
 * </ul>
 *
 * <p>Concurrency: pools are created lazily and concurrently; each pool's work runs on its loop.
 */
public final class UpstreamHttpTransport implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(UpstreamHttpTransport.class);

    /** The name of an owner connection's HTTP codec in its pipeline. */
    static final String CODEC = "codec";

    /** The name of an owner connection's last handler, {@link OwnerChannelHandler}. */
    static final String OWNER = "owner";

    private final TransportSpec spec;
    private final Class<? extends Channel> channelClass;
    private final DnsAddressResolverGroup resolver;
    private final Map<PoolKey, Pool> pools = new ConcurrentHashMap<>();
    private final AtomicInteger connections = new AtomicInteger();
    /** Event streams out of their pools' connection counts ({@link #stream}), all pools together. */
    private final AtomicInteger streams = new AtomicInteger();
    /**
     * The pool each loop acquired from last, in the loop thread's own slot: a run of requests to
     * one owner (the same {@code URI} of one ring) skips the map's key and look-up (issue 14).
     */
    private final FastThreadLocal<Pool> lastPool = new FastThreadLocal<>();

    private volatile boolean closed;

    /**
     * Creates a transport whose connections use {@code channelClass} and whose owner host names are
     * resolved by Netty's asynchronous DNS resolver over {@code datagramClass}; both must match the
     * event loops passed to {@link #acquire} (epoll loops with epoll channels, NIO with NIO). IP
     * literals are used as they are; a name is never resolved by blocking an event loop.
     */
    public UpstreamHttpTransport(
            TransportSpec spec, Class<? extends Channel> channelClass, Class<? extends DatagramChannel> datagramClass) {
        this.spec = requireNonNull(spec, "spec");
        this.channelClass = requireNonNull(channelClass, "channelClass");
        this.resolver = new DnsAddressResolverGroup(
                requireNonNull(datagramClass, "datagramClass"), DnsServerAddressStreamProviders.platformDefault());
    }

    /**
     * Returns a connection to an upstream, on {@code loop}, completing on that loop; what the
     * connection delivers goes to {@code listener} from the moment the returned future's listeners
     * run until the caller gives the channel back with {@link #release}.
     */
    public Future<Channel> acquire(EventLoop loop, URI owner, Listener listener) {
        requireNonNull(listener, "listener");
        // Added first, so it runs before any listener the caller adds, in the same notification.
        return acquire(loop, owner).addListener(f -> {
            if (f.isSuccess()) {
                listen((Channel) f.getNow(), listener);
            }
        });
    }

    /**
     * Returns a connection to an owner, on {@code loop}, completing on that loop, with no listener
     * yet: the forwarder sets it with {@link #listen} once the exchange takes the connection, and
     * gives the channel back with {@link #release}.
     */
    Future<Channel> acquire(EventLoop loop, URI owner) {
        if (closed) {
            return loop.newFailedFuture(new ClosedChannelException());
        }
        boolean onLoop = loop.inEventLoop();
        Pool last = onLoop ? lastPool.getIfExists() : null;
        Pool pool;
        if (last != null && last.loop == loop && last.owner.equals(owner)) { // equals: identity first
            pool = last; // a retired one sends its acquire back to the map (Pool.acquire)
        } else {
            pool = pools.computeIfAbsent(new PoolKey(loop, owner), this::newPool);
            if (onLoop) {
                lastPool.set(pool);
            }
        }
        if (onLoop) {
            Channel idle = pool.takeIdle();
            if (idle != null) {
                return loop.newSucceededFuture(idle); // the hot path: no promise, no listener
            }
        }
        Promise<Channel> out = loop.newPromise();
        onLoop(loop, () -> pool.acquire(out), out);
        return out;
    }

    private static void onLoop(EventLoop loop, Runnable task, @Nullable Promise<Channel> failOnRejection) {
        if (loop.inEventLoop()) {
            task.run();
            return;
        }
        try {
            loop.execute(task);
        } catch (RejectedExecutionException e) {
            if (failOnRejection != null) {
                failOnRejection.tryFailure(new ClosedChannelException());
            }
        }
    }

    /** Answers whether an acquire failed because the owner's pool is exhausted (not closed, not down). */
    static boolean isPoolExhausted(@Nullable Throwable cause) {
        return cause instanceof PoolExhaustedException;
    }

    /**
     * Every connection to the owner is busy and too many acquires already wait, or a waiter gave
     * up after {@link TransportSpec#acquireTimeout()}. Frequent under overload: no stack trace.
     */
    static final class PoolExhaustedException extends Exception {
        private static final long serialVersionUID = 1L;

        PoolExhaustedException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Returns a new connection to an owner that belongs to no pool (for an upgrade, which keeps it
     * for the life of a WebSocket), with the same handlers as a pooled one; {@link #release} closes
     * it, and {@link #detach} takes it out of the transport's hands after a {@code 101}.
     */
    Future<Channel> connect(EventLoop loop, URI owner) {
        if (closed) {
            return loop.newFailedFuture(new ClosedChannelException());
        }
        Promise<Channel> out = loop.newPromise();
        bootstrap(loop, owner)
                .handler(new io.netty.channel.ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        OwnerChannelHandler h = new PoolHandler().created(ch, true);
                        h.inUse = true;
                        h.uses++;
                    }
                })
                .connect()
                .addListener(f -> {
                    if (f.isSuccess()) {
                        out.trySuccess(((io.netty.channel.ChannelFuture) f).channel());
                    } else {
                        out.tryFailure(f.cause());
                    }
                });
        return out;
    }

    /** An owner connection's HTTP codec, a new one. */
    private OwnerCodec newCodec() {
        HttpDecoderConfig decoder = new HttpDecoderConfig()
                .setMaxInitialLineLength(spec.maxInitialLineBytes())
                .setMaxHeaderSize(spec.maxResponseHeaderBytes())
                .setMaxChunkSize(64 * 1024)
                .setHeadersFactory(DecodedHeaders.FACTORY); // sealed when the exchange takes the head
        return new OwnerCodec(decoder);
    }

    /**
     * Puts a new HTTP codec back in front of an owner connection's handler, after a response body
     * went around the old one ({@link ResponseSplice}, which took it out): the connection can then
     * carry its next exchange.
     */
    void restoreCodec(Channel channel) {
        if (channel.pipeline().get(CODEC) == null && channel.pipeline().get(OWNER) != null) {
            channel.pipeline().addBefore(OWNER, CODEC, newCodec());
        }
    }

    /**
     * After a {@code 101} on a connection that keeps its codec (the worker's splice): the codec
     * passes bytes as they are both ways from now on. Returns false when the connection has no
     * codec of the transport's.
     */
    public static boolean passBytesAfterUpgrade(Channel channel) {
        ChannelHandlerContext codec = channel.pipeline().context(CODEC);
        if (codec == null || !(codec.handler() instanceof OwnerCodec c)) {
            return false;
        }
        c.prepareUpgradeFrom(codec);
        return true;
    }

    /**
     * Takes an unpooled connection out of the transport after its owner switched protocols: its
     * HTTP handlers are removed (bytes the decoder still held are handed on down the pipeline),
     * and it stays open.
     */
    static void detach(Channel channel) {
        listen(channel, null);
        if (channel.pipeline().get(OWNER) != null) {
            channel.pipeline().remove(OWNER);
        }
    }

    /** Sets the listener of an acquired channel (null to detach). */
    static void listen(Channel channel, @Nullable Listener listener) {
        OwnerChannelHandler h = handlerOf(channel);
        if (h != null) {
            h.listener = listener;
        }
    }

    /**
     * Returns an owner connection's last handler, which holds its state (no channel attributes: a
     * look-up in their map per acquire and release was 3 % of a small request's samples, issue
     * 14), or null once {@link #detach} took it out.
     */
    private static @Nullable OwnerChannelHandler handlerOf(Channel channel) {
        ChannelPipeline pipeline = channel.pipeline();
        return pipeline.last() instanceof OwnerChannelHandler h ? h : pipeline.get(OwnerChannelHandler.class);
    }

    /** Answers whether an acquired channel was used by an exchange before (not a fresh connection). */
    static boolean isReused(Channel channel) {
        OwnerChannelHandler h = handlerOf(channel);
        return h != null && h.uses > 1;
    }

    /**
     * Gives a channel back: to its pool when {@code reusable} (request and response complete, keep-
     * alive allowed), else closes it first so the pool drops it. {@code loop} and {@code owner}
     * are those it was acquired with; the channel knows its pool.
     */
    public void release(EventLoop loop, URI owner, Channel channel, boolean reusable) {
        OwnerChannelHandler h = handlerOf(channel);
        if (h != null) {
            h.listener = null;
        }
        if (h == null || h.unpooled) {
            channel.close(); // never pooled
            return;
        }
        Pool pool = h.pool; // its own pool, not a look-up by loop and owner per release (issue 14)
        if (pool == null) {
            channel.close();
            return;
        }
        if (pool.loop.inEventLoop()) {
            pool.release(channel, reusable); // inline, with no task made as onLoop's argument
        } else {
            onLoop(pool.loop, () -> pool.release(channel, reusable), null);
        }
    }

    /** Returns the number of open owner connections (pooled or in use). */
    public int openConnections() {
        return connections.get();
    }

    /**
     * Returns the number of owner connections that carry an event stream outside their pool's
     * connection count ({@link #stream}); they are among {@link #openConnections()}.
     */
    public int openStreams() {
        return streams.get();
    }

    /**
     * Takes a held pooled connection whose response is an event stream out of its pool's connection
     * count, so the owner's other requests on the loop are not locked out while it lasts (the
     * class's notes); call on the connection's loop. Returns false when it stays counted: an
     * unpooled connection, one already taken out, or the pool's {@link
     * TransportSpec#maxStreamsPerOwner()} streams reached.
     */
    boolean stream(Channel channel) {
        OwnerChannelHandler h = handlerOf(channel);
        if (h == null) {
            return false; // detached
        }
        Pool pool = h.pool;
        return pool != null && pool.stream(channel, h);
    }

    /**
     * Closes every pool (on its loop: idle connections closed, waiters failed); a connection in use
     * is closed when it is given back.
     */
    @Override
    public void close() {
        closed = true;
        for (Pool pool : pools.values()) {
            onLoop(pool.loop, pool::close, null);
        }
        pools.clear();
        resolver.close();
    }

    private Bootstrap bootstrap(EventLoop loop, URI owner) {
        return new Bootstrap()
                .group(loop)
                .channel(channelClass)
                .resolver(resolver)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int)
                        spec.connectTimeout().toMillis())
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.SO_KEEPALIVE, true)
                .remoteAddress(InetSocketAddress.createUnresolved(owner.getHost(), port(owner)));
    }

    /** On {@code loop}: an acquire that reached a retired pool takes (or makes) the map's current one. */
    private void acquireAgain(PoolKey key, Promise<Channel> out) {
        Pool pool = pools.computeIfAbsent(key, this::newPool);
        lastPool.set(pool);
        pool.acquire(out);
    }

    /** Returns the pools in the map now (tests: retired pools leave it). */
    int pools() {
        return pools.size();
    }

    private Pool newPool(PoolKey key) {
        PoolHandler handler = new PoolHandler();
        Bootstrap bootstrap = bootstrap(key.loop(), key.owner()).handler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
                handler.channelCreated(ch);
            }
        });
        return new Pool(key, bootstrap, handler);
    }

    /**
     * One owner's connections on one loop. Confined to the loop: every method runs there ({@link
     * #acquire}, {@link #release} and {@link #close} are handed to it), so nothing here is shared.
     */
    private final class Pool {
        final EventLoop loop;
        private final URI owner;
        private final PoolKey key;
        private final Bootstrap bootstrap;
        private final PoolHandler handler;
        /** Open connections nobody holds, the most recently given back first. */
        private final ArrayDeque<Channel> idle = new ArrayDeque<>();
        /** Acquires waiting for a connection, oldest first; each has its timeout scheduled. */
        private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();
        /**
         * Connections open or connecting, idle or in use, but for the streams: at most
         * maxConnectionsPerOwner.
         */
        private int open;
        /** Connections in use by an event stream, out of {@link #open}: at most maxStreamsPerOwner. */
        private int streamsOpen;
        /** Set by {@link #close}: nothing is handed out or connected any more. */
        private boolean closed;
        /** The idle eviction's timer: armed while {@link #idle} holds a connection, for its oldest. */
        @Nullable
        private ScheduledFuture<?> eviction;
        /** The retirement's timer: armed when the pool was left empty ({@link #leftEmpty}). */
        @Nullable
        private ScheduledFuture<?> retirement;
        /** Out of the map ({@link #retire}): an acquire that still reaches it asks the map again. */
        private boolean retired;

        Pool(PoolKey key, Bootstrap bootstrap, PoolHandler handler) {
            this.handler = handler;
            this.bootstrap = bootstrap;
            this.key = key;
            this.loop = key.loop();
            this.owner = key.owner();
        }

        /** Returns an idle open connection, taken (in use), or null when there is none. */
        @Nullable
        Channel takeIdle() {
            if (closed) {
                return null;
            }
            Channel ch;
            while ((ch = idle.pollFirst()) != null) {
                if (ch.isActive() && framed(ch)) {
                    handler.channelAcquired(ch);
                    return ch;
                }
                ch.close(); // closed while idle, or sent bytes then: its close future does the counting
            }
            return null;
        }

        void acquire(Promise<Channel> out) {
            if (retired) {
                acquireAgain(key, out);
                return;
            }
            if (closed) {
                out.tryFailure(new ClosedChannelException());
                return;
            }
            Channel ch = takeIdle();
            if (ch != null) {
                handOut(ch, out);
            } else if (open < spec.maxConnectionsPerOwner()) {
                connect(out);
            } else if (waiters.size() >= spec.maxPendingAcquires()) {
                out.tryFailure(new PoolExhaustedException("more than "
                        + (spec.maxConnectionsPerOwner() + spec.maxPendingAcquires()) + " acquires of " + owner
                        + " at once (maxConnectionsPerOwner + maxPendingAcquires)"));
            } else {
                Waiter w = new Waiter(out);
                w.timeout = loop.schedule(
                        () -> {
                            if (waiters.remove(w)) {
                                w.out.tryFailure(
                                        new PoolExhaustedException("no connection to " + owner + " became free within "
                                                + spec.acquireTimeout().toMillis() + " ms"));
                            }
                        },
                        spec.acquireTimeout().toNanos(),
                        TimeUnit.NANOSECONDS);
                waiters.add(w);
            }
        }

        private void handOut(Channel ch, Promise<Channel> out) {
            if (!out.trySuccess(ch)) {
                release(ch, true); // the acquirer gave up (its promise was cancelled)
            }
        }

        private void connect(Promise<Channel> out) {
            open++;
            // The outcome is counted on the loop: a channel Netty could not make or register
            // (EMFILE) fails on GlobalEventExecutor's thread, where open-- and the waiters,
            // confined to the loop, would race it (found by a review: counts lost at the fd
            // limit left the pool "full" of nothing, and every later acquire 503 for good).
            bootstrap.connect().addListener((ChannelFuture f) -> onLoop(loop, () -> connected(f, out), out));
        }

        private void connected(ChannelFuture f, Promise<Channel> out) {
            if (!f.isSuccess()) {
                open--;
                out.tryFailure(f.cause());
                connectForAWaiter(); // it may fare better, and must not wait for a free one forever
                leftEmpty();
                return;
            }
            Channel ch = f.channel();
            OwnerChannelHandler h = handlerOf(ch);
            ch.closeFuture().addListener(c -> onClosed(ch, h));
            if (h != null) {
                h.pool = this;
            }
            if (closed) {
                ch.close();
                out.tryFailure(new ClosedChannelException());
                return;
            }
            handler.channelAcquired(ch);
            handOut(ch, out);
        }

        private void onClosed(Channel ch, @Nullable OwnerChannelHandler h) {
            if (h != null && h.streaming) {
                unstream(h);
            } else {
                open--;
            }
            idle.remove(ch);
            connectForAWaiter();
            leftEmpty();
        }

        /**
         * Arms the retirement when nothing is left in the pool (no connection open, connecting or
         * streaming, no waiter): it leaves the map {@link TransportSpec#maxIdleTime()} later if it is
         * empty then. A pool used and left again in between may be retired early; that costs its
         * next acquire a new pool, nothing more, since an empty pool holds nothing.
         */
        private void leftEmpty() {
            if (closed || retirement != null || !isEmpty()) {
                return;
            }
            retirement = loop.schedule(
                    () -> {
                        retirement = null;
                        if (!closed && isEmpty()) {
                            retire();
                        }
                    },
                    spec.maxIdleTime().toNanos(),
                    TimeUnit.NANOSECONDS);
        }

        private boolean isEmpty() {
            return open == 0 && streamsOpen == 0 && idle.isEmpty() && waiters.isEmpty();
        }

        private void retire() {
            retired = true;
            closed = true; // nothing is handed out or connected any more; acquire() goes to the map
            pools.remove(key, this);
        }

        /** {@link UpstreamHttpTransport#stream}: on the loop, for a connection this pool connected. */
        boolean stream(Channel ch, OwnerChannelHandler h) {
            assert loop.inEventLoop();
            if (closed || h.streaming || !h.inUse || !ch.isActive() || streamsOpen >= spec.maxStreamsPerOwner()) {
                return false;
            }
            h.streaming = true;
            streamsOpen++;
            streams.incrementAndGet();
            open--;
            connectForAWaiter();
            return true;
        }

        private void unstream(OwnerChannelHandler h) {
            h.streaming = false;
            streamsOpen--;
            streams.decrementAndGet();
        }

        private void connectForAWaiter() {
            if (closed || open >= spec.maxConnectionsPerOwner()) {
                return;
            }
            Waiter w = waiters.poll();
            if (w != null) {
                w.cancelTimeout();
                connect(w.out);
            }
        }

        /**
         * Answers whether {@code ch}'s codec holds no bytes past the responses it delivered
         * ({@link OwnerCodec}'s notes: such bytes would start the next exchange's response);
         * says so in a line when it does, as nginx does.
         */
        private boolean framed(Channel ch) {
            if (OwnerCodec.clean(ch, CODEC)) {
                return true;
            }
            log.warn("owner {} sent bytes past the end of its response: its connection is closed, not reused", owner);
            return false;
        }

        /** Answers whether the owner's FIN was read already (a splice let it half-close: ResponseSplice). */
        private static boolean inputShut(Channel ch) {
            return ch instanceof DuplexChannel d && d.isInputShutdown();
        }

        /** Takes a connection back: to the first waiter, or the idle deque; closed when not reusable. */
        void release(Channel ch, boolean reusable) {
            handler.channelReleased(ch);
            if (!reusable || closed || !ch.isActive() || inputShut(ch) || !framed(ch)) {
                ch.close(); // its close future does the counting and lets a waiter connect
                return;
            }
            OwnerChannelHandler streamed = handlerOf(ch);
            if (streamed != null && streamed.streaming) { // back into the count, or closed when full
                if (open >= spec.maxConnectionsPerOwner()) {
                    ch.close(); // its close future takes it out of the streams
                    return;
                }
                unstream(streamed);
                open++;
            }
            Waiter w;
            while ((w = waiters.poll()) != null) {
                w.cancelTimeout();
                if (!w.out.isDone()) {
                    handler.channelAcquired(ch);
                    handOut(ch, w.out);
                    return;
                }
            }
            OwnerChannelHandler h = handlerOf(ch);
            if (h != null) {
                h.idleSince = System.nanoTime();
            }
            idle.addFirst(ch);
            if (eviction == null) {
                eviction = loop.schedule(this::evict, spec.maxIdleTime().toNanos(), TimeUnit.NANOSECONDS);
            }
        }

        /**
         * Closes the connections that stayed idle {@link TransportSpec#maxIdleTime()}, oldest (the
         * deque's tail) first, and arms the timer again for the oldest one left.
         */
        private void evict() {
            eviction = null;
            if (closed) {
                return;
            }
            long max = spec.maxIdleTime().toNanos();
            long now = System.nanoTime();
            Channel oldest;
            while ((oldest = idle.peekLast()) != null) {
                OwnerChannelHandler h = handlerOf(oldest);
                long idleFor = h == null ? max : now - h.idleSince;
                if (idleFor < max) {
                    eviction = loop.schedule(this::evict, max - idleFor, TimeUnit.NANOSECONDS);
                    return;
                }
                idle.pollLast();
                oldest.close(); // its close future does the counting
            }
        }

        void close() {
            closed = true;
            ScheduledFuture<?> e = eviction;
            if (e != null) {
                e.cancel(false);
                eviction = null;
            }
            ScheduledFuture<?> r = retirement;
            if (r != null) {
                r.cancel(false);
                retirement = null;
            }
            Channel ch;
            while ((ch = idle.pollFirst()) != null) {
                ch.close();
            }
            Waiter w;
            while ((w = waiters.poll()) != null) {
                w.cancelTimeout();
                w.out.tryFailure(new ClosedChannelException());
            }
        }
    }

    /** An acquire waiting for a connection of a full pool. */
    private static final class Waiter {
        final Promise<Channel> out;

        @Nullable
        ScheduledFuture<?> timeout;

        Waiter(Promise<Channel> out) {
            this.out = out;
        }

        void cancelTimeout() {
            ScheduledFuture<?> t = timeout;
            if (t != null) {
                t.cancel(false);
            }
        }
    }

    private static int port(URI uri) {
        return uri.getPort() > 0 ? uri.getPort() : 80;
    }

    private record PoolKey(EventLoop loop, URI owner) {}

    /** Receives what an owner connection delivers while an exchange holds it. */
    public interface Listener {
        /** A decoded message (HttpResponse and/or HttpContent); the listener releases it. */
        void onMessage(Object message);

        /** A read batch ended; flush what was handed on. */
        void onReadComplete();

        /** The connection's writability changed. */
        void onWritabilityChanged(boolean writable);

        /** The connection closed. */
        void onClosed();

        /** The connection failed (decoder error, reset). */
        void onFailure(Throwable cause);
    }

    private final class PoolHandler implements ChannelPoolHandler {
        @Override
        public void channelCreated(Channel ch) {
            created(ch, false);
        }

        /** Sets up a new owner connection's pipeline and returns the handler that holds its state. */
        OwnerChannelHandler created(Channel ch, boolean unpooled) {
            connections.incrementAndGet();
            ch.closeFuture().addListener(f -> connections.decrementAndGet());
            OwnerChannelHandler owner = new OwnerChannelHandler(unpooled);
            ResponseSplice.ReadCount.install(ch);
            HeadBuffers.apply(ch); // request heads encoded on the heap (issue 14)
            ch.pipeline().addLast(CODEC, newCodec()).addLast(OWNER, owner);
            return owner;
        }

        @Override
        public void channelAcquired(Channel ch) {
            OwnerChannelHandler h = handlerOf(ch);
            if (h != null) {
                h.inUse = true;
                h.uses++;
            }
        }

        @Override
        public void channelReleased(Channel ch) {
            OwnerChannelHandler h = handlerOf(ch);
            if (h != null) {
                h.inUse = false;
            }
            ch.config().setAutoRead(true);
        }
    }

    /**
     * The permanent last handler of an owner connection, and its state. Threading: its fields are
     * read and written on the connection's event loop ({@code unpooled} is fixed at creation).
     */
    static final class OwnerChannelHandler extends ChannelInboundHandlerAdapter {
        @Nullable
        Listener listener;

        /** Made by {@link #connect} for an upgrade: closed on release, never pooled. */
        final boolean unpooled;
        /** Held by an exchange (the pool's idle timeout leaves it alone). */
        boolean inUse;
        /** When it went into its pool's idle deque ({@link System#nanoTime}). */
        long idleSince;
        /** Its pool, once connected by one (null for an unpooled connection). */
        @Nullable
        Pool pool;
        /** How many exchanges took it, this one included. */
        int uses;
        /** Out of its pool's connection count while its exchange streams events ({@link #stream}). */
        boolean streaming;

        OwnerChannelHandler(boolean unpooled) {
            this.unpooled = unpooled;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Listener l = listener;
            if (l != null) {
                l.onMessage(msg);
            } else {
                ReferenceCountUtil.release(msg);
                ctx.close(); // an owner speaking out of turn: the connection's framing is unknown
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            Listener l = listener;
            if (l != null) {
                l.onReadComplete();
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            Listener l = listener;
            if (l != null) {
                l.onWritabilityChanged(ctx.channel().isWritable());
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            Listener l = listener;
            listener = null;
            if (l != null) {
                l.onClosed();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Listener l = listener;
            if (l != null) {
                l.onFailure(cause);
            }
            ctx.close();
        }
    }
}
