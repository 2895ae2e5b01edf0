package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.gateway.ForwardRequest;
import com.spectrayan.spector.cluster.gateway.ForwardResponse;
import com.spectrayan.spector.cluster.gateway.GatewayForwarder;
import com.spectrayan.spector.cluster.gateway.PinnedTarget;
import com.spectrayan.spector.cluster.gateway.RequestBody;
import com.spectrayan.spector.cluster.gateway.ResponseSink;
import com.spectrayan.spector.cluster.routing.UplinkHolders;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.HeaderPolicy;
import com.spectrayan.spector.contract.LogGate;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.concurrent.EventExecutor;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client-port half of the peer hop: a relay for a worker this replica holds no link to goes to
 * a replica that does, found in the cell's {@link UplinkHolders}, as a pinned exchange on the
 * forwarder's engine ({@link PinnedTarget}: the same pool, backpressure both ways, one deadline,
 * cancel when the client goes), signed with {@link PeerMac}. The answer, problems included, comes
 * back as the holder wrote it.
 *
 * <pre>
 *   relay for w, no local link ─> holders(w) within LOOKUP_TIMEOUT
 *        registry down / slow ─> 503 WORKER_UNREACHABLE   (hops{outcome=registry-unavailable})
 *        no holder but this   ─> 503 WORKER_UNREACHABLE   (hops{outcome=no-holder})
 *        holders              ─> the one with the most links (ties at random)
 *                                ─> pinned exchange to http://holder/relay/w/... (hops{outcome=forwarded})
 *                                     refused, no connection in CONNECT_TIMEOUT, 421 no-link, or an
 *                                     idempotent relay closed before the head ─> another holder, at
 *                                     most twice (hops{outcome=retried})
 *                                     no other holder, a POST closed before the head, the deadline
 *                                       ─> 503 WORKER_UNREACHABLE (hops{outcome=holder-unreachable})
 * </pre>
 *
 * <p>What crosses: the request as the local relay would take it, minus the credentials ({@code
 * Authorization}, {@code X-Agent-Device-Token}), the gateway's token cookie and any client copy of
 * a peer header; the tenant and lease this replica derived go in the signed peer headers. A peer
 * never forwards again (its listener relays to its own links only), so a relay crosses at most one
 * hop. Both timeouts are short and named so that a relay with no link anywhere, or whose holder is
 * gone, answers within {@link #UNREACHABLE_WITHIN}, never at the relay deadline.
 *
 * <p>Threading: {@link #forward} runs on the client connection's event loop; the lookup completes
 * on Lettuce's thread and hops back.
 */
final class PeerHop {
    private static final Logger log = LoggerFactory.getLogger(PeerHop.class);

    /** How often a hop's fallback or failure, which any client can cause per request, is logged at most. */
    static final Duration LOG_INTERVAL = Duration.ofSeconds(10);

    /** Fallbacks to another replica: a line per {@link #LOG_INTERVAL} at most, counting the rest. */
    private final LogGate retriedLog = new LogGate(LOG_INTERVAL, System.nanoTime());

    /** Hops a holder refused for their signature: a line per {@link #LOG_INTERVAL} at most. */
    private final LogGate signatureLog = new LogGate(LOG_INTERVAL, System.nanoTime());

    /** Hops no replica carried: a line per {@link #LOG_INTERVAL} at most, counting the rest. */
    private final LogGate unreachableLog = new LogGate(LOG_INTERVAL, System.nanoTime());

    /** The longest wait for the registry's answer; past it the relay is 503 and the miss counted. */
    static final Duration LOOKUP_TIMEOUT = Duration.ofMillis(500);

    /** The longest wait for a connection to the holding replica's peer listener. */
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(1);

    /**
     * What the bounds here promise: a relay nobody can carry is answered within this when one
     * holder is tried; each fallback (at most {@link PinnedTarget#MAX_FALLBACKS}) adds a lookup and
     * a connect, a moving worker's wait {@link #HOLDER_WAIT} (5.25 s at worst; PROTOCOL.md section 8).
     */
    static final Duration UNREACHABLE_WITHIN = Duration.ofSeconds(2);

    /**
     * How long a relay waits for a holder while the registry shows the worker's links moving (a
     * drain sent them away) or after the holder it was sent to turned out gone: the worker re-dials
     * a drained link within {@code UplinkDialer.GOING_AWAY_REDIAL_JITTER}, a lost one after its
     * first backoff (at most {@code RECONNECT_MIN}).
     */
    static final Duration HOLDER_WAIT = Duration.ofMillis(750);

    /** How often a waiting relay asks the registry again. */
    static final Duration POLL_INTERVAL = Duration.ofMillis(50);

    /** The meter of every hop decision, by outcome. */
    static final String HOPS = "spector.relay.peer.hops";

    /** A hop that is off: every relay goes to this replica's own links. */
    static final PeerHop OFF = new PeerHop();

    /**
     * Hops in flight to one worker from this replica, per slot of its {@code
     * spector.uplink.relay.max-per-worker}: the holder runs that many at once and queues the rest,
     * and each hop, running or queued, holds one of this replica's connections to the holder
     * (its owner pool, {@code owner-connections} per event loop). Uncapped, one slow worker's
     * relays took the whole pool and cut every other worker's hops to that holder off (found by
     * a review). Past the cap a relay is answered 503 with {@code Retry-After} at once, as
     * Envoy's {@code max_pending_requests} answers past its queue.
     */
    static final int HOPS_PER_RELAY_SLOT = 8;

    /** The {@code details.reason} of a relay refused past the cap. */
    static final String HOPS_FULL = "relay-hops-full";

    private final @Nullable UplinkHolders holders;
    private final @Nullable PeerMac mac;
    private final @Nullable WorkerDirectory directory;
    private final @Nullable GatewayForwarder forwarder;
    private final Duration deadline;
    private final Map<String, Counter> outcomes;
    /** The hops in flight to one worker ({@link #HOPS_PER_RELAY_SLOT}). */
    private final int maxHopsPerWorker;
    /** Hops in flight, by worker; absent at zero. Any loop: updated atomically per worker. */
    private final ConcurrentHashMap<String, Integer> hopsInFlight = new ConcurrentHashMap<>();

    private volatile @Nullable String self;
    /** The registry lookups on their way, by worker: relays that ask meanwhile share the answer. */
    private final ConcurrentHashMap<String, CompletableFuture<List<UplinkHolders.Holder>>> lookups =
            new ConcurrentHashMap<>();

    private PeerHop() {
        this.holders = null;
        this.mac = null;
        this.directory = null;
        this.forwarder = null;
        this.deadline = Duration.ofSeconds(1);
        this.outcomes = Map.of();
        this.maxHopsPerWorker = 0;
    }

    PeerHop(
            UplinkHolders holders,
            PeerMac mac,
            WorkerDirectory directory,
            GatewayForwarder forwarder,
            Duration relayDeadline,
            int maxRelaysPerWorker,
            MeterRegistry registry) {
        if (maxRelaysPerWorker < 1) {
            throw new IllegalArgumentException("maxRelaysPerWorker: " + maxRelaysPerWorker + " (expected: at least 1)");
        }
        this.maxHopsPerWorker = HOPS_PER_RELAY_SLOT * maxRelaysPerWorker;
        this.holders = requireNonNull(holders, "holders");
        this.mac = requireNonNull(mac, "mac");
        this.directory = requireNonNull(directory, "directory");
        this.forwarder = requireNonNull(forwarder, "forwarder");
        this.deadline = requireNonNull(relayDeadline, "relayDeadline");
        this.outcomes = Map.of(
                "forwarded", counter(registry, "forwarded"),
                "no-holder", counter(registry, "no-holder"),
                "registry-unavailable", counter(registry, "registry-unavailable"),
                "holder-unreachable", counter(registry, "holder-unreachable"),
                "holder-refused-signature", counter(registry, "holder-refused-signature"),
                "hops-full", counter(registry, "hops-full"),
                "retried", counter(registry, "retried"),
                "waited", counter(registry, "waited"));
    }

    private static Counter counter(MeterRegistry registry, String outcome) {
        return Counter.builder(HOPS)
                .description("Relays for a worker with no link here, by what the peer hop did")
                .tag("outcome", outcome)
                .register(registry);
    }

    /** Sets this replica's own peer address, which is never a holder to forward to. */
    void self(String address) {
        this.self = requireNonNull(address, "address");
    }

    /** Answers whether a relay for {@code workerId} goes over the hop: it is on, and no link is here. */
    boolean forwards(String workerId) {
        WorkerDirectory d = directory;
        return d != null && d.live(workerId) == null;
    }

    /**
     * Hands the current request of {@code c} to a replica holding {@code workerId}'s links, or
     * answers 503. {@code path} is normalized, {@code query} as it travels on (no {@code
     * access_token}), or null; {@code tenant} and {@code lease} as the local relay would use them.
     * {@code from}: the local relay that found no link when it started, whose body read so far
     * the hop takes over ({@link RelayedExchange#handOver}); null when the hop is the first try.
     */
    void forward(
            ChannelHandlerContext ctx,
            ClientConnection c,
            HttpRequest request,
            String path,
            @Nullable String query,
            String workerId,
            String tenant,
            @Nullable String lease,
            GatewayContext context,
            @Nullable RelayedExchange from) {
        requireNonNull(holders, "the hop is off");
        ForwardedExchange exchange =
                new ForwardedExchange(c, path, HttpUtil.is100ContinueExpected(request), context.streamIdleTimeout());
        c.tenant(tenant);
        c.start(exchange);
        boolean hasBody = from != null ? from.handOver(exchange) : c.bodyPending();
        if (!tryHop(workerId)) {
            count("hops-full");
            SpectorException full = SpectorException.of(
                    ErrorCode.GATEWAY_ROUTING_FAILURE,
                    "worker " + workerId + " already has " + maxHopsPerWorker
                            + " relays on their way to the replica that holds its uplink; retry later",
                    Map.of("reason", HOPS_FULL, "retryAfterSeconds", 1L));
            // Answered in a task, as every other answer of the hop is: the caller (a local relay
            // handing its body over) is still in its own steps here.
            ctx.executor().execute(() -> {
                if (!exchange.isOver()) {
                    exchange.onError(full, false);
                }
            });
            return;
        }
        exchange.whenDone(() -> hopEnded(workerId));
        String pathAndQuery = query == null ? path : path + "?" + query;
        String requestId = c.requestId(); // this exchange's, for its log lines
        HttpHeaders headers = request.headers();
        for (String name : HeaderPolicy.CREDENTIALS) {
            headers.remove(name);
        }
        context.tokens().removeTokenCookie(headers);
        long waitUntil = System.nanoTime() + HOLDER_WAIT.toNanos();
        Set<String> tried = ConcurrentHashMap.newKeySet();
        EventExecutor executor = ctx.executor();
        holder(workerId, tried, waitUntil, executor)
                .whenComplete((holder, error) -> executor.execute(() -> {
                    if (exchange.isOver()) {
                        return; // the client went, or its body failed: answered already
                    }
                    if (error != null) {
                        exchange.onError(spector(error), false);
                        return;
                    }
                    count("forwarded");
                    PinnedTarget.Fallback fallback =
                            PinnedTarget.fallback(SpectorHeaders.PEER_REFUSED, (refused, why) -> {
                                count("retried");
                                String address = refused.uri().getRawAuthority();
                                tried.add(address);
                                long events = retriedLog.event(System.nanoTime());
                                if (events > 0) { // a client can cause one per request: at most a line per interval
                                    log.info(
                                            "worker {}: gateway replica {} did not take the relay ({}); looking again,"
                                                    + " request id {} ({} such since the last line)",
                                            workerId,
                                            address,
                                            why,
                                            requestId,
                                            events);
                                }
                                return holder(workerId, tried, waitUntil, executor)
                                        .thenApply(PeerHop::target);
                            });
                    try {
                        PinnedTarget.Next first = target(holder);
                        PeerMac signer = requireNonNull(mac);
                        String method = request.method().name();
                        ForwardRequest pinned = ForwardRequest.pinned(
                                request.method(),
                                pathAndQuery,
                                headers,
                                hasBody ? exchange : RequestBody.EMPTY,
                                HttpUtil.getContentLength(request, -1L),
                                String.valueOf(ctx.channel().remoteAddress()),
                                new PinnedTarget(
                                        first.name(),
                                        first.uri(),
                                        // Signed as each attempt starts: a body read first, or a fallback
                                        // after a slow replica, may start it past the MAC's window.
                                        () -> signer.sign(method, pathAndQuery, tenant, lease),
                                        deadline,
                                        CONNECT_TIMEOUT,
                                        fallback));
                        exchange.attach(requireNonNull(forwarder)
                                .forward(
                                        pinned,
                                        new HolderSink(this, exchange, workerId, requestId),
                                        ctx.channel().eventLoop()));
                    } catch (SpectorException e) {
                        exchange.onError(e, false);
                    } catch (RuntimeException e) { // a holder's address that is no URI: answered, never a hang
                        log.warn(
                                "worker {}: cannot hand the relay to its holder: {}, request id {}",
                                workerId,
                                e.toString(),
                                requestId);
                        exchange.onError(spector(e), false);
                    }
                }));
    }

    /**
     * Finds a replica to carry a relay for {@code workerId}, other than those {@code tried}: the
     * holder with the most links; this replica itself when a link of the worker is live here now
     * (it was re-dialled here while the relay waited: the hop then goes to its own peer listener);
     * or, while the registry shows the worker's links moving, or a holder was tried and gone, the
     * same question again every {@link #POLL_INTERVAL} until {@code waitUntil}. Fails with the
     * relay's 503 when there is none.
     */
    private CompletableFuture<String> holder(
            String workerId, Set<String> tried, long waitUntil, EventExecutor executor) {
        CompletableFuture<String> out = new CompletableFuture<>();
        look(workerId, tried, waitUntil, executor, out, false);
        return out;
    }

    /** One look; {@code waited} says an earlier one of this question waited (counted once). */
    private void look(
            String workerId,
            Set<String> tried,
            long waitUntil,
            EventExecutor executor,
            CompletableFuture<String> out,
            boolean waited) {
        lookup(workerId).whenComplete((found, error) -> {
            if (error != null) {
                count("registry-unavailable");
                log.debug("uplink registry unavailable for worker {}: {}", workerId, error.toString());
                out.completeExceptionally(
                        unreachable(workerId, "no link here, and the cell's uplink registry did not answer"));
                return;
            }
            String picked = pick(found, tried);
            String me = self;
            WorkerDirectory d = directory;
            if (picked == null && me != null && !tried.contains(me) && d != null && d.live(workerId) != null) {
                picked = me;
            }
            if (picked != null) {
                out.complete(picked);
                return;
            }
            boolean moving = found.stream().anyMatch(UplinkHolders.Holder::moving);
            if ((moving || !tried.isEmpty()) && waitUntil - System.nanoTime() > POLL_INTERVAL.toNanos()) {
                if (!waited) {
                    count("waited");
                }
                executor.schedule(
                        () -> look(workerId, tried, waitUntil, executor, out, true),
                        POLL_INTERVAL.toNanos(),
                        TimeUnit.NANOSECONDS);
                return;
            }
            count(tried.isEmpty() ? "no-holder" : "holder-unreachable");
            out.completeExceptionally(unreachable(
                    workerId,
                    tried.isEmpty()
                            ? "no live uplink on any gateway of the cell"
                            : "the gateway replica holding its uplink (" + String.join(", ", tried)
                                    + ") is unreachable, and no other holds one"));
        });
    }

    /**
     * Returns the registry's answer for {@code workerId}, bounded by {@link #LOOKUP_TIMEOUT}; relays
     * that ask while a lookup of the same worker is on its way share its answer.
     */
    private CompletableFuture<List<UplinkHolders.Holder>> lookup(String workerId) {
        CompletableFuture<List<UplinkHolders.Holder>> running = lookups.get(workerId);
        if (running != null) {
            return running;
        }
        CompletableFuture<List<UplinkHolders.Holder>> mine = new CompletableFuture<>();
        running = lookups.putIfAbsent(workerId, mine);
        if (running != null) {
            return running;
        }
        CompletableFuture<List<UplinkHolders.Holder>> asked;
        try {
            asked = requireNonNull(holders, "the hop is off").holders(workerId).toCompletableFuture();
        } catch (RuntimeException e) {
            // A client shutting down may throw rather than fail its future: the shared lookup must
            // still end, or every later relay to the worker would wait on it (found by a review).
            asked = CompletableFuture.failedFuture(e);
        }
        asked.orTimeout(LOOKUP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).whenComplete((found, error) -> {
            lookups.remove(workerId, mine);
            if (error != null) {
                mine.completeExceptionally(error);
            } else {
                mine.complete(found);
            }
        });
        return mine;
    }

    private static PinnedTarget.Next target(String address) {
        return new PinnedTarget.Next("gateway replica " + address, URI.create("http://" + address));
    }

    private static SpectorException spector(Throwable error) {
        Throwable t = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
        return t instanceof SpectorException e
                ? e
                : SpectorException.of(ErrorCode.INTERNAL, "peer hop failed: " + t, Map.of());
    }

    /** Returns the live holder with the most links other than this replica, ties at random; null when none. */
    @Nullable
    String pick(List<UplinkHolders.Holder> found) {
        return pick(found, Set.of());
    }

    /** As {@link #pick(List)}, leaving out the holders {@code tried} and moving fields. */
    @Nullable
    String pick(List<UplinkHolders.Holder> found, Set<String> tried) {
        String me = self;
        String best = null;
        int bestLinks = 0;
        int ties = 0;
        for (UplinkHolders.Holder h : found) {
            if (h.address().equals(me) || h.moving() || tried.contains(h.address())) {
                continue; // this replica holds no live link, whatever its last write said
            }
            if (h.links() > bestLinks) {
                best = h.address();
                bestLinks = h.links();
                ties = 1;
            } else if (h.links() == bestLinks && ThreadLocalRandom.current().nextInt(++ties) == 0) {
                best = h.address(); // reservoir: each of the tied holders with equal chance
            }
        }
        return best;
    }

    private void count(String outcome) {
        Counter c = outcomes.get(outcome);
        if (c != null) {
            c.increment();
        }
    }

    /** Takes a hop in flight to {@code workerId}; false past {@link #maxHopsPerWorker}. */
    private boolean tryHop(String workerId) {
        boolean[] taken = {false};
        hopsInFlight.compute(workerId, (id, n) -> {
            int running = n == null ? 0 : n;
            if (running >= maxHopsPerWorker) {
                return n;
            }
            taken[0] = true;
            return running + 1;
        });
        return taken[0];
    }

    /** Gives back a hop {@link #tryHop} took: its client exchange ended or closed. */
    private void hopEnded(String workerId) {
        hopsInFlight.computeIfPresent(workerId, (id, n) -> n <= 1 ? null : n - 1);
    }

    /** Returns the hops in flight to {@code workerId} from this replica (tests). */
    int hopsInFlight(String workerId) {
        return hopsInFlight.getOrDefault(workerId, 0);
    }

    /**
     * Logs a holder's refusal of this replica's signature, at WARN (an operator's fault to mend:
     * {@code spector.cell.peer-secret} or the clocks), a line per {@link #LOG_INTERVAL} at most.
     */
    private void signatureRefused(String holder, String reason, String requestId) {
        long events = signatureLog.event(System.nanoTime());
        if (events > 0) {
            log.warn(
                    "gateway replica {} refused this replica's peer signature ({}): are spector.cell.peer-secret"
                            + " the same and the clocks within {} s? request id {} ({} such since the last line)",
                    holder,
                    reason,
                    PeerMac.MAX_SKEW.toSeconds(),
                    requestId,
                    events);
        }
    }

    /**
     * Returns a holder's reason for a refusal as it may be logged and answered: one of {@link
     * PeerMac}'s words (lowercase letters and dashes, at most 32), else {@code "unrecognised"}
     * (what reaches the peer port may not be a replica); null when there was none.
     */
    static @Nullable String refusalReason(@Nullable String value) {
        if (value == null) {
            return null;
        }
        boolean word = !value.isEmpty()
                && value.length() <= 32
                && value.chars().allMatch(ch -> ch == '-' || (ch >= 'a' && ch <= 'z'));
        return word ? value : "unrecognised";
    }

    private static SpectorException unreachable(String workerId, String why) {
        return SpectorException.of(
                ErrorCode.WORKER_UNREACHABLE, "worker " + workerId + ": " + why, Map.of("workerId", workerId));
    }

    /**
     * The client side of a pinned exchange: what the holder answered passes as it is; the hop's own
     * failures before the head (no connection, closed, the deadline) become the relay's 503, and so
     * does a holder's 421 refusal that could not go elsewhere (its body outgrew the replay copy, or
     * the fallbacks were spent), whose own body is then dropped.
     */
    private static final class HolderSink implements ResponseSink {
        private final PeerHop hop;
        private final ForwardedExchange exchange;
        private final String workerId;
        private final String requestId;
        private boolean refused;

        HolderSink(PeerHop hop, ForwardedExchange exchange, String workerId, String requestId) {
            this.hop = hop;
            this.exchange = exchange;
            this.workerId = workerId;
            this.requestId = requestId;
        }

        @Override
        public void onHead(ForwardResponse response) {
            if (response.status().code() == 421 && response.headers().contains(SpectorHeaders.PEER_REFUSED)) {
                refused = true;
                hop.count("holder-unreachable");
                exchange.onError(
                        unreachable(
                                workerId,
                                "the gateway replica " + response.owner() + " holds no live uplink of it, and the"
                                        + " relay could not be taken to another (a body past the replay copy)"),
                        false);
                return;
            }
            String signature = response.status().code() == 401
                    ? refusalReason(response.headers().get(SpectorHeaders.PEER_REFUSED))
                    : null;
            if (signature != null) {
                // The holder refused this replica's signature (the replicas' peer secrets differ, a
                // rotation under way, or their clocks are apart): the gateway's fault, not the
                // client's token, which a 401 with WWW-Authenticate would have it drop (a review).
                refused = true;
                hop.count("holder-refused-signature");
                hop.signatureRefused(response.owner(), signature, requestId);
                exchange.onError(
                        unreachable(
                                workerId,
                                "the gateway replica " + response.owner() + " that holds its uplink refused this"
                                        + " replica's peer signature (" + signature + ")"),
                        false);
                return;
            }
            exchange.onHead(response);
        }

        @Override
        public void onChunk(ByteBuf chunk) {
            if (refused) {
                chunk.release();
                return;
            }
            exchange.onChunk(chunk);
        }

        @Override
        public void flush() {
            if (!refused) {
                exchange.flush();
            }
        }

        @Override
        public void onEnd() {
            if (!refused) {
                exchange.onEnd();
            }
        }

        @Override
        public void onError(SpectorException error, boolean headSent) {
            if (refused) {
                return;
            }
            ErrorCode code = error.code();
            if (!headSent
                    && (code == ErrorCode.OWNER_UNREACHABLE
                            || code == ErrorCode.OWNER_TIMEOUT
                            || code == ErrorCode.GATEWAY_ROUTING_FAILURE)) {
                hop.count("holder-unreachable");
                long events = hop.unreachableLog.event(System.nanoTime());
                if (events > 0) { // one per request a client sends: at most a line per interval
                    log.info(
                            "worker {}: the peer hop did not carry the relay: {}, request id {} ({} such since the"
                                    + " last line)",
                            workerId,
                            error.getMessage(),
                            requestId,
                            events);
                }
                exchange.onError(
                        unreachable(
                                workerId,
                                code == ErrorCode.OWNER_TIMEOUT
                                        ? "the relayed request did not finish within " + hop.deadline.toMillis() + " ms"
                                        : "the gateway replica holding its uplink is unreachable: "
                                                + error.getMessage()),
                        false);
                return;
            }
            exchange.onError(error, headSent);
        }

        @Override
        public boolean isWritable() {
            return exchange.isWritable();
        }
    }
}
