package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.cluster.routing.UplinkHolders;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.gateway.config.PeerSettings;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway replicas of a cell acting as one: the pieces of the peer hop, made and stopped
 * together. {@link #create} (before the connections' shared context exists) makes the {@link
 * PeerHop} the client ports consult; {@link #start} binds the {@link PeerListener} and starts
 * publishing this replica's uplinks ({@link UplinkRegistry}); {@link #close} withdraws them and
 * closes the listener.
 *
 * <pre>
 *   Redis off                        OFF: every relay goes to this replica's own links
 *   Redis on, no peer-secret         OFF, and a WARN at start: relays reach only the replica a
 *                                    worker dialled
 *   Redis on, secret, peer-port -1   forwards to others, but publishes nothing and listens on
 *                                    nothing: other replicas cannot reach this one's workers
 *   Redis on, secret, peer-port      the whole hop
 * </pre>
 *
 * <p>Lifecycle: {@code create -> start -> close}, once each, from the thread that runs the
 * gateway's start and stop.
 */
final class CellPeers implements AutoCloseable {
    /**
     * How long the peer listener stays open after {@link #withdraw}: every lookup that could still
     * name this replica was answered by then ({@link PeerHop#LOOKUP_TIMEOUT}), and its hop connected
     * or gave up ({@link PeerHop#CONNECT_TIMEOUT}).
     */
    static final Duration LINGER = PeerHop.LOOKUP_TIMEOUT.plus(PeerHop.CONNECT_TIMEOUT);

    private static final Logger log = LoggerFactory.getLogger(CellPeers.class);

    private final GatewaySettings settings;
    private final WorkerDirectory directory;
    private final PeerHop hop;
    private final @Nullable PeerMac mac;
    private final @Nullable UplinkHolders holders;
    private final MeterRegistry registry;
    private @Nullable PeerListener listener;
    private @Nullable UplinkRegistry published;
    /** When {@link #withdraw} ran with links live here ({@link System#nanoTime}); 0: no linger. */
    private long withdrawnAt;

    private CellPeers(
            GatewaySettings settings,
            WorkerDirectory directory,
            PeerHop hop,
            @Nullable PeerMac mac,
            @Nullable UplinkHolders holders,
            MeterRegistry registry) {
        this.settings = settings;
        this.directory = directory;
        this.hop = hop;
        this.mac = mac;
        this.holders = holders;
        this.registry = registry;
    }

    /** Makes the hop the settings allow ({@link PeerHop#OFF} without Redis or a peer secret). */
    static CellPeers create(
            GatewaySettings settings,
            @Nullable RedisRouting redis,
            WorkerDirectory directory,
            GatewayForwarder forwarder,
            MeterRegistry registry) {
        String secret = settings.cell().peerSecret();
        if (redis == null || secret == null) {
            if (redis != null) {
                log.warn("spector.cell.peer-secret is not set: the peer hop is off, and a relay reaches a worker"
                        + " only through the gateway replica it dialled (503 WORKER_UNREACHABLE on the others)");
            }
            return new CellPeers(settings, directory, PeerHop.OFF, null, null, registry);
        }
        Clock clock = Clock.systemUTC();
        PeerMac mac = new PeerMac(secret, settings.cell().peerSecretPrevious(), clock);
        UplinkHolders holders = redis.uplinkHolders(clock);
        PeerHop hop = new PeerHop(
                holders,
                mac,
                directory,
                forwarder,
                settings.uplink().relayDeadline(),
                settings.uplink().relayMaxPerWorker(),
                registry);
        return new CellPeers(settings, directory, hop, mac, holders, registry);
    }

    /** Returns where a relay for a worker with no link here goes. */
    PeerHop hop() {
        return hop;
    }

    /** Binds the peer listener and starts publishing this replica's uplinks, when the hop is on. */
    void start(
            GatewayContext context,
            EventLoopGroup workers,
            Class<? extends ServerChannel> serverClass,
            HttpDecoderConfig decoder) {
        PeerMac m = mac;
        UplinkHolders h = holders;
        PeerSettings peer = settings.server().peer();
        if (m == null || h == null) {
            return;
        }
        if (peer.port() == PeerSettings.OFF) {
            log.warn("spector.server.peer-port is -1: this replica forwards relays to others, but theirs cannot"
                    + " reach the workers that dialled it");
            return;
        }
        PeerListener l = PeerListener.bind(
                peer,
                settings.server().host(),
                settings.server().idleTimeout(),
                context,
                new PeerRelay(m, directory, registry),
                workers,
                serverClass,
                decoder,
                settings.server().maxConnections());
        listener = l;
        hop.self(l.address());
        published = new UplinkRegistry(h, directory, l.address(), workers.next());
        log.info("peer hop on: peer listener on port {}, advertised as {}", l.port(), l.address());
    }

    /** Returns the bound peer port, or -1 when no peer listener runs. */
    int port() {
        PeerListener l = listener;
        return l == null ? PeerSettings.OFF : l.port();
    }

    /** Returns the open peer connections (0 without a peer listener). */
    int connections() {
        PeerListener l = listener;
        return l == null ? 0 : l.connections().size();
    }

    /** Returns the address the other replicas dial, or null when no peer listener runs. */
    @Nullable
    String address() {
        PeerListener l = listener;
        return l == null ? null : l.address();
    }

    /**
     * Marks this replica's links in the registry as moving (idempotent): the drain calls it first,
     * before it sends the uplinks away, so the other replicas stop handing this one relays and wait
     * a moment for the re-dialled links instead. The peer listener stays open: a hop that looked
     * this replica up just before is refused with a 421 its caller takes elsewhere, or, on a link
     * still carrying relays, served.
     */
    void withdraw() {
        UplinkRegistry p = published;
        if (p != null) {
            if (!directory.liveLinks().isEmpty()) {
                withdrawnAt = System.nanoTime(); // a lookup may name this replica: linger at the close
            }
            p.withdraw();
        }
    }

    /**
     * Withdraws this replica from the registry, then closes the peer listener and its connections,
     * no sooner than {@link #LINGER} after {@link #withdraw} when links were live here then: a hop
     * whose lookup named this replica just before the withdraw still reaches this listener and is
     * refused 421 no-link, which its caller takes elsewhere (or served, on a link still open),
     * instead of finding its connection reset as the listener closes under it. A replica that held
     * no link was in no lookup's answer and closes at once. The wait runs on the stopping thread.
     */
    @Override
    public void close() {
        UplinkRegistry p = published;
        if (p != null) {
            p.close();
        }
        PeerListener l = listener;
        if (l != null) {
            long at = withdrawnAt;
            if (at != 0) {
                lingerUntil(at + LINGER.toNanos());
            }
            l.close();
        }
    }

    private static void lingerUntil(long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
            return;
        }
        log.info(
                "peer listener open {} ms more: hops looked up before the withdraw are refused, not cut",
                TimeUnit.NANOSECONDS.toMillis(left));
        try {
            TimeUnit.NANOSECONDS.sleep(left);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // stopping at once, as asked
        }
    }
}
