package com.spectrayan.spector.uplink.internal.v2;

import com.spectrayan.spector.testkit.FakeTicker;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A gateway and a worker {@link V2Connection}, each on an {@link EmbeddedChannel} with one {@link
 * FakeTicker}; the test carries the messages across with {@link #pump}, so every exchange is
 * exact. Each message crossing is recorded as its frames ({@link #wire}), e.g. {@code "G>W
 * HEADERS 1"}, {@code "W>G WINDOW_UPDATE 1 +131072"}, {@code "G>W DATA 1 16384 END"}, {@code
 * "W>G CLOSE 1002"}; {@link #messages} records how many frames each binary message held.
 */
final class V2Peers implements AutoCloseable {
    final FakeTicker time = new FakeTicker();
    final End gateway;
    final End worker;
    private final List<String> wire = new ArrayList<>();
    private final List<String> messages = new ArrayList<>();

    V2Peers() {
        gateway = new End("G>W", V2Connection.Role.GATEWAY);
        worker = new End("W>G", V2Connection.Role.WORKER);
    }

    /** Carries messages both ways until neither side has anything to send. */
    V2Peers pump() {
        boolean moved;
        do {
            boolean there = carry(gateway, worker);
            boolean back = carry(worker, gateway); // both ways on every turn
            moved = there || back;
        } while (moved);
        return this;
    }

    private boolean carry(End from, End to) {
        boolean moved = false;
        from.channel.runPendingTasks();
        Object m;
        while ((m = from.channel.readOutbound()) != null) {
            moved = true;
            record(from.name, m, wire, messages);
            if (to.channel.isOpen()) {
                to.channel.writeInbound(m);
                to.channel.runPendingTasks();
            } else {
                ReferenceCountUtil.release(m);
            }
        }
        return moved;
    }

    /** Returns the frames that crossed since the last call, and forgets them. */
    List<String> wire() {
        List<String> w = List.copyOf(wire);
        wire.clear();
        return w;
    }

    /** Returns the frame counts of the binary messages that crossed since the last call ({@code "G>W 4"}), and forgets them. */
    List<String> messages() {
        List<String> m = List.copyOf(messages);
        messages.clear();
        return m;
    }

    /** Records one message as its frames; the message stays the caller's. */
    static void record(String dir, Object m, List<String> wire, List<String> messages) {
        if (m instanceof BinaryWebSocketFrame b) {
            int[] count = {0};
            V2FrameCodec.decodeAll(b.content(), f -> {
                count[0]++;
                wire.add(dir + " " + describe(f));
                ReferenceCountUtil.release(f);
            });
            messages.add(dir + " " + count[0]);
        } else if (m instanceof CloseWebSocketFrame c) {
            wire.add(dir + " CLOSE " + c.statusCode());
        } else if (m instanceof WebSocketFrame f) {
            wire.add(dir + " " + f.getClass().getSimpleName());
        } else {
            wire.add(dir + " " + m);
        }
    }

    /** Returns a frame as the wire log writes it. */
    static String describe(V2Frame f) {
        if (f instanceof V2Frame.Data d) {
            return "DATA " + d.streamId() + " " + d.length() + (d.endStream() ? " END" : "");
        } else if (f instanceof V2Frame.Headers h) {
            return "HEADERS " + h.streamId() + (h.endStream() ? " END" : "");
        } else if (f instanceof V2Frame.Reset r) {
            return "RESET " + r.streamId() + " " + r.code();
        } else if (f instanceof V2Frame.WindowUpdate u) {
            return "WINDOW_UPDATE " + u.streamId() + " +" + u.increment();
        } else if (f instanceof V2Frame.Ping p) {
            return p.ack() ? "PING ACK" : "PING";
        } else if (f instanceof V2Frame.GoAway g) {
            return "GOAWAY " + g.lastStreamId() + " " + g.code();
        } else {
            return "CALL";
        }
    }

    /** Returns the message that holds {@code frames} back to back (the caller writes it inbound). */
    static BinaryWebSocketFrame message(V2Frame... frames) {
        var out = ByteBufAllocator.DEFAULT.compositeBuffer(frames.length + 1);
        for (V2Frame f : frames) {
            out.addComponent(true, V2FrameCodec.encode(f, ByteBufAllocator.DEFAULT));
        }
        return new BinaryWebSocketFrame(out);
    }

    @Override
    public void close() {
        gateway.channel.finishAndReleaseAll();
        worker.channel.finishAndReleaseAll();
    }

    /** One end: its channel, its connection, and what its listener was told. */
    final class End implements V2Connection.Listener {
        final String name;
        final EmbeddedChannel channel;
        final V2Connection connection;
        final List<RecordingStreamHandler> accepted = new ArrayList<>();
        final List<V2Frame.Call> calls = new ArrayList<>();
        final List<V2Frame.GoAway> goAways = new ArrayList<>();
        final List<String> closes = new ArrayList<>();
        boolean accept = true;
        boolean autoConsume;

        End(String name, V2Connection.Role role) {
            this.name = name;
            this.channel = EmbeddedChannel.builder().ticker(time).build();
            this.connection = V2Connection.install(channel, role, this);
        }

        /** Opens a POST stream at the gateway; the handler is returned. */
        RecordingStreamHandler open(boolean endStream) {
            RecordingStreamHandler h = new RecordingStreamHandler();
            h.attach(connection.openStream(V2ConnectionTest.post(), endStream, h));
            return h;
        }

        @Override
        public void onStream(V2Stream stream, RequestHead head, boolean endStream) {
            if (!accept) {
                stream.reset(V2ErrorCode.REFUSED_STREAM, null);
                return;
            }
            RecordingStreamHandler h = new RecordingStreamHandler().autoConsume(autoConsume);
            h.attach(stream);
            h.events.add("request " + head.method() + (endStream ? " END" : ""));
            stream.handler(h);
            accepted.add(h);
        }

        @Override
        public void onCall(V2Frame.Call call) {
            calls.add(call);
        }

        @Override
        public void onGoAway(V2Frame.GoAway goAway) {
            goAways.add(goAway);
        }

        @Override
        public void onClosed(@Nullable Throwable cause) {
            closes.add(cause == null ? "clean" : cause.getClass().getSimpleName());
        }

        /** Writes a message holding {@code frames} into this end, as if the peer sent it. */
        void inject(V2Frame... frames) {
            channel.writeInbound(message(frames));
            channel.runPendingTasks();
        }

        /** Returns what this end wrote since the last call, as frames, and forgets it (nothing crosses). */
        List<String> written() {
            List<String> out = new ArrayList<>();
            List<String> ignored = new ArrayList<>();
            channel.runPendingTasks();
            Object m;
            while ((m = channel.readOutbound()) != null) {
                record(name, m, out, ignored);
                ReferenceCountUtil.release(m);
            }
            return out;
        }
    }
}
