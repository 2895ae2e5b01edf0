package com.spectrayan.spector.gateway;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * A loopback server socket on port 0 that accepts on a daemon thread and never answers (the 504
 * case), or hands each connection to a handler on a daemon thread of its own (how {@link MockOwner}
 * serves). {@link #close()} closes the listener and every connection it accepted.
 */
final class SilentServer implements AutoCloseable {
    private final ServerSocket server;
    private final @Nullable Consumer<Socket> handler;
    private final String name;
    private final List<Socket> accepted = new CopyOnWriteArrayList<>();

    private SilentServer(ServerSocket server, @Nullable Consumer<Socket> handler, String name) {
        this.server = server;
        this.handler = handler;
        this.name = name;
        Thread acceptor = new Thread(this::acceptLoop, name + "-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** Starts a server that accepts connections and never reads or answers. */
    static SilentServer start() throws IOException {
        return new SilentServer(listen(), null, "silent-server");
    }

    /** Starts a server that runs {@code handler} for each connection, on a daemon thread per connection. */
    static SilentServer serving(String name, Consumer<Socket> handler) throws IOException {
        return new SilentServer(listen(), handler, name);
    }

    /** Returns a loopback port nothing listens on (bound, then closed). */
    static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static ServerSocket listen() throws IOException {
        return new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    }

    int port() {
        return server.getLocalPort();
    }

    int acceptedConnections() {
        return accepted.size();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            accepted.add(s);
            Consumer<Socket> h = handler;
            if (h != null) {
                Thread t = new Thread(() -> h.accept(s), name + "-conn");
                t.setDaemon(true);
                t.start();
            }
        }
    }

    @Override
    public void close() {
        try {
            server.close();
            for (Socket s : accepted) {
                s.close();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
