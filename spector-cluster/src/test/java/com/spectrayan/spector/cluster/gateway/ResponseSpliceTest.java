package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.testkit.TcpTable;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A spliced body whose owner closes right behind it (RFC 9112 §9.6 lets a server close an idle
 * keep-alive connection at any time: a graceful shutdown, its keep-alive timeout), with every
 * socket buffer fixed so the case is the same at every run: the client side takes a few KiB, the
 * owner's FIN reaches the gateway's socket with most of the body unread behind it, and only then
 * does the client read. Netty's splice alone closes the connection at that FIN and drops those
 * bytes; {@link ResponseSplice} drains them, and {@link UringSplice} hands them to the client after
 * the pipe. Real loopback sockets at both ends: a writing owner and a reading client on plain Java
 * sockets, the gateway's two connections on one loop of each native transport.
 */
@EnabledOnOs(OS.LINUX)
final class ResponseSpliceTest {
    private static final Duration BOUND = Duration.ofSeconds(20);
    /** The gateway's send buffer toward the client, and the client's receive buffer: small and fixed. */
    private static final int CLIENT_SIDE_BUFFER = 16 * 1024;
    /** The gateway's receive buffer from the owner: room for every body here, so the FIN arrives. */
    private static final int OWNER_SIDE_BUFFER = 4 * 1024 * 1024;

    /** The native transports that splice, each with its own splice ({@link KernelSplice#start}). */
    enum Io {
        EPOLL(EpollSocketChannel.class),
        IO_URING(IoUringSocketChannel.class);

        final Class<? extends SocketChannel> channel;

        Io(Class<? extends SocketChannel> channel) {
            this.channel = channel;
        }

        IoHandlerFactory factory() {
            if (this == EPOLL) {
                assertThat(Epoll.isAvailable()).as("native epoll").isTrue();
                return EpollIoHandler.newFactory();
            }
            assertThat(IoUring.isAvailable()).as("io_uring").isTrue();
            return IoUringIoHandler.newFactory();
        }
    }

    private @Nullable EventLoopGroup group;
    private ServerSocket ownerServer;
    private ServerSocket clientServer;
    private final List<Socket> sockets = new ArrayList<>();

    @BeforeEach
    void start() throws IOException {
        ownerServer = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
        clientServer = new ServerSocket();
        clientServer.setReceiveBufferSize(CLIENT_SIDE_BUFFER); // accepted sockets inherit it
        clientServer.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 5);
    }

    @AfterEach
    void stop() throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
        ownerServer.close();
        clientServer.close();
        if (group != null) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** The test's one loop, on {@code io}. */
    private EventLoop loop(Io io) {
        EventLoopGroup g = group;
        if (g == null) {
            g = new MultiThreadIoEventLoopGroup(1, io.factory());
            group = g;
        }
        return g.next();
    }

    @ParameterizedTest
    @EnumSource(Io.class)
    void ownerClosesRightBehindTheBody_beforeTheClientReads_everyByteArrivesAndTheSpliceEnds(Io io) throws Exception {
        int length = 1024 * 1024;
        Run run = splice(io, length, body(length), true);
        assertThat(run.readN(length)).isEqualTo(body(length));
        await().atMost(BOUND).until(() -> run.ended.isDone());
        assertThat(run.ended.get())
                .as("the owner's close, no bytes past the body")
                .isEqualTo(ResponseSplice.END);
        assertThat(run.sliced.get()).isEqualTo(length);
        assertThat(run.drained.get()).isEqualTo(1);
        assertThat(run.failure.get()).isNull();
        // The FIN was read: the connection must not carry another exchange.
        assertThat(((DuplexChannel) run.owner).isInputShutdown()).isTrue();
    }

    @ParameterizedTest
    @EnumSource(Io.class)
    void ownerCutsTheBodyShortAndCloses_theClientGetsEveryByteItSent_andTheSpliceFails(Io io) throws Exception {
        int length = 1024 * 1024;
        int sent = 700 * 1024;
        Run run = splice(io, length, Arrays.copyOf(body(length), sent), true);
        assertThat(run.readN(sent)).isEqualTo(Arrays.copyOf(body(length), sent));
        await().atMost(BOUND).until(() -> run.failure.get() != null);
        run.client.close().syncUninterruptibly(); // as the exchange does on a failed body
        assertThat(run.readToEnd()).isEmpty();
        assertThat(run.sliced.get()).isEqualTo(sent);
        assertThat(run.ended).isNotDone();
    }

    @ParameterizedTest
    @EnumSource(Io.class)
    void ownerSendsPastTheLengthAndCloses_theClientGetsTheLengthExactly(Io io) throws Exception {
        int length = 512 * 1024;
        byte[] more = body(length + 4096);
        Run run = splice(io, length, more, true);
        byte[] got = run.readN(length);
        assertThat(got).isEqualTo(Arrays.copyOf(more, length));
        await().atMost(BOUND).until(() -> run.ended.isDone());
        assertThat(run.sliced.get()).isEqualTo(length);
        assertThat(run.failure.get()).isNull();
    }

    /**
     * An owner that stays open and sends more than the length, in one write: the splice moves the
     * length exactly and says the owner sent past it, so the connection is closed, not pooled. The
     * bytes past it stayed in the socket, unseen by the codec, and the connection was pooled: the
     * next exchange on it read them as its answer (a response desync, found by a review).
     */
    @ParameterizedTest
    @EnumSource(Io.class)
    void ownerThatStaysOpen_andSendsPastTheLength_isSaidToHaveSentPastIt(Io io) throws Exception {
        int length = 512 * 1024;
        byte[] more = body(length + 38);
        Run run = splice(io, length, more, false);
        assertThat(run.readN(length)).isEqualTo(Arrays.copyOf(more, length));
        await().atMost(BOUND).until(() -> run.ended.isDone() || run.failure.get() != null);
        assertThat(run.failure.get()).isNull();
        assertThat(run.ended.get()).as("bytes past the body").isEqualTo(ResponseSplice.BYTES);
    }

    @ParameterizedTest
    @EnumSource(Io.class)
    void ownerThatStaysOpen_isSplicedWithoutDraining_andKeepsItsInput(Io io) throws Exception {
        int length = 1024 * 1024;
        Run run = splice(io, length, body(length), false);
        assertThat(run.readN(length)).isEqualTo(body(length));
        await().atMost(BOUND).until(() -> run.ended.isDone());
        assertThat(run.drained.get()).isZero();
        assertThat(run.sliced.get()).isEqualTo(length);
        assertThat(run.ended.get())
                .as("nothing past the body: the connection may be pooled")
                .isEqualTo(ResponseSplice.NOTHING);
        assertThat(((DuplexChannel) run.owner).isInputShutdown()).isFalse();
        assertThat(run.owner.config().getOption(ChannelOption.ALLOW_HALF_CLOSURE))
                .isFalse();
        assertThat(run.owner.pipeline().toMap().keySet()).containsExactly("sink"); // the splice's watch is gone
    }

    /**
     * A read of Netty's on the owner's connection mid-splice, while the pipe holds bytes the client
     * has not taken (the read Netty makes by itself on the owner's FIN, here asked for): what it
     * reads goes to the client after the pipe's bytes and before the pump's next, and the splice
     * carries on to the end. The body arrives whole and in order, and the owner's connection
     * keeps its input.
     */
    @ParameterizedTest
    @EnumSource(Io.class)
    void aReadOfNettysMidSplice_putsItsBytesInTheirPlace(Io io) throws Exception {
        int length = 2 * 1024 * 1024;
        int part = 1024 * 1024;
        byte[] all = body(length);
        Run run = splice(io, length, Arrays.copyOf(all, part), false);
        await().atMost(BOUND).until(run::waitsForClient); // the client reads nothing yet: its buffers are full
        run.owner.eventLoop().submit(run.owner::read).get(BOUND.toSeconds(), TimeUnit.SECONDS);

        java.util.Objects.requireNonNull(run.ownerSide).getOutputStream().write(all, part, length - part);
        assertThat(run.readN(length)).isEqualTo(all);
        await().atMost(BOUND).until(() -> run.ended.isDone() || run.failure.get() != null);
        assertThat(run.failure.get()).isNull();
        assertThat(run.sliced.get()).isEqualTo(length);
        assertThat(((DuplexChannel) run.owner).isInputShutdown()).isFalse();
    }

    /**
     * What {@link UringSplice} relies on to keep the order: a read is out from the moment it takes
     * its buffer from the connection's handle until its result comes back through it, whatever
     * the result. Netty's io_uring transport takes the buffer when it submits the read ({@code
     * AbstractIoUringStreamChannel.scheduleRead0}) and runs it in the kernel later; it also
     * submits and completes a read within one turn of the loop when the socket holds bytes, so no
     * test can stop a real read in between.
     */
    @Test
    @SuppressWarnings("deprecation") // Handle: the interface Netty's channels call
    void readInFlight_fromTheReadsBufferToItsResult_whateverTheResult() {
        EmbeddedChannel ch = new EmbeddedChannel();
        try {
            ResponseSplice.ReadCount.install(ch);
            ResponseSplice.ReadCount reads = java.util.Objects.requireNonNull(ResponseSplice.ReadCount.of(ch));
            RecvByteBufAllocator.Handle h =
                    ch.config().getRecvByteBufAllocator().newHandle();
            h.reset(ch.config());
            assertThat(reads.readInFlight()).isFalse();
            for (int result : new int[] {1024, 0, -1}) { // bytes, nothing (EAGAIN), the input's end
                ByteBuf b = h.allocate(ch.alloc());
                assertThat(reads.readInFlight())
                        .as("out, before a result of %d", result)
                        .isTrue();
                h.lastBytesRead(result);
                assertThat(reads.readInFlight())
                        .as("out, after a result of %d", result)
                        .isFalse();
                b.release();
            }
            assertThat(reads.bytes).isEqualTo(1024);
        } finally {
            ch.finishAndReleaseAll();
        }
    }

    /**
     * Whose wait it is, which decides whether the owner's idle timer runs ({@code Attempt}): an
     * owner quiet mid-body is waited for (its idle timer must be able to end the exchange), a
     * client that stops reading while the owner sends is the client's (the send clock's).
     */
    @ParameterizedTest
    @EnumSource(Io.class)
    void ownerQuietMidBody_isTheOwnersWait_aClientThatStopsReading_isTheClients(Io io) throws Exception {
        int length = 4 * 1024 * 1024;
        int part = 100 * 1024;
        byte[] all = body(length);
        Run run = splice(io, length, Arrays.copyOf(all, part), false);
        assertThat(run.readN(part)).isEqualTo(Arrays.copyOf(all, part));
        // Every byte the owner sent reached the client (epoll reports a slice only when it ends).
        await().atMost(BOUND).until(() -> !run.waitsForClient());

        java.util.Objects.requireNonNull(run.ownerSide).getOutputStream().write(all, part, length - part);
        await().atMost(BOUND).until(run::waitsForClient);
        assertThat(run.readN(length - part)).isEqualTo(Arrays.copyOfRange(all, part, length));
        await().atMost(BOUND).until(() -> run.ended.isDone());
        assertThat(run.failure.get()).isNull();
    }

    /**
     * The owner's idle timer sees a splice's progress inside a slice, not only at its end (an
     * owner that takes longer than the idle timeout to send one slice of 4 MiB must not be cut
     * while it sends): on epoll, Netty ends each read batch of a splice with {@code
     * channelReadComplete} on the owner's pipeline ({@code Attempt.onReadComplete} takes it as a
     * read) though the slice reports nothing until all of it went out; on io_uring each part the
     * pipe carried is reported.
     */
    @ParameterizedTest
    @EnumSource(Io.class)
    void ownerSendingInsideOneSlice_isSeenAsItSends_notOnlyWhenTheSliceEnds(Io io) throws Exception {
        int length = ResponseSplice.SLICE + 1024;
        int part = 100 * 1024;
        byte[] all = body(length);
        AtomicLong readCompletes = new AtomicLong();
        Run run = splice(io, length, new byte[0], false);
        run.owner
                .eventLoop()
                .submit(() -> run.owner.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelReadComplete(ChannelHandlerContext ctx) {
                        readCompletes.incrementAndGet();
                    }
                }))
                .get(BOUND.toSeconds(), TimeUnit.SECONDS);
        OutputStream owner = java.util.Objects.requireNonNull(run.ownerSide).getOutputStream();
        for (int i = 0; i < 3; i++) {
            long before = readCompletes.get() + run.sliced.get();
            owner.write(all, i * part, part);
            assertThat(run.readN(part)).isEqualTo(Arrays.copyOfRange(all, i * part, (i + 1) * part));
            await("part " + i + " seen as progress")
                    .atMost(BOUND)
                    .until(() -> readCompletes.get() + run.sliced.get() > before);
        }
        if (io == Io.EPOLL) {
            assertThat(run.sliced.get())
                    .as("the premise: the first slice has not ended")
                    .isZero();
        }
        owner.write(all, 3 * part, length - 3 * part);
        assertThat(run.readN(length - 3 * part)).isEqualTo(Arrays.copyOfRange(all, 3 * part, length));
        await().atMost(BOUND).until(() -> run.ended.isDone());
        assertThat(run.failure.get()).isNull();
    }

    /**
     * A response head read with its body already behind it in the socket (the owner wrote both
     * before the gateway read): {@link ResponseSplice.ReadCount#endBatch} ends the read batch
     * after the read in progress, so the rest stays in the kernel for a splice started at the
     * batch's end, and the next batch follows by itself: the owner sends nothing more.
     */
    @ParameterizedTest
    @EnumSource(Io.class)
    void endBatch_endsTheReadBatchAfterTheReadInProgress_andTheNextBatchFollowsByItself(Io io) throws Exception {
        Batches b = readWrittenBody(io, 1024 * 1024, true);
        assertThat(b.readsInFirst.get()).as("reads in the first batch").isEqualTo(1);
        assertThat(b.batches.get()).isGreaterThan(1);
    }

    /** The premise of the test above: without it, the first batch reads on while its buffers fill. */
    @ParameterizedTest
    @EnumSource(Io.class)
    void withoutEndBatch_theFirstBatchReadsOnWhileItsBuffersFill(Io io) throws Exception {
        Batches b = readWrittenBody(io, 1024 * 1024, false);
        assertThat(b.readsInFirst.get()).as("reads in the first batch").isGreaterThan(1);
    }

    private static final class Batches {
        final AtomicLong bytes = new AtomicLong();
        final AtomicLong readsInFirst = new AtomicLong();
        final AtomicLong batches = new AtomicLong();
    }

    /**
     * Has the owner write {@code length} bytes, waits until all are in the gateway's receive queue,
     * then lets the gateway's connection read them all (calling {@code endBatch} at its first read
     * when {@code endFirstBatch}) and returns what its read batches were.
     */
    private Batches readWrittenBody(Io io, int length, boolean endFirstBatch) throws Exception {
        Batches b = new Batches();
        Channel owner = new Bootstrap()
                .group(loop(io))
                .channel(io.channel)
                .option(ChannelOption.SO_RCVBUF, OWNER_SIDE_BUFFER)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ResponseSplice.ReadCount.install(ch);
                        ch.config().setAutoRead(false);
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                b.bytes.addAndGet(((ByteBuf) msg).readableBytes());
                                ReferenceCountUtil.release(msg);
                                if (b.batches.get() == 0) {
                                    b.readsInFirst.incrementAndGet();
                                    ResponseSplice.ReadCount count = ResponseSplice.ReadCount.of(ctx.channel());
                                    if (endFirstBatch && count != null) {
                                        count.endBatch();
                                    }
                                }
                            }

                            @Override
                            public void channelReadComplete(ChannelHandlerContext ctx) {
                                b.batches.incrementAndGet();
                            }
                        });
                    }
                })
                .connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), ownerServer.getLocalPort()))
                .syncUninterruptibly()
                .channel();
        Socket ownerSide = accept(ownerServer);
        ownerSide.getOutputStream().write(body(length));
        int port = ((InetSocketAddress) owner.localAddress()).getPort();
        await().atMost(BOUND).until(() -> TcpTable.receiveQueue(port, ownerServer.getLocalPort()) == length);
        owner.eventLoop().execute(() -> owner.config().setAutoRead(true));
        await().atMost(BOUND).until(() -> b.bytes.get() == length);
        owner.close().syncUninterruptibly();
        return b;
    }

    // ---- the rig ----

    /** One splice: the gateway's two connections, the reading client's socket, and what the splice reported. */
    private static final class Run {
        final Channel owner;
        final Channel client;
        final Socket reader;
        final AtomicLong sliced = new AtomicLong();
        final AtomicLong drained = new AtomicLong();
        /** Completes at the splice's end: what the owner's socket held behind the body (ResponseSplice.NOTHING...). */
        final CompletableFuture<Integer> ended = new CompletableFuture<>();

        final AtomicReference<Throwable> failure = new AtomicReference<>();

        @Nullable
        Socket ownerSide;

        @Nullable
        KernelSplice splice;

        Run(Channel owner, Channel client, Socket reader) {
            this.owner = owner;
            this.client = client;
            this.reader = reader;
        }

        byte[] readN(int n) throws IOException {
            byte[] b = reader.getInputStream().readNBytes(n);
            assertThat(b).hasSize(n);
            return b;
        }

        /** Answers, on the loop, whether the splice says its wait is the client's. */
        boolean waitsForClient() throws Exception {
            KernelSplice sp = java.util.Objects.requireNonNull(splice);
            return owner.eventLoop().submit(sp::waitsForClient).get(BOUND.toSeconds(), TimeUnit.SECONDS);
        }

        /** Reads until the gateway's side closes. */
        byte[] readToEnd() throws IOException {
            return reader.getInputStream().readAllBytes();
        }
    }

    /**
     * Connects the gateway's two connections, has the owner write {@code sent} (then close when
     * {@code thenClose}), waits until its FIN (if any) reached the gateway's socket while the
     * client read nothing, then returns with the splice of {@code length} bytes running.
     */
    private Run splice(Io io, int length, byte[] sent, boolean thenClose) throws Exception {
        EventLoop loop = loop(io);
        Channel owner = connect(io, loop, ownerServer.getLocalPort(), ChannelOption.SO_RCVBUF, OWNER_SIDE_BUFFER);
        Socket ownerSide = accept(ownerServer);
        Channel client = connect(io, loop, clientServer.getLocalPort(), ChannelOption.SO_SNDBUF, CLIENT_SIDE_BUFFER);
        Run run = new Run(owner, client, accept(clientServer));
        run.ownerSide = ownerSide;
        run.splice = loop.submit(() -> KernelSplice.start(run.owner, run.client, length, new ResponseSplice.Events() {
                    @Override
                    public void onSliced(int bytes) {
                        run.sliced.addAndGet(bytes);
                    }

                    @Override
                    public void onEnded(int after) {
                        run.ended.complete(after);
                    }

                    @Override
                    public void onFailed(Throwable cause) {
                        run.failure.set(cause);
                        run.owner.close();
                    }

                    @Override
                    public void onClientGone() {
                        run.failure.set(new IllegalStateException("client gone"));
                    }

                    @Override
                    public void onDraining() {
                        run.drained.incrementAndGet();
                    }
                }))
                .get(BOUND.toSeconds(), TimeUnit.SECONDS);
        ownerSide.getOutputStream().write(sent);
        if (thenClose) {
            ownerSide.close();
            int port = ownerServer.getLocalPort();
            await().atMost(BOUND).until(() -> finTaken(port));
            await().atMost(BOUND).until(() -> run.drained.get() > 0 || run.failure.get() != null || run.ended.isDone());
        }
        return run;
    }

    private <T> Channel connect(Io io, EventLoop loop, int port, ChannelOption<T> option, T value) {
        return new Bootstrap()
                .group(loop)
                .channel(io.channel)
                .option(option, value)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ResponseSplice.ReadCount.install(ch);
                        ch.config().setAutoRead(false);
                        ch.pipeline().addLast("sink", new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ReferenceCountUtil.release(msg);
                                throw new AssertionError("bytes outside the splice");
                            }
                        });
                    }
                })
                .connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port))
                .syncUninterruptibly()
                .channel();
    }

    private Socket accept(ServerSocket server) throws IOException {
        server.setSoTimeout((int) BOUND.toMillis());
        Socket s = server.accept();
        s.setSoTimeout((int) BOUND.toMillis()); // every read bounded
        sockets.add(s);
        return s;
    }

    /**
     * Answers whether no socket of the owner's port is in FIN_WAIT1 ({@code /proc/net/tcp} state
     * {@code 04}): its FIN was acknowledged, so it and every byte before it are in the gateway's
     * receive queue (TCP takes a FIN in sequence).
     */
    private static boolean finTaken(int port) throws IOException {
        return TcpTable.rows().stream()
                .noneMatch(r -> r.localPort() == port && r.state().equals(TcpTable.FIN_WAIT1));
    }

    private static byte[] body(int n) {
        byte[] b = new byte[n];
        new Random(n).nextBytes(b);
        return b;
    }
}
