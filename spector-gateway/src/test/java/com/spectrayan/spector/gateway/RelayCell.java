package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.TransportSpec;
import com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.HttpForwardTarget;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * A test cell with one worker on the real uplink: the cell, a {@link DialedWorker} that is live
 * before {@link #start} returns, and the loop and upstream transport its {@code http-forward}
 * targets run on. The fixture the gateway's relay scenario classes share; {@link #close} ends the
 * worker, then the cell, then the transport and the loop.
 */
final class RelayCell implements AutoCloseable {
    /** The cell; its gateway knows the worker's token. */
    final Cell cell;

    /** The worker, live on the cell's gateway. */
    final DialedWorker worker;

    private final EventLoopGroup loops;
    private final UpstreamHttpTransport transport;

    /** Builds a worker's relay targets once the cell runs. */
    @FunctionalInterface
    interface Targets {
        /**
         * Returns the worker's targets by name; {@code httpForward} makes a worker {@code
         * http-forward} target to an upstream base URI.
         */
        Map<String, RelayTarget> of(Cell cell, Function<URI, RelayTarget> httpForward);
    }

    private RelayCell(Cell.Builder builder, String workerId, Targets targets, boolean v2) throws Exception {
        String workerToken = workerId + "-relay-cell-worker-token-0123456789";
        loops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        transport =
                new UpstreamHttpTransport(TransportSpec.defaults(), NioSocketChannel.class, NioDatagramChannel.class);
        Cell started = null;
        DialedWorker dialed = null;
        try {
            started = builder.set("spector.uplink.tokens", workerId + "=" + TokenHashes.sha256Hex(workerToken))
                    .start();
            Map<String, RelayTarget> served = targets.of(started, uri -> new HttpForwardTarget(uri, transport, loops));
            dialed = v2
                    ? DialedWorker.dialV2(started, workerId, workerToken, served, loops)
                    : DialedWorker.dial(started, workerId, workerToken, served, loops);
            dialed.awaitLive(started);
        } catch (Exception | Error e) {
            closeAll(dialed, started);
            throw e;
        }
        this.cell = started;
        this.worker = dialed;
    }

    /** Starts the cell {@code builder} describes and dials worker {@code workerId} into it (uplink v1). */
    static RelayCell start(Cell.Builder builder, String workerId, Targets targets) throws Exception {
        return new RelayCell(builder, workerId, targets, false);
    }

    /** As {@link #start}, the worker's uplink speaking v2 (streams with their windows). */
    static RelayCell startV2(Cell.Builder builder, String workerId, Targets targets) throws Exception {
        return new RelayCell(builder, workerId, targets, true);
    }

    @Override
    public void close() {
        closeAll(worker, cell);
    }

    private void closeAll(@Nullable DialedWorker w, @Nullable Cell c) {
        if (w != null) {
            w.close();
        }
        if (c != null) {
            c.close();
        }
        transport.close();
        loops.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
