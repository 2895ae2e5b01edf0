package com.spectrayan.spector.testkit;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts one real {@link RedisServer} per test class and stops it after the class. Before each
 * test the server is running again (a test may have stopped it) and its data is gone.
 *
 * <pre>{@code
 * @RegisterExtension static final RedisServerExtension redis = new RedisServerExtension();
 * }</pre>
 */
public final class RedisServerExtension implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {
    private @Nullable RedisServer server;

    @Override
    public void beforeAll(ExtensionContext context) {
        server = RedisServer.onFreePort().start();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        RedisServer s = server();
        if (!s.isRunning()) {
            s.start();
        } else {
            RedisCommands.flushAll(s.port());
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        RedisServer s = server;
        server = null;
        if (s != null) {
            s.stop();
        }
    }

    /** Returns the running server. */
    public RedisServer server() {
        RedisServer s = server;
        if (s == null) {
            throw new IllegalStateException("the Redis server starts before all tests of the class");
        }
        return s;
    }

    /** Returns the server's {@code redis://} URI. */
    public String uri() {
        return server().uri();
    }

    /** Stops the server mid-test; the next test finds it running again. */
    public void stop() {
        server().stop();
    }

    /** Starts the server again on the same port. */
    public void start() {
        server().start();
    }
}
