package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.gateway.RelayCall;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import com.spectrayan.spector.uplink.worker.WorkerOptions;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * A real gateway and a real worker in one process over a real uplink on loopback: a {@link
 * TestGateway} whose accepted uplinks go (through a {@link RecordingChannel}) into a {@link
 * RealGatewayWorkerClient} and a {@link WorkerDirectory}, {@link GatewayRelay} on top; workers dialled
 * with {@link UplinkDialer}, each served by an {@link UplinkSession} with a fake relay target
 * {@code app} (and one whose name is 64 chars long) that a test sets with {@link #target}.
 *
 * <p>Each worker speaks the {@link Protocol} it connects with: v1 dials with {@code onConnected}
 * (offering v1 only), v2 with {@code onUplink} (offering v2, then v1); the gateway speaks both, or
 * v1 only ({@link #gatewayV1Only}). {@link #connect} asserts the version the link negotiated.
 */
final class RelayHarness implements AutoCloseable {
    static final String W1 = "w1";
    static final String LONGEST_TARGET = "t" + "x".repeat(63);

    final EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
    final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2);
    final WorkerDirectory directory = new WorkerDirectory();

    /** Every request the fake target was called with, in order. */
    final BlockingQueue<RelayedRequest> targetCalls = new LinkedBlockingQueue<>();

    private final Map<String, BlockingQueue<RecordingChannel>> gatewayEnds = new ConcurrentHashMap<>();
    private final Map<String, BlockingQueue<FrameChannel>> workerEnds = new ConcurrentHashMap<>();
    private final Map<String, FrameChannel> lastWorkerEnds = new ConcurrentHashMap<>();
    private final Map<String, UplinkDialer> dialers = new ConcurrentHashMap<>();
    private final List<AutoCloseable> closing = new CopyOnWriteArrayList<>();
    private final TestGateway gateway;
    private final boolean gatewaySpeaksV2;
    private volatile RelayTarget app =
            request -> CompletableFuture.failedFuture(new IllegalStateException("no target set"));
    private volatile @Nullable GatewayRelay relay;

    /** A gateway that speaks v2 and v1. */
    RelayHarness() {
        this(true);
    }

    private RelayHarness(boolean gatewayV2) {
        gatewaySpeaksV2 = gatewayV2;
        gateway = gatewayV2
                ? new TestGateway(group, 0, (id, channel) -> accepted(id, 0, channel))
                : TestGateway.speakingV1Only(group, (id, channel) -> accepted(id, 0, channel));
        gateway.receiveWithSlots(this::accepted);
    }

    /** A gateway that speaks v1 only (as one from before v2, or with {@code spector.uplink.v2} off). */
    static RelayHarness gatewayV1Only() {
        return new RelayHarness(false);
    }

    /** Sets what the fake target {@code app} does. */
    void target(RelayTarget target) {
        this.app = target;
    }

    private CompletionStage<RelayedResponse> app(RelayedRequest request) {
        targetCalls.add(request);
        return app.handle(request);
    }

    private FrameChannel.Receiver accepted(String workerId, int slot, FrameChannel channel) {
        RecordingChannel recording = RecordingChannel.over(channel);
        RealGatewayWorkerClient client = RealGatewayWorkerClient.over(workerId, recording);
        directory.register(new WorkerLink(workerId, slot, "test", java.time.Instant.now(), client));
        gatewayEnds.computeIfAbsent(workerId, id -> new LinkedBlockingQueue<>()).add(recording);
        return recording.receiving(client);
    }

    /** Connects worker {@code w1} as the gateway's uplink over v1; returns the gateway's end. */
    RecordingChannel connect() {
        return connect(Protocol.V1);
    }

    /** Connects worker {@code w1} as the gateway's uplink over {@code protocol}; returns the gateway's end. */
    RecordingChannel connect(Protocol protocol) {
        return connect(W1, UplinkSession.Role.GATEWAY_UPLINK, protocol);
    }

    /** Connects a worker whose sessions serve {@code role}, over v1; returns the gateway's end. */
    RecordingChannel connect(String workerId, UplinkSession.Role role) {
        return connect(workerId, role, Protocol.V1);
    }

    /**
     * Connects a worker whose sessions serve {@code role}, offering {@code protocol} (v2 offers v1
     * as well); returns the gateway's end, once it is live. Asserts the version the link speaks:
     * {@code protocol}, or v1 when the gateway speaks v1 only.
     */
    RecordingChannel connect(String workerId, UplinkSession.Role role, Protocol protocol) {
        return connect(workerId, role, protocol, -1);
    }

    /**
     * Connects one more link of worker {@code workerId} over v2, in {@code slot} (PROTOCOL.md, "Links
     * per worker"), beside the links it holds; returns the gateway's end.
     */
    RecordingChannel connectSlot(String workerId, int slot) {
        return connect(workerId, UplinkSession.Role.GATEWAY_UPLINK, Protocol.V2, slot);
    }

    private RecordingChannel connect(String workerId, UplinkSession.Role role, Protocol protocol, int slot) {
        WorkerOptions options = WorkerOptions.builder(workerId)
                .relayTarget("app", this::app)
                .relayTarget(LONGEST_TARGET, this::app)
                .build();
        return dial(workerId, protocol, slot, channel -> UplinkSession.start(channel, role, options));
    }

    /**
     * Connects worker {@code workerId} over v2 with a receiver of the test's own (a raw worker that
     * writes what it wants onto {@link #workerSocket}); returns the gateway's end.
     */
    RecordingChannel connectRaw(
            String workerId, java.util.function.Function<FrameChannel, FrameChannel.Receiver> receiver) {
        return dial(workerId, Protocol.V2, -1, receiver);
    }

    /**
     * Connects worker {@code workerId} over v1 with a receiver of the test's own (a raw worker that
     * answers what it wants on its {@link #workerEnd}); returns the gateway's end.
     */
    RecordingChannel connectRawV1(
            String workerId, java.util.function.Function<FrameChannel, FrameChannel.Receiver> receiver) {
        return dial(workerId, Protocol.V1, -1, receiver);
    }

    /** Dials worker {@code workerId}'s uplink; {@code slot} -1: none named (the worker's one link). */
    private RecordingChannel dial(
            String workerId,
            Protocol protocol,
            int slot,
            java.util.function.Function<FrameChannel, FrameChannel.Receiver> receiver) {
        BlockingQueue<FrameChannel> ends = workerEnds.computeIfAbsent(workerId, id -> new LinkedBlockingQueue<>());
        java.util.function.Function<FrameChannel, FrameChannel.Receiver> serve = channel -> {
            FrameChannel.Receiver r = receiver.apply(channel);
            lastWorkerEnds.put(workerId, channel);
            ends.add(channel);
            return r;
        };
        UplinkDialer.Builder builder = UplinkDialer.builder(gateway.uri(), workerId, TestGateway.TOKEN, group)
                .reconnect(Duration.ofMillis(100), Duration.ofMillis(400));
        if (slot >= 0) {
            builder.slot(slot);
        }
        UplinkDialer dialer = (protocol == Protocol.V2 ? builder.onUplink(serve) : builder.onConnected(serve)).build();
        dialers.put(workerId, dialer);
        closing.add(dialer);
        dialer.start();
        FrameChannel workerEnd = take(ends, "worker " + workerId + " dials its uplink", WAIT);
        RecordingChannel recording = nextGatewayEnd(workerId);
        assertThat(directory.live(workerId))
                .as("the accepted uplink of " + workerId + " is registered as live")
                .isNotNull();
        boolean v2 = protocol == Protocol.V2 && gatewaySpeaksV2;
        assertThat(recording.isV2())
                .as("the link of " + workerId + " negotiated " + (v2 ? "v2" : "v1") + " (the gateway's end)")
                .isEqualTo(v2);
        assertThat(workerEnd instanceof V2FrameChannel)
                .as("the link of " + workerId + " negotiated " + (v2 ? "v2" : "v1") + " (the worker's end)")
                .isEqualTo(v2);
        assertThat(client(workerId).v2() != null)
                .as("the gateway's client of " + workerId + " relays over " + (v2 ? "v2 streams" : "v1 calls"))
                .isEqualTo(v2);
        return recording;
    }

    /** Waits for the next uplink of the worker the gateway accepts (e.g. after a reconnect). */
    RecordingChannel nextGatewayEnd(String workerId) {
        RecordingChannel end = take(
                gatewayEnds.computeIfAbsent(workerId, id -> new LinkedBlockingQueue<>()),
                "the gateway accepts the uplink of " + workerId,
                WAIT);
        return end;
    }

    /** Returns the worker's end of its last uplink. */
    FrameChannel workerEnd(String workerId) {
        FrameChannel last = lastWorkerEnds.get(workerId);
        if (last == null) {
            throw new AssertionError("worker " + workerId + " never connected");
        }
        return last;
    }

    /** Returns the socket channel under the worker's end of its last uplink (either version). */
    io.netty.channel.Channel workerSocket(String workerId) {
        FrameChannel end = workerEnd(workerId);
        if (end instanceof V2FrameChannel v2) {
            return v2.channel();
        }
        return ((WebSocketFrameChannel) end).channel();
    }

    /** Returns the dialer of worker {@code workerId}'s last {@code connect}. */
    UplinkDialer dialer(String workerId) {
        UplinkDialer d = dialers.get(workerId);
        if (d == null) {
            throw new AssertionError("worker " + workerId + " never dialled");
        }
        return d;
    }

    /** Stops a worker's dialer (and so its uplink). */
    void stopWorker(String workerId) {
        UplinkDialer d = dialers.get(workerId);
        if (d != null) {
            d.close();
        }
    }

    /** Returns the gateway's relay with the default deadline. */
    GatewayRelay relay() {
        GatewayRelay r = relay;
        if (r == null) {
            r = new GatewayRelay(directory, scheduler);
            relay = r;
        }
        return r;
    }

    /** Returns a gateway relay with this deadline (on the same directory). */
    GatewayRelay relay(Duration deadline) {
        return new GatewayRelay(directory, deadline, Limits.RELAYS_PER_WORKER, scheduler);
    }

    /** Returns a gateway relay with bounds on one relay's and every v1 relay's unread response bytes. */
    GatewayRelay relayWithUnreadCaps(long maxUnreadBytes, long maxUnreadAll) {
        return new GatewayRelay(
                directory, Limits.RELAY_DEADLINE, Limits.RELAYS_PER_WORKER, maxUnreadBytes, maxUnreadAll, scheduler);
    }

    /** Returns a gateway relay with this bound on unread response bytes (on the same directory). */
    GatewayRelay relayWithUnreadCap(long maxUnreadBytes) {
        return new GatewayRelay(directory, Limits.RELAY_DEADLINE, Limits.RELAYS_PER_WORKER, maxUnreadBytes, scheduler);
    }

    /** Returns the gateway's client of a worker's live uplink, relay operations included. */
    RealGatewayWorkerClient client(String workerId) {
        WorkerLink link = directory.live(workerId);
        if (link == null) {
            throw new AssertionError("worker " + workerId + " has no live link");
        }
        return (RealGatewayWorkerClient) link.client();
    }

    /** Returns a worker's live link. */
    WorkerLink link(String workerId) {
        WorkerLink link = directory.live(workerId);
        if (link == null) {
            throw new AssertionError("worker " + workerId + " has no live link");
        }
        return link;
    }

    @Override
    public void close() {
        for (AutoCloseable c : closing) {
            try {
                c.close();
            } catch (Exception e) {
                throw new AssertionError("closing " + c, e);
            }
        }
        gateway.close();
        scheduler.shutdownNow();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
    }

    // ---- calls, bodies ----

    static RelayCall call(String method, String path, @Nullable BodySource body) {
        return call(method, path, body, new AbortSignal());
    }

    static RelayCall call(String method, String path, @Nullable BodySource body, AbortSignal signal) {
        return new RelayCall(
                "app",
                new RelayedRequest(
                        method, URI.create("http://app.local" + path), List.of(), "acme", null, body, signal));
    }

    /** A call whose request declares {@code contentLength} (-1: unknown) for {@code body}. */
    static RelayCall call(String method, String path, @Nullable BodySource body, long contentLength) {
        return new RelayCall(
                "app",
                new RelayedRequest(
                        method,
                        URI.create("http://app.local" + path),
                        List.of(),
                        "acme",
                        null,
                        body,
                        new AbortSignal(),
                        null,
                        null,
                        contentLength));
    }

    static CompletableFuture<RelayedResponse> respond(int status, @Nullable BodySource body, Header... headers) {
        return CompletableFuture.completedFuture(new RelayedResponse(status, List.of(headers), body));
    }
}
