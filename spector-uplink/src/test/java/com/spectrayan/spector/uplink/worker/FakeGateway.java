package com.spectrayan.spector.uplink.worker;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.testkit.ManualScheduler;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.wire.Frame;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/** Plays the gateway on the gateway end of an in-memory pair: sends raw calls, collects answers and pushes. */
final class FakeGateway implements FrameChannel.Receiver {
    static final int CHUNK = 256 * 1024;
    /** The bound on one answer: 5 s, for an in-memory pair. */
    static final Duration ANSWER_WAIT = Duration.ofSeconds(5);

    final FrameChannel channel;
    final List<Frame> received = new CopyOnWriteArrayList<>();
    private final Map<Long, CompletableFuture<Frame>> answers = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    /** Runs everything the session does, when the test drains it; null: the session has threads. */
    private final @Nullable ManualScheduler drain;

    FakeGateway(FrameChannel channel) {
        this(channel, null);
    }

    private FakeGateway(FrameChannel channel, @Nullable ManualScheduler drain) {
        this.channel = channel;
        this.drain = drain;
    }

    /**
     * A gateway for a pair whose delivery and session run on {@code drain}: its waits drain it and
     * then require the answer, so "unanswered" is exact, never a timeout.
     */
    static java.util.function.Function<FrameChannel, FakeGateway> drainedBy(ManualScheduler drain) {
        return channel -> new FakeGateway(channel, drain);
    }

    @Override
    public void onFrame(Frame frame) {
        received.add(frame);
        if (!(frame instanceof Frame.Push)) {
            answer(frame.id()).complete(frame);
        }
    }

    @Override
    public void onClose(@Nullable Throwable cause) {}

    CompletableFuture<Frame> answer(long id) {
        return answers.computeIfAbsent(id, k -> new CompletableFuture<>());
    }

    long call(String op, ObjectNode input) {
        long id = ids.incrementAndGet();
        channel.send(new Frame.Call(id, op, input));
        return id;
    }

    /**
     * Returns the answer to call {@code id}: on a drained pair once everything ran (unanswered then
     * is a failure, never a timeout), else waited for at most {@link #ANSWER_WAIT}.
     */
    Frame await(long id) {
        ManualScheduler d = drain;
        if (d != null) {
            d.runUntilIdle();
            Frame frame = answer(id).getNow(null);
            if (frame == null) {
                throw new AssertionError("call " + id + " is unanswered once everything ran");
            }
            return frame;
        }
        return Waits.done(answer(id), "call " + id + " is answered", ANSWER_WAIT);
    }

    ObjectNode result(long id) {
        Frame frame = await(id);
        assertThat(frame).as("call %d answers a result", id).isInstanceOf(Frame.Result.class);
        return ((Frame.Result) frame).output();
    }

    Frame.ErrorFrame error(long id, ErrorCode code) {
        Frame frame = await(id);
        assertThat(frame).as("call %d answers an error frame", id).isInstanceOf(Frame.ErrorFrame.class);
        Frame.ErrorFrame error = (Frame.ErrorFrame) frame;
        assertThat(error.code())
                .as("call %d's error code (message: %s)", id, error.message())
                .isEqualTo(code);
        return error;
    }

    List<Frame.Push> pushes(long id) {
        return received.stream()
                .filter(f -> f instanceof Frame.Push && f.id() == id)
                .map(f -> (Frame.Push) f)
                .toList();
    }

    List<Frame.Push> chunks(long id) {
        return pushes(id).stream().filter(p -> p.push().equals(RelayChunk.PUSH)).toList();
    }

    /** Returns the relay-head pushed for relay.request {@code id}: its first push, asserted to be one. */
    RelayHead head(long id) {
        List<Frame.Push> pushes = pushes(id);
        assertThat(pushes).as("call %d pushed", id).isNotEmpty();
        assertThat(pushes.get(0).push()).as("call %d's first push", id).isEqualTo(RelayHead.PUSH);
        return RelayHead.parse(pushes.get(0).data());
    }

    byte[] responseBody(long id) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Frame.Push push : chunks(id)) {
            ByteBuffer chunk = RelayChunk.parse(push.data()).chunk();
            byte[] bytes = new byte[chunk.remaining()];
            chunk.get(bytes);
            out.writeBytes(bytes);
        }
        return out.toByteArray();
    }

    /** Sends a relay.request; returns the call id. */
    long relayRequest(String relayId, String target, String method, boolean hasBody) {
        return relayRequest(relayId, target, method, hasBody, -1);
    }

    /** Sends a relay.request declaring the body's {@code length} (-1: none); returns the call id. */
    long relayRequest(String relayId, String target, String method, boolean hasBody, long length) {
        ObjectNode input = JsonNodeFactory.instance
                .objectNode()
                .put("relayId", relayId)
                .put("target", target)
                .put("method", method)
                .put("url", "https://app.local/a?x=1");
        ArrayNode headers = input.putArray("headers");
        headers.addArray().add("x-a").add("1");
        headers.addArray().add("authorization").add("Bearer secret");
        headers.addArray().add("x-b").add("2");
        input.put("tenant", "acme").put("leaseId", "l-9").put("hasBody", hasBody);
        if (length >= 0) {
            input.put("length", length);
        }
        return call("relay.request", input);
    }

    /** Sends relay.request r-1 for target app, without a body; returns its id once it answered {}. */
    long relayCompleted(String method) {
        long id = relayRequest("r-1", "app", method, false);
        assertThat(result(id)).as("relay.request %s answers {}", method).isEmpty();
        return id;
    }

    long chunk(String relayId, int seq, byte[] bytes) {
        return call(RelayBody.OP, RelayBody.Chunk.of(relayId, seq, bytes).toJson());
    }

    long end(String relayId) {
        return call(RelayBody.OP, new RelayBody.End(relayId).toJson());
    }

    long cancel(String relayId) {
        return call("relay.cancel", JsonNodeFactory.instance.objectNode().put("relayId", relayId));
    }

    /** Sends a body in 256 KiB chunks with at most 4 unanswered, as the gateway's window does. */
    void sendBody(String relayId, byte[] data) {
        Deque<Long> inFlight = new ArrayDeque<>();
        int seq = 0;
        for (int off = 0; off < data.length; off += CHUNK) {
            if (inFlight.size() == 4) {
                assertThat(result(inFlight.poll())).as("relay.body answers {}").isEmpty();
            }
            inFlight.add(chunk(relayId, seq++, Arrays.copyOfRange(data, off, Math.min(data.length, off + CHUNK))));
        }
        inFlight.add(end(relayId));
        while (!inFlight.isEmpty()) {
            assertThat(result(inFlight.poll())).as("relay.body answers {}").isEmpty();
        }
    }
}
