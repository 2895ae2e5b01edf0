package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.EmptyHttpHeaders;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link Splice} over real loopback connections. The gateway's client channel is accepted by a
 * small Netty server on one event loop, its owner channel is dialled from another loop, and both
 * peers are blocking sockets, so each test sees exactly the bytes that crossed the splice. Socket
 * buffers are kept small, so backpressure is reached quickly.
 */
final class SpliceTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final Duration IDLE = Duration.ofMinutes(1);
    private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();
    private static final int MIB = 1024 * 1024;

    /** Kernel buffer size asked for on every socket of the path (Linux doubles it), so TCP holds little. */
    private static final int SOCKET_BUFFER_BYTES = 64 * 1024;

    private static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(32 * 1024, 64 * 1024);

    /** The most a read can add past the high water mark: one read buffer of Netty's default allocator. */
    private static final int MAX_READ_BYTES = 64 * 1024;

    private EventLoopGroup clientLoop;
    private EventLoopGroup ownerLoop;
    private ExecutorService peerThreads;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void startLoops() {
        clientLoop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        ownerLoop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        peerThreads = Executors.newCachedThreadPool();
    }

    @AfterEach
    void stopAll() throws Exception {
        for (AutoCloseable c : toClose) {
            c.close();
        }
        peerThreads.shutdownNow();
        assertThat(peerThreads.awaitTermination(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .isTrue();
        for (EventLoopGroup g : List.of(clientLoop, ownerLoop)) {
            g.shutdownGracefully(0, WAIT.toMillis(), TimeUnit.MILLISECONDS)
                    .await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** The four ends of one spliced path: two peers and the gateway's two channels between them. */
    private record Wires(Socket clientPeer, Channel client, Channel owner, Socket ownerPeer) {}

    private Wires connect() throws Exception {
        return connect(() -> new ChannelInboundHandlerAdapter(), () -> new ChannelInboundHandlerAdapter());
    }

    /** Connects both pairs; the gateway's channels start with autoRead off and the given handlers. */
    private Wires connect(Supplier<ChannelHandler> clientHandler, Supplier<ChannelHandler> ownerHandler)
            throws Exception {
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        Channel listener = new ServerBootstrap()
                .group(clientLoop)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.AUTO_READ, false)
                .childOption(ChannelOption.SO_RCVBUF, SOCKET_BUFFER_BYTES)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(clientHandler.get());
                        accepted.complete(ch);
                    }
                })
                .bind(LOOPBACK, 0)
                .syncUninterruptibly()
                .channel();
        toClose.add(() -> listener.close().await(WAIT.toMillis()));
        Socket clientPeer = new Socket();
        toClose.add(clientPeer);
        clientPeer.setSoTimeout((int) WAIT.toMillis());
        clientPeer.setSendBufferSize(SOCKET_BUFFER_BYTES);
        clientPeer.connect(listener.localAddress(), (int) WAIT.toMillis());
        Channel client = accepted.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        toClose.add(() -> client.close().await(WAIT.toMillis()));

        ServerSocket ownerListener = new ServerSocket();
        toClose.add(ownerListener);
        ownerListener.setReceiveBufferSize(SOCKET_BUFFER_BYTES);
        ownerListener.setSoTimeout((int) WAIT.toMillis());
        ownerListener.bind(new InetSocketAddress(LOOPBACK, 0));
        Channel owner = new Bootstrap()
                .group(ownerLoop)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.SO_SNDBUF, SOCKET_BUFFER_BYTES)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
                .handler(ownerHandler.get())
                .connect(ownerListener.getLocalSocketAddress())
                .syncUninterruptibly()
                .channel();
        toClose.add(() -> owner.close().await(WAIT.toMillis()));
        Socket ownerPeer = ownerListener.accept();
        toClose.add(ownerPeer);
        ownerPeer.setSoTimeout((int) WAIT.toMillis());
        assertThat(client.eventLoop()).as("the two channels' loops").isNotSameAs(owner.eventLoop());
        return new Wires(clientPeer, client, owner, ownerPeer);
    }

    private static byte[] randomBytes(int n, long seed) {
        byte[] bytes = new byte[n];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /** Writes bytes in 64 KiB pieces on a peer thread. */
    private Future<?> writeAll(Socket peer, byte[] bytes) {
        return peerThreads.submit(() -> {
            OutputStream out = peer.getOutputStream();
            for (int i = 0; i < bytes.length; i += 64 * 1024) {
                out.write(bytes, i, Math.min(64 * 1024, bytes.length - i));
            }
            out.flush();
            return null;
        });
    }

    /** Reads exactly n bytes on a peer thread and returns their SHA-256. */
    private Future<byte[]> readHash(Socket peer, int n) {
        return peerThreads.submit(() -> {
            MessageDigest digest = sha256();
            InputStream in = peer.getInputStream();
            byte[] buffer = new byte[64 * 1024];
            int left = n;
            while (left > 0) {
                int read = in.read(buffer, 0, Math.min(buffer.length, left));
                if (read < 0) {
                    throw new IOException("EOF with " + left + " of " + n + " bytes to go");
                }
                digest.update(buffer, 0, read);
                left -= read;
            }
            return digest.digest();
        });
    }

    /** Reads until EOF (or a reset) on a peer thread; returns every byte. */
    private Future<byte[]> readToEof(Socket peer) {
        return peerThreads.submit(() -> {
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            InputStream in = peer.getInputStream();
            byte[] buffer = new byte[64 * 1024];
            try {
                for (int read = in.read(buffer); read >= 0; read = in.read(buffer)) {
                    all.write(buffer, 0, read);
                }
            } catch (SocketException e) {
                // A reset also ends the stream; what arrived before it is returned.
            }
            return all.toByteArray();
        });
    }

    private static <T> T result(Future<T> future) throws Exception {
        return future.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static void awaitClosed(Splice splice) throws InterruptedException {
        assertThat(splice.closeFuture().await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .as("both channels closed")
                .isTrue();
    }

    /** RFC 9110 §7.8 (after a 101 the connection carries the new protocol): 8 MiB each way at once, byte for byte. */
    @Test
    void join_eightMiBEachWayAtOnce_arriveByteForByte() throws Exception {
        Wires w = connect();
        byte[] up = randomBytes(8 * MIB, 1);
        byte[] down = randomBytes(8 * MIB, 2);
        Splice splice = Splice.join(w.client(), w.owner(), IDLE);

        Future<byte[]> ownerGot = readHash(w.ownerPeer(), up.length);
        Future<byte[]> clientGot = readHash(w.clientPeer(), down.length);
        Future<?> upWritten = writeAll(w.clientPeer(), up);
        Future<?> downWritten = writeAll(w.ownerPeer(), down);

        result(upWritten);
        result(downWritten);
        assertThat(result(ownerGot)).as("client to owner").isEqualTo(sha256().digest(up));
        assertThat(result(clientGot)).as("owner to client").isEqualTo(sha256().digest(down));
        assertThat(splice.bytesClientToOwner()).isEqualTo(up.length);
        assertThat(splice.bytesOwnerToClient()).isEqualTo(down.length);
        assertThat(splice.state()).isEqualTo(Splice.State.OPEN);
        splice.close();
        awaitClosed(splice);
    }

    /**
     * RFC 9110 §7.8; backpressure as Netty's proxy example: an owner that stops reading stops the
     * splice reading the client (autoRead off), the gateway holds no more than the owner channel's
     * high water mark plus one read, the other direction still flows, and everything arrives once
     * the owner reads again.
     */
    @Test
    void join_ownerStopsReading_clientIsNotReadUntilTheOwnerDrains() throws Exception {
        Wires w = connect();
        byte[] up = randomBytes(8 * MIB, 3);
        byte[] down = randomBytes(MIB, 4);
        Splice splice = Splice.join(w.client(), w.owner(), IDLE);

        Future<?> upWritten = writeAll(w.clientPeer(), up);
        await().atMost(WAIT).until(() -> !w.client().config().isAutoRead());
        assertThat(pendingOutbound(w.owner())).isLessThanOrEqualTo(WATER_MARK.high() + MAX_READ_BYTES);

        Future<byte[]> clientGot = readHash(w.clientPeer(), down.length);
        result(writeAll(w.ownerPeer(), down));
        assertThat(result(clientGot)).as("owner to client while stalled").isEqualTo(sha256().digest(down));
        assertThat(w.client().config().isAutoRead()).as("still stalled").isFalse();
        assertThat(splice.bytesClientToOwner())
                .as("read from the client while stalled")
                .isLessThan(2L * MIB);
        assertThat(upWritten).as("the client's writer is held by TCP").isNotDone();
        assertThat(pendingOutbound(w.owner())).isLessThanOrEqualTo(WATER_MARK.high() + MAX_READ_BYTES);

        Future<byte[]> ownerGot = readHash(w.ownerPeer(), up.length);
        result(upWritten);
        assertThat(result(ownerGot)).isEqualTo(sha256().digest(up));
        await().atMost(WAIT).until(() -> w.client().config().isAutoRead());
        assertThat(splice.bytesClientToOwner()).isEqualTo(up.length);
        splice.close();
        awaitClosed(splice);
    }

    private static long pendingOutbound(Channel channel) {
        ChannelOutboundBuffer buffer = channel.unsafe().outboundBuffer();
        return buffer == null ? 0 : buffer.totalPendingWriteBytes();
    }

    enum Closer {
        CLIENT,
        OWNER
    }

    /**
     * RFC 9293 §3.6 (a FIN follows the last byte); half-close not propagated: when one peer sends
     * its last bytes and closes, the other peer gets every byte, then EOF, and both channels close.
     */
    @ParameterizedTest
    @EnumSource(Closer.class)
    void join_oneSideClosesAfterItsLastBytes_theOtherGetsThemAllThenEof(Closer closer) throws Exception {
        Wires w = connect();
        Socket closing = closer == Closer.CLIENT ? w.clientPeer() : w.ownerPeer();
        Socket other = closer == Closer.CLIENT ? w.ownerPeer() : w.clientPeer();
        byte[] last = randomBytes(2 * MIB, 5);
        Splice splice = Splice.join(w.client(), w.owner(), IDLE);

        Future<byte[]> got = readToEof(other);
        result(writeAll(closing, last));
        closing.close();

        assertThat(result(got)).as("bytes before EOF").isEqualTo(last);
        awaitClosed(splice);
        assertThat(w.client().isActive()).isFalse();
        assertThat(w.owner().isActive()).isFalse();
        assertThat(splice.state()).isEqualTo(Splice.State.CLOSED);
    }

    /** RFC 9293 §3.10.7.3 (a reset): a client that resets makes the splice close the owner. */
    @Test
    void join_clientResets_theOwnerIsClosed() throws Exception {
        Wires w = connect();
        Splice splice = Splice.join(w.client(), w.owner(), IDLE);
        Future<byte[]> ownerGot = readToEof(w.ownerPeer());
        result(writeAll(w.clientPeer(), "before the reset".getBytes(StandardCharsets.US_ASCII)));
        await().atMost(WAIT).until(() -> splice.bytesClientToOwner() == 16);

        w.clientPeer().setSoLinger(true, 0);
        w.clientPeer().close();

        assertThat(new String(result(ownerGot), StandardCharsets.US_ASCII)).isEqualTo("before the reset");
        awaitClosed(splice);
    }

    /**
     * RFC 9110 §7.8 with the gateway's stream idle timeout: no byte either way for the idle
     * timeout closes both connections, and the clock restarts with every byte read: a byte sent
     * before the timeout, then one sent after the timeout counted from the join, both arrive.
     */
    @Test
    void join_noByteForTheIdleTimeout_closesBoth() throws Exception {
        Duration idle = Duration.ofSeconds(1);
        Wires w = connect();
        ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor();
        toClose.add(later::shutdownNow);
        Splice splice = Splice.join(w.client(), w.owner(), idle);

        Future<Long> first = sendLater(later, w.clientPeer(), 'a', idle.toMillis() / 2);
        Future<Long> second = sendLater(later, w.ownerPeer(), 'b', idle.toMillis() * 5 / 4);
        Future<byte[]> ownerGot = readToEof(w.ownerPeer());
        Future<byte[]> clientGot = readToEof(w.clientPeer());
        result(first);
        long lastSentAt = result(second);

        awaitClosed(splice);
        long closedAfter = System.nanoTime() - lastSentAt;
        assertThat(result(ownerGot)).as("sent at half the timeout").containsExactly('a');
        assertThat(result(clientGot)).as("sent past the timeout from the join").containsExactly('b');
        assertThat(Duration.ofNanos(closedAfter))
                .as("closed after the last byte")
                .isGreaterThanOrEqualTo(idle);
    }

    /** Writes one byte after a delay (a scheduled task, not a sleep); returns when it was written. */
    private static Future<Long> sendLater(ScheduledExecutorService later, Socket peer, int b, long delayMs) {
        return later.schedule(
                () -> {
                    long at = System.nanoTime();
                    peer.getOutputStream().write(b);
                    return at;
                },
                delayMs,
                TimeUnit.MILLISECONDS);
    }

    /**
     * RFC 9110 §7.8 (the first bytes of the new protocol may come with the 101): bytes buffered
     * before the join go first, ahead of bytes the peers had already sent when the join started.
     */
    @Test
    void join_bufferedBytes_arriveBeforeAnythingReadLater() throws Exception {
        Wires w = connect();
        result(writeAll(w.clientPeer(), "later-from-client".getBytes(StandardCharsets.US_ASCII)));
        result(writeAll(w.ownerPeer(), "later-from-owner".getBytes(StandardCharsets.US_ASCII)));
        ByteBuf fromClient = Unpooled.copiedBuffer("first-from-client|", StandardCharsets.US_ASCII);
        ByteBuf fromOwner = Unpooled.copiedBuffer("first-from-owner|", StandardCharsets.US_ASCII);

        Splice splice = Splice.join(w.client(), w.owner(), IDLE, fromClient, fromOwner);

        assertThat(new String(w.ownerPeer().getInputStream().readNBytes(35), StandardCharsets.US_ASCII))
                .isEqualTo("first-from-client|later-from-client");
        assertThat(new String(w.clientPeer().getInputStream().readNBytes(33), StandardCharsets.US_ASCII))
                .isEqualTo("first-from-owner|later-from-owner");
        assertThat(splice.bytesClientToOwner()).isEqualTo(35);
        assertThat(splice.bytesOwnerToClient()).isEqualTo(33);
        splice.close();
        awaitClosed(splice);
    }

    /** A message that is not bytes (a leftover of a removed codec) is released, never forwarded. */
    @Test
    void splice_messageThatIsNotBytes_isReleasedAndNotForwarded() throws Exception {
        Wires w = connect();
        Splice splice = Splice.join(w.client(), w.owner(), IDLE);
        await().atMost(WAIT).until(() -> w.client().pipeline().get(Splice.HANDLER_NAME) != null);
        DefaultByteBufHolder holder =
                new DefaultByteBufHolder(Unpooled.copiedBuffer("not-bytes", StandardCharsets.US_ASCII));

        w.client()
                .eventLoop()
                .submit(() -> w.client().pipeline().fireChannelRead(holder))
                .get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        result(writeAll(w.clientPeer(), "bytes".getBytes(StandardCharsets.US_ASCII)));

        assertThat(new String(w.ownerPeer().getInputStream().readNBytes(5), StandardCharsets.US_ASCII))
                .isEqualTo("bytes");
        assertThat(holder.refCnt()).isZero();
        assertThat(splice.bytesClientToOwner()).isEqualTo(5);
        splice.close();
        awaitClosed(splice);
    }

    /** close() closes both channels at once, and the close future completes. */
    @Test
    void close_closesBothAndCompletesTheCloseFuture() throws Exception {
        Wires w = connect();
        Splice splice = Splice.join(w.client(), w.owner(), IDLE);
        Future<byte[]> ownerGot = readToEof(w.ownerPeer());
        Future<byte[]> clientGot = readToEof(w.clientPeer());

        splice.close();
        splice.close();

        awaitClosed(splice);
        assertThat(result(ownerGot)).isEmpty();
        assertThat(result(clientGot)).isEmpty();
        assertThat(splice.state()).isEqualTo(Splice.State.CLOSED);
    }

    /** A non-positive idle timeout is refused, naming the bound, and the buffers are released. */
    @Test
    void join_zeroIdleTimeout_isRefusedAndReleasesTheBuffers() {
        EmbeddedChannel a = new EmbeddedChannel();
        EmbeddedChannel b = new EmbeddedChannel();
        ByteBuf fromClient = Unpooled.copiedBuffer("c", StandardCharsets.US_ASCII);
        ByteBuf fromOwner = Unpooled.copiedBuffer("o", StandardCharsets.US_ASCII);
        try {
            assertThatThrownBy(() -> Splice.join(a, b, Duration.ZERO, fromClient, fromOwner))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("idleTimeout: PT0S (expected: > 0)");
            assertThat(fromClient.refCnt()).isZero();
            assertThat(fromOwner.refCnt()).isZero();
        } finally {
            a.finishAndReleaseAll();
            b.finishAndReleaseAll();
        }
    }

    /**
     * RFC 6455 §4.2.2 and §4.1 (the server may send frames right after its 101): an owner that
     * sends its first frame in the same TCP write as the 101 head loses no byte when the codecs
     * are removed as the {@link Splice} notes say: {@code HttpClientCodec} in its upgraded state,
     * then removed, hands the frame over as bytes.
     */
    @Test
    void removeCodec_firstFrameInTheSameWriteAsThe101_losesNoByte() throws Exception {
        byte[] ownerFrame = serverTextFrame("hello-from-owner");
        byte[] clientFrame = {
            (byte) 0x81, (byte) 0x85, 0x37, (byte) 0xfa, 0x21, 0x3d, 0x7f, (byte) 0x9f, 0x4d, 0x51, 0x58
        };
        AtomicInteger bufferedFromOwner = new AtomicInteger(-1);
        CompletableFuture<Splice> spliced = new CompletableFuture<>();
        CompletableFuture<HttpRequest> upgradeRequest = new CompletableFuture<>();
        CompletableFuture<Channel> clientChannel = new CompletableFuture<>();
        Wires w = connect(
                () -> new RequestTaker(upgradeRequest),
                () -> new SwitchOnThe101(bufferedFromOwner, spliced, clientChannel));
        Channel client = w.client();
        Channel owner = w.owner();
        clientChannel.complete(client);
        client.read();

        w.clientPeer()
                .getOutputStream()
                .write(head(
                        "GET /api/v1/namespaces/n/ws HTTP/1.1",
                        "Host: gw",
                        "Upgrade: websocket",
                        "Connection: Upgrade",
                        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                        "Sec-WebSocket-Version: 13"));
        HttpRequest request = upgradeRequest.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        owner.writeAndFlush(new DefaultFullHttpRequest(
                HttpVersion.HTTP_1_1,
                HttpMethod.GET,
                request.uri(),
                Unpooled.EMPTY_BUFFER,
                request.headers(),
                EmptyHttpHeaders.INSTANCE));
        owner.read();
        String forwarded = readHead(w.ownerPeer().getInputStream());
        byte[] head = head(
                "HTTP/1.1 101 Switching Protocols",
                "Upgrade: websocket",
                "Connection: Upgrade",
                "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        byte[] oneWrite = Arrays.copyOf(head, head.length + ownerFrame.length);
        System.arraycopy(ownerFrame, 0, oneWrite, head.length, ownerFrame.length);
        w.ownerPeer().getOutputStream().write(oneWrite); // the 101 and the first frame in one write

        String clientHead = readHead(w.clientPeer().getInputStream());
        byte[] clientGot = w.clientPeer().getInputStream().readNBytes(ownerFrame.length);
        Splice splice = spliced.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        w.clientPeer().getOutputStream().write(clientFrame);
        byte[] ownerGot = w.ownerPeer().getInputStream().readNBytes(clientFrame.length);

        assertThat(forwarded).startsWith("GET /api/v1/namespaces/n/ws HTTP/1.1").contains("Upgrade: websocket");
        assertThat(clientHead)
                .startsWith("HTTP/1.1 101")
                .contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assertThat(bufferedFromOwner.get())
                .as("bytes the codec held after the 101")
                .isEqualTo(ownerFrame.length);
        assertThat(clientGot).as("the owner's first frame").isEqualTo(ownerFrame);
        assertThat(ownerGot).as("the client's first frame").isEqualTo(clientFrame);
        assertThat(splice.bytesOwnerToClient()).isEqualTo(ownerFrame.length);
        assertThat(splice.bytesClientToOwner()).isEqualTo(clientFrame.length);
        assertThat(client.pipeline().names()).startsWith(Splice.HANDLER_NAME).doesNotContain("http", "exchange");
        assertThat(owner.pipeline().names()).startsWith(Splice.HANDLER_NAME).doesNotContain("http", "exchange");
        splice.close();
        awaitClosed(splice);
    }

    /** Returns an unmasked text frame, as an owner (a server) sends it. */
    private static byte[] serverTextFrame(String text) {
        byte[] payload = text.getBytes(StandardCharsets.UTF_8);
        byte[] frame = new byte[2 + payload.length];
        frame[0] = (byte) 0x81;
        frame[1] = (byte) payload.length;
        System.arraycopy(payload, 0, frame, 2, payload.length);
        return frame;
    }

    /** Returns an HTTP head: the lines, each ended by CRLF, then the empty line. */
    private static byte[] head(String... lines) {
        return (String.join("\r\n", lines) + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    }

    /** Reads an HTTP head up to its empty line. */
    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("EOF in a head: " + head.toString(StandardCharsets.US_ASCII));
            }
            head.write(b);
        }
        return head.toString(StandardCharsets.US_ASCII);
    }

    /** The client side of the handover test: an HTTP server codec and a handler that takes the request. */
    private static final class RequestTaker extends ChannelInitializer<Channel> {
        private final CompletableFuture<HttpRequest> request;

        RequestTaker(CompletableFuture<HttpRequest> request) {
            this.request = request;
        }

        @Override
        protected void initChannel(Channel ch) {
            ch.pipeline()
                    .addLast("http", new HttpServerCodec())
                    .addLast("exchange", new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            if (msg instanceof HttpRequest r) {
                                request.complete(r);
                            }
                            ReferenceCountUtil.release(msg);
                        }
                    });
        }
    }

    /**
     * The owner side of the handover test, doing what {@link Splice}'s notes ask of the lead: on
     * the 101, remove {@code HttpClientCodec} and keep what it held, then on the client's loop
     * write the 101, remove {@code HttpServerCodec}, and join.
     */
    private static final class SwitchOnThe101 extends ChannelInitializer<Channel> {
        private final AtomicInteger bufferedFromOwner;
        private final CompletableFuture<Splice> spliced;
        private final CompletableFuture<Channel> clientChannel; // completed before the 101 can come

        SwitchOnThe101(
                AtomicInteger bufferedFromOwner,
                CompletableFuture<Splice> spliced,
                CompletableFuture<Channel> clientChannel) {
            this.bufferedFromOwner = bufferedFromOwner;
            this.spliced = spliced;
            this.clientChannel = clientChannel;
        }

        @Override
        protected void initChannel(Channel owner) {
            owner.pipeline()
                    .addLast("http", new HttpClientCodec())
                    .addLast("exchange", new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            try {
                                if (msg instanceof HttpResponse r
                                        && r.status().equals(HttpResponseStatus.SWITCHING_PROTOCOLS)) {
                                    switchOver(ctx, r);
                                }
                            } finally {
                                ReferenceCountUtil.release(msg);
                            }
                        }
                    });
        }

        private void switchOver(ChannelHandlerContext ctx, HttpResponse response) {
            Channel owner = ctx.channel();
            ByteBuf fromOwner = Splice.removeCodec(owner.pipeline(), "http");
            bufferedFromOwner.set(fromOwner.readableBytes());
            owner.pipeline().remove(ctx.handler());
            HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.SWITCHING_PROTOCOLS);
            head.headers().set(response.headers());
            Channel client = clientChannel.getNow(null);
            if (client == null) {
                throw new IllegalStateException("a 101 before the client channel was known");
            }
            client.eventLoop().execute(() -> {
                client.writeAndFlush(head);
                ByteBuf fromClient = Splice.removeCodec(client.pipeline(), "http");
                client.pipeline().remove("exchange");
                spliced.complete(Splice.join(client, owner, IDLE, fromClient, fromOwner));
            });
        }
    }
}
