package com.spectrayan.spector.uplink.internal.v2;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One v2 link end to end (PROTOCOL.md section 9; RFC 9113 sections 5.1 and 5.2 for the stream
 * states and the windows): a gateway and a worker {@link V2Connection} on two embedded channels,
 * the test carrying every message across ({@link V2Peers#pump}), so windows, order and the close
 * are asserted exactly, without sleeps. Protocol errors are injected as raw frames into one end.
 */
final class V2ConnectionTest {
    private static final int KIB = 1024;
    private static final int WINDOW = V2Limits.INITIAL_STREAM_WINDOW;
    private static final int SLICE = V2Limits.DATA_SLICE;

    private final V2Peers peers = new V2Peers();

    @AfterEach
    void releaseAll() {
        peers.close();
    }

    static RequestHead post() {
        return new RequestHead(
                "app",
                "POST",
                "http://app.local/up",
                List.of(new Header("content-type", "text/plain")),
                "acme",
                null,
                null,
                -1);
    }

    private static ResponseHead ok(long length) {
        return new ResponseHead(200, List.of(), length);
    }

    private static ByteBuf bytes(int n) {
        return ByteBufAllocator.DEFAULT.buffer(n).writeZero(n);
    }

    private static List<String> without(List<String> wire, String part) {
        return wire.stream().filter(w -> !w.contains(part)).toList();
    }

    // ---- windows (section 9.5) ----

    @Test
    void requestBody_pastTheInitialWindow_senderHeldUntilTheWorkerConsumes() {
        RecordingStreamHandler g = peers.gateway.open(false);
        g.send(2L * WINDOW, true);
        peers.pump();
        RecordingStreamHandler w = peers.worker.accepted.get(0);

        assertThat(w.receivedBytes()).as("the worker's window for the stream").isEqualTo(WINDOW);
        assertThat(peers.gateway.connection.queuedBytes(1))
                .as("held at the gateway")
                .isEqualTo(WINDOW);
        peers.wire();

        w.consume(WINDOW / 2 - 1);
        peers.pump();
        assertThat(peers.wire()).as("under half the window taken: no credit").isEmpty();
        assertThat(w.receivedBytes()).isEqualTo(WINDOW);

        w.consume(1);
        peers.pump();
        List<String> wire = peers.wire();
        assertThat(wire.get(0)).isEqualTo("W>G WINDOW_UPDATE 1 +" + WINDOW / 2);
        assertThat(without(wire, "PING")).hasSize(1 + WINDOW / 2 / SLICE);
        assertThat(w.receivedBytes()).as("exactly the credit returned").isEqualTo(WINDOW + WINDOW / 2);

        for (int i = 0; i < 10 && !w.events.contains("END"); i++) {
            w.consumeAll();
            peers.pump();
        }
        assertThat(w.events).containsExactly("request POST", "END");
        assertThat(w.received()).isEqualTo(RecordingStreamHandler.body(1, 2 * WINDOW));
        assertThat(peers.gateway.connection.queuedBytes(1)).isZero();
    }

    @Test
    void stalledReader_holdsOnlyItsStream_theOtherCompletesAndTheStalledResumes() {
        RecordingStreamHandler stalled = peers.gateway.open(false);
        RecordingStreamHandler busy = peers.gateway.open(false);
        peers.pump();
        RecordingStreamHandler stalledReader = peers.worker.accepted.get(0);
        RecordingStreamHandler busyReader = peers.worker.accepted.get(1).autoConsume(true);

        int body = 2 * 1024 * KIB;
        stalled.send(body, true);
        busy.send(body, true);
        peers.pump();

        assertThat(busyReader.received()).isEqualTo(RecordingStreamHandler.body(3, body));
        assertThat(busyReader.events).endsWith("END");
        assertThat(stalledReader.receivedBytes())
                .as("one window, not a byte more")
                .isEqualTo(WINDOW);
        assertThat(peers.worker.connection.receiveWindow(1))
                .as("a stalled reader's window never grows")
                .isEqualTo(WINDOW);

        stalledReader.autoConsume(true).consumeAll();
        peers.pump();
        assertThat(stalledReader.received()).isEqualTo(RecordingStreamHandler.body(1, body));
        assertThat(stalledReader.events).endsWith("END");
    }

    @Test
    void pingAck_consumerTookMoreThanHalfInARoundTrip_streamWindowGrows() {
        RecordingStreamHandler g = peers.gateway.open(false);
        peers.pump();
        peers.worker.accepted.get(0).autoConsume(true);
        g.send(4L * WINDOW, true);
        peers.pump();

        assertThat(peers.worker.connection.receiveWindow(1)).isGreaterThan(WINDOW);
    }

    // ---- streams (section 9.4) ----

    @Test
    void response_streamedBack_endStreamBothWaysClosesTheStreamOnBothEnds() {
        RecordingStreamHandler g = peers.gateway.open(false).autoConsume(true);
        peers.worker.autoConsume = true;
        g.send(100 * KIB, true);
        peers.pump();
        RecordingStreamHandler w = peers.worker.accepted.get(0);
        assertThat(w.events).containsExactly("request POST", "END");
        assertThat(peers.worker.connection.openStreams())
                .as("half closed, still open")
                .isOne();

        w.stream().sendHeaders(ok(300 * KIB), false);
        w.send(300 * KIB, true);
        peers.pump();

        assertThat(g.events).containsExactly("head 200", "END");
        assertThat(g.received()).isEqualTo(RecordingStreamHandler.body(1, 300 * KIB));
        assertThat(w.received()).isEqualTo(RecordingStreamHandler.body(1, 100 * KIB));
        assertThat(peers.gateway.connection.openStreams()).isZero();
        assertThat(peers.worker.connection.openStreams()).isZero();
        assertThat(g.ends() + w.ends()).as("no reset, no link close").isZero();
    }

    @Test
    void reset_byTheGateway_endsTheStreamAtTheWorkerOnceAndFreesBothEnds() {
        RecordingStreamHandler g = peers.gateway.open(false);
        g.send(WINDOW, false);
        peers.pump();
        RecordingStreamHandler w = peers.worker.accepted.get(0);

        g.stream().reset(V2ErrorCode.CANCEL, null);
        peers.pump();

        assertThat(w.events).containsExactly("request POST", "reset CANCEL");
        assertThat(w.ends()).isOne();
        assertThat(g.ends()).as("its own reset is not called back").isZero();
        assertThat(peers.gateway.connection.openStreams()).isZero();
        assertThat(peers.worker.connection.openStreams()).isZero();
    }

    @Test
    void reset_byTheWorkerWithRelayError_carriesTheErrorObject() {
        RecordingStreamHandler g = peers.gateway.open(true);
        peers.pump();
        RecordingStreamHandler w = peers.worker.accepted.get(0);

        w.stream().resetRelayError(SpectorException.of(ErrorCode.RELAY_TARGET_MISSING, "no relay target app"));
        peers.pump();

        assertThat(g.resetCode()).isEqualTo(V2ErrorCode.RELAY_ERROR);
        assertThat(g.resetError()).extracting(Frame.ErrorFrame::code).isEqualTo(ErrorCode.RELAY_TARGET_MISSING);
        assertThat(g.ends()).isOne();
        assertThat(peers.gateway.connection.openStreams()).isZero();
        assertThat(peers.worker.connection.openStreams()).isZero();
    }

    @Test
    void worker_streamPastActiveRelaysPerConnection_refusedStreamAndTheLimitHoldsAgainAfterOneEnds() {
        int limit = (int) Limits.ACTIVE_RELAYS_PER_CONNECTION.max();
        List<RecordingStreamHandler> opened = new ArrayList<>();
        for (int i = 0; i < limit + 1; i++) {
            opened.add(peers.gateway.open(false));
        }
        peers.pump();

        assertThat(peers.worker.accepted).as("at the limit").hasSize(limit);
        assertThat(peers.worker.connection.openStreams()).isEqualTo(limit);
        assertThat(opened.get(limit).resetCode()).as("one past").isEqualTo(V2ErrorCode.REFUSED_STREAM);
        assertThat(opened.subList(0, limit))
                .allSatisfy(h -> assertThat(h.ends()).isZero());

        opened.get(0).stream().reset(V2ErrorCode.CANCEL, null);
        RecordingStreamHandler again = peers.gateway.open(false);
        peers.pump();
        assertThat(again.ends()).isZero();
        assertThat(peers.worker.accepted).hasSize(limit + 1);
    }

    /**
     * A response whose END_STREAM waits for the gateway's credit still holds its place among the
     * worker's 16 streams, though both sides sent their ends: a gateway that grants no credit
     * holds 16 responses queued at the worker, not one more for each stream it opens. Regression
     * (a review of the thirtieth stop): the stream left the count when its end was queued.
     */
    @Test
    void worker_responsesWhoseEndWaitsForCredit_holdTheirPlacesUntilTheEndIsWritten() {
        int limit = (int) Limits.ACTIVE_RELAYS_PER_CONNECTION.max();
        int response = WINDOW + 10; // past the stream's window: 10 bytes and the end wait for credit
        List<RecordingStreamHandler> opened = new ArrayList<>();
        for (int i = 0; i < limit; i++) {
            opened.add(peers.gateway.open(true));
        }
        peers.pump();
        for (RecordingStreamHandler w : peers.worker.accepted) {
            w.stream().sendHeaders(ok(response), false);
            w.stream().write(bytes(response), true);
        }
        peers.pump();
        assertThat(opened).as("no response whole: each waits for credit").noneMatch(h -> h.events.contains("END"));

        RecordingStreamHandler past = peers.gateway.open(true);
        peers.pump();
        assertThat(past.resetCode()).as("one past the limit").isEqualTo(V2ErrorCode.REFUSED_STREAM);
        assertThat(peers.worker.accepted).hasSize(limit);

        for (int i = 0; i < 10 && !opened.stream().allMatch(h -> h.events.contains("END")); i++) {
            opened.forEach(RecordingStreamHandler::consumeAll);
            peers.pump();
        }
        assertThat(opened).allSatisfy(h -> assertThat(h.receivedBytes()).isEqualTo(response));
        RecordingStreamHandler next = peers.gateway.open(true);
        peers.pump();
        assertThat(next.resetCode()).as("the ends written: places free").isNull();
        assertThat(peers.worker.accepted).hasSize(limit + 1);
    }

    /**
     * RFC 9113 section 8.1: the worker answered whole while the gateway's request body, its end
     * among it, still waits for the worker's credit; the gateway drops that queue and resets the
     * stream {@code NO_ERROR}, and the stream is closed at both ends. Regression (a review of the
     * thirtieth stop): the gateway kept the queue for credit that never came (the target had
     * answered), past the relay and its per-worker slot, and the worker kept the stream open,
     * among its 16, for the life of the link.
     */
    @Test
    void gateway_aWholeResponseBeforeTheRequestsQueuedEnd_resetsNoErrorAndDropsTheQueue() {
        RecordingStreamHandler g = peers.gateway.open(false);
        g.send(WINDOW + 10L, true);
        peers.pump();
        RecordingStreamHandler w = peers.worker.accepted.get(0);
        assertThat(peers.gateway.connection.queuedBytes(1))
                .as("past the worker's window")
                .isEqualTo(10);

        w.stream().sendHeaders(new ResponseHead(413, List.of(), -1), true);
        peers.pump();

        assertThat(g.events).as("the response, whole").containsExactly("head 413 END");
        assertThat(w.events).endsWith("reset NO_ERROR");
        assertThat(peers.gateway.connection.queuedBytes(1)).isZero();
        assertThat(peers.gateway.connection.openStreams()).isZero();
        assertThat(peers.worker.connection.openStreams()).isZero();
    }

    // ---- scheduling (section 9.6) ----

    @Test
    void control_callAndPingAck_overtakeQueuedData() {
        RecordingStreamHandler g = peers.gateway.open(true);
        peers.pump();
        RecordingStreamHandler w = peers.worker.accepted.get(0);
        writable(peers.worker.channel, false);
        w.stream().sendHeaders(ok(4 * SLICE), false);
        w.send(4 * SLICE, true);
        peers.worker.connection.sendCall(new Frame.Result(7, JsonNodeFactory.instance.objectNode()));
        peers.worker.inject(new V2Frame.Ping(42, false));
        assertThat(peers.worker.written())
                .as("nothing while the socket is not writable")
                .isEmpty();

        writable(peers.worker.channel, true);

        String d = "W>G DATA 1 " + SLICE;
        assertThat(peers.worker.written())
                .containsExactly("W>G HEADERS 1", "W>G CALL", "W>G PING ACK", d, d, d, d + " END");
        assertThat(g.ends()).isZero();
    }

    @Test
    void packing_fourFullSlicesFitOneMessage_theFifthStartsTheNext() {
        RecordingStreamHandler g = peers.gateway.open(false);
        peers.pump();
        peers.messages();
        peers.gateway.channel.config().setWriteBufferWaterMark(new WriteBufferWaterMark(1024 * KIB, 2048 * KIB));
        writable(peers.gateway.channel, false);
        g.send(5 * SLICE, false);
        writable(peers.gateway.channel, true);
        peers.pump();

        assertThat(V2Connection.MAX_PACKED_MESSAGE_BYTES).isEqualTo(4 * (SLICE + V2Limits.HEADER_BYTES));
        assertThat(peers.messages()).startsWith("G>W 4", "G>W 1");
    }

    @Test
    void packing_manySmallFrames_atMostMaxPackedFramesAMessage() {
        writable(peers.gateway.channel, false);
        for (int i = 0; i < V2Connection.MAX_PACKED_FRAMES + 1; i++) {
            peers.gateway.connection.sendCall(
                    new Frame.Call(i + 1, "status.get", JsonNodeFactory.instance.objectNode()));
        }
        writable(peers.gateway.channel, true);
        peers.pump();

        assertThat(peers.messages()).containsExactly("G>W " + V2Connection.MAX_PACKED_FRAMES, "G>W 1");
        assertThat(peers.worker.calls).hasSize(V2Connection.MAX_PACKED_FRAMES + 1);
        assertThat(peers.worker.calls.get(0).frame())
                .isEqualTo(new Frame.Call(1, "status.get", JsonNodeFactory.instance.objectNode()));
    }

    // ---- calls and GOAWAY (section 9.8) ----

    @Test
    void ping_fromThePeer_answeredWithAckAndTheSameBytes() {
        peers.worker.inject(new V2Frame.Ping(0x0102030405060708L, false));

        assertThat(peers.worker.written()).containsExactly("W>G PING ACK");
    }

    @Test
    void goAway_fromTheGateway_workerToldAndNoStreamOpensAfterIt() {
        RecordingStreamHandler first = peers.gateway.open(true);
        peers.pump();
        peers.gateway.connection.goAway(1, V2ErrorCode.NO_ERROR, "gateway draining: reconnect");
        RecordingStreamHandler late = peers.gateway.open(true);
        peers.pump();

        assertThat(peers.worker.goAways)
                .containsExactly(new V2Frame.GoAway(1, V2ErrorCode.NO_ERROR, "gateway draining: reconnect"));
        assertThat(late.resetCode()).isEqualTo(V2ErrorCode.REFUSED_STREAM);
        assertThat(peers.worker.accepted).hasSize(1);

        RecordingStreamHandler w = peers.worker.accepted.get(0);
        w.stream().sendHeaders(new ResponseHead(204, List.of(), -1), true);
        peers.pump();
        assertThat(first.events).as("stream 1 still served").containsExactly("head 204 END");
        assertThat(peers.gateway.connection.openStreams()).isZero();
    }

    /**
     * A link whose stream ids run out is retired: the stream with the last id (2^31 - 1) opens and
     * is served, a GOAWAY with it as the last id and NO_ERROR goes with it (the worker dials the
     * slot again, as at a drain), and the link offers no more streams. Regression (a review): the
     * link refused every later relay and was still offered, with no relay running on it the first
     * choice, after about 2^30 relays.
     */
    @Test
    void theLastStreamId_opensItsStream_andRetiresTheLink() {
        peers.gateway.connection.skipStreamIdsTo(V2Limits.MAX_STREAM_ID - 2);
        RecordingStreamHandler last = peers.gateway.open(true);
        peers.pump();

        assertThat(last.stream().id()).isEqualTo(V2Limits.MAX_STREAM_ID);
        assertThat(peers.worker.goAways)
                .containsExactly(new V2Frame.GoAway(
                        V2Limits.MAX_STREAM_ID, V2ErrorCode.NO_ERROR, "stream ids exhausted: dial again"));
        assertThat(peers.gateway.connection.opensStreams())
                .as("no longer offered")
                .isFalse();
        peers.worker.accepted.get(0).stream().sendHeaders(new ResponseHead(204, List.of(), -1), true);
        peers.pump();
        assertThat(last.events).as("the last stream is served").containsExactly("head 204 END");
    }

    @Test
    void goAway_fromTheWorker_streamsAboveItsLastIdRefusedAtTheGateway() {
        RecordingStreamHandler one = peers.gateway.open(false);
        RecordingStreamHandler three = peers.gateway.open(false);
        peers.pump();
        peers.worker.connection.goAway(1, V2ErrorCode.NO_ERROR, "worker stopping");
        peers.pump();

        assertThat(peers.gateway.goAways).hasSize(1);
        assertThat(three.resetCode()).isEqualTo(V2ErrorCode.REFUSED_STREAM);
        assertThat(one.ends()).isZero();
        assertThat(peers.worker.accepted.get(1).resetCode()).isEqualTo(V2ErrorCode.REFUSED_STREAM);
    }

    // ---- protocol errors (section 9.2) ----

    @Test
    void headers_onAnEvenIdFromTheWorker_goAwayProtocolErrorAndClose1002() {
        RecordingStreamHandler g = peers.gateway.open(false);
        peers.gateway.written();
        peers.gateway.inject(ok(-1).toFrame(2, false, false));

        assertThat(peers.gateway.written()).containsExactly("G>W GOAWAY 0 PROTOCOL_ERROR", "G>W CLOSE 1002");
        assertThat(g.events).containsExactly("linkClosed V2ProtocolException");
        assertThat(peers.gateway.closes).containsExactly("V2ProtocolException");
        assertThat(peers.gateway.channel.isOpen()).isFalse();
    }

    @Test
    void headers_onAnOddIdTheGatewayNeverOpened_goAwayProtocolError() {
        peers.gateway.inject(ok(-1).toFrame(1, false, false));

        assertThat(peers.gateway.written()).containsExactly("G>W GOAWAY 0 PROTOCOL_ERROR", "G>W CLOSE 1002");
    }

    @Test
    void headers_onAnEvenIdAtTheWorker_goAwayWithTheLastStreamProcessed() {
        peers.worker.inject(post().toFrame(1, false));
        peers.worker.inject(post().toFrame(4, false));

        assertThat(peers.worker.written()).containsExactly("W>G GOAWAY 1 PROTOCOL_ERROR", "W>G CLOSE 1002");
        assertThat(peers.worker.accepted.get(0).events)
                .containsExactly("request POST", "linkClosed V2ProtocolException");
    }

    @Test
    void data_onAStreamNeverOpened_goAwayProtocolError() {
        peers.worker.inject(new V2Frame.Data(5, bytes(10), false));

        assertThat(peers.worker.written()).containsExactly("W>G GOAWAY 0 PROTOCOL_ERROR", "W>G CLOSE 1002");
    }

    @Test
    void data_upToTheStreamWindow_taken_onePastResetsOnlyThatStreamFlowControlError() {
        peers.worker.inject(post().toFrame(1, false));
        RecordingStreamHandler w = peers.worker.accepted.get(0);
        peers.worker.inject(new V2Frame.Data(1, bytes(WINDOW), false));
        assertThat(without(peers.worker.written(), "PING")).as("at the window").isEmpty();
        assertThat(w.receivedBytes()).isEqualTo(WINDOW);

        peers.worker.inject(new V2Frame.Data(1, bytes(1), false));

        assertThat(without(peers.worker.written(), "PING")).containsExactly("W>G RESET 1 FLOW_CONTROL_ERROR");
        assertThat(w.resetCode()).isEqualTo(V2ErrorCode.FLOW_CONTROL_ERROR);
        assertThat(peers.worker.connection.isClosed()).isFalse();
        assertThat(peers.worker.connection.openStreams()).isZero();
    }

    @Test
    void data_onAClosedStreamUpToTheConnectionWindow_takenAndCredited() {
        overrunConnectionBy(0);

        assertThat(without(peers.worker.written(), "PING"))
                .containsExactly("W>G WINDOW_UPDATE 0 +" + V2Limits.INITIAL_CONNECTION_WINDOW);
        assertThat(peers.worker.connection.isClosed()).isFalse();
    }

    @Test
    void data_onePastTheConnectionWindow_goAwayFlowControlErrorAndClose1002() {
        overrunConnectionBy(1);

        assertThat(without(peers.worker.written(), "PING"))
                .containsExactly("W>G GOAWAY 1 FLOW_CONTROL_ERROR", "W>G CLOSE 1002");
        assertThat(peers.worker.closes).containsExactly("V2ProtocolException");
    }

    /**
     * Stream 1 opens and is reset; DATA on it (closed) then counts against the connection only
     * (section 9.4): just under half the connection window (no update yet), then the rest of the
     * window plus {@code past} bytes.
     */
    private void overrunConnectionBy(int past) {
        int half = V2Limits.INITIAL_CONNECTION_WINDOW / 2;
        peers.worker.inject(post().toFrame(1, false));
        peers.worker.inject(new V2Frame.Reset(1, V2ErrorCode.CANCEL));
        peers.worker.inject(new V2Frame.Data(1, bytes(half - 1), false));
        assertThat(without(peers.worker.written(), "PING")).isEmpty();
        peers.worker.inject(new V2Frame.Data(1, bytes(half + 1 + past), false));
    }

    /**
     * Empty DATA frames without END_STREAM cost no window: {@link
     * V2Limits#MAX_CONSECUTIVE_EMPTY_DATA_FRAMES} of them in a row are taken, one more is a
     * connection error. A DATA frame with a byte, or an empty one with END_STREAM, starts the count
     * again.
     */
    @Test
    void data_emptyWithoutEndStream_upToTheBudgetTaken_onePastGoAwayProtocolErrorAndClose1002() {
        int budget = V2Limits.MAX_CONSECUTIVE_EMPTY_DATA_FRAMES;
        peers.worker.inject(post().toFrame(1, false));
        peers.worker.inject(post().toFrame(3, false));
        peers.worker.inject(empties(1, budget));
        peers.worker.inject(new V2Frame.Data(1, bytes(1), false));
        peers.worker.inject(empties(1, budget));
        peers.worker.inject(new V2Frame.Data(1, bytes(0), true));
        peers.worker.inject(empties(3, budget));
        assertThat(without(peers.worker.written(), "PING"))
                .as("at the budget, each time")
                .isEmpty();
        assertThat(peers.worker.connection.isClosed()).isFalse();

        peers.worker.inject(new V2Frame.Data(3, bytes(0), false));

        assertThat(without(peers.worker.written(), "PING"))
                .containsExactly("W>G GOAWAY 3 PROTOCOL_ERROR", "W>G CLOSE 1002");
        assertThat(peers.worker.closes).containsExactly("V2ProtocolException");
    }

    private static V2Frame[] empties(int stream, int n) {
        V2Frame[] frames = new V2Frame[n];
        for (int i = 0; i < n; i++) {
            frames[i] = new V2Frame.Data(stream, bytes(0), false);
        }
        return frames;
    }

    @Test
    void textMessage_closesTheLink1003() {
        RecordingStreamHandler g = peers.gateway.open(false);
        peers.gateway.written();
        peers.gateway.channel.writeInbound(new TextWebSocketFrame("{\"type\":\"call\"}"));

        assertThat(peers.gateway.written()).containsExactly("G>W CLOSE 1003");
        assertThat(g.ends()).isOne();
    }

    @Test
    void message_pastMaxMessageBytes_goAwayFrameSizeErrorAndClose1009() {
        peers.worker.channel.writeInbound(new BinaryWebSocketFrame(bytes(V2Limits.MAX_MESSAGE_BYTES + 1)));

        assertThat(peers.worker.written()).containsExactly("W>G GOAWAY 0 FRAME_SIZE_ERROR", "W>G CLOSE 1009");
    }

    @Test
    void message_atMaxMessageBytes_oneFullFrameTaken() {
        peers.worker.inject(post().toFrame(1, false));
        peers.worker.inject(new V2Frame.Reset(1, V2ErrorCode.CANCEL));
        peers.worker.inject(new V2Frame.Data(1, bytes(V2Limits.MAX_FRAME_PAYLOAD), false));

        assertThat(without(peers.worker.written(), "PING"))
                .containsExactly("W>G WINDOW_UPDATE 0 +" + V2Limits.INITIAL_CONNECTION_WINDOW);
    }

    // ---- the close ----

    @Test
    void close_withDataQueuedAndStreamsOpen_everyStreamToldOnceAndEveryBufferReleased() {
        RecordingStreamHandler g = peers.gateway.open(false);
        RecordingStreamHandler idle = peers.gateway.open(false);
        g.send(2L * WINDOW, true);
        peers.pump();
        assertThat(peers.gateway.connection.queuedBytes(1)).isEqualTo(WINDOW);

        peers.gateway.connection.close(WebSocketCloseStatus.NORMAL_CLOSURE, "bye");
        peers.pump();

        assertThat(g.events).containsExactly("linkClosed");
        assertThat(idle.events).containsExactly("linkClosed");
        assertThat(peers.worker.accepted)
                .allSatisfy(w -> assertThat(w.events).endsWith("linkClosed").doesNotHaveDuplicates());
        assertThat(peers.gateway.closes).containsExactly("clean");
        assertThat(peers.worker.closes).containsExactly("clean");
        assertThat(peers.gateway.connection.queuedBytes(1)).isZero();
        // Writes after the close release what they are given (the leak extension checks).
        g.stream().write(bytes(10), true);
        peers.gateway.connection.sendCall(new Frame.Call(1, "status.get", JsonNodeFactory.instance.objectNode()));
        assertThat(peers.gateway.written()).isEmpty();
    }

    /**
     * The drain's GOAWAY reaches a worker whose socket takes no more for now (a zero window, DATA
     * queued ahead): it goes out with the close frame, before it, and the worker learns the last
     * stream id it may still be answered on. Regression (a review of the thirtieth stop): it was
     * queued as a control frame, the close dropped the queue, and the worker read only the 1001.
     */
    @Test
    void goAwayAndClose_onASocketThatTakesNoMore_theGoAwayStillPrecedesTheClose() {
        peers.gateway.open(false);
        peers.pump();
        peers.wire();
        writable(peers.gateway.channel, false);

        peers.gateway.connection.goAwayAndClose(
                V2ErrorCode.NO_ERROR, WebSocketCloseStatus.ENDPOINT_UNAVAILABLE, "gateway draining: reconnect");
        List<String> written = peers.gateway.written();

        assertThat(without(written, "PING"))
                .as("the GOAWAY, then the close")
                .containsExactly("G>W GOAWAY 1 NO_ERROR", "G>W CLOSE 1001");
        assertThat(peers.gateway.connection.opensStreams()).isFalse();
    }

    private static void writable(EmbeddedChannel ch, boolean on) {
        ch.unsafe().outboundBuffer().setUserDefinedWritability(1, on);
        ch.runPendingTasks();
    }
}
