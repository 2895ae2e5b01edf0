package com.spectrayan.spector.uplink.internal.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link LingeringClose} over real loopback sockets, from the side of a peer that behaves: one
 * that reads gets the close's bytes and then the FIN; one that never reads cannot hold the socket
 * open: the close frame stuck behind its full window, the channel is closed {@link
 * LingeringClose#LINGER} after the call.
 */
final class LingeringCloseTest {
    private static final byte[] CLOSE_FRAME = {(byte) 0x88, 0x02, 0x03, (byte) 0xf1}; // 1009

    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());

    @AfterEach
    void stop() {
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /** A server whose one accepted connection is handed to the test. */
    private Channel serve(CompletableFuture<Channel> accepted) {
        return new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.SO_SNDBUF, 8192)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        accepted.complete(ch);
                    }
                })
                .bind(InetAddress.getLoopbackAddress(), 0)
                .syncUninterruptibly()
                .channel();
    }

    @Test
    void aPeerThatReads_getsTheCloseFrameThenTheFin() throws Exception {
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        Channel server = serve(accepted);
        try (Socket peer = new Socket()) {
            peer.connect(server.localAddress(), 5_000);
            peer.setSoTimeout(5_000);
            Channel ch = accepted.get(5, TimeUnit.SECONDS);
            LingeringClose.after(ch.writeAndFlush(Unpooled.wrappedBuffer(CLOSE_FRAME)));
            InputStream in = peer.getInputStream();
            assertThat(in.readNBytes(4)).containsExactly(CLOSE_FRAME);
            assertThat(in.read()).as("the FIN behind the close frame").isEqualTo(-1);
            assertThat(ch.isOpen())
                    .as("still open: it waits for the peer's close")
                    .isTrue();
            peer.shutdownOutput(); // the peer's FIN ends the linger
            assertThat(ch.closeFuture().await(5, TimeUnit.SECONDS)).isTrue();
        } finally {
            server.close();
        }
    }

    /**
     * A peer that never reads: 8 MiB written ahead of the close frame cannot leave, so neither
     * can the close frame nor the FIN. Regression (a review): the linger's timer was armed only
     * after the FIN, so such a connection stayed open for good.
     */
    @Test
    void aPeerThatNeverReads_cannotHoldTheConnectionOpen() throws Exception {
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        Channel server = serve(accepted);
        try (Socket peer = new Socket()) {
            peer.setReceiveBufferSize(4096);
            peer.connect(
                    new InetSocketAddress(
                            InetAddress.getLoopbackAddress(), ((InetSocketAddress) server.localAddress()).getPort()),
                    5_000);
            Channel ch = accepted.get(5, TimeUnit.SECONDS);
            ch.writeAndFlush(Unpooled.wrappedBuffer(new byte[8 << 20]));
            ChannelFuture closeFrame = ch.writeAndFlush(Unpooled.wrappedBuffer(CLOSE_FRAME));
            long start = System.nanoTime();
            LingeringClose.after(closeFrame);
            assertThat(ch.closeFuture().await(LingeringClose.LINGER.toMillis() + 3_000, TimeUnit.MILLISECONDS))
                    .as("closed although the peer never read")
                    .isTrue();
            long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(tookMillis).isGreaterThanOrEqualTo(LingeringClose.LINGER.toMillis() - 50);
            assertThat(closeFrame.isSuccess()).as("the close frame never left").isFalse();
        } finally {
            server.close();
        }
    }
}
