package com.spectrayan.spector.gateway;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** An "owner" that accepts connections and never answers: the 504 case. Closes all on close(). */
final class SilentServer implements AutoCloseable {
    private final ServerSocket server;
    private final List<Socket> accepted = new CopyOnWriteArrayList<>();
    private final Thread acceptor;

    private SilentServer(ServerSocket server) {
        this.server = server;
        this.acceptor = new Thread(this::acceptLoop, "silent-server");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    static SilentServer start() throws IOException {
        return new SilentServer(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
    }

    /** Returns a loopback port nothing listens on (bound, then closed). */
    static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    int port() {
        return server.getLocalPort();
    }

    int acceptedConnections() {
        return accepted.size();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                accepted.add(server.accept());
            } catch (IOException e) {
                return; // closed
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
