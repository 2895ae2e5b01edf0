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
    private final Map<String, BlockingQueue<WebSocketFrameChannel>> workerEnds = new ConcurrentHashMap<>();
    private final Map<String, WebSocketFrameChannel> lastWorkerEnds = new ConcurrentHashMap<>();
    private final Map<String, UplinkDialer> dialers = new ConcurrentHashMap<>();
    private final List<AutoCloseable> closing = new CopyOnWriteArrayList<>();
    private final TestGateway gateway = new TestGateway(group, 0, this::accepted);
    private volatile RelayTarget app =
            request -> CompletableFuture.failedFuture(new IllegalStateException("no target set"));
    private volatile @Nullable GatewayRelay relay;

    /** Sets what the fake target {@code app} does. */
    void target(RelayTarget target) {
        this.app = target;
    }

    private CompletionStage<RelayedResponse> app(RelayedRequest request) {
        targetCalls.add(request);
        return app.handle(request);
    }

    private FrameChannel.Receiver accepted(String workerId, FrameChannel channel) {
        RecordingChannel recording = new RecordingChannel(channel);
        RealGatewayWorkerClient client = RealGatewayWorkerClient.over(workerId, recording);
        directory.register(new WorkerLink(workerId, client));
        gatewayEnds.computeIfAbsent(workerId, id -> new LinkedBlockingQueue<>()).add(recording);
        return recording.receiving(client);
    }

    /** Connects worker {@code w1} as the gateway's uplink; returns the gateway's end. */
    RecordingChannel connect() {
        return connect(W1, UplinkSession.Role.GATEWAY_UPLINK);
    }

    /** Connects a worker whose sessions serve {@code role}; returns the gateway's end. */
    RecordingChannel connect(String workerId, UplinkSession.Role role) {
        WorkerOptions options = WorkerOptions.builder(workerId)
                .relayTarget("app", this::app)
                .relayTarget(LONGEST_TARGET, this::app)
                .build();
        BlockingQueue<WebSocketFrameChannel> ends =
                workerEnds.computeIfAbsent(workerId, id -> new LinkedBlockingQueue<>());
        UplinkDialer dialer = UplinkDialer.builder(gateway.uri(), workerId, TestGateway.TOKEN, group)
                .reconnect(Duration.ofMillis(100), Duration.ofMillis(400))
                .onConnected(channel -> {
                    UplinkSession session = UplinkSession.start(channel, role, options);
                    lastWorkerEnds.put(workerId, channel);
                    ends.add(channel);
                    return session;
                })
                .build();
        dialers.put(workerId, dialer);
        closing.add(dialer);
        dialer.start();
        take(ends, "worker " + workerId + " dials its uplink", WAIT);
        RecordingChannel recording = nextGatewayEnd(workerId);
        assertThat(directory.live(workerId))
                .as("the accepted uplink of " + workerId + " is registered as live")
                .isNotNull();
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

    /** Returns the worker's end of its last uplink (the real WebSocket channel). */
    WebSocketFrameChannel workerEnd(String workerId) {
        WebSocketFrameChannel last = lastWorkerEnds.get(workerId);
        if (last == null) {
            throw new AssertionError("worker " + workerId + " never connected");
        }
        return last;
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

    static CompletableFuture<RelayedResponse> respond(int status, @Nullable BodySource body, Header... headers) {
        return CompletableFuture.completedFuture(new RelayedResponse(status, List.of(headers), body));
    }
}
