package com.spectrayan.spector.cluster.gateway;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.PreferHeapByteBufAllocator;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.unix.UnixChannel;

/**
 * Where an HTTP/1 connection's encoders write heads: into the heap.
 *
 * <p>Design notes (issue 14). Netty's HTTP encoders write a head into {@code ctx.alloc().buffer()},
 * one small copy per name, value and separator. Into a direct buffer each of those goes through
 * {@code ByteBuffer.put} and {@code Unsafe.copyMemory} (or a byte at a time for a {@code String}),
 * a call whose fixed cost dwarfs its dozen bytes: 9 % of the event loop's samples on a 1 KiB GET (two
 * heads out per exchange, 147 of 1 643 samples under {@code bench/profile-edge.sh}). Into a heap
 * array they are {@code System.arraycopy}, and the transport copies the finished head into direct
 * memory once, as it does any heap buffer it writes ({@code filterOutboundMessage}).
 *
 * <p>So the forwarding connections (a client's on the plain listener, and every connection of
 * {@link UpstreamHttpTransport}: the gateway's to its owners, a worker's to its upstreams) take Netty's
 * {@link PreferHeapByteBufAllocator}: {@code buffer()} on the heap, {@code directBuffer()} direct.
 * Only on Netty's native transports (epoll and io_uring, both {@link UnixChannel}s): their reads ask
 * for direct memory whatever the channel's allocator prefers (Netty's {@code
 * PreferredDirectByteBufAllocator}), so body bytes stay where the socket put them and a spliced body
 * never sees the heap; NIO would read into the heap. Connections that stop being HTTP
 * go back to the {@linkplain #restore default} (an uplink's WebSocket decoder copies every frame's
 * payload into {@code buffer()}), and TLS connections never change (the engine wants direct input).
 *
 * <p>What it costs: a head's bytes are copied twice instead of once (a few hundred bytes). And a
 * decoder holding a partial line when the next read comes (a head split across reads, a chunk-size
 * line split across reads) merges the two into a heap cumulation, so the body bytes among them are
 * copied once more at their write: up to one read (64 KiB) per split, as rare as the splits.
 */
public final class HeadBuffers {
    /** The allocator of a forwarding connection on a native transport: heads on the heap, reads and bodies direct. */
    public static final ByteBufAllocator HEAP_HEADS = new PreferHeapByteBufAllocator(ByteBufAllocator.DEFAULT);

    private HeadBuffers() {}

    /**
     * Gives {@code channel}, an HTTP/1 connection without TLS, heads on the heap when it is a socket
     * of a native transport (epoll or io_uring).
     */
    public static void apply(Channel channel) {
        if (channel instanceof UnixChannel && channel instanceof SocketChannel) {
            channel.config().setAllocator(HEAP_HEADS);
        }
    }

    /** Gives {@code channel}, no longer an HTTP/1 connection, the default allocator back. */
    public static void restore(Channel channel) {
        if (channel.config().getAllocator() == HEAP_HEADS) {
            channel.config().setAllocator(ByteBufAllocator.DEFAULT);
        }
    }
}
