package com.spectrayan.spector.uplink.transport;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What one transport test opened: an event loop group of two threads and the gateways, dialers and
 * the like added here, all closed after the test: those added in reverse order, then the group
 * (bounded). Registered as an instance {@code @RegisterExtension} field, it runs before the leak
 * check of the testkit's {@code NettyLeakExtension}.
 */
final class Closing implements AfterEachCallback {
    /** The bound on the group's shutdown. */
    private static final long SHUTDOWN_MILLIS = 10_000;

    final EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
    private final List<AutoCloseable> added = new ArrayList<>();

    /** Closes {@code resource} after the test, before whatever was added earlier. */
    void add(AutoCloseable resource) {
        added.add(resource);
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        for (int i = added.size() - 1; i >= 0; i--) {
            added.get(i).close();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(SHUTDOWN_MILLIS);
    }
}
