package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringDatagramChannel;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.Future;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Heads on the heap, bodies where the socket put them ({@link HeadBuffers}, issue 14): an owner
 * connection on a native transport (epoll, io_uring) encodes its request head into a heap buffer
 * and still reads its response body into direct memory (the splice and the client's write need it
 * there), and the bytes on the wire are the request as it was written. Real sockets, real loops.
 */
final class HeadBuffersTest {
    private static final long WAIT_MS = 5_000;

    /** The native transports whose reads go to direct memory whatever the allocator prefers. */
    enum Native {
        EPOLL,
        IO_URING;

        boolean available() {
            return this == EPOLL ? Epoll.isAvailable() : IoUring.isAvailable();
        }

        IoHandlerFactory factory() {
            return this == EPOLL ? EpollIoHandler.newFactory() : IoUringIoHandler.newFactory();
        }

        Class<? extends SocketChannel> socket() {
            return this == EPOLL ? EpollSocketChannel.class : IoUringSocketChannel.class;
        }

        Class<? extends DatagramChannel> datagram() {
            return this == EPOLL ? EpollDatagramChannel.class : IoUringDatagramChannel.class;
        }
    }

    private ServerSocket owner;

    @BeforeEach
    void start() throws Exception {
        owner = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        owner.setSoTimeout((int) WAIT_MS);
    }

    @AfterEach
    void stop() throws Exception {
        owner.close();
    }

    @Test
    void apply_givesAnEpollConnectionHeapHeads_andRestoreTakesThemBack() throws Exception {
        assertThat(Epoll.isAvailable()).as("native epoll").isTrue();
        EpollSocketChannel epoll = new EpollSocketChannel();
        try {
            HeadBuffers.apply(epoll);
            assertThat(epoll.alloc()).isSameAs(HeadBuffers.HEAP_HEADS);
            ByteBuf heap = epoll.alloc().buffer(64);
            assertThat(heap.isDirect()).as("an encoder's buffer()").isFalse();
            heap.release();
            ByteBuf direct = epoll.alloc().directBuffer(64);
            assertThat(direct.isDirect()).isTrue();
            direct.release();

            HeadBuffers.restore(epoll);
            assertThat(epoll.alloc()).isSameAs(ByteBufAllocator.DEFAULT);
        } finally {
            epoll.unsafe().closeForcibly();
        }
    }

    @Test
    void apply_leavesANioConnectionAlone_itsReadsWouldGoToTheHeap() {
        NioSocketChannel nio = new NioSocketChannel();
        try {
            ByteBufAllocator before = nio.alloc();
            HeadBuffers.apply(nio);
            assertThat(nio.alloc()).isSameAs(before).isNotSameAs(HeadBuffers.HEAP_HEADS);
        } finally {
            nio.unsafe().closeForcibly();
        }
    }

    @ParameterizedTest
    @EnumSource(Native.class)
    void ownerConnection_headEncodedOnTheHeap_bodyReadIntoDirectMemory_bytesAsWritten(Native transport)
            throws Exception {
        assertThat(transport.available()).as("%s on this machine", transport).isTrue();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, transport.factory());
        try {
            exchange(group, transport);
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    private void exchange(EventLoopGroup group, Native transport) throws Exception {
        List<Boolean> writtenDirect = new CopyOnWriteArrayList<>();
        AnswerListener listener = new AnswerListener();
        URI uri = URI.create("http://127.0.0.1:" + owner.getLocalPort());
        try (UpstreamHttpTransport t = new UpstreamHttpTransport(
                new TransportSpec(
                        Duration.ofSeconds(2), 1, 0, Duration.ofSeconds(2), Duration.ofSeconds(30), 16 * 1024, 8192),
                transport.socket(),
                transport.datagram())) {
            EventLoop loop = group.next();
            Future<Channel> f =
                    loop.submit(() -> t.acquire(loop, uri, listener)).get(WAIT_MS, TimeUnit.MILLISECONDS);
            assertThat(f.await(WAIT_MS)).isTrue();
            assertThat(f.isSuccess()).as("acquired: %s", f.cause()).isTrue();
            Channel ch = f.getNow();
            assertThat(ch.alloc()).isSameAs(HeadBuffers.HEAP_HEADS);
            // What the codec hands the transport, before the transport's own copy into direct memory.
            ch.pipeline().addFirst(new ChannelOutboundHandlerAdapter() {
                @Override
                public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                    if (msg instanceof ByteBuf b && b.isReadable()) {
                        writtenDirect.add(b.isDirect());
                    }
                    ctx.write(msg, promise);
                }
            });

            try (Socket peer = owner.accept()) {
                FullHttpRequest request = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/a?b=1");
                request.headers().set(HttpHeaderNames.HOST, "owner-0").set("X-Request-Id", "r-1");
                loop.submit(() -> ch.writeAndFlush(request)).get(WAIT_MS, TimeUnit.MILLISECONDS);

                String expected = "GET /a?b=1 HTTP/1.1\r\nhost: owner-0\r\nX-Request-Id: r-1\r\n\r\n";
                assertThat(readHead(peer.getInputStream()))
                        .as("the owner's bytes")
                        .isEqualTo(expected);
                assertThat(writtenDirect).as("the encoded head").containsExactly(false);

                OutputStream out = peer.getOutputStream();
                out.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                assertThat(listener.status.get(WAIT_MS, TimeUnit.MILLISECONDS)).isEqualTo(200);
                assertThat(listener.bodyDirect.get(WAIT_MS, TimeUnit.MILLISECONDS))
                        .as("the body stays where the socket read it")
                        .isTrue();
            }
            loop.submit(() -> t.release(loop, uri, ch, false)).get(WAIT_MS, TimeUnit.MILLISECONDS);
        }
    }

    /** Reads up to and with the blank line that ends a head. */
    private static String readHead(InputStream in) throws Exception {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (true) {
            int b = in.read();
            assertThat(b).as("the head ended before the connection").isNotNegative();
            head.write(b);
            byte[] h = head.toByteArray();
            int n = h.length;
            if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
                return head.toString(StandardCharsets.US_ASCII);
            }
        }
    }
}
