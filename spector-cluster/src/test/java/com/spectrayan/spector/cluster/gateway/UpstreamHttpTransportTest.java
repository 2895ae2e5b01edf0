package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.Future;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The owner pools' bounds, classified by type: "exhausted" (the caller answers 503 with {@code
 * Retry-After}) is never confused with "closed" or "down". Regression: pool exhaustion was
 * detected as any {@code IllegalStateException}, which also matched "transport closed". And the
 * public acquire: the listener it takes gets what the connection delivers.
 */
final class UpstreamHttpTransportTest {
    private static final long WAIT_MS = 5_000;

    private EventLoopGroup group;
    private ServerSocket owner;

    @BeforeEach
    void start() throws Exception {
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        owner = new ServerSocket(0, 50, InetAddress.getLoopbackAddress()); // accepts into its backlog
    }

    @AfterEach
    void stop() throws Exception {
        owner.close();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private static TransportSpec spec(int maxConnections, int maxPending, Duration acquireTimeout) {
        return new TransportSpec(
                Duration.ofSeconds(2),
                maxConnections,
                maxPending,
                acquireTimeout,
                Duration.ofSeconds(30),
                16 * 1024,
                8192);
    }

    private static TransportSpec idleFor(Duration maxIdleTime) {
        return new TransportSpec(Duration.ofSeconds(2), 2, 0, Duration.ofSeconds(2), maxIdleTime, 16 * 1024, 8192);
    }

    private URI ownerUri() {
        return URI.create("http://127.0.0.1:" + owner.getLocalPort());
    }

    @Test
    void acquire_pastConnectionsAndWaiters_failsAsExhausted() throws Exception {
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                spec(1, 0, Duration.ofSeconds(2)), NioSocketChannel.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            Future<Channel> first =
                    loop.submit(() -> t.acquire(loop, ownerUri())).get().await();
            assertThat(first.isSuccess()).as("the one connection").isTrue();

            Future<Channel> second =
                    loop.submit(() -> t.acquire(loop, ownerUri())).get();
            assertThat(second.await(WAIT_MS)).isTrue();

            assertThat(second.isSuccess()).isFalse();
            assertThat(UpstreamHttpTransport.isPoolExhausted(second.cause())).isTrue();
        }
    }

    @Test
    void acquire_waiterPastTheAcquireTimeout_failsAsExhausted() throws Exception {
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                spec(1, 1, Duration.ofMillis(200)), NioSocketChannel.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            assertThat(loop.submit(() -> t.acquire(loop, ownerUri()))
                            .get()
                            .await()
                            .isSuccess())
                    .isTrue();

            Future<Channel> waiter =
                    loop.submit(() -> t.acquire(loop, ownerUri())).get();
            assertThat(waiter.await(WAIT_MS)).isTrue();

            assertThat(UpstreamHttpTransport.isPoolExhausted(waiter.cause()))
                    .as("a waiter that timed out: %s", waiter.cause())
                    .isTrue();
        }
    }

    @Test
    void acquire_afterClose_failsAsClosedNotExhausted() throws Exception {
        UpstreamHttpTransport t = new UpstreamHttpTransport(
                spec(1, 0, Duration.ofSeconds(2)), NioSocketChannel.class, NioDatagramChannel.class);
        t.close();
        EventLoop loop = group.next();

        Future<Channel> f = loop.submit(() -> t.acquire(loop, ownerUri())).get().await();

        assertThat(f.cause()).isInstanceOf(ClosedChannelException.class);
        assertThat(UpstreamHttpTransport.isPoolExhausted(f.cause())).isFalse();
    }

    @Test
    void acquire_ofAnOwnerThatIsDown_failsAsUnreachableNotExhausted() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                spec(1, 0, Duration.ofSeconds(2)), NioSocketChannel.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            URI down = URI.create("http://127.0.0.1:" + closedPort);

            Future<Channel> f = loop.submit(() -> t.acquire(loop, down)).get();
            assertThat(f.await(WAIT_MS)).isTrue();

            assertThat(f.isSuccess()).isFalse();
            assertThat(UpstreamHttpTransport.isPoolExhausted(f.cause())).isFalse();
        }
    }

    @Test
    void acquire_withAListener_handsItWhatTheConnectionDelivers() throws Exception {
        owner.setSoTimeout((int) WAIT_MS);
        AnswerListener listener = new AnswerListener();
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                spec(1, 0, Duration.ofSeconds(2)), NioSocketChannel.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            Future<Channel> f =
                    loop.submit(() -> t.acquire(loop, ownerUri(), listener)).get(WAIT_MS, TimeUnit.MILLISECONDS);
            assertThat(f.await(WAIT_MS)).isTrue();
            assertThat(f.isSuccess()).as("acquired: %s", f.cause()).isTrue();

            try (Socket peer = owner.accept()) {
                OutputStream out = peer.getOutputStream();
                out.write("HTTP/1.1 204 No Content\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();

                assertThat(listener.status.get(WAIT_MS, TimeUnit.MILLISECONDS))
                        .as("with no listener the transport would close a connection that speaks out of turn")
                        .isEqualTo(204);
            }
            loop.submit(() -> t.release(loop, ownerUri(), f.getNow(), false)).get(WAIT_MS, TimeUnit.MILLISECONDS);
        }
    }

    /** A transport over NIO with these bounds per owner per loop ({@code maxStreams}: event streams out of the count). */
    private static UpstreamHttpTransport withStreams(int maxConnections, int maxPending, int maxStreams) {
        return new UpstreamHttpTransport(
                new TransportSpec(
                        Duration.ofSeconds(2),
                        maxConnections,
                        maxPending,
                        Duration.ofSeconds(2),
                        Duration.ofSeconds(30),
                        16 * 1024,
                        8192,
                        maxStreams),
                NioSocketChannel.class,
                NioDatagramChannel.class);
    }

    private static Channel acquired(UpstreamHttpTransport t, EventLoop loop, URI uri) throws Exception {
        Future<Channel> f = loop.submit(() -> t.acquire(loop, uri)).get().await();
        assertThat(f.isSuccess()).as("acquired: %s", f.cause()).isTrue();
        return f.getNow();
    }

    /**
     * The lockout fix (issue 14): a held connection whose response is an event stream leaves the
     * pool's connection count, up to {@code maxStreamsPerOwner} (at the limit and one past), so the
     * owner's next request gets a connection where it was refused as exhausted before.
     */
    @Test
    void stream_leavesTheConnectionCount_upToMaxStreams_thenCounts() throws Exception {
        try (UpstreamHttpTransport t = withStreams(1, 0, 1)) {
            EventLoop loop = group.next();
            URI uri = ownerUri();
            Channel a = acquired(t, loop, uri);
            assertThat(loop.submit(() -> t.stream(a)).get())
                    .as("the first stream: at the limit")
                    .isTrue();
            assertThat(t.openStreams()).isEqualTo(1);

            Channel b = acquired(t, loop, uri); // before the fix: exhausted, A held the one connection
            assertThat(b).isNotSameAs(a);
            assertThat(loop.submit(() -> t.stream(b)).get())
                    .as("one past maxStreamsPerOwner: B stays counted")
                    .isFalse();
            assertThat(t.openStreams()).isEqualTo(1);
            Future<Channel> c = loop.submit(() -> t.acquire(loop, uri)).get().await();
            assertThat(UpstreamHttpTransport.isPoolExhausted(c.cause()))
                    .as("B holds the one counted connection: %s", c.cause())
                    .isTrue();

            // A's stream ends, reusable, while B fills the count: A is closed, not pooled past it
            loop.submit(() -> t.release(loop, uri, a, true)).get();
            assertThat(a.closeFuture().await(WAIT_MS)).isTrue();
            assertThat(t.openStreams()).isZero();
            loop.submit(() -> t.release(loop, uri, b, true)).get();
            assertThat(acquired(t, loop, uri)).as("B pooled, reused").isSameAs(b);
            assertThat(t.openConnections()).isEqualTo(1);
        }
    }

    /** A stream that ends reusable with room in the count is pooled again; one the owner closes leaves both counts. */
    @Test
    void stream_thatEnds_comesBackIntoTheCount_orLeavesItWhenClosed() throws Exception {
        try (UpstreamHttpTransport t = withStreams(1, 0, 1)) {
            EventLoop loop = group.next();
            URI uri = ownerUri();
            Channel a = acquired(t, loop, uri);
            assertThat(loop.submit(() -> t.stream(a)).get()).isTrue();
            loop.submit(() -> t.release(loop, uri, a, true)).get();
            assertThat(t.openStreams()).isZero();
            Channel again = acquired(t, loop, uri);
            assertThat(again).as("pooled again").isSameAs(a);
            Future<Channel> past = loop.submit(() -> t.acquire(loop, uri)).get().await();
            assertThat(UpstreamHttpTransport.isPoolExhausted(past.cause()))
                    .as("back in the count: %s", past.cause())
                    .isTrue();

            assertThat(loop.submit(() -> t.stream(a)).get()).isTrue();
            a.close().await(WAIT_MS); // the owner's side goes away mid-stream
            loop.submit(() -> {}).get(); // the close future's listeners ran
            assertThat(t.openStreams()).isZero();
            assertThat(t.openConnections()).isZero();
            Channel fresh = acquired(t, loop, uri);
            assertThat(fresh).isNotSameAs(a);
            Future<Channel> pastAgain =
                    loop.submit(() -> t.acquire(loop, uri)).get().await();
            assertThat(UpstreamHttpTransport.isPoolExhausted(pastAgain.cause()))
                    .as("the closed stream freed no second connection: %s", pastAgain.cause())
                    .isTrue();
        }
    }

    /** A waiter of a full pool connects as soon as the connection it waits behind becomes a stream. */
    @Test
    void stream_letsAWaiterConnect() throws Exception {
        try (UpstreamHttpTransport t = withStreams(1, 1, 1)) {
            EventLoop loop = group.next();
            URI uri = ownerUri();
            Channel a = acquired(t, loop, uri);
            Future<Channel> waiter = loop.submit(() -> t.acquire(loop, uri)).get();
            assertThat(waiter.isDone()).as("waits: the pool is full").isFalse();

            loop.submit(() -> t.stream(a)).get();

            assertThat(waiter.await(WAIT_MS)).isTrue();
            assertThat(waiter.isSuccess()).as("connected: %s", waiter.cause()).isTrue();
            assertThat(waiter.getNow()).isNotSameAs(a);
        }
    }

    /** With {@code maxStreamsPerOwner} 0 every stream counts, as before the fix. */
    @Test
    void stream_withNoStreamsAllowed_staysCounted() throws Exception {
        try (UpstreamHttpTransport t = withStreams(1, 0, 0)) {
            EventLoop loop = group.next();
            URI uri = ownerUri();
            Channel a = acquired(t, loop, uri);
            assertThat(loop.submit(() -> t.stream(a)).get()).isFalse();
            Future<Channel> b = loop.submit(() -> t.acquire(loop, uri)).get().await();
            assertThat(UpstreamHttpTransport.isPoolExhausted(b.cause())).isTrue();
        }
    }

    private static TransportSpec specWithIdle(Duration maxIdleTime) {
        return new TransportSpec(Duration.ofSeconds(2), 2, 0, Duration.ofSeconds(2), maxIdleTime, 16 * 1024, 8192);
    }

    /** Reads until the peer closes (true) or {@code ms} pass with nothing (false). */
    private static boolean closedWithin(Socket s, int ms) throws Exception {
        s.setSoTimeout(ms);
        try {
            return s.getInputStream().read() < 0;
        } catch (java.net.SocketTimeoutException e) {
            return false;
        }
    }

    /**
     * Background eviction: a connection that stays in its pool {@code maxIdleTime} is closed, not
     * before; one held by an exchange, or taken again in time, stays open.
     */
    @Test
    void idleConnection_pastMaxIdleTime_isClosed_butNotOneInUse() throws Exception {
        Duration maxIdle = Duration.ofMillis(300);
        try (UpstreamHttpTransport t =
                new UpstreamHttpTransport(specWithIdle(maxIdle), NioSocketChannel.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            URI uri = ownerUri();
            Future<Channel> a = loop.submit(() -> t.acquire(loop, uri)).get().await();
            assertThat(a.isSuccess()).isTrue();
            try (Socket peerA = owner.accept()) {
                Future<Channel> b =
                        loop.submit(() -> t.acquire(loop, uri)).get().await();
                assertThat(b.isSuccess()).isTrue();
                try (Socket peerB = owner.accept()) {
                    // A goes idle and is taken again before maxIdleTime: its clock starts over
                    loop.submit(() -> t.release(loop, uri, a.getNow(), true)).get();
                    Future<Channel> again =
                            loop.submit(() -> t.acquire(loop, uri)).get().await();
                    assertThat(again.getNow()).isSameAs(a.getNow());
                    assertThat(closedWithin(peerA, 2 * (int) maxIdle.toMillis()))
                            .as("in use")
                            .isFalse();

                    long released = System.nanoTime();
                    loop.submit(() -> t.release(loop, uri, a.getNow(), true)).get();

                    assertThat(closedWithin(peerA, (int) WAIT_MS))
                            .as("idle past maxIdleTime")
                            .isTrue();
                    assertThat(Duration.ofNanos(System.nanoTime() - released)).isGreaterThanOrEqualTo(maxIdle);
                    assertThat(closedWithin(peerB, (int) maxIdle.toMillis()))
                            .as("B is in use")
                            .isFalse();
                    assertThat(b.getNow().isActive()).isTrue();
                    assertThat(t.openConnections()).isEqualTo(1);
                    loop.submit(() -> t.release(loop, uri, b.getNow(), false)).get();
                }
            }
        }
    }

    /** A socket channel that cannot be made while {@link #failing} (as at EMFILE); records where each was tried. */
    public static final class NoSocket extends NioSocketChannel {
        static volatile boolean failing;
        static final java.util.List<String> triedOn = new java.util.concurrent.CopyOnWriteArrayList<>();

        public NoSocket() {
            super(open());
        }

        private static java.nio.channels.SocketChannel open() {
            triedOn.add(Thread.currentThread().getName());
            if (failing) {
                throw new io.netty.channel.ChannelException("Too many open files (a test's)");
            }
            try {
                return java.nio.channels.SocketChannel.open();
            } catch (java.io.IOException e) {
                throw new io.netty.channel.ChannelException(e);
            }
        }
    }

    /**
     * A connection Netty cannot make (the channel's constructor fails, as at EMFILE) fails its
     * acquire, and its waiter's, and is counted out on the pool's loop: every try is made there,
     * and once sockets can be made again the next acquire connects. Regression (a review): the
     * failure's listener ran on GlobalEventExecutor's thread (Netty's future for a channel it
     * could not make), which counted the pool and took its waiters from there, racing the loop,
     * which confines them: counts lost at the fd limit left the pool full of nothing, every later
     * acquire failing as exhausted. GlobalEventExecutor is held while both acquires are made, so
     * the second waits behind the first as it would under load.
     */
    @Test
    void aConnectionThatCannotBeMade_isCountedOnTheLoop_andTheNextConnects() throws Exception {
        NoSocket.failing = true;
        NoSocket.triedOn.clear();
        java.util.concurrent.CountDownLatch held = new java.util.concurrent.CountDownLatch(1);
        io.netty.util.concurrent.GlobalEventExecutor.INSTANCE.execute(() -> {
            try {
                held.await(WAIT_MS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                spec(1, 4, Duration.ofSeconds(5)), NoSocket.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            java.util.List<Future<Channel>> two = loop.submit(
                            () -> java.util.List.of(t.acquire(loop, ownerUri()), t.acquire(loop, ownerUri())))
                    .get();
            held.countDown();
            for (Future<Channel> f : two) {
                assertThat(f.await(WAIT_MS)).isTrue();
                assertThat(f.isSuccess()).isFalse();
                assertThat(f.cause()).hasStackTraceContaining("Too many open files (a test's)");
            }
            assertThat(NoSocket.triedOn)
                    .as("every connection tried on the pool's loop")
                    .hasSize(2)
                    .allSatisfy(name -> assertThat(name).doesNotStartWith("globalEventExecutor"));

            NoSocket.failing = false;
            Future<Channel> next =
                    loop.submit(() -> t.acquire(loop, ownerUri())).get();
            assertThat(next.await(WAIT_MS)).isTrue();
            assertThat(next.isSuccess())
                    .as("the one connection the pool may open: %s", next.cause())
                    .isTrue();
        } finally {
            held.countDown();
            NoSocket.failing = false;
        }
    }

    // ---- retirement: the pools of addresses that went away leave the map ----

    /**
     * A pool whose connection went idle and was evicted leaves the map once it stayed empty for the
     * idle time, and the next acquire of that owner, on the same loop (whose last pool was the
     * retired one), gets a connection from a new pool. Regression: a pool per address stayed for the
     * process's life, so a rollout's old pod addresses and peer replicas that left piled up.
     */
    @Test
    void pool_leftEmpty_isRetiredAndTheNextAcquireMakesANewOne() throws Exception {
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                idleFor(Duration.ofMillis(200)), NioSocketChannel.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            Future<Channel> f =
                    loop.submit(() -> t.acquire(loop, ownerUri())).get().await();
            assertThat(f.isSuccess()).as("acquired: %s", f.cause()).isTrue();
            loop.submit(() -> t.release(loop, ownerUri(), f.getNow(), true)).get();
            assertThat(t.pools()).isEqualTo(1);

            await().atMost(Duration.ofMillis(WAIT_MS)).until(() -> t.pools() == 0);

            Future<Channel> again =
                    loop.submit(() -> t.acquire(loop, ownerUri())).get().await();
            assertThat(again.isSuccess())
                    .as("acquired after the retirement: %s", again.cause())
                    .isTrue();
            assertThat(t.pools()).isEqualTo(1);
            loop.submit(() -> t.release(loop, ownerUri(), again.getNow(), false))
                    .get();
        }
    }

    /**
     * A pool with a connection in use stays when its other connection closes: only an empty pool is
     * retired.
     */
    @Test
    void pool_withAConnectionInUse_isNotRetired() throws Exception {
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                idleFor(Duration.ofMillis(100)), NioSocketChannel.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            Future<Channel> f =
                    loop.submit(() -> t.acquire(loop, ownerUri())).get().await();
            assertThat(f.isSuccess()).as("acquired: %s", f.cause()).isTrue();
            Future<Channel> other =
                    loop.submit(() -> t.acquire(loop, ownerUri())).get().await();
            assertThat(other.isSuccess()).as("acquired: %s", other.cause()).isTrue();
            loop.submit(() -> t.release(loop, ownerUri(), other.getNow(), false))
                    .get(); // closed

            await().during(Duration.ofMillis(600))
                    .atMost(Duration.ofMillis(WAIT_MS))
                    .until(() -> t.pools() == 1);
            loop.submit(() -> t.release(loop, ownerUri(), f.getNow(), false)).get();
        }
    }

    /** The pool of an owner that is down (every connect failed) is retired too. */
    @Test
    void pool_ofAnOwnerThatIsDown_isRetired() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                idleFor(Duration.ofMillis(200)), NioSocketChannel.class, NioDatagramChannel.class)) {
            EventLoop loop = group.next();
            URI down = URI.create("http://127.0.0.1:" + closedPort);
            Future<Channel> f = loop.submit(() -> t.acquire(loop, down)).get();
            assertThat(f.await(WAIT_MS)).isTrue();
            assertThat(f.isSuccess()).isFalse();

            await().atMost(Duration.ofMillis(WAIT_MS)).until(() -> t.pools() == 0);
        }
    }
}
