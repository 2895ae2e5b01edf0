package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.ForwarderMetrics;
import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.gateway.UpstreamHttpTransport;
import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.RingMetrics;
import com.spectrayan.spector.cluster.routing.RoutingMetrics;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.transport.UplinkAcceptor;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;

/**
 * The gateway's meters (DESIGN.md section 8), exported at {@code /actuator/prometheus}: requests by
 * route and status, routing resolutions by level, Redis errors, invalidations, retargets by cause,
 * replay refusals, owner connections, event-loop backlog, direct memory, and the uplink side:
 * uplinks connected, relays active, status misses, relay bytes each way; and the TLS listener's
 * handshakes, handshake failures, reloads and certificate expiry. Counters kept by the
 * Spring-free modules are read through function meters, so the hot path only adds to a {@code
 * LongAdder}.
 */
final class GatewayMetrics {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    /**
     * The request timers by route, then by status (an array index, so a request makes no {@code
     * route|status} key string: issue 14). Routes are the gateway's own names, a few.
     */
    private final Map<String, AtomicReferenceArray<Timer>> requestTimers = new ConcurrentHashMap<>();

    /** Statuses 0 to 999: what an HTTP/1.1 status line can carry (three digits), and 0 for none. */
    static final int STATUSES = 1000;

    private final LongAdder relayBytesToWorkers = new LongAdder();
    private final LongAdder relayBytesFromWorkers = new LongAdder();
    private final LongAdder sendTimeouts = new LongAdder();
    private final LongAdder connectionsRefused = new LongAdder();
    private final LongAdder connectionsRefusedPerAddress = new LongAdder();
    private final MultiGauge ringEpoch = MultiGauge.builder("spector.ring.epoch")
            .description("The epoch of the ring the gateway routes on, tagged with where it came from")
            .register(registry);
    private final MultiGauge ownerUp = MultiGauge.builder("spector.owner.up")
            .description("1 while the owner is up, 0 while passive health has it marked down")
            .register(registry);
    private volatile Predicate<String> ownerDown = owner -> false; // a field: the rows' object stays reachable
    private volatile long heldEpoch;

    /**
     * Guards the JVM's meters' binding alone (not {@code this}, which {@link #ringChanged} holds: a
     * ring change on an event loop does not wait for the 40 ms of JMX look-ups).
     */
    private final Object jvmLock = new Object();
    /** Whether the JVM's meters are bound; written under {@link #jvmLock}, read without it first. */
    private volatile boolean jvmBound;

    GatewayMetrics() {
        counter(
                "spector.gateway.send.timeouts",
                "Client connections reset because the client took no response byte for spector.server.send-timeout",
                sendTimeouts,
                LongAdder::sum);
        counter(
                "spector.gateway.connections.refused",
                "Client connections closed as accepted because spector.server.max-connections were open",
                connectionsRefused,
                LongAdder::sum);
        counter(
                "spector.gateway.connections.refused.per.address",
                "Client connections closed as accepted because their address held"
                        + " spector.server.max-connections-per-address",
                connectionsRefusedPerAddress,
                LongAdder::sum);
    }

    /** Counts a client connection closed as accepted, past {@code spector.server.max-connections}. */
    void connectionRefused() {
        connectionsRefused.increment();
    }

    /** Counts a client connection closed as accepted, its address at {@code spector.server.max-connections-per-address}. */
    void connectionRefusedPerAddress() {
        connectionsRefusedPerAddress.increment();
    }

    /** Counts a client connection reset by the send timeout ({@code spector.server.send-timeout}). */
    void sendTimeout() {
        sendTimeouts.increment();
    }

    PrometheusMeterRegistry registry() {
        return registry;
    }

    /**
     * Binds the JVM's meters (memory, CPU, uptime) once; later calls return at once. The gateway
     * binds them after it listens, on the thread that started it, and a scrape before that binds
     * them itself: about 40 ms of JMX look-ups (the platform MXBeans, the cgroup files) that a start
     * no longer waits for before its first health check is answered (issue 14; bench/README.md,
     * start-up). Every one is a function meter, read at the scrape, so one bound late reads what one
     * bound at start would.
     */
    void bindJvm() {
        if (jvmBound) {
            return;
        }
        synchronized (jvmLock) {
            if (!jvmBound) {
                new JvmMemoryMetrics().bindTo(registry);
                new ProcessorMetrics().bindTo(registry);
                new UptimeMetrics().bindTo(registry);
                jvmBound = true;
            }
        }
    }

    /** Renders every meter in Prometheus's text format, the JVM's included ({@link #bindJvm}). */
    String scrape() {
        bindJvm();
        return registry.scrape();
    }

    /** Records one request's route, final status and duration. */
    void request(String route, int status, long nanos) {
        AtomicReferenceArray<Timer> byStatus = requestTimers.get(route);
        if (byStatus == null) {
            byStatus = requestTimers.computeIfAbsent(route, r -> new AtomicReferenceArray<>(STATUSES));
        }
        int code = status >= 0 && status < STATUSES ? status : 0;
        Timer timer = byStatus.get(code);
        if (timer == null) {
            // The registry hands every caller of one id the same timer: a race registers it once.
            timer = Timer.builder("spector.gateway.requests")
                    .description("Requests by route and final status")
                    .tag("route", route)
                    .tag("status", Integer.toString(code))
                    .tag("outcome", outcome(code))
                    .register(registry);
            byStatus.set(code, timer);
        }
        timer.record(nanos, TimeUnit.NANOSECONDS);
    }

    void bindRouting(RoutingMetrics m) {
        counter(
                "spector.routing.resolutions",
                "Routing answers by waterfall level",
                m,
                RoutingMetrics::l1Hits,
                "level",
                "l1");
        counter(
                "spector.routing.resolutions",
                "Routing answers by waterfall level",
                m,
                RoutingMetrics::l2Hits,
                "level",
                "l2");
        counter(
                "spector.routing.resolutions",
                "Routing answers by waterfall level",
                m,
                RoutingMetrics::l3Hits,
                "level",
                "l3");
        counter(
                "spector.routing.redis.errors",
                "Redis commands that failed or timed out",
                m,
                RoutingMetrics::redisErrors);
        counter(
                "spector.routing.invalidations",
                "Route invalidations",
                m,
                RoutingMetrics::invalidationsReceived,
                "direction",
                "received");
        counter(
                "spector.routing.invalidations",
                "Route invalidations",
                m,
                RoutingMetrics::invalidationsPublished,
                "direction",
                "published");
        counter(
                "spector.routing.fills.dropped",
                "L1 fills dropped because an invalidation raced them",
                m,
                RoutingMetrics::fillsDropped);
        counter(
                "spector.routing.l1.clears",
                "L1 clears after the invalidation subscription dropped",
                m,
                RoutingMetrics::l1Clears);
        counter("spector.routing.misdirected", "Owner 421s reported to the resolver", m, RoutingMetrics::misdirected);
    }

    /**
     * Binds the live ring's meters: {@code spector.ring.epoch} (one series, tagged with the held
     * ring's source), {@code spector.owner.up} per member of the held ring, and the counters of
     * the reads of the published ring. {@link #ringChanged} moves the first two to a new ring.
     */
    void bindRing(RingMetrics m, Predicate<String> ownerDown) {
        this.ownerDown = ownerDown;
        counter(
                "spector.ring.updates",
                "Reads of the published ring by outcome",
                m,
                RingMetrics::applied,
                "outcome",
                "applied");
        counter(
                "spector.ring.updates",
                "Reads of the published ring by outcome",
                m,
                RingMetrics::ignored,
                "outcome",
                "ignored");
        counter(
                "spector.ring.updates",
                "Reads of the published ring by outcome",
                m,
                RingMetrics::malformed,
                "outcome",
                "malformed");
        counter(
                "spector.ring.read.errors",
                "Reads of the published ring that failed (Redis down: the held ring stays)",
                m,
                RingMetrics::readErrors);
    }

    /** Points the ring's gauges at the ring now held (once at start, then after each swap). */
    synchronized void ringChanged(CellRing ring) {
        heldEpoch = ring.epoch();
        // a row's object may be held weakly by the registry: this, which the server holds
        ringEpoch.register(
                List.<MultiGauge.Row<?>>of(
                        MultiGauge.Row.of(Tags.of("source", ring.source().label()), this, m -> m.heldEpoch)),
                true);
        Predicate<String> down = ownerDown;
        List<MultiGauge.Row<?>> rows = new ArrayList<>();
        for (String owner : ring.ketama().members()) {
            rows.add(MultiGauge.Row.of(Tags.of("owner", owner), down, d -> d.test(owner) ? 0 : 1));
        }
        ownerUp.register(rows, true);
    }

    void bindForwarder(GatewayForwarder forwarder, UpstreamHttpTransport transport) {
        ForwarderMetrics m = forwarder.metrics();
        counter(
                "spector.forwarder.retargets",
                "Retargets by cause",
                m,
                ForwarderMetrics::retargetMisdirected,
                "cause",
                "misdirected");
        counter(
                "spector.forwarder.retargets",
                "Retargets by cause",
                m,
                ForwarderMetrics::retryStaleConnection,
                "cause",
                "stale-connection");
        counter(
                "spector.forwarder.retargets",
                "Retargets by cause",
                m,
                ForwarderMetrics::handoffHolds,
                "cause",
                "handoff");
        counter(
                "spector.forwarder.handoff",
                "Held requests by how their hand-off hold ended",
                m,
                ForwarderMetrics::handoffReleased,
                "outcome",
                "sent-on");
        counter(
                "spector.forwarder.handoff",
                "Held requests by how their hand-off hold ended",
                m,
                ForwarderMetrics::handoffExpired,
                "outcome",
                "expired");
        counter(
                "spector.forwarder.handoff",
                "Held requests by how their hand-off hold ended",
                m,
                ForwarderMetrics::handoffRefused,
                "outcome",
                "refused");
        counter(
                "spector.forwarder.exhausted",
                "Exchanges answered 503 after the 421 budget",
                m,
                ForwarderMetrics::retargetsExhausted);
        counter(
                "spector.forwarder.replay.refusals",
                "Requests that kept no replay copy",
                m,
                ForwarderMetrics::replayRefusals);
        counter("spector.forwarder.too.large", "Requests refused 413", m, ForwarderMetrics::tooLarge);
        counter(
                "spector.forwarder.owner.down",
                "Requests answered 503 at once: passive health marked their owner down",
                m,
                ForwarderMetrics::ownerDown);
        counter(
                "spector.forwarder.owner.timeouts",
                "Attempts with no response head in time",
                m,
                ForwarderMetrics::ownerTimeouts);
        counter(
                "spector.forwarder.owner.unreachable",
                "Attempts that could not reach their owner",
                m,
                ForwarderMetrics::ownerUnreachable);
        counter(
                "spector.forwarder.bytes",
                "Body bytes forwarded",
                m,
                ForwarderMetrics::bytesToOwners,
                "direction",
                "to-owner");
        counter(
                "spector.forwarder.bytes",
                "Body bytes forwarded",
                m,
                ForwarderMetrics::bytesToClients,
                "direction",
                "to-client");
        counter(
                "spector.forwarder.spliced.responses",
                "Responses whose body went on from the owner's socket to the client's in the kernel (splice)",
                m,
                ForwarderMetrics::splicedResponses);
        counter(
                "spector.forwarder.spliced.bytes",
                "Response body bytes moved from the owner's socket to the client's in the kernel (splice), part of"
                        + " the to-client bytes",
                m,
                ForwarderMetrics::splicedBytes);
        counter(
                "spector.forwarder.spliced.drains",
                "Spliced responses whose owner closed right behind the body, the rest read out of its socket",
                m,
                ForwarderMetrics::spliceDrains);
        counter(
                "spector.forwarder.exchanges",
                "Exchanges by outcome",
                m,
                ForwarderMetrics::completed,
                "outcome",
                "completed");
        counter(
                "spector.forwarder.exchanges",
                "Exchanges by outcome",
                m,
                ForwarderMetrics::failed,
                "outcome",
                "failed");
        counter(
                "spector.forwarder.exchanges",
                "Exchanges by outcome",
                m,
                ForwarderMetrics::cancelled,
                "outcome",
                "cancelled");
        Gauge.builder("spector.forwarder.active", m, ForwarderMetrics::active)
                .description("Exchanges in progress")
                .register(registry);
        Gauge.builder("spector.forwarder.replay.budget.available", forwarder, GatewayForwarder::replayBudgetAvailable)
                .description("Replay bytes the gateway can still hold")
                .baseUnit("bytes")
                .register(registry);
        Gauge.builder("spector.forwarder.handoff.held", forwarder, GatewayForwarder::handoffHeld)
                .description("Requests held now while their namespace is handed to another owner")
                .register(registry);
        Gauge.builder("spector.forwarder.handoff.held.bytes", forwarder, GatewayForwarder::handoffHeldBytes)
                .description("Body bytes of the requests held now during hand-offs")
                .baseUnit("bytes")
                .register(registry);
        Gauge.builder("spector.owner.connections", transport, UpstreamHttpTransport::openConnections)
                .description("Open owner connections, pooled or in use")
                .register(registry);
        Gauge.builder("spector.owner.streams", transport, UpstreamHttpTransport::openStreams)
                .description("Owner connections carrying an event stream outside their pool's connection count")
                .register(registry);
    }

    /** Counts relayed request body bytes sent toward a worker. */
    void relayedToWorker(long bytes) {
        relayBytesToWorkers.add(bytes);
    }

    /** Counts relayed response body bytes written to a client. */
    void relayedFromWorker(long bytes) {
        relayBytesFromWorkers.add(bytes);
    }

    void bindUplinks(WorkerDirectory directory, GatewayRelay relay, UplinkAcceptor acceptor) {
        for (ErrorCode code : UplinkAcceptor.REFUSAL_CODES) {
            FunctionCounter.builder("spector.uplinks.refused", acceptor, a -> a.refusals(code))
                    .description("Uplink handshakes refused, by the problem code answered")
                    .tag("code", code.name())
                    .register(registry);
        }
        Gauge.builder("spector.uplinks.connected", directory, d -> d.liveLinks().size())
                .description("Live uplinks (a worker may hold several)")
                .register(registry);
        Gauge.builder("spector.workers.connected", directory, d -> {
                    long n = 0;
                    for (String id : d.workerIds()) {
                        n += d.links(id).isEmpty() ? 0 : 1;
                    }
                    return n;
                })
                .description("Workers with at least one live uplink")
                .register(registry);
        Gauge.builder("spector.relays.active", directory, d -> {
                    long n = 0;
                    for (String id : d.workerIds()) {
                        n += relay.running(id);
                    }
                    return n;
                })
                .description("Relayed exchanges running on the uplinks")
                .register(registry);
        Gauge.builder("spector.uplinks.status.missing", directory, d -> {
                    long n = 0;
                    for (WorkerLink link : d.liveLinks()) {
                        n += link.misses() > 0 ? 1 : 0;
                    }
                    return n;
                })
                .description("Live uplinks whose last status.get went unanswered (two in a row close the link)")
                .register(registry);
        counter(
                "spector.relay.bytes",
                "Relayed body bytes",
                relayBytesToWorkers,
                LongAdder::sum,
                "direction",
                "to-worker");
        counter(
                "spector.relay.bytes",
                "Relayed body bytes",
                relayBytesFromWorkers,
                LongAdder::sum,
                "direction",
                "from-worker");
    }

    /** Binds the TLS listener's meters: handshakes by protocol, failures by cause, reloads, expiry. */
    void bindTls(ServerTls tls) {
        for (String protocol : ServerTls.PROTOCOLS) {
            counter(
                    "spector.tls.handshakes",
                    "TLS handshakes completed, by protocol",
                    tls,
                    t -> t.handshakes(protocol),
                    "protocol",
                    protocol);
        }
        for (ServerTls.Failure f : ServerTls.Failure.values()) {
            counter(
                    "spector.tls.handshake.failures",
                    "TLS handshakes that failed or timed out, by cause",
                    tls,
                    t -> t.failures(f),
                    "cause",
                    f.tag());
        }
        counter(
                "spector.tls.reloads",
                "Changed TLS certificate and key files, by outcome",
                tls,
                ServerTls::reloadsApplied,
                "outcome",
                "applied");
        counter(
                "spector.tls.reloads",
                "Changed TLS certificate and key files, by outcome",
                tls,
                ServerTls::reloadsRefused,
                "outcome",
                "refused");
        Gauge.builder("spector.tls.certificate.expiry", tls, ServerTls::secondsToExpiry)
                .description("Time until the served TLS certificate expires (negative once it has)")
                .baseUnit("seconds")
                .register(registry);
    }

    void bindNetty(EventLoopGroup workers) {
        Gauge.builder("spector.eventloop.pending.tasks", workers, GatewayMetrics::pendingTasks)
                .description("Tasks waiting on the gateway's event loops")
                .register(registry);
        if (ByteBufAllocator.DEFAULT instanceof ByteBufAllocatorMetricProvider provider) {
            Gauge.builder(
                            "spector.netty.direct.memory.used",
                            provider,
                            p -> p.metric().usedDirectMemory())
                    .description("Direct memory held by Netty's allocator")
                    .baseUnit("bytes")
                    .register(registry);
        }
    }

    private static double pendingTasks(EventLoopGroup group) {
        long n = 0;
        for (EventExecutor e : group) {
            if (e instanceof SingleThreadEventExecutor s) {
                n += s.pendingTasks();
            }
        }
        return n;
    }

    private <T> void counter(String name, String description, T source, ToDoubleFunction<T> f, String... tags) {
        FunctionCounter.builder(name, source, f)
                .description(description)
                .tags(tags)
                .register(registry);
    }

    private static String outcome(int status) {
        if (status == 499) {
            return "CLIENT_GONE";
        }
        if (status >= 500) {
            return "SERVER_ERROR";
        }
        if (status >= 400) {
            return "CLIENT_ERROR";
        }
        return "SUCCESS";
    }
}
