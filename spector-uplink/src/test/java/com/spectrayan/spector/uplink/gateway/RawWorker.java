package com.spectrayan.spector.uplink.gateway;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.wire.Frame;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The worker end of an in-memory uplink, played with raw frames: it records every call, can
 * answer some operations at once, and sends results, errors and pushes on demand.
 */
final class RawWorker implements FrameChannel.Receiver {
    private final FrameChannel channel;
    private final List<Frame.Call> inbox = new ArrayList<>(); // Guarded by this; not yet taken.
    private final List<Frame.Call> all = new ArrayList<>(); // Guarded by this; every call seen.
    private final Map<String, Function<Frame.Call, @Nullable Frame>> auto = new ConcurrentHashMap<>();

    RawWorker(FrameChannel channel) {
        this.channel = channel;
    }

    /** Answers calls of {@code op} as they arrive (null: record but do not answer). */
    void autoAnswer(String op, Function<Frame.Call, @Nullable Frame> answer) {
        auto.put(op, answer);
    }

    /** Answers calls of {@code op} with {@code {}} as they arrive. */
    void autoAnswerEmpty(String op) {
        autoAnswer(op, c -> new Frame.Result(c.id(), empty()));
    }

    @Override
    public void onClose(@Nullable Throwable cause) {}

    @Override
    public void onFrame(Frame frame) {
        if (!(frame instanceof Frame.Call call)) {
            return;
        }
        synchronized (this) {
            all.add(call);
        }
        Function<Frame.Call, @Nullable Frame> answer = auto.get(call.op());
        if (answer != null) {
            Frame reply = answer.apply(call);
            if (reply != null) {
                channel.send(reply);
            }
            return;
        }
        synchronized (this) {
            inbox.add(call);
        }
    }

    /** Waits (bounded) for the next not-yet-taken call of {@code op} and takes it. */
    Frame.Call take(String op) {
        return take(op, c -> true);
    }

    Frame.Call take(String op, Predicate<Frame.Call> matching) {
        Frame.Call[] taken = new Frame.Call[1];
        Waits.until("the worker receives a " + op + " call", () -> {
            synchronized (this) {
                for (Frame.Call c : inbox) {
                    if (c.op().equals(op) && matching.test(c)) {
                        inbox.remove(c);
                        taken[0] = c;
                        return true;
                    }
                }
                return false;
            }
        });
        return taken[0];
    }

    /** Returns every call of {@code op} seen so far, answered or not. */
    synchronized List<Frame.Call> seen(String op) {
        return all.stream().filter(c -> c.op().equals(op)).toList();
    }

    /** Returns the calls of {@code op} received and not yet taken. */
    synchronized List<Frame.Call> waiting(String op) {
        return inbox.stream().filter(c -> c.op().equals(op)).toList();
    }

    /** Answers whether a relay.cancel for {@code relayId} arrived. */
    boolean cancelled(String relayId) {
        return seen(RelayCancel.OP).stream()
                .anyMatch(c -> c.input().path("relayId").asText().equals(relayId));
    }

    void result(long id, ObjectNode output) {
        channel.send(new Frame.Result(id, output));
    }

    void error(long id, ErrorCode code, String message) {
        channel.send(new Frame.ErrorFrame(id, code, message, empty()));
    }

    /** Takes the next call of {@code op} (bounded wait) and answers it with an error frame. */
    void refuse(String op, ErrorCode code, String message) {
        error(take(op).id(), code, message);
    }

    void head(long id, int status) {
        channel.send(new Frame.Push(id, RelayHead.PUSH, new RelayHead(status, List.of()).toJson()));
    }

    void push(long id, String name, ObjectNode data) {
        channel.send(new Frame.Push(id, name, data));
    }

    void chunk(long id, byte[] bytes) {
        channel.send(new Frame.Push(id, RelayChunk.PUSH, RelayChunk.of(bytes).toJson()));
    }

    static ObjectNode empty() {
        return JsonNodeFactory.instance.objectNode();
    }

    static String relayId(Frame.Call call) {
        return call.input().path("relayId").asText();
    }
}
