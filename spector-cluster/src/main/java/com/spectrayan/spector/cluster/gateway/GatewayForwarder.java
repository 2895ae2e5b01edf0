package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import com.github.benmanes.caffeine.cache.Ticker;
import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.WaterfallRoutingResolver;
import com.spectrayan.spector.contract.LogGate;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.FastThreadLocal;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Forwards one client exchange to the owner of its routing key and follows the owner's {@code
 * 421} to the owner it reports, streaming both bodies (DESIGN.md section 4).
 *
 * <p>Design notes:
 *
 * <ul>
 *   <li><b>The states of an exchange</b> ({@link ExchangeState}; one method per event, an event
 *       that cannot happen in a state fails loudly):
 *       <pre>
 *  RESOLVING --route--> CONNECTING --connected--> SENDING --request sent--> AWAITING_HEAD
 *  (an L1 hit skips)        ^                      |   |                        |   |
 *                           |     421 retarget,    |   | head (an early answer) |   |
 *                           +-- stale pooled conn. +---|------------------------+   |
 *                                                      v                            |
 *                                                  STREAMING <---------head---------+
 *                                                      | last part
 *                                                      v
 *                                                  COMPLETED
 *  RESOLVING --route, a small body (request buffer)--> BUFFERING --body whole--> CONNECTING
 *  CONNECTING --a pinned fallback: no connection--> CONNECTING
 *  SENDING, AWAITING_HEAD --503 X-Spector-Handoff--> HOLDING --move over, or a poll--> CONNECTING
 *                                                    HOLDING --hold ran out, bound passed--> FAILED
 *  SENDING, AWAITING_HEAD --101--> UPGRADED     any live state --error--> FAILED
 *                                               any live state --client gone--> CANCELLED
 *       </pre>
 *   <li><b>The pieces.</b> {@link RealExchange} runs the machine and composes, each on its own:
 *       {@link Attempt} (one owner connection, its head and idle timers), {@link ReplayBuffer} and
 *       the gateway-wide {@link ReplayBudget}, {@link RequestBodyPump} (pause, resume, the send
 *       stall), {@link OwnerRequestHeaders}, {@link RetargetPolicy} (a pure function) and {@link
 *       ForwardProblems} (failure type to 502/503/504/413).
 *   <li><b>One loop per exchange.</b> Every step of an exchange runs on the client channel's event
 *       loop; owner connections are pooled per loop, so no lock is needed and no byte crosses
 *       threads. A routing answer completed elsewhere (Lettuce's thread) hops back.
 *   <li><b>Backpressure both ways.</b> The client body is read only while the owner connection is
 *       writable ({@link RequestBody#pause()}); the owner's body is read only while the client
 *       connection is writable ({@code autoRead}).
 *   <li><b>Small bodies first, then the owner connection.</b> A request whose declared body is at
 *       most {@link ForwarderSpec#requestBufferBytes()} is read whole into its replay copy
 *       ({@code BUFFERING}, its bytes reserved from the budget up front, so none is refused)
 *       before the owner is admitted and a pooled connection taken: a client that uploads slowly
 *       holds none of an owner's pool meanwhile, and cannot lock the owner's other requests out
 *       with a few hundred trickling uploads (nginx's {@code proxy_request_buffering}, in memory
 *       and bounded; Envoy streams). A larger or chunked body streams as it arrives.
 *   <li><b>Bounded replay.</b> Request chunks are kept (as retained slices, no copy) up to {@link
 *       ForwarderSpec#replayBufferBytes()} and within the gateway-wide {@link
 *       ForwarderSpec#replayBudgetBytes()}; once the owner's head is not a 421 they are released.
 *       A 421 for a body that outgrew the replay buffer answers 503 with {@code Retry-After: 0}
 *       (the new owner is learned, so the client's retry lands); so does a body that outgrows it
 *       while the retry is still connecting (that retry could only send a truncated body).
 *   <li><b>Retargets.</b> At most {@link ForwarderSpec#retryMax()}; an owner's hint is reported to
 *       the resolver (L1, L2, invalidation), unless the 421 says {@code X-Spector-Redirect: ask}
 *       (a move in progress: this request goes to the named owner, nothing is cached). The exchange stops early when the hint names a node
 *       already tried at the same or an older epoch, or an epoch older than one already seen. The
 *       gateway never relays a 421. A pooled connection that closes before any answer is retried
 *       once on a fresh one (not a retarget).
 *   <li><b>Hand-off holds</b> (one more retarget cause, {@code handoff}): an owner that hands a
 *       namespace to another answers 503 with {@code X-Spector-Handoff}; the exchange closes that
 *       connection and waits in {@code HOLDING}, its body in the replay copy (a body that outgrew
 *       it is answered 503 at once), for at most {@link ForwarderSpec#handoffHold()} over the
 *       whole exchange, within the gateway-wide {@link HandoffHolds} bounds. It goes on when the
 *       move ends: a route invalidation for its key (the resolver's listener), a request of its
 *       key that learned the new owner from a 421, or its own poll of the old owner (one per key
 *       every {@link HandoffHolds#POLL_INTERVAL}, the request itself resent). The hold and poll
 *       timers run on the exchange's loop; the client going away releases everything. After
 *       Vitess's buffering of planned reparents: bounded buffer, window, drain on completion.
 *   <li><b>Timers.</b> Per attempt: connect (transport) and time to the response head ({@link
 *       ForwarderSpec#ownerTimeout()}, from the end of the request); per exchange: the head
 *       deadline across retries, and owner-timeout for an owner that takes no body byte; after the
 *       head only an idle timer (five minutes for an event stream). The idle and stall checks read
 *       time from an injected {@link Ticker}.
 *   <li><b>The body cap</b> is enforced by Content-Length before any owner is contacted and by
 *       counting a streamed body; crossing it aborts the owner exchange.
 *   <li><b>Pinned requests</b> ({@link ForwardRequest#pinned}, {@link PinnedTarget}) start at
 *       {@code CONNECTING} to the one upstream they name, with one deadline instead of the timers
 *       above, no body cap, and a 421 taken as an answer, unless the target has a fallback
 *       ({@link PinnedTarget.Fallback}: a 421 or a connection not made asks it for the next
 *       target, at most {@link PinnedTarget#MAX_FALLBACKS} times, while the body is replayable):
 *       the gateway's peer hop runs on this engine rather than on a second streaming
 *       implementation.
 * </ul>
 */
public final class GatewayForwarder {
    final WaterfallRoutingResolver resolver;
    final Map<String, URI> members;
    final UpstreamHttpTransport transport;
    final ForwarderSpec spec;
    final ForwarderMetrics metrics;
    final Ticker ticker;
    final ReplayBudget replayBudget;
    final ForwardProblems problems;
    /** The WARN line of an attempt that failed reaching an owner, with its cause: once per 10 s, with how many. */
    final LogGate unreachableLog = new LogGate(Duration.ofSeconds(10), System.nanoTime());

    final OwnerHealth health;
    final HandoffHolds holds;

    /** Per event loop, its queues of deadlines: one entry per loop that forwarded, so bounded by the loops. */
    private final ConcurrentHashMap<EventLoop, LoopDeadlines> deadlines = new ConcurrentHashMap<>();

    /**
     * The running loop's entry of {@link #deadlines}, kept in the loop thread's own slot: a look-up
     * keyed by the loop hashes its identity, which cost 2 % of a 1 KiB request's samples (issue 14).
     */
    private final FastThreadLocal<LoopDeadlines> loopDeadlines = new FastThreadLocal<>();

    /** One loop's queues: owner timeouts ({@link ForwarderSpec#ownerTimeout()}) and head deadlines. */
    record LoopDeadlines(FixedDelays ownerTimeouts, FixedDelays headDeadlines) {}

    /**
     * Creates a forwarder that reads time from the system ticker.
     *
     * @param members the base URI ({@code http://host:port}) of each owner, used while the ring
     *     is built from ids alone ({@link CellRing#ofIds}); a ring with URLs, such as every
     *     published one, is dialled by its own
     */
    public GatewayForwarder(
            WaterfallRoutingResolver resolver,
            Map<String, URI> members,
            UpstreamHttpTransport transport,
            ForwarderSpec spec,
            ForwarderMetrics metrics) {
        this(resolver, members, transport, spec, metrics, Ticker.systemTicker());
    }

    /**
     * Creates a forwarder whose idle and stall checks read time from {@code ticker}.
     *
     * @param members the base URI of each member of a ring built from ids alone (see above)
     */
    public GatewayForwarder(
            WaterfallRoutingResolver resolver,
            Map<String, URI> members,
            UpstreamHttpTransport transport,
            ForwarderSpec spec,
            ForwarderMetrics metrics,
            Ticker ticker) {
        this.resolver = requireNonNull(resolver, "resolver");
        this.members = Map.copyOf(requireNonNull(members, "members"));
        this.transport = requireNonNull(transport, "transport");
        this.spec = requireNonNull(spec, "spec");
        this.metrics = requireNonNull(metrics, "metrics");
        this.ticker = requireNonNull(ticker, "ticker");
        this.replayBudget = new ReplayBudget(spec.replayBudgetBytes());
        this.problems = new ForwardProblems(spec);
        this.health = new OwnerHealth(spec, ticker, this::isMember);
        this.holds = new HandoffHolds(spec.handoffMaxHeld(), spec.handoffMaxHeldBytes(), ticker);
        resolver.addRouteListener(holds::wake); // another process moved a key: its held requests go on
    }

    /** Returns {@code loop}'s queues of deadlines. */
    LoopDeadlines deadlinesOf(EventLoop loop) {
        boolean onLoop = loop.inEventLoop();
        LoopDeadlines q = onLoop ? loopDeadlines.getIfExists() : null;
        if (q == null) {
            q = deadlines.computeIfAbsent(
                    loop,
                    l -> new LoopDeadlines(
                            new FixedDelays(l, ticker, spec.ownerTimeout()),
                            new FixedDelays(l, ticker, spec.headDeadline())));
            if (onLoop) {
                loopDeadlines.set(q);
            }
        }
        return q;
    }

    /** Returns the requests held now while their namespace is handed to another owner. */
    public int handoffHeld() {
        return holds.held();
    }

    /** Returns the body bytes of the requests held now. */
    public long handoffHeldBytes() {
        return holds.heldBytes();
    }

    /**
     * Returns the base URI of member {@code owner} on the current ring snapshot, or null when the
     * ring does not name it. The snapshot is read once per call, so an owner and its address come
     * from one ring.
     */
    @Nullable
    URI urlOf(String owner) {
        CellRing ring = resolver.ownership().snapshot();
        return ring.urls().isEmpty() ? members.get(owner) : ring.url(owner);
    }

    /** Answers whether {@code owner} can be dialled: a member of the current ring (see {@link #urlOf}). */
    boolean isMember(String owner) {
        return urlOf(owner) != null;
    }

    /**
     * Returns the gateway's replay budget, which relayed bodies read whole before their relay
     * starts share with the forwarder's ({@link ReplayBudget#tryReserveAhead}).
     */
    public ReplayBudget replayBudget() {
        return replayBudget;
    }

    /** Answers whether passive health has marked ring member {@code owner} down. */
    public boolean isOwnerDown(String owner) {
        return health.isDown(owner);
    }

    /**
     * Starts forwarding a request; must be called on {@code loop}, the client channel's event loop.
     * The returned handle takes the client side's events (writability, going away).
     */
    public Exchange forward(ForwardRequest request, ResponseSink sink, EventLoop loop) {
        RealExchange exchange = new RealExchange(this, request, sink, loop);
        exchange.start();
        return exchange;
    }

    /** Returns the counters. */
    public ForwarderMetrics metrics() {
        return metrics;
    }

    /** Returns the replay bytes the gateway can still hold. */
    public long replayBudgetAvailable() {
        return replayBudget.available();
    }

    /**
     * The client side's handle on one forwarded exchange: the two events only the client side sees.
     * Everything else travels through the request's {@link RequestBody} and the {@link
     * ResponseSink}. Every method must be called on the exchange's event loop.
     */
    public interface Exchange {
        /** The client connection can take more bytes: read from the owner again. */
        void onClientWritable();

        /** The client went away: abort the owner's exchange (its connection is closed). */
        void cancel();
    }
}
