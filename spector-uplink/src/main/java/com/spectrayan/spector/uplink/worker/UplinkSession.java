package com.spectrayan.spector.uplink.worker;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.DeclaredLength;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.V2Carrier;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Stream;
import com.spectrayan.spector.uplink.internal.v2.V2StreamAcceptor;
import com.spectrayan.spector.uplink.internal.wire.Lengths;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.internal.wire.StatusGet;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.net.URI;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's server end of one uplink connection: reads the calls the peer sends, answers each
 * with a result or an error frame under the call's id, and hands each relay to a {@link
 * ServedRelay}, which runs it against the worker's relay targets and sends its response as {@code
 * relay-head} and {@code relay-chunk} pushes under the {@code relay.request} call's id.
 *
 * <p>The session is the part that does not belong to one relay: the {@link Role} (only the
 * gateway's uplink may relay), the startup gate, the dispatch of each call by its {@code op}, the
 * checks before a relay opens (a fresh id, a free slot, a known target), {@code status.get}, and
 * the close, which ends every relay still open.
 *
 * <p>Slots: a relay takes one of {@link Limits#ACTIVE_RELAYS_PER_CONNECTION} when it passes its
 * checks and gives it back only when its target's work is over: the relay settled (answered,
 * failed, cancelled, reset, or lost with the connection) and the stage the target's {@code handle}
 * returned completed, no read of its response body is outstanding and each cancel of that body
 * returned. A cancel or a reset aborts the target's signal at once; the slot waits for the target
 * to stop, so a peer that cancels or resets relays in a loop never has more than 16 running on the
 * worker (HTTP/2's rapid reset, CVE-2023-44487), and a target that ignores the abort keeps its
 * slot. A v1 relay's id is free again as soon as it settled; its slot is not. {@link
 * #activeRelays()} and {@code status.get} count slots.
 *
 * <p>Threading: every piece of session and relay state lives on one serial executor per session;
 * frames, the close, target callbacks and write completions hop onto it. Target code (the call, its
 * body reads, abort listeners, the completion of the request body's reads) runs on {@link
 * WorkerOptions#executor()}, never on the connection's thread or under the session's executor. No
 * lock is held across I/O or a target call.
 *
 * <p>Frames are handled in the order they were read, behind the startup gate: a {@code
 * relay.request} registers its relay id before any later frame is handled.
 *
 * <p>A session is the receiver of its connection ({@link FrameChannel.Receiver}): return it to the
 * transport that handed the connection over, which then delivers the frames and the close to it.
 *
 * <p>On a link of protocol v2 (docs/PROTOCOL.md section 9) the session is also the link's taker
 * of streams ({@link V2StreamAcceptor}): each stream the gateway opens is a relay ({@link
 * V2ServedRelay}) that passes the same checks as a {@code relay.request} (the role, the startup
 * gate, a free slot, a known target), counts in {@link #activeRelays()} with the v1 relays, and
 * ends, its target aborted, when the link closes. The stream's own state lives on the link's
 * event loop; its checks and its slot, like everything else here, on the session's executor.
 */
public final class UplinkSession implements FrameChannel.Receiver {
    /** Which connection a session serves; only the gateway's uplink may relay. */
    public enum Role {
        /**
         * The gateway's uplink: every operation; a corrupt call with a readable id is answered
         * BAD_REQUEST under that id, one without an id closes the connection.
         */
        GATEWAY_UPLINK,
        /**
         * A local admin connection: {@code status.get} only; relay operations are FORBIDDEN, and a
         * corrupt frame closes the connection (1007) as the transport decides.
         */
        LOCAL_ADMIN
    }

    private static final Logger log = LoggerFactory.getLogger(UplinkSession.class);

    private final FrameChannel channel;
    private final Role role;
    private final WorkerOptions options;
    private final Executor executor;
    private final SerialExecutor serial;

    /**
     * {@code relay.body} calls held before the startup gate settles, at most: what a gateway within
     * its limits has unanswered at once ({@link Limits#UNANSWERED_BODIES} for each of the {@link
     * Limits#ACTIVE_RELAYS_PER_CONNECTION} relays a link may hold), each up to {@link
     * Limits#CHUNK_BYTES}. Past it a body is answered {@code WORKER_UNREACHABLE} (503, worth a retry)
     * at once: a starting worker never holds more than that many chunks.
     */
    static final long HELD_BODIES = Limits.ACTIVE_RELAYS_PER_CONNECTION.max() * Limits.UNANSWERED_BODIES;

    /**
     * Other v1 calls held before the startup gate settles, at most ({@code relay.request}, {@code
     * relay.cancel}, {@code status.get}: small frames). Generous, as relays come and go while a
     * long start-up runs and the gateway asks for status every 30 s; it exists so that nothing is
     * held without end. Past it a call is answered {@code WORKER_UNREACHABLE} at once.
     */
    static final long HELD_OTHER_CALLS = 1024;

    // State below is touched only on `serial`.
    /** The v1 relays not yet settled, by relay id: what {@code relay.body} and {@code relay.cancel} find. */
    private final Map<String, ServedRelay> relays = new HashMap<>();
    /** The v1 relays holding a slot: from their checks until their target's work is over (identity). */
    private final Set<ServedRelay> relaySlots = new HashSet<>();
    /** The v2 relays holding a slot: past their checks, until their target's work is over (identity). */
    private final Set<V2ServedRelay> streamRelays = new HashSet<>();
    /** Calls and v2 streams that arrived before the startup gate settled, in arrival order. */
    private final ArrayDeque<Runnable> held = new ArrayDeque<>();
    /**
     * The v2 streams among {@link #held}, each leaving it as it ends (a reset while held): the
     * link's count of 16 leaves a stream at its reset, so without this a peer opening and
     * resetting streams before the gate settles grew {@link #held} by a relay and its head each
     * time (found by a review).
     */
    private final java.util.IdentityHashMap<V2ServedRelay, Runnable> heldStreams = new java.util.IdentityHashMap<>();

    private boolean gateOpen;
    /** The {@code relay.body} calls among {@link #held} (v1), bounded by {@link #HELD_BODIES}. */
    private long heldBodies;
    /** The other v1 calls among {@link #held}, bounded by {@link #HELD_OTHER_CALLS}. */
    private long heldOtherCalls;

    private @Nullable Throwable gateFailure;
    private boolean closed;

    private volatile int activeRelays;

    private UplinkSession(FrameChannel channel, Role role, WorkerOptions options) {
        this.channel = channel;
        this.role = role;
        this.options = options;
        this.executor = options.executor();
        this.serial = new SerialExecutor(executor);
    }

    /**
     * Starts serving a connection: returns the session, which is the connection's receiver, and
     * waits for the startup gate before handling the first call.
     */
    public static UplinkSession start(FrameChannel channel, Role role, WorkerOptions options) {
        requireNonNull(channel, "channel");
        requireNonNull(role, "role");
        requireNonNull(options, "options");
        UplinkSession session = new UplinkSession(channel, role, options);
        if (channel instanceof V2Carrier v2) {
            V2StreamAcceptor streams = session::onStream; // internal: no public method names a v2 type
            v2.acceptStreams(streams);
        }
        options.startupGate().whenComplete((v, e) -> session.serial.execute(() -> session.gateSettled(e)));
        return session;
    }

    /** Returns the role this session serves. */
    public Role role() {
        return role;
    }

    /**
     * Returns the relays holding a slot on this connection now: those not settled and those
     * cancelled or reset whose target has not stopped yet (read across threads, may lag).
     */
    public int activeRelays() {
        return activeRelays;
    }

    /** Takes a frame the peer sent (from the transport, on the connection's thread). */
    @Override
    public void onFrame(Frame frame) {
        serial.execute(() -> received(frame));
    }

    /**
     * Takes a stream the gateway opened on a v2 link (on the link's event loop): its relay becomes
     * the stream's handler at once, and its checks run on the session's executor behind the
     * startup gate, as a {@code relay.request}'s do. A stream refused there is reset: {@code
     * RELAY_ERROR} with v1's error object (FORBIDDEN on a local admin connection,
     * RELAY_TARGET_MISSING, BAD_REQUEST for a URL that is not a URI, INTERNAL when the worker
     * failed to start), or {@code REFUSED_STREAM} past {@link
     * Limits#ACTIVE_RELAYS_PER_CONNECTION}.
     */
    void onStream(V2Stream stream, RequestHead head, boolean endStream) {
        requireNonNull(stream, "stream");
        requireNonNull(head, "head");
        if (role != Role.GATEWAY_UPLINK) {
            stream.resetRelayError(forbidden("a relay stream"));
            return;
        }
        V2ServedRelay relay = new V2ServedRelay(this, stream, head, endStream);
        stream.handler(relay);
        serial.execute(() -> streamArrived(relay));
    }

    /** Takes the connection's close: every relay still open ends, its target aborted. */
    @Override
    public void onClose(@Nullable Throwable cause) {
        serial.execute(() -> connectionClosed(cause));
    }

    /**
     * Takes text the transport could not decode, on the gateway's uplink only ({@link
     * Role#GATEWAY_UPLINK}; on any other the transport closes the connection): a corrupt call
     * with an id is answered BAD_REQUEST under that id; one without an id closes the connection.
     */
    @Override
    public boolean onCorruptFrame(CorruptFrameException failure) {
        requireNonNull(failure, "failure");
        if (role != Role.GATEWAY_UPLINK) {
            return false;
        }
        serial.execute(() -> {
            if (closed) {
                return;
            }
            if (failure.frameId().isPresent()) {
                send(Frame.ErrorFrame.of(failure.frameId().getAsLong(), failure.toSpectorException()));
            } else {
                log.warn("closing uplink: unreadable frame without an id: {}", failure.getMessage());
                channel.close("corrupt frame: " + failure.getMessage());
            }
        });
        return true;
    }

    // ---- frames, gate, close (on serial) ----

    private void received(Frame frame) {
        if (closed) {
            return;
        }
        if (!(frame instanceof Frame.Call call)) {
            log.debug(
                    "uplink: ignoring a {} frame (id {}): the worker makes no calls",
                    frame.getClass().getSimpleName(),
                    frame.id());
            return;
        }
        if (!gateOpen) {
            boolean body = RelayBody.OP.equals(call.op());
            long already = body ? heldBodies : heldOtherCalls;
            if (already >= (body ? HELD_BODIES : HELD_OTHER_CALLS)) {
                send(Frame.ErrorFrame.of(
                        call.id(),
                        SpectorException.of(
                                ErrorCode.WORKER_UNREACHABLE,
                                "worker " + options.workerId() + " is starting: " + already + " "
                                        + (body ? "relay bodies" : "calls") + " wait for it already (expected: at most "
                                        + (body ? HELD_BODIES : HELD_OTHER_CALLS) + "); retry",
                                Map.of("workerId", options.workerId(), "reason", "starting"))));
                return;
            }
            if (body) {
                heldBodies++;
            } else {
                heldOtherCalls++;
            }
            held.add(() -> handle(call));
            return;
        }
        handle(call);
    }

    private void streamArrived(V2ServedRelay relay) {
        if (closed) {
            relay.connectionLost(SpectorException.of(ErrorCode.DAEMON_CONNECTION_LOST, "uplink connection closed"));
            return;
        }
        if (!gateOpen) {
            Runnable run = () -> handleStream(relay);
            heldStreams.put(relay, run);
            held.add(run);
            return;
        }
        handleStream(relay);
    }

    private void gateSettled(@Nullable Throwable failure) {
        gateOpen = true;
        gateFailure = failure;
        Runnable deferred;
        while (!closed && (deferred = held.poll()) != null) {
            deferred.run();
        }
        held.clear();
        heldStreams.clear();
    }

    /** Returns the calls and streams waiting for the startup gate, counted on the session's executor (tests). */
    java.util.concurrent.CompletionStage<Integer> heldCount() {
        java.util.concurrent.CompletableFuture<Integer> n = new java.util.concurrent.CompletableFuture<>();
        serial.execute(() -> n.complete(held.size()));
        return n;
    }

    private void connectionClosed(@Nullable Throwable cause) {
        if (closed) {
            return;
        }
        closed = true;
        held.clear();
        heldStreams.clear();
        SpectorException lost = SpectorException.of(
                ErrorCode.DAEMON_CONNECTION_LOST,
                "uplink connection closed" + (cause == null ? "" : ": " + cause.getMessage()));
        for (ServedRelay relay : new ArrayList<>(relays.values())) {
            relay.connectionLost(lost);
        }
        for (V2ServedRelay relay : new ArrayList<>(streamRelays)) {
            relay.connectionLost(lost);
        }
    }

    private void handle(Frame.Call call) {
        try {
            if (gateFailure != null) {
                throw SpectorException.of(ErrorCode.INTERNAL, "worker failed to start: " + message(gateFailure));
            }
            switch (call.op()) {
                case StatusGet.OP -> {
                    StatusGet.parse(call.input());
                    reply(call.id(), statusReport().toJson());
                }
                case RelayRequest.OP -> {
                    requireUplink(call.op());
                    relayRequest(call);
                }
                case RelayBody.OP -> {
                    requireUplink(call.op());
                    relayBody(call);
                }
                case RelayCancel.OP -> {
                    requireUplink(call.op());
                    relayCancel(call);
                }
                default ->
                    throw SpectorException.badRequest(
                            "op",
                            "unknown operation (expected: " + StatusGet.OP + ", " + RelayRequest.OP + ", "
                                    + RelayBody.OP + " or " + RelayCancel.OP + ")");
            }
        } catch (SpectorException e) {
            send(Frame.ErrorFrame.of(call.id(), e));
        } catch (RuntimeException e) {
            log.error("uplink call {} ({}) failed: {}", call.id(), call.op(), e.getMessage(), e);
            send(Frame.ErrorFrame.of(
                    call.id(), SpectorException.of(ErrorCode.INTERNAL, call.op() + " failed: " + message(e))));
        }
    }

    private void requireUplink(String op) {
        if (role != Role.GATEWAY_UPLINK) {
            throw forbidden(op);
        }
    }

    private static SpectorException forbidden(String what) {
        return SpectorException.of(
                ErrorCode.FORBIDDEN,
                what + " is only for the gateway's uplink",
                Map.of("reason", "not the gateway uplink session"));
    }

    private StatusReport statusReport() {
        return new StatusReport(
                options.workerId(), List.copyOf(options.relayTargets().keySet()), relayCount(), options.startedAt());
    }

    /** Returns the slots taken on this connection, v1 and v2 together (see the class's notes). */
    private int relayCount() {
        return relaySlots.size() + streamRelays.size();
    }

    // ---- relay.request, relay.body, relay.cancel: checked here, run by ServedRelay ----

    private void relayRequest(Frame.Call call) {
        RelayRequest input = RelayRequest.parse(call.input());
        if (relays.containsKey(input.relayId())) {
            throw SpectorException.badRequest(
                    "relayId",
                    "'" + input.relayId() + "' is already active on this connection (expected: an unused id)");
        }
        if (!Limits.ACTIVE_RELAYS_PER_CONNECTION.allows(relayCount() + 1L)) {
            throw Limits.ACTIVE_RELAYS_PER_CONNECTION.refusal(relayCount() + 1L);
        }
        RelayTarget target = options.relayTargets().get(input.target());
        if (target == null) {
            throw SpectorException.of(
                    ErrorCode.RELAY_TARGET_MISSING,
                    "no relay target '" + input.target() + "' on worker " + options.workerId(),
                    Map.of("target", input.target()));
        }
        URI url;
        try {
            url = new URI(input.url());
        } catch (java.net.URISyntaxException e) {
            throw SpectorException.badRequest("url", "not a URI: " + e.getReason());
        }
        ServedRelay relay = new ServedRelay(this, call.id(), input);
        relays.put(relay.relayId(), relay);
        relaySlots.add(relay);
        activeRelays = relayCount();
        relay.start(target, input, url);
    }

    /**
     * Runs a v2 stream's checks, those of {@code relay.request}, and starts its relay; a stream
     * that fails one is reset. A stream the gateway reset while it was held is skipped.
     */
    private void handleStream(V2ServedRelay relay) {
        if (relay.isSettled()) {
            return; // reset or lost while held; its end was (or will be) counted by streamEnded
        }
        RequestHead head = relay.head();
        if (gateFailure != null) {
            relay.refuse(SpectorException.of(ErrorCode.INTERNAL, "worker failed to start: " + message(gateFailure)));
            return;
        }
        if (!Limits.ACTIVE_RELAYS_PER_CONNECTION.allows(relayCount() + 1L)) {
            relay.refuse(
                    V2ErrorCode.REFUSED_STREAM,
                    message(Limits.ACTIVE_RELAYS_PER_CONNECTION.refusal(relayCount() + 1L)));
            return;
        }
        RelayTarget target = options.relayTargets().get(head.target());
        if (target == null) {
            relay.refuse(SpectorException.of(
                    ErrorCode.RELAY_TARGET_MISSING,
                    "no relay target '" + head.target() + "' on worker " + options.workerId(),
                    Map.of("target", head.target())));
            return;
        }
        URI url;
        try {
            url = new URI(head.url());
        } catch (java.net.URISyntaxException e) {
            relay.refuse(SpectorException.badRequest("url", "not a URI: " + e.getReason()));
            return;
        }
        streamRelays.add(relay);
        activeRelays = relayCount();
        relay.start(target, url);
    }

    private void relayBody(Frame.Call call) {
        RelayBody input = RelayBody.parse(call.input());
        ServedRelay relay = relays.get(input.relayId());
        if (relay == null) {
            reply(call.id(), empty()); // never opened, or ended: the gateway learns from relay.request
            return;
        }
        relay.bodyCalled(call.id(), input);
    }

    private void relayCancel(Frame.Call call) {
        RelayCancel input = RelayCancel.parse(call.input());
        ServedRelay relay = relays.get(input.relayId());
        if (relay != null) {
            relay.cancelled();
        }
        reply(call.id(), empty());
    }

    // ---- what a ServedRelay asks of its session (on serial) ----

    /** Frees a settled relay's id; its slot stays taken until {@link #released}. */
    void ended(ServedRelay relay) {
        relays.remove(relay.relayId(), relay);
    }

    /** Frees the slot of a settled relay whose target's work is over. */
    void released(ServedRelay relay) {
        relaySlots.remove(relay);
        activeRelays = relayCount();
    }

    /**
     * Frees the slot of a settled v2 relay whose target's work is over, or that never called its
     * target (from the link's event loop: hops onto the session's executor).
     */
    void streamEnded(V2ServedRelay relay) {
        serial.execute(() -> {
            streamRelays.remove(relay);
            Runnable wasHeld = heldStreams.remove(relay);
            if (wasHeld != null) {
                held.remove(wasHeld); // reset before the gate settled: nothing of it is kept
            }
            activeRelays = relayCount();
        });
    }

    /**
     * Runs {@code source.cancel(reason)} on {@code executor}, where target code runs, then {@code
     * then}; answers false (and runs nothing) when the executor refused it: it shut down, and the
     * target's code with it. A cancel that throws is logged. The v1 and v2 relays' one way to
     * cancel a target's body ({@code relay} names it in the log line).
     */
    static boolean cancelOnExecutor(
            Executor executor, BodySource source, Throwable reason, Object relay, Runnable then) {
        try {
            executor.execute(() -> {
                try {
                    source.cancel(reason);
                } catch (RuntimeException e) {
                    log.warn("{}: a relay target's body failed to cancel: {}", relay, e.getMessage());
                } finally {
                    then.run();
                }
            });
            return true;
        } catch (RejectedExecutionException e) {
            log.warn("{}: the target's body could not be cancelled: {}", relay, e.getMessage());
            return false;
        }
    }

    /** Answers whether the connection closed (a settled relay then sends no answer). */
    boolean isClosed() {
        return closed;
    }

    /** Returns the executor every piece of session and relay state lives on. */
    Executor serial() {
        return serial;
    }

    /** Returns the executor target code runs on. */
    Executor executor() {
        return executor;
    }

    // ---- sending ----

    void reply(long id, ObjectNode output) {
        send(new Frame.Result(id, output));
    }

    CompletionStage<Void> send(Frame frame) {
        try {
            return channel.send(frame);
        } catch (RuntimeException e) {
            log.warn(
                    "uplink: a {} frame (id {}) could not be sent: {}",
                    frame.getClass().getSimpleName(),
                    frame.id(),
                    e.getMessage());
            return CompletableFuture.failedFuture(e);
        }
    }

    static ObjectNode empty() {
        return JsonNodeFactory.instance.objectNode();
    }

    /**
     * The gateway sent more of a request body than its head's {@code length} declared (PROTOCOL
     * sections 3 and 9.4): BAD_REQUEST naming {@code length}, either version's.
     */
    static SpectorException requestLengthOverrun(DeclaredLength length) {
        return SpectorException.badRequest(
                Lengths.FIELD,
                "the request body ran to " + length.counted() + " bytes (expected: the declared " + length.declared()
                        + ")");
    }

    /** The gateway ended a request body short of its head's {@code length}: BAD_REQUEST naming {@code length}. */
    static SpectorException requestLengthUnderrun(DeclaredLength length) {
        return SpectorException.badRequest(
                Lengths.FIELD,
                "the request body ended after " + length.counted() + " bytes (expected: the declared "
                        + length.declared() + ")");
    }

    static Throwable unwrap(Throwable failure) {
        Throwable t = failure;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static String message(Throwable failure) {
        String message = failure.getMessage();
        return message == null ? failure.getClass().getSimpleName() : message;
    }
}
