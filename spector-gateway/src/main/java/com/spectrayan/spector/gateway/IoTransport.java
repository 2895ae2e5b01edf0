package com.spectrayan.spector.gateway;

import com.spectrayan.spector.gateway.config.ServerSettings.Transport;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUringAdaptiveBufferRingAllocator;
import io.netty.channel.uring.IoUringBufferRingConfig;
import io.netty.channel.uring.IoUringChannelOption;
import io.netty.channel.uring.IoUringDatagramChannel;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringIoHandlerConfig;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;

/**
 * The Netty transport the gateway's event loops and sockets run on, chosen once at start from
 * {@code spector.server.transport} (settings have already refused one that cannot run here).
 *
 * <p>Design notes (issue 14). {@code auto} takes epoll, and NIO off Linux, as Netty's own examples
 * do. io_uring is opt-in: the same loopback exchange costs about a fifth less CPU on it (a loop
 * turn submits its sockets' reads and writes and reaps their completions in one {@code
 * io_uring_enter}, where epoll makes a {@code read}, a {@code writev} and an {@code epoll_ctl} of
 * its own), measured in bench/README.md "The io_uring transport". Both splice large response
 * bodies from socket to socket ({@link #splices()}): epoll with Netty's {@code spliceTo}, io_uring
 * with the cluster's {@code UringSplice} (Netty's io_uring transport splices only files). It is not
 * the default: Docker's and Kubernetes' default seccomp profiles refuse it (settings then refuse
 * it at start, saying why; an {@code auto} that fell back to epoll would hide that), an idle
 * gateway on it is about 3.4 MiB larger (Netty 4.2.18 gives each io_uring loop about 1 MiB of
 * message headers for datagrams at start, 1 024 of them, whatever the loop serves; with or without
 * the provided buffers below) and starts 30-100 ms later, over the memory budget, and on it a loop turn handles up to 128
 * rounds of completions before its tasks and timers (Netty's), so one busy connection delays the
 * timers of the others on its loop longer than on epoll. The whole suite passes on it but for
 * that (a relayed download's send clock under PARANOID leak detection). Envoy ships its io_uring
 * socket interface opt-in too.
 *
 * <p>On io_uring the client connections read into provided buffers ({@link #CLIENT_READS}: a
 * buffer ring per loop, which the kernel picks from as bytes arrive): one multishot receive per
 * connection instead of a poll and a receive per read, about 5 % less CPU per small request
 * (bench/README.md, "Provided buffers on io_uring"). Owner connections read as before: a
 * multishot receive would race {@code UringSplice} for the owner's bytes.
 *
 * @param transport what was chosen: never {@link Transport#AUTO}
 * @param factory the event loops' I/O handler
 * @param serverChannel the listeners' channel class
 * @param socketChannel the connections' channel class (client side and owner side)
 * @param datagramChannel the DNS resolver's channel class
 */
record IoTransport(
        Transport transport,
        IoHandlerFactory factory,
        Class<? extends ServerChannel> serverChannel,
        Class<? extends SocketChannel> socketChannel,
        Class<? extends DatagramChannel> datagramChannel) {

    /** The buffer ring's group id on each io_uring loop: the client connections read from it. */
    static final short CLIENT_READS = 1;

    /**
     * The buffers in each loop's ring (a power of two): as many reads as may be in flight on a
     * loop's client connections before the kernel answers {@code ENOBUFS} and Netty grows it.
     */
    static final short CLIENT_READ_RING = 512;

    /** The buffers put in a ring at a time: at start, and each time the kernel finds it empty ({@code ENOBUFS}). */
    static final int CLIENT_READ_BATCH = 64;

    /** Resolves {@code wanted}: {@code auto} to epoll where it runs, else NIO. */
    static IoTransport of(Transport wanted) {
        Transport t = wanted;
        if (t == Transport.AUTO) {
            t = Transport.EPOLL.unavailability() == null ? Transport.EPOLL : Transport.NIO;
        }
        return switch (t) {
            case IO_URING ->
                new IoTransport(
                        t,
                        IoUringIoHandler.newFactory(new IoUringIoHandlerConfig()
                                .setBufferRingConfig(IoUringBufferRingConfig.builder()
                                        .bufferGroupId(CLIENT_READS)
                                        .bufferRingSize(CLIENT_READ_RING)
                                        .batchSize(CLIENT_READ_BATCH)
                                        .allocator(new IoUringAdaptiveBufferRingAllocator(ByteBufAllocator.DEFAULT))
                                        .build())),
                        IoUringServerSocketChannel.class,
                        IoUringSocketChannel.class,
                        IoUringDatagramChannel.class);
            case EPOLL ->
                new IoTransport(
                        t,
                        EpollIoHandler.newFactory(),
                        EpollServerSocketChannel.class,
                        EpollSocketChannel.class,
                        EpollDatagramChannel.class);
            case NIO, AUTO ->
                new IoTransport(
                        Transport.NIO,
                        NioIoHandler.newFactory(),
                        NioServerSocketChannel.class,
                        NioSocketChannel.class,
                        NioDatagramChannel.class);
        };
    }

    /** Sets what {@code clients}' accepted connections need on this transport: io_uring's provided buffers. */
    ServerBootstrap clientOptions(ServerBootstrap clients) {
        return transport == Transport.IO_URING
                ? clients.childOption(IoUringChannelOption.IO_URING_BUFFER_GROUP_ID, CLIENT_READS)
                : clients;
    }

    /** Answers whether response bodies can be spliced from socket to socket: on epoll and io_uring. */
    boolean splices() {
        return transport == Transport.EPOLL || transport == Transport.IO_URING;
    }

    /** The transport's name for the start-up line: {@code io_uring}, {@code epoll} or {@code nio}. */
    String label() {
        return transport.label();
    }
}
