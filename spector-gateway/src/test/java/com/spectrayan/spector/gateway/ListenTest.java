package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A listener whose port is taken says which setting named it (the third review: an anonymous bind failure). */
final class ListenTest {
    @Test
    void aTakenPort_failsNamingTheSettingAndTheAddress() throws Exception {
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            ServerBootstrap b = new ServerBootstrap()
                    .group(group)
                    .channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInboundHandlerAdapter());
            InetSocketAddress at = new InetSocketAddress(InetAddress.getLoopbackAddress(), taken.getLocalPort());

            assertThatThrownBy(() -> Listen.bind(b, at, "spector.server.peer-port"))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageStartingWith(
                            "spector.server.peer-port: cannot listen on 127.0.0.1:" + taken.getLocalPort() + " (");

            Channel free =
                    Listen.bind(b, new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), "spector.server.port");
            assertThat(free.isActive()).isTrue();
            free.close().syncUninterruptibly();
        } finally {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
