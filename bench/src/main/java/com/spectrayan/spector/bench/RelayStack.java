package com.spectrayan.spector.bench;

import com.spectrayan.spector.gateway.GatewayServer;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.owner.OwnerSpec;
import com.spectrayan.spector.owner.ReferenceOwner;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The in-process relay path of the uplink benches: a reference owner as the worker's upstream, a
 * gateway on a free loopback port (edge auth off, no access log, one worker token) and a worker
 * daemon dialling its {@code /uplink} with an {@code http-forward} target {@value #TARGET} to the
 * upstream's namespace {@value #NAMESPACE}, over uplink protocol v2 or v1 on both sides. Closing it
 * stops the worker, the gateway and the upstream, in that order.
 */
final class RelayStack implements AutoCloseable {
    static final String WORKER = "bench-worker";
    static final String TARGET = "echo";
    static final String NAMESPACE = "bench";
    static final String WORKER_TOKEN = "bench-worker-token-0123456789abcdef";
    static final Duration READY_TIMEOUT = Duration.ofSeconds(30);

    final ReferenceOwner upstream;
    final GatewayServer gateway;
    final WorkerDaemon worker;

    private RelayStack(ReferenceOwner upstream, GatewayServer gateway, WorkerDaemon worker) {
        this.upstream = upstream;
        this.gateway = gateway;
        this.worker = worker;
    }

    /**
     * Starts the three with {@code uplinks} links speaking v2 ({@code v2}) or v1, and waits (bounded)
     * until all links are up and the gateway's live link speaks that version.
     */
    static RelayStack start(boolean v2, int uplinks) throws InterruptedException {
        ReferenceOwner upstream =
                ReferenceOwner.start(OwnerSpec.builder("echo-upstream").port(0).build());
        GatewayServer gateway = null;
        WorkerDaemon worker = null;
        try {
            gateway = GatewayServer.start(gatewaySettings(upstream.port(), v2));
            worker = WorkerDaemon.builder(
                            URI.create("ws://127.0.0.1:" + gateway.port() + "/uplink"),
                            WORKER,
                            WORKER_TOKEN,
                            Map.of(
                                    TARGET,
                                    URI.create(
                                            "http://127.0.0.1:" + upstream.port() + "/api/v1/namespaces/" + NAMESPACE)))
                    .uplinks(uplinks)
                    .v2(v2)
                    .start();
            RelayStack stack = new RelayStack(upstream, gateway, worker);
            stack.awaitLinks(v2, uplinks);
            return stack;
        } catch (RuntimeException | InterruptedException e) {
            if (worker != null) {
                worker.close();
            }
            if (gateway != null) {
                gateway.close();
            }
            upstream.close();
            throw e;
        }
    }

    private static GatewaySettings gatewaySettings(int upstreamPort, boolean v2) {
        Map<String, String> props = new HashMap<>();
        props.put("spector.cell.role", "gateway");
        props.put("spector.cell.id", "bench");
        props.put("spector.cell.ring-members", "echo-upstream=http://127.0.0.1:" + upstreamPort); // unused here
        props.put("spector.server.port", "0");
        props.put("spector.server.host", "127.0.0.1");
        props.put("spector.server.drain-timeout", "0s");
        props.put("spector.server.access-log", "off");
        props.put("spector.routing.redis.enabled", "false");
        props.put("spector.security.enabled", "false");
        props.put("spector.uplink.tokens", WORKER + "=" + TokenHashes.sha256Hex(WORKER_TOKEN));
        props.put("spector.uplink.v2", Boolean.toString(v2));
        return GatewaySettings.load(null, Map.of(), props);
    }

    private void awaitLinks(boolean v2, int uplinks) throws InterruptedException {
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        while ((worker.connectedUplinks() < uplinks || gateway.workerDirectory().live(WORKER) == null)
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        WorkerLink link = gateway.workerDirectory().live(WORKER);
        if (worker.connectedUplinks() < uplinks || link == null) {
            throw new IllegalStateException(
                    "the worker has " + worker.connectedUplinks() + " of " + uplinks + " links after " + READY_TIMEOUT);
        }
        boolean isV2 = link.client() instanceof RealGatewayWorkerClient real && real.v2() != null;
        if (isV2 != v2) {
            throw new IllegalStateException("the link speaks " + (isV2 ? "v2" : "v1") + ", not " + (v2 ? "v2" : "v1"));
        }
    }

    /** {@code http://127.0.0.1:PORT/relay/WORKER/TARGET}: the relay's base, without a trailing slash. */
    String relayBase() {
        return "http://127.0.0.1:" + gateway.port() + "/relay/" + WORKER + "/" + TARGET;
    }

    /** {@code http://127.0.0.1:PORT/api/v1/namespaces/NAMESPACE}: the same target direct. */
    String directBase() {
        return "http://127.0.0.1:" + upstream.port() + "/api/v1/namespaces/" + NAMESPACE;
    }

    /** Starts a daemon thread that halts the JVM with status 2 after {@code minutes}. */
    static void watchdog(long minutes) {
        Thread t = new Thread(
                () -> {
                    try {
                        Thread.sleep(TimeUnit.MINUTES.toMillis(minutes));
                        System.err.println("watchdog: the run passed " + minutes + " minutes, exiting");
                        Runtime.getRuntime().halt(2);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "bench-watchdog");
        t.setDaemon(true);
        t.start();
    }

    @Override
    public void close() {
        try {
            worker.close();
        } finally {
            try {
                gateway.close();
            } finally {
                upstream.close();
            }
        }
    }
}
