package com.spectrayan.spector.uplink.transport;

import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Frame;
import com.spectrayan.spector.uplink.internal.v2.V2FrameCodec;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;

/**
 * The v2 frames that cross one end of a real v2 link, as {@link RecordingChannel} records the v1
 * frames: a handler in the channel's pipeline between the WebSocket message aggregator and the
 * link's own frame handler ({@code v2-aggregator}, {@code v2-frames}), so it sees each whole
 * binary message the link reads and each message it writes, and decodes it again (its buffers
 * untouched, the DATA slices it made released at once). It keeps each frame's type, stream,
 * END_STREAM, length, a RESET's code and error object and a HEADERS's JSON.
 *
 * <p>It can also play a broken gateway: {@link #rewriteNextHead} changes the JSON of the next
 * request head the link writes (the stream opened as usual, so both ends agree on it), which is
 * how a test sends a head no {@code RequestHead} would build.
 */
final class V2FrameRecorder extends ChannelDuplexHandler {
    static final String NAME = "v2-recorder";

    /**
     * One frame as it crossed.
     *
     * @param order the position among all frames of this link, both ways
     * @param sent true for a frame this end wrote, false for one it read
     * @param type the frame's type ({@link V2FrameCodec#TYPE_DATA}, ...)
     * @param streamId the stream, 0 for the connection
     * @param endStream END_STREAM on a DATA or HEADERS
     * @param length a DATA frame's payload bytes (else -1)
     * @param code a RESET's code (else null)
     * @param text a HEADERS's JSON, a RESET's error object (else null)
     */
    record Seen(
            long order,
            boolean sent,
            int type,
            int streamId,
            boolean endStream,
            int length,
            @Nullable V2ErrorCode code,
            @Nullable String text) {
        boolean isData() {
            return type == V2FrameCodec.TYPE_DATA;
        }

        boolean isHeaders() {
            return type == V2FrameCodec.TYPE_HEADERS;
        }

        boolean isReset() {
            return type == V2FrameCodec.TYPE_RESET;
        }
    }

    private final List<Seen> seen = new ArrayList<>(); // Guarded by this.
    private long order; // Guarded by this.

    /** The change to make to the next request head written, or null; taken on the event loop. */
    private final java.util.concurrent.atomic.AtomicReference<
                    java.util.function.@Nullable Consumer<com.fasterxml.jackson.databind.node.ObjectNode>>
            headRewrite = new java.util.concurrent.atomic.AtomicReference<>();

    /** Changes the JSON of the next request head this (gateway's) end writes with {@code change}. */
    void rewriteNextHead(java.util.function.Consumer<com.fasterxml.jackson.databind.node.ObjectNode> change) {
        headRewrite.set(change);
    }

    /** Installs a recorder on the channel of a v2 link (any thread) and returns it. */
    static V2FrameRecorder install(Channel channel) {
        V2FrameRecorder recorder = new V2FrameRecorder();
        channel.pipeline().addAfter("v2-aggregator", NAME, recorder);
        return recorder;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof BinaryWebSocketFrame message) {
            record(message.content(), false);
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        Object out = msg;
        if (msg instanceof BinaryWebSocketFrame message) {
            if (headRewrite.get() != null) {
                out = rewritten(ctx, message);
            }
            record(((BinaryWebSocketFrame) out).content(), true);
        }
        ctx.write(out, promise);
    }

    /** The message with its first HEADERS's JSON changed by the pending rewrite (the rest as it was). */
    private BinaryWebSocketFrame rewritten(ChannelHandlerContext ctx, BinaryWebSocketFrame message) {
        List<V2Frame> frames = new ArrayList<>();
        V2FrameCodec.decodeAll(message.content(), frames::add);
        message.release();
        io.netty.buffer.CompositeByteBuf out = ctx.alloc().compositeBuffer(Math.max(2, frames.size()));
        for (V2Frame frame : frames) {
            V2Frame f = frame;
            if (frame instanceof V2Frame.Headers headers) {
                java.util.function.Consumer<com.fasterxml.jackson.databind.node.ObjectNode> change =
                        headRewrite.getAndSet(null);
                if (change != null) {
                    try {
                        com.fasterxml.jackson.databind.node.ObjectNode json =
                                (com.fasterxml.jackson.databind.node.ObjectNode)
                                        new com.fasterxml.jackson.databind.ObjectMapper().readTree(headers.json());
                        change.accept(json);
                        f = new V2Frame.Headers(
                                headers.streamId(),
                                json.toString().getBytes(StandardCharsets.UTF_8),
                                headers.endStream());
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            }
            out.addComponent(true, V2FrameCodec.encode(f, ctx.alloc()));
        }
        return new BinaryWebSocketFrame(out);
    }

    private void record(ByteBuf message, boolean sent) {
        try {
            V2FrameCodec.decodeAll(message, frame -> add(frame, sent));
        } catch (RuntimeException e) {
            // A message that breaks a rule (a test writing raw frames): the link itself refuses it.
        }
    }

    private void add(V2Frame frame, boolean sent) {
        int type;
        int streamId = 0;
        boolean endStream = false;
        int length = -1;
        V2ErrorCode code = null;
        String text = null;
        if (frame instanceof V2Frame.Data data) {
            type = V2FrameCodec.TYPE_DATA;
            streamId = data.streamId();
            endStream = data.endStream();
            length = data.payload().readableBytes();
            data.release();
        } else if (frame instanceof V2Frame.Headers headers) {
            type = V2FrameCodec.TYPE_HEADERS;
            streamId = headers.streamId();
            endStream = headers.endStream();
            text = new String(headers.json(), StandardCharsets.UTF_8);
        } else if (frame instanceof V2Frame.Reset reset) {
            type = V2FrameCodec.TYPE_RESET;
            streamId = reset.streamId();
            code = reset.code();
            text = new String(reset.errorObject(), StandardCharsets.UTF_8);
        } else if (frame instanceof V2Frame.WindowUpdate update) {
            type = V2FrameCodec.TYPE_WINDOW_UPDATE;
            streamId = update.streamId();
        } else if (frame instanceof V2Frame.Ping) {
            type = V2FrameCodec.TYPE_PING;
        } else if (frame instanceof V2Frame.GoAway goAway) {
            type = V2FrameCodec.TYPE_GOAWAY;
            code = goAway.code();
            text = goAway.reason();
        } else {
            type = V2FrameCodec.TYPE_CALL;
        }
        synchronized (this) {
            seen.add(new Seen(++order, sent, type, streamId, endStream, length, code, text));
        }
    }

    /** Returns every frame seen so far, in order. */
    synchronized List<Seen> seen() {
        return List.copyOf(seen);
    }

    /** Returns the frames seen so far that match. */
    List<Seen> seen(Predicate<Seen> which) {
        return seen().stream().filter(which).toList();
    }

    /** Returns the frames of one stream, both ways, in order. */
    List<Seen> stream(int streamId) {
        return seen(s -> s.streamId() == streamId);
    }

    /** Returns the frames of one stream this end read (from the peer), in order. */
    List<Seen> received(int streamId) {
        return seen(s -> !s.sent() && s.streamId() == streamId);
    }

    /** Returns the frames of one stream this end wrote, in order. */
    List<Seen> sent(int streamId) {
        return seen(s -> s.sent() && s.streamId() == streamId);
    }

    /** Answers whether this end opened a stream yet (wrote a request HEADERS): the open is queued on the link's loop. */
    boolean opened() {
        return !seen(s -> s.sent() && s.isHeaders()).isEmpty();
    }

    /** Returns the id of the last stream this end opened (the last request HEADERS it wrote). */
    int lastStreamId() {
        List<Seen> heads = seen(s -> s.sent() && s.isHeaders());
        if (heads.isEmpty()) {
            throw new AssertionError("no stream was opened");
        }
        return heads.get(heads.size() - 1).streamId();
    }

    /** Returns the RESETs of one stream in the direction given, their codes in order. */
    List<V2ErrorCode> resets(int streamId, boolean sent) {
        return seen(s -> s.isReset() && s.streamId() == streamId && s.sent() == sent).stream()
                .map(s -> java.util.Objects.requireNonNull(s.code()))
                .toList();
    }

    /** Returns the payload bytes of the DATA of one stream in the direction given. */
    long dataBytes(int streamId, boolean sent) {
        return seen(s -> s.isData() && s.streamId() == streamId && s.sent() == sent).stream()
                .mapToLong(Seen::length)
                .sum();
    }

    /** Returns the type names of the frames of one stream in the direction given, for a readable assert. */
    List<String> names(int streamId, boolean sent) {
        return seen(s -> s.streamId() == streamId && s.sent() == sent).stream()
                .map(V2FrameRecorder::name)
                .toList();
    }

    static String name(Seen s) {
        return switch (s.type()) {
            case V2FrameCodec.TYPE_DATA -> s.endStream() ? "DATA+END" : "DATA";
            case V2FrameCodec.TYPE_HEADERS -> s.endStream() ? "HEADERS+END" : "HEADERS";
            case V2FrameCodec.TYPE_RESET -> "RESET " + s.code();
            case V2FrameCodec.TYPE_WINDOW_UPDATE -> "WINDOW_UPDATE";
            case V2FrameCodec.TYPE_PING -> "PING";
            case V2FrameCodec.TYPE_GOAWAY -> "GOAWAY " + s.code();
            default -> "CALL";
        };
    }
}
