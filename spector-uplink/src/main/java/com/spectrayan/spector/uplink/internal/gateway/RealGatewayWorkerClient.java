package com.spectrayan.spector.uplink.internal.gateway;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.gateway.GatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.v2.V2Carrier;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayOutcome;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.internal.wire.StatusGet;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The {@link GatewayWorkerClient} over one {@link FrameChannel}, and the relay operations the
 * gateway's relay engine calls on it: assigns frame ids, sends calls, completes each call from its
 * result or error frame, and routes pushes to their call by frame id before checking their schema,
 * so a push that fails it reaches its relay as {@link RelayHooks#onRelayInvalid}. A result whose
 * output fails its schema fails the call INTERNAL. Every call fails {@code WORKER_UNREACHABLE}
 * (kind transport) when the uplink closes before it is answered; an error frame fails it with the
 * exception of its code.
 *
 * <p>The relay operations ({@link #relayRequest}, {@link #relayBody}, {@link #relayCancel}) are
 * not part of the public client: other modules relay through {@code GatewayRelay}, which keeps the
 * windows, deadlines and limits.
 *
 * <p>Pending calls: each call waits in a map for its answer, with the relay that made it (its
 * owner). A relay that ends forgets its calls ({@link #forget}): a worker that never answers them
 * holds nothing of it (found by a review: a v1 worker that answered only {@code status.get} kept
 * two entries, and through their hooks each relay's request and client connection, per aborted
 * relay for the life of the link); the {@code relay.cancel} it sends as it ends is forgotten
 * with them, so in effect one way. At most {@link #MAX_PENDING_CALLS} wait at once; the call past it closes the link with
 * 1008 Policy Violation, and every call waiting fails {@code WORKER_UNREACHABLE}.
 *
 * <p>It is the receiver of its channel: the transport that handed the channel over delivers the
 * frames and the close to it ({@link FrameChannel.Receiver}), so return it from the hand-over.
 *
 * <p>Thread-safe. Frames are received on the channel's thread; hooks run there.
 */
public final class RealGatewayWorkerClient implements GatewayWorkerClient {
    /**
     * The most calls that wait for the worker's answer on one link: 256. The gateway runs at most
     * {@code Limits.RELAYS_PER_WORKER} (8) relays on a worker, each with a {@code relay.request}
     * and at most one {@code relay.body} waiting, beside the {@code status.get} reads; more means
     * the worker does not answer, and the link is closed (1008) rather than the map grown.
     */
    public static final int MAX_PENDING_CALLS = 256;

    private final String workerId;
    private final FrameChannel channel;

    /** The v2 link under the channel, or null on a v1 link: a relay then runs as a v2 stream. */
    private final @Nullable V2Connection v2;

    private final AtomicLong ids = new AtomicLong();
    /** The calls waiting for their answer, by frame id; thread-safe itself (no lock guards it). */
    private final ConcurrentHashMap<Long, Pending> pending = new ConcurrentHashMap<>();

    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private volatile @Nullable SpectorException shut;

    /** A call's answer, the hooks its pushes go to, and the relay that made it (null: none). */
    private record Pending(
            CompletableFuture<ObjectNode> answer,
            @Nullable RelayHooks hooks,
            @Nullable Object owner) {}

    private RealGatewayWorkerClient(String workerId, FrameChannel channel) {
        this.workerId = requireNonNull(workerId, "workerId");
        this.channel = requireNonNull(channel, "channel");
        this.v2 = channel instanceof V2Carrier carrier ? carrier.connection() : null;
    }

    /** Returns the v2 link this client's channel carries, or null when the link speaks v1. */
    public @Nullable V2Connection v2() {
        return v2;
    }

    /**
     * Returns a client of worker {@code workerId} over the channel; it is the channel's receiver,
     * so hand it back to the transport (or {@link com.spectrayan.spector.uplink.InMemoryFrameChannels}).
     * {@link GatewayWorkerClient#over} is the same for other modules.
     */
    public static RealGatewayWorkerClient over(String workerId, FrameChannel channel) {
        RealGatewayWorkerClient client = new RealGatewayWorkerClient(workerId, channel);
        if (!channel.isOpen()) {
            client.shutDown(Failures.unreachable(workerId, "worker " + workerId + " uplink is closed", null));
        }
        return client;
    }

    /** Returns the worker's id. */
    public String workerId() {
        return workerId;
    }

    /** Returns how many calls wait for their answer. */
    public int pendingCalls() {
        return pending.size();
    }

    @Override
    public CompletionStage<StatusReport> statusGet() {
        return call(StatusGet.OP, new StatusGet().toJson(), null, null)
                .thenApply(out -> parsed(() -> StatusReport.parse(out)));
    }

    /**
     * Opens a relay ({@code relay.request}); its pushes go to {@code hooks}, and the stage
     * completes with the call's answer.
     */
    public CompletionStage<RelayOutcome> relayRequest(RelayRequest request, RelayHooks hooks) {
        requireNonNull(hooks, "hooks");
        return call(RelayRequest.OP, request.toJson(), hooks, hooks)
                .thenApply(out -> parsed(() -> RelayOutcome.parse(out)));
    }

    /** Sends the next part, or the end, of a relay's request body ({@code relay.body}), owned by no relay. */
    public CompletionStage<Void> relayBody(RelayBody body) {
        return call(RelayBody.OP, body.toJson(), null, null).thenApply(out -> null);
    }

    /**
     * Sends the next part, or the end, of a relay's request body ({@code relay.body}); {@code owner}
     * is the relay's hooks, as given to {@link #relayRequest}, so {@link #forget} drops the call.
     */
    public CompletionStage<Void> relayBody(RelayBody body, RelayHooks owner) {
        requireNonNull(owner, "owner");
        return call(RelayBody.OP, body.toJson(), null, owner).thenApply(out -> null);
    }

    /** Cancels a relay ({@code relay.cancel}); the stage completes with the worker's answer. */
    public CompletionStage<Void> relayCancel(String relayId) {
        return call(RelayCancel.OP, new RelayCancel(relayId).toJson(), null, null)
                .thenApply(out -> null);
    }

    /**
     * Cancels the relay {@code owner} runs ({@code relay.cancel}) as it ends, which then {@link
     * #forget}s it: in effect one way, its answer ignored when it comes.
     */
    public void relayCancel(String relayId, RelayHooks owner) {
        requireNonNull(owner, "owner");
        call(RelayCancel.OP, new RelayCancel(relayId).toJson(), null, owner);
    }

    /**
     * Forgets the calls {@code owner} made that still wait (a relay that ended): their answers and
     * pushes, should they come, are ignored, and their stages never complete. Bounded by {@link
     * #MAX_PENDING_CALLS}.
     */
    public void forget(RelayHooks owner) {
        requireNonNull(owner, "owner");
        pending.values().removeIf(p -> p.owner() == owner);
    }

    @Override
    public boolean isOpen() {
        return shut == null && channel.isOpen();
    }

    @Override
    public void close(String reason) {
        shutDown(Failures.unreachable(workerId, "worker " + workerId + " uplink closed: " + reason, null));
        channel.close(reason);
    }

    /**
     * Tells the worker that this link is going away, before it closes: on a v2 link a GOAWAY with
     * {@code NO_ERROR} and the highest stream opened (section 9.8), after which no stream opens on
     * it and the worker dials its slot again while the link finishes its relays; nothing on v1,
     * which has no such frame (the worker learns it from the close).
     */
    public void announceGoAway(String reason) {
        V2Connection c = v2;
        if (c != null) {
            c.goAwayAtHighest(V2ErrorCode.NO_ERROR, reason);
        }
    }

    /** Closes the uplink as {@link #close} does, with WebSocket's 1001 Going Away: the worker re-dials at once. */
    public void goAway(String reason) {
        shutDown(Failures.unreachable(workerId, "worker " + workerId + " uplink closed: " + reason, null));
        channel.goAway(reason);
    }

    @Override
    public CompletionStage<Void> closed() {
        return closed.copy();
    }

    private <T> T parsed(java.util.function.Supplier<T> parse) {
        try {
            return parse.get();
        } catch (SpectorException e) {
            throw Failures.invalidResponse(workerId, e);
        }
    }

    private CompletableFuture<ObjectNode> call(
            String op, ObjectNode input, @Nullable RelayHooks hooks, @Nullable Object owner) {
        long id = ids.incrementAndGet();
        CompletableFuture<ObjectNode> answer = new CompletableFuture<>();
        pending.put(id, new Pending(answer, hooks, owner));
        SpectorException down = shut;
        if (down != null) {
            fail(id, down);
            return answer;
        }
        int waiting = pending.size();
        if (waiting > MAX_PENDING_CALLS) {
            String reason = waiting + " calls wait for the worker's answer (expected: <= " + MAX_PENDING_CALLS
                    + ", RealGatewayWorkerClient.MAX_PENDING_CALLS)";
            shutDown(Failures.unreachable(workerId, "worker " + workerId + " uplink closed: " + reason, null));
            channel.closeForPolicy(reason);
            return answer;
        }
        channel.send(new Frame.Call(id, op, input)).whenComplete((sent, error) -> {
            if (error != null) {
                fail(id, Failures.unreachable(workerId, "worker " + workerId + " uplink failed to send " + op, error));
            }
        });
        return answer;
    }

    private void fail(long id, Throwable failure) {
        Pending p = pending.remove(id);
        if (p != null) {
            p.answer().completeExceptionally(failure);
        }
    }

    private void shutDown(SpectorException failure) {
        synchronized (this) {
            if (shut == null) {
                shut = failure;
            }
        }
        List<Long> ids = new ArrayList<>(pending.keySet());
        for (Long id : ids) {
            fail(id, failure);
        }
        closed.complete(null);
    }

    /** Takes a frame from the worker: a call's answer, or a push routed to its call's hooks. */
    @Override
    public void onFrame(Frame frame) {
        if (frame instanceof Frame.Result result) {
            Pending p = pending.remove(result.id());
            if (p != null) {
                p.answer().complete(result.output());
            }
        } else if (frame instanceof Frame.ErrorFrame error) {
            fail(error.id(), error.toException());
        } else if (frame instanceof Frame.Push push) {
            Pending p = pending.get(push.id());
            RelayHooks hooks = p == null ? null : p.hooks();
            if (hooks != null) {
                route(push, hooks);
            }
        }
        // A call from the worker: the gateway serves none on the uplink, so it is ignored.
    }

    /** Takes the uplink's close: every call still waiting fails {@code WORKER_UNREACHABLE}. */
    @Override
    public void onClose(@Nullable Throwable cause) {
        shutDown(Failures.unreachable(
                workerId, "worker " + workerId + " uplink closed before the call was answered", cause));
    }

    private static void route(Frame.Push push, RelayHooks hooks) {
        if (push.push().equals(RelayHead.PUSH)) {
            RelayHead head;
            try {
                head = RelayHead.parse(push.data());
            } catch (RuntimeException e) {
                hooks.onRelayInvalid(e);
                return;
            }
            hooks.onRelayHead(head);
        } else if (push.push().equals(RelayChunk.PUSH)) {
            RelayChunk chunk;
            try {
                chunk = RelayChunk.parse(push.data());
            } catch (RuntimeException e) {
                hooks.onRelayInvalid(e);
                return;
            }
            hooks.onRelayChunk(chunk);
        }
        // A push name this version does not know is ignored: a later version may add some.
    }
}
