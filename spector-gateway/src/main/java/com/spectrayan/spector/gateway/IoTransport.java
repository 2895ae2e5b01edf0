package com.spectrayan.spector.gateway;

import com.spectrayan.spector.gateway.config.ServerSettings.Transport;
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
import io.netty.channel.uring.IoUringDatagramChannel;
import io.netty.channel.uring.IoUringIoHandler;
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
 * the default because Docker's and Kubernetes' default seccomp profiles refuse it (settings then
 * refuse it at start, saying why). Envoy ships its io_uring socket interface opt-in too.
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
                        IoUringIoHandler.newFactory(),
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

    /** Answers whether response bodies can be spliced from socket to socket: on epoll and io_uring. */
    boolean splices() {
        return transport == Transport.EPOLL || transport == Transport.IO_URING;
    }

    /** The transport's name for the start-up line: {@code io_uring}, {@code epoll} or {@code nio}. */
    String label() {
        return transport.label();
    }
}
