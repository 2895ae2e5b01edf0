package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.testing.TestBodies.body;
import static com.spectrayan.spector.uplink.testing.TestBodies.bytesOf;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.testing.TestBodies.text;
import static com.spectrayan.spector.uplink.testing.TestBodies.utf8;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.v2.RequestHead;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import com.spectrayan.spector.uplink.internal.v2.V2Frame;
import com.spectrayan.spector.uplink.internal.v2.V2FrameCodec;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.v2.V2Stream;
import com.spectrayan.spector.uplink.internal.v2.V2StreamAcceptor;
import com.spectrayan.spector.uplink.internal.v2.V2StreamHandler;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The gateway-side violations over a real v2 link (docs/PROTOCOL.md sections 9.3 and 9.4): what
 * only a broken worker sends, written as raw v2 frames onto the worker's socket, against the real
 * gateway relay ({@code GatewayRelay} over {@code RealGatewayWorkerClient}). v1's own violations
 * (a pushed chunk that is not base64, a 101 relay-head, answers without a head) are {@code
 * GatewayRelayTest}'s; these are their v2 counterparts and the rules v2 adds: a second head, a 101
 * head without an upgrade and DATA before the head reset the stream {@code PROTOCOL_ERROR}; DATA
 * past the declared length too; DATA past the stream window {@code FLOW_CONTROL_ERROR} (RFC 9113
 * section 6.9), and a window's worth passes; HEADERS on a stream the gateway never opened is a
 * connection error. Each fails the caller INTERNAL (or WORKER_UNREACHABLE for the link).
 */
final class RelayV2ViolationEndToEndTest {
    private static final String HEAD_200 = "{\"status\":200,\"headers\":[]}";

    private final RelayHarness h = new RelayHarness();
    private final RawWorker worker = new RawWorker();
    private final RecordingChannel wire;

    RelayV2ViolationEndToEndTest() {
        wire = h.connectRaw(W1, channel -> worker);
    }

    @AfterEach
    void tearDown() {
        h.close();
    }

    /** A v2 worker that takes each stream and answers nothing itself: the test writes its frames. */
    private static final class RawWorker implements FrameChannel.Receiver, V2StreamAcceptor {
        final BlockingQueue<Integer> streams = new LinkedBlockingQueue<>();
        final BlockingQueue<V2ErrorCode> resets = new LinkedBlockingQueue<>();

        @Override
        public void onStream(V2Stream stream, RequestHead head, boolean endStream) {
            stream.handler(new V2StreamHandler() {
                @Override
                public void onData(ByteBuf data, boolean end) {
                    data.release();
                }

                @Override
                public void onReset(V2ErrorCode code, Frame.@Nullable ErrorFrame error) {
                    resets.add(code);
                }

                @Override
                public void onLinkClosed(@Nullable Throwable cause) {}
            });
            streams.add(stream.id());
        }

        @Override
        public void onFrame(Frame frame) {}

        @Override
        public void onClose(@Nullable Throwable cause) {}
    }

    /** Writes raw frames, one message, onto the worker's socket (past its own link's state). */
    private void write(V2Frame... frames) {
        Channel socket = h.workerSocket(W1);
        io.netty.buffer.CompositeByteBuf message = socket.alloc().compositeBuffer(Math.max(2, frames.length));
        for (V2Frame f : frames) {
            message.addComponent(true, V2FrameCodec.encode(f, socket.alloc()));
        }
        io.netty.channel.ChannelFuture written = socket.writeAndFlush(new BinaryWebSocketFrame(message));
        assertThat(written.awaitUninterruptibly(WAIT.toMillis()))
                .as("the raw frames are written")
                .isTrue();
        assertThat(written.cause()).as("the raw frames are written").isNull();
    }

    private static V2Frame.Headers head(int stream, String json, boolean endStream) {
        return new V2Frame.Headers(stream, json.getBytes(StandardCharsets.UTF_8), endStream);
    }

    private static V2Frame.Data data(int stream, byte[] bytes, boolean endStream) {
        return new V2Frame.Data(stream, Unpooled.wrappedBuffer(bytes), endStream);
    }

    private int opened(String what) {
        return take(worker.streams, what + ": the worker gets the stream", WAIT);
    }

    /** The gateway reset the stream {@code code} (its RESET on the wire), and the worker got it. */
    private void resetByTheGateway(int stream, V2ErrorCode code, String what) {
        until(
                what + ": the gateway resets the stream",
                WAIT,
                () -> !wire.v2().resets(stream, true).isEmpty());
        assertThat(wire.v2().resets(stream, true))
                .as(what + ": the gateway's RESET")
                .containsExactly(code);
        assertThat(take(worker.resets, what + ": the worker gets the RESET", WAIT))
                .isEqualTo(code);
    }

    /** Section 9.3: a second HEADERS on a stream resets it PROTOCOL_ERROR; the body fails INTERNAL. */
    @Test
    void secondHead_resetsTheStreamProtocolError_andFailsTheBodyInternal() {
        CompletionStage<RelayedResponse> stage = h.relay().relay(W1, call("GET", "/x", null));
        int s = opened("second head");
        write(head(s, HEAD_200, false));
        BodySource b = body(done(stage, "the first head", WAIT), "GET");
        write(head(s, HEAD_200, false));
        spector(b.next(), ErrorCode.INTERNAL, "the body after a second head");
        resetByTheGateway(s, V2ErrorCode.PROTOCOL_ERROR, "second head");
        until("the relay releases its slot", WAIT, () -> h.relay().running(W1) == 0);
    }

    /** Section 9.3: a 101 head on a stream that named no upgrade breaks the schema: PROTOCOL_ERROR, INTERNAL. */
    @Test
    void head101WithoutAnUpgrade_resetsTheStreamProtocolError_andFailsTheCallInternal() {
        CompletionStage<RelayedResponse> stage = h.relay().relay(W1, call("GET", "/x", null));
        int s = opened("101 head");
        write(head(s, "{\"status\":101,\"headers\":[]}", false));
        spector(stage, ErrorCode.INTERNAL, "a 101 head without an upgrade");
        resetByTheGateway(s, V2ErrorCode.PROTOCOL_ERROR, "101 head");
    }

    /** Section 9.4: DATA at the gateway before the response head resets the stream PROTOCOL_ERROR. */
    @Test
    void dataBeforeTheHead_resetsTheStreamProtocolError_andFailsTheCallInternal() {
        CompletionStage<RelayedResponse> stage = h.relay().relay(W1, call("GET", "/x", null));
        int s = opened("DATA before head");
        write(data(s, utf8("early"), false));
        spector(stage, ErrorCode.INTERNAL, "DATA before the head");
        resetByTheGateway(s, V2ErrorCode.PROTOCOL_ERROR, "DATA before head");
    }

    /** Section 9.4 (RFC 9110 section 8.6): DATA past the declared length: PROTOCOL_ERROR, the body INTERNAL naming the worker. */
    @Test
    void dataOneBytePastTheDeclaredLength_resetsTheStreamProtocolError_andFailsTheBodyInternal() {
        int[] stream = new int[1];
        RelayedResponse response = declaringFive("past the length", stream);
        int s = stream[0];
        assertThat(response.contentLength()).isEqualTo(5);
        write(data(s, utf8("123456"), false));
        SpectorException e = spector(readAll(body(response, "GET")), ErrorCode.INTERNAL, "one byte past the length");
        assertThat(e.getMessage()).isEqualTo("worker w1 sent 6 bytes of a relayed response it declared as 5");
        resetByTheGateway(s, V2ErrorCode.PROTOCOL_ERROR, "past the length");
    }

    /** Opens a GET whose raw response head declares 5 bytes; returns the caller's response, {@code stream[0]} its stream. */
    private RelayedResponse declaringFive(String what, int[] stream) {
        CompletionStage<RelayedResponse> stage = h.relay().relay(W1, call("GET", "/x", null));
        stream[0] = opened(what);
        write(head(stream[0], "{\"status\":200,\"headers\":[],\"length\":5}", false));
        return done(stage, what + ": the head", WAIT);
    }

    /** Section 9.4: END_STREAM one byte short of the declared length fails the body INTERNAL naming the worker. */
    @Test
    void endStreamOneByteShortOfTheDeclaredLength_failsTheBodyInternal() {
        int[] stream = new int[1];
        RelayedResponse response = declaringFive("short of the length", stream);
        int s = stream[0];
        write(data(s, utf8("1234"), true));
        Throwable f = failure(readAll(body(response, "GET")), "one byte short", WAIT);
        SpectorException e = spector(f, ErrorCode.INTERNAL, "one byte short of the length");
        assertThat(e.getMessage()).isEqualTo("worker w1 ended the relayed response after 4 of its declared 5 bytes");
        until("the relay releases its slot", WAIT, () -> h.relay().running(W1) == 0);
    }

    /**
     * Section 9.5 (RFC 9113 section 6.9): DATA one byte past the stream's window (the caller reads
     * nothing, so no credit came back) resets the stream FLOW_CONTROL_ERROR; a window's worth passes.
     */
    @Test
    void dataAtTheStreamWindowPasses_andOneBytePastItResetsTheStreamFlowControlError() {
        int window = V2Limits.INITIAL_STREAM_WINDOW;
        CompletionStage<RelayedResponse> atStage = h.relay().relay(W1, call("GET", "/at", null));
        int at = opened("at the window");
        write(head(at, HEAD_200, false), data(at, new byte[window], false));
        RelayedResponse atResponse = done(atStage, "the head at the window", WAIT);
        CompletionStage<RelayedResponse> pastStage = h.relay().relay(W1, call("GET", "/past", null));
        int past = opened("past the window");
        write(head(past, HEAD_200, false));
        RelayedResponse pastResponse = done(pastStage, "the head past the window", WAIT);
        write(data(past, new byte[window + 1], false));

        spector(readAll(body(pastResponse, "past")), ErrorCode.INTERNAL, "one byte past the stream window");
        resetByTheGateway(past, V2ErrorCode.FLOW_CONTROL_ERROR, "past the window");
        assertThat(wire.v2().resets(at, true))
                .as("the stream at its window is not reset")
                .isEmpty();
        write(data(at, new byte[0], true));
        assertThat(done(readAll(body(atResponse, "at")), "the body at the window", WAIT))
                .as("a window's worth of DATA arrives whole")
                .hasSize(window);
    }

    /** Section 9.4: a RESET RELAY_ERROR after DATA: the caller reads the DATA, then the worker's error. */
    @Test
    void relayErrorAfterData_theCallerReadsTheDataThenTheWorkersError() {
        CompletionStage<RelayedResponse> stage = h.relay().relay(W1, call("GET", "/x", null));
        int s = opened("RELAY_ERROR after DATA");
        write(
                head(s, HEAD_200, false),
                data(s, utf8("one,"), false),
                V2Frame.Reset.relayError(s, SpectorException.of(ErrorCode.INTERNAL, "target body broke")));
        BodySource b = body(done(stage, "the head", WAIT), "GET");
        assertThat(text(bytesOf(RelaySeedFixture.requireNonNull(done(b.next(), "the DATA before the error", WAIT)))))
                .isEqualTo("one,");
        SpectorException e = spector(b.next(), ErrorCode.INTERNAL, "the worker's error after its DATA");
        assertThat(e.getMessage()).isEqualTo("target body broke");
    }

    /** Section 9.4 (RFC 9113 section 5.1): HEADERS on a stream the gateway never opened is a connection error. */
    @Test
    void headersOnAStreamTheGatewayNeverOpened_isAConnectionProtocolError_andTheRelayFailsUnreachable() {
        CompletionStage<RelayedResponse> stage = h.relay().relay(W1, call("GET", "/x", null));
        int s = opened("unopened stream");
        write(head(s + 2, HEAD_200, true));
        spector(stage, ErrorCode.WORKER_UNREACHABLE, "a relay on the link the gateway closed");
        goAwayByTheGateway(V2ErrorCode.PROTOCOL_ERROR);
    }

    /**
     * Section 9.2 (HTTP/2's empty-frame flood, CVE-2019-9518): {@link
     * V2Limits#MAX_CONSECUTIVE_EMPTY_DATA_FRAMES} empty DATA frames without END_STREAM in a row
     * are taken and the body still arrives whole; one more closes the link, GOAWAY {@code
     * PROTOCOL_ERROR}, and the relay in flight fails.
     */
    @Test
    void emptyDataFramesUpToTheBudgetPass_andOnePastIsAConnectionProtocolError() {
        int budget = V2Limits.MAX_CONSECUTIVE_EMPTY_DATA_FRAMES;
        CompletionStage<RelayedResponse> atStage = h.relay().relay(W1, call("GET", "/at", null));
        int at = opened("at the budget");
        write(empties(at, head(at, HEAD_200, false), data(at, utf8("A"), false), budget));
        write(data(at, utf8("B"), true));
        assertThat(text(done(readAll(body(done(atStage, "the head at the budget", WAIT), "at")), "the body", WAIT)))
                .isEqualTo("AB");
        assertThat(wire.v2().seen(f -> f.sent() && f.type() == V2FrameCodec.TYPE_GOAWAY))
                .as("no GOAWAY at the budget")
                .isEmpty();

        CompletionStage<RelayedResponse> pastStage = h.relay().relay(W1, call("GET", "/past", null));
        int past = opened("past the budget");
        write(empties(past, head(past, HEAD_200, false), data(past, utf8("A"), false), budget + 1));
        Throwable f =
                failure(pastStage.thenCompose(r -> readAll(body(r, "past"))), "the relay on the closed link", WAIT);
        assertThat(f).isNotNull();
        goAwayByTheGateway(V2ErrorCode.PROTOCOL_ERROR);
    }

    /** Returns {@code first}, {@code second}, then {@code n} empty DATA frames without END_STREAM on {@code stream}. */
    private static V2Frame[] empties(int stream, V2Frame first, V2Frame second, int n) {
        V2Frame[] frames = new V2Frame[n + 2];
        frames[0] = first;
        frames[1] = second;
        for (int i = 0; i < n; i++) {
            frames[i + 2] = data(stream, new byte[0], false);
        }
        return frames;
    }

    /**
     * Section 9.1 (RFC 6455 §7.4.1): a WebSocket frame whose header declares more than the largest
     * message, with 16 MiB of it behind the header, is a connection error: the gateway sends
     * GOAWAY {@code FRAME_SIZE_ERROR} and closes 1009, lingering while the rest arrives
     * (LingeringClose), and the relay in flight fails WORKER_UNREACHABLE.
     */
    @Test
    void aFrameOverTheLargestMessage_isGoAwayFrameSizeError_andTheRelayFailsUnreachable() {
        CompletionStage<RelayedResponse> stage = h.relay().relay(W1, call("GET", "/x", null));
        opened("a stream before the frame");
        int sent = 16 << 20;
        Channel socket = h.workerSocket(W1);
        socket.writeAndFlush(Unpooled.buffer(10 + sent)
                .writeByte(0x82) // FIN, binary
                .writeByte(127) // unmasked (a v2 worker's choice), a 64-bit length follows
                .writeLong(64L << 20)
                .writeZero(sent));
        spector(stage, ErrorCode.WORKER_UNREACHABLE, "a relay on the link the gateway closed");
        goAwayByTheGateway(V2ErrorCode.FRAME_SIZE_ERROR);
    }

    /**
     * The gateway wrote one GOAWAY, with {@code code}. The relay may fail (the link's close) before
     * the GOAWAY's write reaches the recorder: waited for.
     */
    private void goAwayByTheGateway(V2ErrorCode code) {
        until(
                "the gateway writes its GOAWAY",
                WAIT,
                () -> !wire.v2()
                        .seen(f -> f.sent() && f.type() == V2FrameCodec.TYPE_GOAWAY)
                        .isEmpty());
        List<V2FrameRecorder.Seen> goAways = wire.v2().seen(f -> f.sent() && f.type() == V2FrameCodec.TYPE_GOAWAY);
        assertThat(goAways).as("the gateway's GOAWAY").hasSize(1);
        assertThat(goAways.get(0).code()).isEqualTo(code);
    }
}
