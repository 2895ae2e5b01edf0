package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.gateway.config.PeerSettings;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.flow.FlowControlHandler;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The peer listener ({@code spector.server.peer-port}): the cell's other gateway replicas hand
 * relays to this one here. The pipeline is the client port's (the same decoder bounds, head and
 * body timers, one client side per connection), with a {@link GatewayHandler} in peer mode
 * ({@link PeerRelay}), so a peer exchange is framed, paced and drained exactly as a client's.
 *
 * <p>{@link #address()} is what the other replicas dial: {@code spector.server.peer-address}, its
 * port defaulting to the bound one, or the first non-loopback address of this host (IPv4 first)
 * and the bound port.
 *
 * <p>Thread-safety: {@link #close()} may run on any thread, once.
 *
 * @param server the bound listener
 * @param connections the open peer connections, closed with it
 * @param closing set as {@link #close} begins: a connection accepted in that instant, which the
 *     close of {@code connections} may miss, closes itself
 * @param address what the other replicas dial, {@code host:port}
 */
record PeerListener(Channel server, ChannelGroup connections, AtomicBoolean closing, String address)
        implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PeerListener.class);

    /** The name of the peer pipeline's codec, as {@link ClientConnection} finds it. */
    private static final String CODEC = ClientConnection.CLIENT_CODEC;

    /**
     * Binds the peer port on {@code host}.
     *
     * @param idleTimeout an idle peer connection is closed after it ({@code spector.server.idle-timeout})
     * @param maxConnections the most peer connections open at once ({@code spector.server.max-connections},
     *     counted apart from the client port's); at it an idle one makes room, else the new one is closed
     */
    static PeerListener bind(
            PeerSettings peer,
            String host,
            Duration idleTimeout,
            GatewayContext context,
            PeerRelay relay,
            EventLoopGroup workers,
            Class<? extends ServerChannel> serverClass,
            HttpDecoderConfig decoder,
            int maxConnections) {
        requireNonNull(relay, "relay");
        AtomicInteger count = new AtomicInteger();
        // stayClosed: a connection accepted while the listener closes is closed as it joins, not kept
        ChannelGroup open = new DefaultChannelGroup("peers", GlobalEventExecutor.INSTANCE, true);
        AtomicBoolean closing = new AtomicBoolean();
        ReusableConnections reusable = new ReusableConnections(); // this port's own, apart from the client port's
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(workers)
                .channel(serverClass)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.SO_KEEPALIVE, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, GatewayServer.CLIENT_WATER_MARK)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        // The port is reachable by anyone who can reach the host: bounded as the
                        // client port is (max-connections, an idle one making room first), so
                        // idle sockets cannot take every file the process has.
                        if (count.incrementAndGet() > maxConnections) {
                            Channel idle = reusable.longest();
                            if (idle == null) {
                                count.decrementAndGet();
                                log.debug("peer port: refused a connection, {} open", maxConnections);
                                ch.close();
                                return;
                            }
                            idle.close();
                        }
                        ch.closeFuture().addListener(f -> count.decrementAndGet());
                        open.add(ch);
                        if (closing.get()) {
                            ch.close(); // accepted as the listener closed, after the group's close
                            return;
                        }
                        GatewayHandler gateway = new GatewayHandler(context, false, relay, idleTimeout, reusable);
                        ClientCodec codec = new ClientCodec(decoder, true);
                        ch.pipeline()
                                .addLast("head-watch", new GatewayHandler.HeadWatch(gateway))
                                .addLast(CODEC, codec.decoder())
                                .addLast(ClientCodec.ENCODER_NAME, codec.encoder())
                                .addLast("flow", new FlowControlHandler())
                                .addLast("gateway", gateway);
                    }
                });
        Channel server = Listen.bind(bootstrap, new InetSocketAddress(host, peer.port()), "spector.server.peer-port");
        int bound = ((InetSocketAddress) server.localAddress()).getPort();
        return new PeerListener(server, open, closing, advertised(peer.address(), bound));
    }

    /** Returns the bound port. */
    int port() {
        return ((InetSocketAddress) server.localAddress()).getPort();
    }

    /** Returns the advertised address: the configured one (with the bound port when it has none), or this host's. */
    static String advertised(@Nullable String configured, int boundPort) {
        if (configured != null) {
            boolean hasPort = configured.startsWith("[") ? configured.indexOf("]:") > 0 : configured.indexOf(':') > 0;
            return hasPort ? configured : configured + ":" + boundPort;
        }
        InetAddress a = firstNonLoopback();
        if (a == null) {
            log.warn("no non-loopback address found for spector.server.peer-address: advertising loopback,"
                    + " which only replicas on this host can reach");
            a = InetAddress.getLoopbackAddress();
        }
        String host = a.getHostAddress();
        return (a instanceof Inet4Address ? host : "[" + host + "]") + ":" + boundPort;
    }

    /** The first address of an interface that is up and not loopback: IPv4 before IPv6, never link-local. */
    private static @Nullable InetAddress firstNonLoopback() {
        List<InetAddress> v6 = new ArrayList<>();
        try {
            for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                if (!nic.isUp() || nic.isLoopback()) {
                    continue;
                }
                for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                    if (a.isLoopbackAddress() || a.isLinkLocalAddress()) {
                        continue;
                    }
                    if (a instanceof Inet4Address) {
                        return a;
                    }
                    v6.add(a);
                }
            }
        } catch (SocketException e) {
            log.warn("could not list the network interfaces: {}", e.toString());
        }
        return v6.isEmpty() ? null : v6.get(0);
    }

    /** Stops accepting and closes the peer connections (the drain has let their exchanges end). */
    @Override
    public void close() {
        closing.set(true);
        server.close().syncUninterruptibly();
        connections.close().awaitUninterruptibly(GatewayServer.SHUTDOWN_TIMEOUT.toMillis());
    }
}
