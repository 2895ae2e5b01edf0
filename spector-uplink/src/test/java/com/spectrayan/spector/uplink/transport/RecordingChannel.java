package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.v2.V2Carrier;
import com.spectrayan.spector.uplink.internal.v2.V2Connection;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.Frame;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The gateway's end of a real uplink, decorated so a test sees every frame that crosses it: each
 * frame still goes through the real {@link WebSocketFrameChannel} underneath. It records calls as
 * the gateway sends them and answers and pushes as the gateway receives them (chunks by size only,
 * so megabytes are not kept), counts the {@code relay.body} calls sent and not yet answered (the
 * gateway's window as it sees it), and lets a test write raw frames and wait for their answers.
 * It sees the received frames when its {@link #receiving} receiver is the one the transport got.
 *
 * <p>On a v2 link ({@link #over} of a {@link V2FrameChannel}) it is a {@link V2Carrier} too, so the
 * gateway's client over it runs its relays as streams; it then sees only the calls (CALL frames,
 * e.g. {@code status.get}), and {@link #v2()} the link's v2 frames.
 */
class RecordingChannel implements FrameChannel {
    /** Ids of raw calls a test writes: far from the client's own ids, which count from 1. */
    private static final long RAW_IDS = 1_000_000_000L;

    /** Chunks up to this many base64 chars are kept whole (small bodies of the tests). */
    private static final int KEEP_CHARS = 4096;

    /**
     * One frame as it crossed.
     *
     * @param order the position among all frames of this connection, both ways
     * @param sent true for a frame the gateway sent, false for one it received
     * @param id the frame id
     * @param name the op of a call, the push name of a push, {@code result} or the error code
     * @param relayId the relay id a relay call names, else null
     * @param chunkBytes the decoded size of a relay-body or relay-chunk chunk, else -1
     * @param json the input, output, details or data, when small enough to keep, else null
     */
    record Seen(
            long order,
            boolean sent,
            long id,
            String name,
            @Nullable String relayId,
            int chunkBytes,
            @Nullable ObjectNode json) {
        boolean isPush() {
            return !sent && (name.equals("relay-head") || name.equals(RelayChunk.PUSH));
        }

        boolean isAnswer() {
            return !sent && !isPush();
        }
    }

    private final FrameChannel inner;
    private final AtomicLong order = new AtomicLong();
    private final AtomicLong rawIds = new AtomicLong(RAW_IDS);
    private final List<Seen> seen = new ArrayList<>(); // Guarded by this.
    private final ConcurrentHashMap<Long, CompletableFuture<Frame>> answers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Long, Boolean> openBodies = new ConcurrentHashMap<>();
    private final AtomicInteger maxUnansweredBodies = new AtomicInteger();

    private RecordingChannel(FrameChannel inner) {
        this.inner = requireNonNull(inner, "inner");
    }

    /**
     * Returns the recording end over the gateway's end of a real uplink: on a v2 link a {@link
     * V2Carrier} whose link's frames a {@link V2FrameRecorder} in its pipeline records.
     */
    static RecordingChannel over(FrameChannel inner) {
        return inner instanceof V2FrameChannel v2 ? new V2(v2) : new RecordingChannel(inner);
    }

    /** Returns the recorder of the link's v2 frames; fails on a v1 link. */
    V2FrameRecorder v2() {
        throw new AssertionError("the uplink speaks v1: no v2 frames to record");
    }

    /** Answers whether the link negotiated v2. */
    boolean isV2() {
        return false;
    }

    /** The recording end of a v2 link. */
    private static final class V2 extends RecordingChannel implements V2Carrier {
        private final V2FrameChannel link;
        private final V2FrameRecorder recorder;

        V2(V2FrameChannel link) {
            super(link);
            this.link = link;
            this.recorder = V2FrameRecorder.install(link.channel());
        }

        @Override
        public V2Connection connection() {
            return link.connection();
        }

        @Override
        public void acceptStreams(com.spectrayan.spector.uplink.internal.v2.V2StreamAcceptor acceptor) {
            link.acceptStreams(acceptor);
        }

        @Override
        V2FrameRecorder v2() {
            return recorder;
        }

        @Override
        boolean isV2() {
            return true;
        }
    }

    @Override
    public CompletionStage<Void> send(Frame frame) {
        if (frame instanceof Frame.Call call && call.op().equals(RelayBody.OP)) {
            openBodies.put(call.id(), Boolean.TRUE);
            maxUnansweredBodies.accumulateAndGet(openBodies.size(), Math::max);
        }
        record(frame, true);
        return inner.send(frame);
    }

    /** Returns the receiver to give the transport: it records each frame, then hands it to {@code receiver}. */
    FrameChannel.Receiver receiving(FrameChannel.Receiver receiver) {
        return new FrameChannel.Receiver() {
            @Override
            public void onFrame(Frame frame) {
                record(frame, false);
                if (frame instanceof Frame.Result || frame instanceof Frame.ErrorFrame) {
                    openBodies.remove(frame.id());
                    answers.computeIfAbsent(frame.id(), id -> new CompletableFuture<>())
                            .complete(frame);
                }
                receiver.onFrame(frame);
            }

            @Override
            public void onClose(@Nullable Throwable cause) {
                receiver.onClose(cause);
            }

            @Override
            public boolean onCorruptFrame(com.spectrayan.spector.uplink.wire.CorruptFrameException failure) {
                return receiver.onCorruptFrame(failure);
            }
        };
    }

    @Override
    public void close(String reason) {
        inner.close(reason);
    }

    @Override
    public void closeForPolicy(String reason) {
        inner.closeForPolicy(reason);
    }

    @Override
    public boolean isOpen() {
        return inner.isOpen();
    }

    /** Writes a raw call (its input not checked by any schema) and returns its id. */
    long call(String op, ObjectNode input) {
        long id = rawIds.incrementAndGet();
        Waits.done(send(new Frame.Call(id, op, input)), "the raw " + op + " call is written to the uplink", WAIT);
        return id;
    }

    /** Returns the stage of the answer (result or error frame) to the call with this id. */
    CompletableFuture<Frame> answer(long id) {
        return answers.computeIfAbsent(id, i -> new CompletableFuture<>());
    }

    /** Returns the relay.body calls sent and not answered now. */
    int unansweredBodies() {
        return openBodies.size();
    }

    /** Returns the most relay.body calls that were ever sent and not answered at once. */
    int maxUnansweredBodies() {
        return maxUnansweredBodies.get();
    }

    /** Returns every frame seen so far, in order. */
    synchronized List<Seen> seen() {
        return List.copyOf(seen);
    }

    /** Returns the frames seen so far that match. */
    List<Seen> seen(Predicate<Seen> which) {
        return seen().stream().filter(which).toList();
    }

    /** Returns the calls of this op the gateway sent, in order. */
    List<Seen> sent(String op) {
        return seen(s -> s.sent() && s.name().equals(op));
    }

    /** Returns the frames the gateway received under a call's id (pushes and the answer). */
    List<Seen> received(long callId) {
        return seen(s -> !s.sent() && s.id() == callId);
    }

    /** Returns the frame id of the relay.request that opened this relay id. */
    long requestId(String relayId) {
        return sent(RelayRequest.OP).stream()
                .filter(s -> relayId.equals(s.relayId()))
                .mapToLong(Seen::id)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no relay.request for relay " + relayId + " was sent"));
    }

    /** Returns the relay id of the last relay.request the gateway sent. */
    String lastRelayId() {
        List<Seen> requests = sent(RelayRequest.OP);
        if (requests.isEmpty()) {
            throw new AssertionError("no relay.request was sent");
        }
        return requireNonNull(requests.get(requests.size() - 1).relayId());
    }

    private void record(Frame frame, boolean sent) {
        String name;
        String relayId = null;
        int chunkBytes = -1;
        ObjectNode json;
        if (frame instanceof Frame.Call call) {
            name = call.op();
            relayId = text(call.input(), "relayId");
            chunkBytes = decodedSize(call.input());
            json = small(call.input());
        } else if (frame instanceof Frame.Result result) {
            name = "result";
            json = result.output();
        } else if (frame instanceof Frame.ErrorFrame error) {
            name = error.code().name();
            json = error.details();
        } else if (frame instanceof Frame.Push push) {
            name = push.push();
            chunkBytes = decodedSize(push.data());
            json = small(push.data());
        } else {
            throw new AssertionError("unknown frame " + frame);
        }
        synchronized (this) {
            seen.add(new Seen(order.incrementAndGet(), sent, frame.id(), name, relayId, chunkBytes, json));
        }
    }

    private static @Nullable String text(ObjectNode node, String field) {
        JsonNode value = node.get(field);
        return value != null && value.isTextual() ? value.textValue() : null;
    }

    private static int decodedSize(ObjectNode node) {
        JsonNode chunk = node.get("chunk");
        if (chunk != null && chunk.isBinary()) {
            return chunk.asText().length() / 4 * 3 - padding(chunk.asText()); // sent: bytes until encoded
        }
        if (chunk == null || !chunk.isTextual()) {
            return -1;
        }
        return chunk.textValue().length() / 4 * 3 - padding(chunk.textValue());
    }

    private static int padding(String s) {
        return s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0;
    }

    private static @Nullable ObjectNode small(ObjectNode node) {
        JsonNode chunk = node.get("chunk");
        if (chunk != null
                && (chunk.isTextual() || chunk.isBinary())
                && chunk.asText().length() > KEEP_CHARS) {
            return null;
        }
        return node;
    }
}
