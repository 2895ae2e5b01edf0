package com.spectrayan.spector.uplink.worker;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.RelayBody;
import com.spectrayan.spector.uplink.wire.RelayCancel;
import com.spectrayan.spector.uplink.wire.RelayChunk;
import com.spectrayan.spector.uplink.wire.RelayHead;
import com.spectrayan.spector.uplink.wire.RelayOutcome;
import com.spectrayan.spector.uplink.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.StatusGet;
import com.spectrayan.spector.uplink.wire.StatusReport;
import com.spectrayan.spector.uplink.wire.UplinkException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's server end of one uplink connection: reads the calls the peer sends, answers each
 * with a result or an error frame under the call's id, and runs relays against the worker's relay
 * targets, sending their responses as {@code relay-head} and {@code relay-chunk} pushes under the
 * {@code relay.request} call's id. The head's {@code length} is the target's {@link
 * RelayedResponse#contentLength()} as {@link ResponseFraming#contentLength} allows it for the
 * status; a response without a body ({@link ResponseFraming#bodyless}: HEAD, 1xx, 204, 205, 304)
 * gets no chunk, and the body its target offered is cancelled.
 *
 * <p>Threading: every piece of session state lives on one serial executor per session; frames,
 * the close, target callbacks and write completions hop onto it. Target code (the call, its body
 * reads, abort listeners, the completion of the request body's reads) runs on {@link
 * WorkerOptions#executor()}, never on the connection's thread or under the session's executor. No
 * lock is held across I/O or a target call.
 *
 * <p>Frames are handled in the order they were read, behind the startup gate: a {@code
 * relay.request} registers its relay id before any later frame is handled.
 */
public final class UplinkSession {
    /** Which connection a session serves; only the gateway's uplink may relay. */
    public enum Role {
        /** The gateway's uplink: every operation. */
        GATEWAY_UPLINK,
        /** A local admin connection: {@code status.get} only; relay operations are FORBIDDEN. */
        LOCAL_ADMIN
    }

    private static final Logger log = LoggerFactory.getLogger(UplinkSession.class);

    private static final int CHUNK_BYTES = (int) Limits.CHUNK_BYTES.max();

    private final FrameChannel channel;
    private final Role role;
    private final WorkerOptions options;
    private final Executor executor;
    private final SerialExecutor serial;

    // State below is touched only on `serial`.
    private final Map<String, Relay> relays = new HashMap<>();
    private final ArrayDeque<Frame.Call> held = new ArrayDeque<>();
    private boolean gateOpen;
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
     * Starts serving a connection: sets its frame and close receivers and waits for the startup
     * gate before handling the first call.
     */
    public static UplinkSession start(FrameChannel channel, Role role, WorkerOptions options) {
        requireNonNull(channel, "channel");
        requireNonNull(role, "role");
        requireNonNull(options, "options");
        UplinkSession session = new UplinkSession(channel, role, options);
        channel.onFrame(frame -> session.serial.execute(() -> session.received(frame)));
        channel.onClose(cause -> session.serial.execute(() -> session.connectionClosed(cause)));
        options.startupGate().whenComplete((v, e) -> session.serial.execute(() -> session.gateSettled(e)));
        return session;
    }

    /** Returns the role this session serves. */
    public Role role() {
        return role;
    }

    /** Returns the relays active on this connection now (read across threads, may lag). */
    public int activeRelays() {
        return activeRelays;
    }

    /**
     * Reports a frame the transport could not decode. {@link FrameChannel} delivers decoded frames
     * only, so the transport calls this: a {@link CorruptFrameException} with an id is answered
     * BAD_REQUEST under that id; any other (no id, or a frame too large) closes the connection.
     */
    public void corruptFrame(UplinkException failure) {
        requireNonNull(failure, "failure");
        serial.execute(() -> {
            if (closed) {
                return;
            }
            if (failure instanceof CorruptFrameException corrupt
                    && corrupt.frameId().isPresent()) {
                send(Frame.ErrorFrame.of(corrupt.frameId().getAsLong(), corrupt.toSpectorException()));
            } else {
                log.warn("closing uplink: unreadable frame without an id: {}", failure.getMessage());
                channel.close("corrupt frame: " + failure.getMessage());
            }
        });
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
            held.add(call);
            return;
        }
        handle(call);
    }

    private void gateSettled(@Nullable Throwable failure) {
        gateOpen = true;
        gateFailure = failure;
        Frame.Call call;
        while (!closed && (call = held.poll()) != null) {
            handle(call);
        }
        held.clear();
    }

    private void connectionClosed(@Nullable Throwable cause) {
        if (closed) {
            return;
        }
        closed = true;
        held.clear();
        SpectorException lost = SpectorException.of(
                ErrorCode.DAEMON_CONNECTION_LOST,
                "uplink connection closed" + (cause == null ? "" : ": " + cause.getMessage()));
        for (Relay relay : new ArrayList<>(relays.values())) {
            settle(relay, null, lost);
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
            throw SpectorException.of(
                    ErrorCode.FORBIDDEN,
                    op + " is only for the gateway's uplink",
                    Map.of("reason", "not the gateway uplink session"));
        }
    }

    private StatusReport statusReport() {
        return new StatusReport(
                options.workerId(), List.copyOf(options.relayTargets().keySet()), relays.size(), options.startedAt());
    }

    // ---- relay.request ----

    private void relayRequest(Frame.Call call) {
        RelayRequest input = RelayRequest.parse(call.input());
        if (relays.containsKey(input.relayId())) {
            throw SpectorException.badRequest(
                    "relayId",
                    "'" + input.relayId() + "' is already active on this connection (expected: an unused id)");
        }
        if (!Limits.ACTIVE_RELAYS_PER_CONNECTION.allows(relays.size() + 1L)) {
            throw Limits.ACTIVE_RELAYS_PER_CONNECTION.refusal(relays.size() + 1L);
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
        Relay relay = new Relay(call.id(), input);
        relays.put(relay.relayId, relay);
        activeRelays = relays.size();
        RelayedRequest request = new RelayedRequest(
                input.method(), url, input.headers(), input.tenant(), input.leaseId(), relay.body, relay.signal);
        CompletableFuture.supplyAsync(() -> target.handle(request), executor)
                .thenCompose(Function.identity())
                .whenCompleteAsync((response, failure) -> responded(relay, response, failure), serial);
    }

    private void responded(Relay relay, @Nullable RelayedResponse response, @Nullable Throwable failure) {
        if (relay.settled) {
            if (response != null && response.body() != null) {
                cancelAsync(response.body(), new CancellationException("relay " + relay.relayId + " already ended"));
            }
            return;
        }
        if (failure != null || response == null) {
            Throwable cause =
                    failure == null ? new IllegalStateException("the target answered no response") : unwrap(failure);
            log.warn(
                    "relay {}: target '{}' failed before its response: {}",
                    relay.relayId,
                    relay.target,
                    message(cause));
            settle(relay, internal(relay, "relay target '" + relay.target + "' failed: " + message(cause)), cause);
            return;
        }
        BodySource body = response.body();
        relay.responseBody = body;
        RelayHead head;
        try {
            head = new RelayHead(
                    response.status(),
                    response.headers(),
                    ResponseFraming.contentLength(response.status(), response.contentLength()));
        } catch (SpectorException e) {
            log.warn(
                    "relay {}: target '{}' answered a response outside the relay's bounds: {}",
                    relay.relayId,
                    relay.target,
                    e.getMessage());
            settle(
                    relay,
                    internal(
                            relay,
                            "relay target '" + relay.target + "' answered a response outside the bounds: "
                                    + e.getMessage()),
                    e);
            return;
        }
        send(new Frame.Push(relay.callId, RelayHead.PUSH, head.toJson()));
        if (body == null || ResponseFraming.bodyless(relay.method.equals("HEAD"), head.status())) {
            if (body != null) {
                relay.responseBody = null;
                cancelAsync(
                        body,
                        new CancellationException(
                                "a " + head.status() + " response to " + relay.method + " carries no body"));
            }
            settle(relay, new Frame.Result(relay.callId, RelayOutcome.COMPLETED.toJson()), null);
            return;
        }
        pull(relay, body);
    }

    private void pull(Relay relay, BodySource body) {
        CompletableFuture.supplyAsync(body::next, executor)
                .thenCompose(Function.identity())
                .whenCompleteAsync((part, failure) -> pulled(relay, body, part, failure), serial);
    }

    private void pulled(Relay relay, BodySource body, @Nullable ByteBuffer part, @Nullable Throwable failure) {
        if (relay.settled) {
            return;
        }
        if (failure != null) {
            Throwable cause = unwrap(failure);
            log.warn(
                    "relay {}: target '{}'s response body failed after the head: {}",
                    relay.relayId,
                    relay.target,
                    message(cause));
            relay.responseBody = null;
            settle(
                    relay,
                    internal(relay, "relay target '" + relay.target + "' response body failed: " + message(cause)),
                    cause);
            return;
        }
        if (part == null) {
            relay.responseBody = null;
            settle(relay, new Frame.Result(relay.callId, RelayOutcome.COMPLETED.toJson()), null);
            return;
        }
        sendChunks(relay, body, part.slice());
    }

    /** Sends the part as pushes of at most 256 KiB, each once the previous one was written. */
    private void sendChunks(Relay relay, BodySource body, ByteBuffer part) {
        if (!part.hasRemaining()) {
            pull(relay, body);
            return;
        }
        int size = Math.min(part.remaining(), CHUNK_BYTES);
        ByteBuffer chunk = part.slice().limit(size);
        part.position(part.position() + size);
        send(new Frame.Push(relay.callId, RelayChunk.PUSH, new RelayChunk(chunk).toJson()))
                .whenCompleteAsync(
                        (v, failure) -> {
                            if (relay.settled) {
                                return;
                            }
                            if (failure != null) {
                                settle(relay, null, unwrap(failure));
                            } else {
                                sendChunks(relay, body, part);
                            }
                        },
                        serial);
    }

    // ---- relay.body, relay.cancel ----

    private void relayBody(Frame.Call call) {
        RelayBody input = RelayBody.parse(call.input());
        Relay relay = relays.get(input.relayId());
        if (relay == null) {
            reply(call.id(), empty()); // never opened, or ended: the gateway learns from relay.request
            return;
        }
        FedBody body = relay.body;
        SpectorException refusal = null;
        if (body == null) {
            refusal = SpectorException.badRequest(
                    "relayId", "relay '" + relay.relayId + "' has no request body (it was opened with hasBody: false)");
        } else if (body.endSeen) {
            refusal = input instanceof RelayBody.End
                    ? SpectorException.badRequest("end", "the request body already ended (expected: one end)")
                    : SpectorException.badRequest("seq", "a chunk after the request body's end (expected: none)");
        } else if (input instanceof RelayBody.Chunk chunk && chunk.seq() != body.nextSeq) {
            refusal = SpectorException.badRequest(
                    "seq",
                    chunk.seq() + (chunk.seq() < body.nextSeq ? " repeated" : " out of order") + " (expected: "
                            + body.nextSeq + ")");
        }
        if (refusal != null || body == null) {
            SpectorException failure = requireNonNull(refusal);
            send(Frame.ErrorFrame.of(call.id(), failure));
            settle(
                    relay,
                    Frame.ErrorFrame.of(
                            relay.callId,
                            SpectorException.of(
                                    ErrorCode.BAD_REQUEST,
                                    "relay '" + relay.relayId + "' aborted: " + failure.getMessage(),
                                    failure.details())),
                    failure);
            return;
        }
        if (input instanceof RelayBody.Chunk chunk) {
            body.nextSeq++;
            body.offer(call.id(), chunk.chunk());
        } else {
            body.endSeen = true;
            body.offer(call.id(), null);
        }
    }

    private void relayCancel(Frame.Call call) {
        RelayCancel input = RelayCancel.parse(call.input());
        Relay relay = relays.get(input.relayId());
        if (relay != null) {
            settle(
                    relay,
                    new Frame.Result(relay.callId, RelayOutcome.CANCELLED.toJson()),
                    new CancellationException("relay '" + relay.relayId + "' cancelled by the gateway"));
        }
        reply(call.id(), empty());
    }

    // ---- settling ----

    /**
     * Ends a relay once: frees its id, answers every relay.body still unanswered, aborts the
     * request's signal and stops the response body when {@code abort} is given, and sends the
     * answer (none after the connection closed).
     */
    private void settle(Relay relay, @Nullable Frame answer, @Nullable Throwable abort) {
        if (relay.settled) {
            return;
        }
        relay.settled = true;
        relays.remove(relay.relayId, relay);
        activeRelays = relays.size();
        Throwable reason = abort != null ? abort : new CancellationException("relay '" + relay.relayId + "' ended");
        if (relay.body != null) {
            relay.body.close(reason);
        }
        if (abort != null) {
            AbortSignal signal = relay.signal;
            executor.execute(() -> signal.abort(abort));
            BodySource responseBody = relay.responseBody;
            relay.responseBody = null;
            if (responseBody != null) {
                cancelAsync(responseBody, abort);
            }
        }
        if (answer != null && !closed) {
            send(answer);
        }
    }

    private void cancelAsync(BodySource body, Throwable reason) {
        executor.execute(() -> {
            try {
                body.cancel(reason);
            } catch (RuntimeException e) {
                log.warn("a relay target's body failed to cancel: {}", e.getMessage());
            }
        });
    }

    private static Frame.ErrorFrame internal(Relay relay, String message) {
        return Frame.ErrorFrame.of(relay.callId, SpectorException.of(ErrorCode.INTERNAL, message));
    }

    // ---- sending ----

    private void reply(long id, ObjectNode output) {
        send(new Frame.Result(id, output));
    }

    private CompletionStage<Void> send(Frame frame) {
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

    private static ObjectNode empty() {
        return JsonNodeFactory.instance.objectNode();
    }

    private static Throwable unwrap(Throwable failure) {
        Throwable t = failure;
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static String message(Throwable failure) {
        String message = failure.getMessage();
        return message == null ? failure.getClass().getSimpleName() : message;
    }

    /** One relay on this connection; its fields are touched on the session's executor only. */
    private final class Relay {
        final long callId;
        final String relayId;
        final String target;
        final String method;
        final AbortSignal signal = new AbortSignal();
        final @Nullable FedBody body;

        @Nullable
        BodySource responseBody;

        boolean settled;

        Relay(long callId, RelayRequest request) {
            this.callId = callId;
            this.relayId = request.relayId();
            this.target = request.target();
            this.method = request.method();
            this.body = request.hasBody() ? new FedBody() : null;
        }
    }

    /** A relayed request's body, fed by relay.body calls and pulled by the target. */
    private final class FedBody implements BodySource {
        private final ArrayDeque<Part> queued = new ArrayDeque<>();
        int nextSeq;
        boolean endSeen;
        private boolean endDelivered;
        private @Nullable Throwable failure;
        private @Nullable CompletableFuture<@Nullable ByteBuffer> reader;

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            CompletableFuture<@Nullable ByteBuffer> read = new CompletableFuture<>();
            serial.execute(() -> read(read));
            return read;
        }

        @Override
        public void cancel(Throwable reason) {
            serial.execute(() -> close(reason));
        }

        private void read(CompletableFuture<@Nullable ByteBuffer> read) {
            Part part;
            if (endDelivered) {
                deliver(read, null, null);
            } else if (failure != null) {
                deliver(read, null, failure);
            } else if (reader != null) {
                deliver(read, null, new IllegalStateException("one next() at a time"));
            } else if ((part = queued.poll()) != null) {
                hand(read, part);
            } else {
                reader = read;
            }
        }

        /** A relay.body call's part (null for the end), already checked for order. */
        void offer(long callId, @Nullable ByteBuffer data) {
            Part part = new Part(callId, data);
            CompletableFuture<@Nullable ByteBuffer> waiting = reader;
            if (failure != null) {
                reply(callId, empty()); // the target stopped reading
            } else if (waiting != null) {
                reader = null;
                hand(waiting, part);
            } else {
                queued.add(part);
            }
        }

        private void hand(CompletableFuture<@Nullable ByteBuffer> read, Part part) {
            if (part.data == null) {
                endDelivered = true;
            }
            reply(part.callId, empty()); // the target took it: the gateway's window moves on
            deliver(read, part.data, null);
        }

        /** The relay settled or the target stopped reading: answers what is unanswered. */
        void close(Throwable reason) {
            if (failure == null) {
                failure = reason;
            }
            Part part;
            while ((part = queued.poll()) != null) {
                reply(part.callId, empty());
            }
            CompletableFuture<@Nullable ByteBuffer> waiting = reader;
            reader = null;
            if (waiting != null) {
                deliver(waiting, null, endDelivered ? null : reason);
            }
        }

        private void deliver(
                CompletableFuture<@Nullable ByteBuffer> read, @Nullable ByteBuffer data, @Nullable Throwable error) {
            executor.execute(() -> {
                if (error != null) {
                    read.completeExceptionally(error);
                } else {
                    read.complete(data);
                }
            });
        }
    }

    private record Part(long callId, @Nullable ByteBuffer data) {}
}
