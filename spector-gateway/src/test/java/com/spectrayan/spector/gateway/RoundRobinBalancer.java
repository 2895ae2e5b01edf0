package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * "The Service" in front of the gateway replicas' TLS ports: a TCP balancer on loopback that
 * connects each new client connection to the next replica in turn that accepts, skipping one that
 * refuses (as a kube-proxy Service skips a pod that is not ready), and pipes bytes both ways
 * without looking at them (TLS ends at the replica).
 *
 * <p>Bounded: at most {@link #MAX_CONNECTIONS} client connections at once (one past it is closed
 * at accept), each piped by two threads; a connect to a replica waits at most {@link
 * #CONNECT_TIMEOUT_MS}. Thread-safety: the turn is an atomic counter; the open sockets are a
 * concurrent set, closed by {@link #close}.
 */
final class RoundRobinBalancer implements AutoCloseable {
    /** The most client connections piped at once. */
    static final int MAX_CONNECTIONS = 16;

    /** The longest wait for a replica to accept a connection. */
    static final int CONNECT_TIMEOUT_MS = 1000;

    private final ServerSocket server;
    private final List<Integer> backends;
    private final AtomicInteger turn = new AtomicInteger();
    private final AtomicInteger accepted = new AtomicInteger();
    private final Semaphore slots = new Semaphore(MAX_CONNECTIONS);
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;

    private RoundRobinBalancer(List<Integer> backends) throws IOException {
        this.backends = new CopyOnWriteArrayList<>(requireNonNull(backends, "backends"));
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.acceptor = new Thread(this::acceptLoop, "balancer-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    /** Starts the balancer on a free loopback port, in front of these loopback ports. */
    static RoundRobinBalancer start(List<Integer> backendPorts) {
        try {
            return new RoundRobinBalancer(backendPorts);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    int port() {
        return server.getLocalPort();
    }

    /**
     * Adds a backend port: a balancer started with none (whose port a backend's own settings
     * name, as a ring member pointing at a gateway does) gets its backend once that one is up.
     */
    void add(int backendPort) {
        backends.add(backendPort);
    }

    /** Returns how many client connections were accepted so far. */
    int accepted() {
        return accepted.get();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            accepted.incrementAndGet();
            if (!slots.tryAcquire()) {
                closeQuietly(client);
                continue;
            }
            open.add(client);
            Thread t = new Thread(() -> connect(client), "balancer-connect");
            t.setDaemon(true);
            t.start();
        }
    }

    /** Connects {@code client} to the next replica that accepts, or closes it when none does. */
    private void connect(Socket client) {
        if (backends.isEmpty()) {
            release(client, null);
            return;
        }
        int first = Math.floorMod(turn.getAndIncrement(), backends.size());
        for (int i = 0; i < backends.size(); i++) {
            int port = backends.get((first + i) % backends.size());
            Socket upstream = new Socket();
            try {
                upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), CONNECT_TIMEOUT_MS);
            } catch (IOException refused) {
                closeQuietly(upstream);
                continue; // the next replica
            }
            open.add(upstream);
            AtomicInteger halves = new AtomicInteger(2);
            pipe(client, upstream, halves);
            pipe(upstream, client, halves);
            return;
        }
        release(client, null);
    }

    private void pipe(Socket from, Socket to, AtomicInteger halves) {
        Thread t = new Thread(
                () -> {
                    byte[] buf = new byte[16 * 1024];
                    try {
                        InputStream in = from.getInputStream(); // not closed here: that would close the socket
                        OutputStream out = to.getOutputStream();
                        for (int n; (n = in.read(buf)) != -1; ) {
                            out.write(buf, 0, n);
                            out.flush();
                        }
                        to.shutdownOutput(); // a half close passes through
                    } catch (IOException e) {
                        // a reset or a close on either side ends both directions
                        closeQuietly(from);
                        closeQuietly(to);
                    }
                    if (halves.decrementAndGet() == 0) {
                        release(from, to);
                    }
                },
                "balancer-pipe");
        t.setDaemon(true);
        t.start();
    }

    private void release(Socket a, @Nullable Socket b) {
        closeQuietly(a);
        open.remove(a);
        if (b != null) {
            closeQuietly(b);
            open.remove(b);
        }
        slots.release();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            // closing anyway
        }
        for (Socket s : open) {
            closeQuietly(s);
        }
    }
}
