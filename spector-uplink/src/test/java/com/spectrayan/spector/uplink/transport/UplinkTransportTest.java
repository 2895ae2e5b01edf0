package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.await;
import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

final class UplinkTransportTest {
    private static final Duration SHORT = Duration.ofMillis(20);

    @RegisterExtension
    final Closing closing = new Closing();

    private final EventLoopGroup group = closing.group;

    private TestGateway gateway(int port) {
        TestGateway g = new TestGateway(group, port, null);
        closing.add(g);
        return g;
    }

    private UplinkDialer dialer(UplinkDialer.Builder builder) {
        UplinkDialer d = builder.build();
        closing.add(d);
        d.start();
        return d;
    }

    /** A worker whose connections record what they receive (corrupt text left to the transport). */
    private UplinkDialer.Builder worker(TestGateway g, String token, BlockingQueue<RecordingReceiver> connected) {
        return worker(g, token, connected, false);
    }

    private UplinkDialer.Builder worker(
            TestGateway g, String token, BlockingQueue<RecordingReceiver> connected, boolean takesCorrupt) {
        return UplinkDialer.builder(g.uri(), "w1", token, group)
                .reconnect(SHORT, Duration.ofMillis(80))
                .onConnected(channel -> {
                    RecordingReceiver end =
                            takesCorrupt ? RecordingReceiver.takingCorrupt(channel) : RecordingReceiver.of(channel);
                    connected.add(end);
                    return end;
                });
    }

    private static Frame.Call call(long id) {
        return new Frame.Call(
                id, "test.op", JsonNodeFactory.instance.objectNode().put("n", (int) id));
    }

    private static Frame.Result result(long id) {
        return new Frame.Result(id, JsonNodeFactory.instance.objectNode().put("n", (int) id));
    }

    @Test
    void dialer_connects_andFramesFlowBothWaysInOrder() {
        TestGateway g = gateway(0);
        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        dialer(worker(g, TestGateway.TOKEN, connected));
        RecordingReceiver worker = take(connected, "the dialer hands over the connected uplink", WAIT);
        WebSocketFrameChannel workerEnd = worker.webSocket();
        TestGateway.Uplink gatewayEnd = g.nextUplink("the acceptor hands over the uplink");
        assertThat(gatewayEnd.workerId())
                .as("the acceptor names the worker from X-Spector-Worker")
                .isEqualTo("w1");

        BlockingQueue<Frame> atWorker = worker.frames;
        BlockingQueue<Frame> atGateway = gatewayEnd.received().frames;
        int n = 200;
        for (int i = 1; i <= n; i++) {
            gatewayEnd.channel().send(call(i));
        }
        for (int i = 1; i <= n; i++) {
            Frame f = take(atWorker, "call " + i + " reaches the worker", WAIT);
            assertThat(f).as("calls arrive in the order sent").isEqualTo(call(i));
            done(workerEnd.send(result(i)), "the worker's result " + i + " is written", WAIT);
        }
        for (int i = 1; i <= n; i++) {
            assertThat(take(atGateway, "result " + i + " reaches the gateway", WAIT))
                    .as("results arrive in the order sent")
                    .isEqualTo(result(i));
        }
        assertThat(workerEnd.isOpen()).as("the worker end stays open").isTrue();
        assertThat(gatewayEnd.channel().isOpen())
                .as("the gateway end stays open")
                .isTrue();
    }

    @Test
    void wrongToken_isRefusedAtTheUpgrade_andTheDialerRetriesWithBackoff() {
        TestGateway g = gateway(0);
        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        CountDownLatch threeFailures = new CountDownLatch(3);
        UplinkDialer d = dialer(worker(g, "not-the-token", connected).onAttemptFailed(e -> {
            failures.add(e);
            threeFailures.countDown();
        }));
        await(threeFailures, "a refused dialer keeps retrying", WAIT);

        assertThat(d.attempts()).as("one attempt per failure at least").isGreaterThanOrEqualTo(3);
        assertThat(failures.get(0).getMessage()).as("the refusal is a 401").contains("401");
        assertThat(connected).as("no uplink handed to the worker on a refusal").isEmpty();
        assertThat(g.uplinks)
                .as("no uplink handed to the gateway on a wrong token")
                .isEmpty();
        assertThat(d.isConnected()).as("a refused dialer is not connected").isFalse();
    }

    /**
     * The same refusal for a worker that offers v2 (every worker built with {@code onUplink}, as
     * {@code spector worker} is): the dialer names the 401 and its reason. It said "closed before the
     * handshake completed (if the gateway's port speaks TLS, dial wss://)" and Netty logged the
     * refusal's stack: the handshake's failure reached no handler of the negotiating pipeline.
     */
    @Test
    void wrongToken_forAWorkerThatOffersV2_isNamedAsTheRefusal() {
        TestGateway g = gateway(0);
        BlockingQueue<Throwable> failures = new LinkedBlockingQueue<>();
        dialer(UplinkDialer.builder(g.uri(), "w1", "not-the-token", group)
                .reconnect(Duration.ofSeconds(30), Duration.ofSeconds(30))
                .onUplink(link -> new FrameChannel.Receiver() {
                    @Override
                    public void onFrame(Frame frame) {}

                    @Override
                    public void onClose(@Nullable Throwable cause) {}
                })
                .onAttemptFailed(failures::add));

        Throwable failure = take(failures, "the refused dial fails", WAIT);
        assertThat(failure.getMessage()).startsWith("uplink refused: 401").doesNotContain("wss://");
        assertThat(g.uplinks).as("no uplink handed over").isEmpty();
    }

    @Test
    void wrongToken_rawUpgrade_gets401ProblemJson() throws IOException {
        TestGateway g = gateway(0);
        String response = RawUpgrade.send(
                g.port(), "Authorization: Bearer nope", "Sec-WebSocket-Protocol: " + FrameCodec.SUBPROTOCOL);
        assertThat(response).as("a wrong token is refused 401").startsWith("HTTP/1.1 401");
        assertThat(response).as("the refusal is problem JSON").contains("application/problem+json", "UNAUTHENTICATED");
        assertThat(g.uplinks).as("no uplink handed over").isEmpty();
    }

    @Test
    void otherSubprotocol_isRefusedNamingTheVersionsTheGatewaySpeaks() throws IOException {
        TestGateway g = gateway(0);
        String response = RawUpgrade.send(
                g.port(), "Authorization: Bearer " + TestGateway.TOKEN, "Sec-WebSocket-Protocol: spector-uplink.v0");
        assertThat(response).as("a worker without our subprotocol is refused").startsWith("HTTP/1.1 400");
        assertThat(response.substring(response.indexOf("\r\n\r\n")))
                .as("the refusal's body names the versions the gateway speaks")
                .contains(FrameCodec.SUBPROTOCOL);

        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        BlockingQueue<Throwable> failures = new LinkedBlockingQueue<>();
        dialer(worker(g, TestGateway.TOKEN, connected)
                .subprotocol("spector-uplink.v0")
                .onAttemptFailed(failures::add));
        Throwable refused = take(failures, "a dialer offering another subprotocol is refused", WAIT);
        assertThat(refused.getMessage())
                .as("the dialer's failure names the gateway's versions")
                .contains("400", FrameCodec.SUBPROTOCOL);
        assertThat(g.uplinks).as("no uplink handed over on a version mismatch").isEmpty();
    }

    @Test
    void oversizedText_closes1009() {
        assertClosedBy(
                () -> new TextWebSocketFrame("x".repeat(FrameCodec.MAX_FRAME_CHARS + 1)),
                1009,
                "text over MAX_FRAME_CHARS");
    }

    /**
     * A frame whose header declares more than MAX_MESSAGE_BYTES is closed 1009 as soon as its
     * header is read. The worker sends the header alone (RFC 6455 §5.2, a masked text frame with a
     * 64-bit length): with the megabyte behind it, the gateway closed with the worker's bytes
     * unread, its kernel answered them with a reset, and the reset could reach the worker before
     * the close frame did (seen once in CI: close code -1); with nothing unread the close is a FIN.
     */
    @Test
    void oversizedMessageBytes_closes1009() {
        assertClosedBy(
                () -> {
                    long length = WebSocketFrameChannel.MAX_MESSAGE_BYTES + 1L;
                    return Unpooled.buffer(14)
                            .writeByte(0x81) // FIN, text
                            .writeByte(0x80 | 127) // masked, a 64-bit length follows
                            .writeLong(length)
                            .writeInt(0x01020304); // the masking key; no payload byte follows
                },
                1009,
                "a message over MAX_MESSAGE_BYTES");
    }

    /**
     * A message over the limit with its bytes behind its header, as a worker with a bug would send
     * it (16 MiB of a declared 64): the gateway refuses at the header and closes 1009 while the rest
     * still arrives. It closed at once then, its kernel answered the unread bytes with a reset, and
     * the worker, still writing, failed on the reset before it read the close (close code -1); now
     * it sends its FIN behind the close frame and reads (and drops) the rest until the worker
     * closes (LingeringClose). Three uplinks in a row.
     */
    @Test
    void oversizedMessage_withItsBytesBehind_stillCloses1009() {
        TestGateway g = gateway(0);
        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        dialer(worker(g, TestGateway.TOKEN, connected));
        int sent = 16 << 20;
        for (int i = 0; i < 3; i++) {
            RecordingReceiver worker = take(connected, "the worker connects, time " + i, WAIT);
            WebSocketFrameChannel workerEnd = worker.webSocket();
            g.nextUplink("uplink " + i);
            workerEnd
                    .channel()
                    .writeAndFlush(Unpooled.buffer(14 + sent)
                            .writeByte(0x81) // FIN, text
                            .writeByte(0x80 | 127) // masked, a 64-bit length follows
                            .writeLong(64L << 20)
                            .writeInt(0x01020304) // the masking key
                            .writeZero(sent)); // a quarter of the payload, in one write
            Waits.done(worker.closed, "the gateway closes uplink " + i, WAIT);
            assertThat(workerEnd.peerCloseCode()).as("close code, uplink " + i).isEqualTo(1009);
        }
    }

    /**
     * The other way round, on the wire: a frame from the gateway whose header declares more than
     * MAX_MESSAGE_BYTES is answered by the worker with one close frame, masked (RFC 6455 §5.3),
     * code 1009 Message Too Big (§7.4.1), and then its end of the connection: no normal close
     * (1000) and no second close frame (§5.5.1). The gateway here is a raw socket that answers the
     * handshake itself.
     */
    @Test
    void oversizedMessageFromTheGateway_theWorkerSendsOneClose1009_thenItsEnd() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            server.setSoTimeout((int) WAIT.toMillis());
            dialer(UplinkDialer.builder(
                            URI.create("ws://127.0.0.1:" + server.getLocalPort() + "/uplink"),
                            "w1",
                            TestGateway.TOKEN,
                            group)
                    .reconnect(Duration.ofSeconds(30), Duration.ofSeconds(30))
                    .onConnected(RecordingReceiver::of));
            try (Socket s = server.accept()) {
                s.setSoTimeout((int) WAIT.toMillis());
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                String head = readHead(in);
                String key = field(head, "Sec-WebSocket-Key");
                String accept = Base64.getEncoder()
                        .encodeToString(MessageDigest.getInstance("SHA-1")
                                .digest((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").getBytes(US_ASCII)));
                out.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                + "Sec-WebSocket-Accept: " + accept + "\r\nSec-WebSocket-Protocol: "
                                + FrameCodec.SUBPROTOCOL + "\r\n\r\n")
                        .getBytes(US_ASCII));
                ByteBuffer frame = ByteBuffer.allocate(10)
                        .put((byte) 0x81) // FIN, text
                        .put((byte) 127) // unmasked (a server's frame), a 64-bit length follows
                        .putLong(WebSocketFrameChannel.MAX_MESSAGE_BYTES + 1L); // no payload byte follows
                out.write(frame.array());
                out.flush();

                byte[] sent = in.readAllBytes(); // to the worker's end of the connection
                List<int[]> closes = new java.util.ArrayList<>(); // {code}, one per close frame
                int at = 0;
                int lastOpcode = -1;
                while (at < sent.length) {
                    int opcode = sent[at] & 0x0F;
                    assertThat(sent[at + 1] & 0x80)
                            .as("a client's frame is masked")
                            .isEqualTo(0x80);
                    int length = sent[at + 1] & 0x7F;
                    assertThat(length).as("a small frame: a close, a pong").isLessThan(126);
                    int payload = at + 6;
                    if (opcode == 0x8) {
                        int code = ((sent[payload] ^ sent[at + 2]) & 0xFF) << 8
                                | ((sent[payload + 1] ^ sent[at + 3]) & 0xFF);
                        closes.add(new int[] {code});
                    }
                    lastOpcode = opcode;
                    at = payload + length;
                }
                assertThat(at).as("whole frames").isEqualTo(sent.length);
                assertThat(closes).as("close frames").hasSize(1);
                assertThat(closes.get(0)[0]).as("the close code").isEqualTo(1009);
                assertThat(lastOpcode).as("the close frame is the last").isEqualTo(0x8);
            }
        }
    }

    /**
     * A dial to a port where nothing listens fails as what it is, a refused connection, and not as
     * a handshake the gateway closed with a hint to dial wss:// (what a worker said before): its
     * operator, who pointed it at the wrong port or at a gateway that is down, reads why.
     */
    @Test
    void aDialToAPortWithNothingListening_failsAsRefused() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        BlockingQueue<Throwable> failures = new LinkedBlockingQueue<>();
        dialer(UplinkDialer.builder(URI.create("ws://127.0.0.1:" + port + "/uplink"), "w1", TestGateway.TOKEN, group)
                .reconnect(Duration.ofSeconds(30), Duration.ofSeconds(30))
                .onConnected(RecordingReceiver::of)
                .onAttemptFailed(failures::add));

        Throwable failure = take(failures, "the dial fails", WAIT);
        assertThat(failure).hasCauseInstanceOf(java.net.ConnectException.class);
        assertThat(failure.getMessage())
                .isEqualTo("connection refused by 127.0.0.1:" + port
                        + ": nothing listens there (a wrong port, or the gateway is down)");
    }

    /**
     * A dial whose socket cannot be made (here a channel whose constructor fails, as it does at
     * EMFILE: "Too many open files") is reported and dialled again with backoff. Regression (a
     * review): Netty gives such a dial a channel whose close never completes, and the dialer
     * waited for that close to schedule the next dial, so the link's slot stayed dead, with no
     * log line, until the worker restarted.
     */
    @Test
    void aDialWhoseSocketCannotBeMade_isReportedAndDialledAgain() throws Exception {
        BlockingQueue<Throwable> failures = new LinkedBlockingQueue<>();
        UplinkDialer d =
                dialer(UplinkDialer.builder(URI.create("ws://127.0.0.1:1/uplink"), "w1", TestGateway.TOKEN, group)
                        .channelType(NoSocket.class)
                        .reconnect(Duration.ofMillis(10), Duration.ofMillis(20))
                        .onConnected(RecordingReceiver::of)
                        .onAttemptFailed(failures::add));

        for (int i = 1; i <= 3; i++) {
            Throwable failure = take(failures, "failed dial " + i, WAIT);
            assertThat(failure.getMessage())
                    .startsWith("could not open a socket to 127.0.0.1:1: ")
                    .contains(NoSocket.WHY);
        }
        assertThat(d.attempts()).isGreaterThanOrEqualTo(3);
    }

    /**
     * A dial to a name that does not resolve says so, whichever of the resolver's close and its
     * failure of the connect the dialer sees first. Regression (a review): a first dial, made off
     * the event loop, saw the close first and said "closed before the handshake completed (if the
     * gateway's port speaks TLS, dial wss://)".
     */
    @Test
    void aDialToANameThatDoesNotResolve_saysSo() throws Exception {
        BlockingQueue<Throwable> failures = new LinkedBlockingQueue<>();
        dialer(UplinkDialer.builder(URI.create("ws://no-such-host.invalid:9/uplink"), "w1", TestGateway.TOKEN, group)
                .reconnect(Duration.ofSeconds(30), Duration.ofSeconds(30))
                .onConnected(RecordingReceiver::of)
                .onAttemptFailed(failures::add));

        Throwable failure = take(failures, "the dial fails", WAIT);
        assertThat(failure.getMessage()).startsWith("cannot resolve no-such-host.invalid:9: ");
    }

    /** A socket channel that cannot be made, as at EMFILE. */
    public static final class NoSocket extends io.netty.channel.socket.nio.NioSocketChannel {
        static final String WHY = "Too many open files (a test's)";

        public NoSocket() {
            throw new io.netty.channel.ChannelException(WHY);
        }
    }

    /**
     * Each transport's words for a failed connect become the same plain ones: epoll's (a native
     * error with its errno), NIO's (the address after the reason), Netty's connect timeout, and a
     * failure the dialer has no words of its own for, which keeps the system's words.
     */
    @Test
    void aFailedConnect_isSaidInPlainWords_whateverTheTransportSaid() {
        Duration timeout = Duration.ofSeconds(5);
        assertThat(UplinkDialer.connectReason(
                        new java.net.ConnectException("finishConnect(..) failed with error(-111): Connection refused"),
                        "gw:443",
                        timeout))
                .isEqualTo(
                        "connection refused by gw:443: nothing listens there (a wrong port, or the gateway is down)");
        assertThat(UplinkDialer.connectReason(
                        new java.net.ConnectException("Connection refused: /127.0.0.1:8080"), "gw:443", timeout))
                .startsWith("connection refused by gw:443");
        assertThat(UplinkDialer.connectReason(
                        new io.netty.channel.ConnectTimeoutException(
                                "connection timed out after 5000 ms: gw/10.0.0.1:443"),
                        "gw:443",
                        timeout))
                .isEqualTo("no answer to the connect from gw:443 within 5000 ms"
                        + " (a firewall dropping it, or a host that is down)");
        assertThat(UplinkDialer.connectReason(
                        new java.net.ConnectException("finishConnect(..) failed with error(-113): No route to host"),
                        "gw:443",
                        timeout))
                .isEqualTo("connect to gw:443 failed: No route to host");
        assertThat(UplinkDialer.connectReason(
                        new java.net.UnknownHostException("gw.invalid"), "gw.invalid:443", timeout))
                .isEqualTo("cannot resolve gw.invalid:443: gw.invalid");
    }

    private static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (head.length() < 8192
                && (head.length() < 4 || !head.substring(head.length() - 4).equals("\r\n\r\n"))) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("the worker closed before its handshake's end: " + head);
            }
            head.append((char) b);
        }
        return head.toString();
    }

    private static String field(String head, String name) {
        for (String line : head.split("\r\n", -1)) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).equalsIgnoreCase(name)) {
                return line.substring(colon + 1).strip();
            }
        }
        throw new AssertionError("no " + name + " in " + head);
    }

    @Test
    void binaryMessage_closes1003() {
        assertClosedBy(() -> new BinaryWebSocketFrame(Unpooled.wrappedBuffer(new byte[] {1, 2, 3})), 1003, "binary");
    }

    @Test
    void corruptFrame_withoutCallback_closes1007() {
        assertClosedBy(() -> new TextWebSocketFrame("{\"type\":\"call\"}"), 1007, "corrupt frame");
    }

    @Test
    void textThatIsNotUtf8_closes1007_refusedByTheCodecAsItParses() {
        byte[] notUtf8 = {'{', '"', 't', 'y', 'p', 'e', '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}'};
        assertClosedBy(() -> new TextWebSocketFrame(io.netty.buffer.Unpooled.wrappedBuffer(notUtf8)), 1007, "corrupt");
    }

    @Test
    void corruptFrame_goesToTheCorruptCallback() {
        TestGateway g = gateway(0);
        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        dialer(worker(g, TestGateway.TOKEN, connected, true));
        RecordingReceiver worker = take(connected, "the worker connects", WAIT);
        WebSocketFrameChannel workerEnd = worker.webSocket();
        BlockingQueue<Frame> frames = worker.frames;
        WebSocketFrameChannel gatewayEnd =
                (WebSocketFrameChannel) g.nextUplink("uplink").channel();
        gatewayEnd.channel().writeAndFlush(new TextWebSocketFrame("{\"type\":\"call\",\"id\":7}"));
        done(gatewayEnd.send(call(8)), "a good frame after a corrupt one is written", WAIT);
        assertThat(take(worker.corrupt, "the corrupt frame reaches the callback", WAIT)
                        .toString())
                .as("the callback names the broken member")
                .contains("op");
        assertThat(take(frames, "the next good frame still arrives", WAIT)).isEqualTo(call(8));
        assertThat(workerEnd.isOpen())
                .as("a corrupt frame with a callback does not close")
                .isTrue();
    }

    private void assertClosedBy(Supplier<?> frame, int code, String what) {
        TestGateway g = gateway(0);
        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        dialer(worker(g, TestGateway.TOKEN, connected));
        RecordingReceiver worker = take(connected, "the worker connects", WAIT);
        WebSocketFrameChannel workerEnd = worker.webSocket();
        g.nextUplink("uplink");
        workerEnd.channel().writeAndFlush(frame.get());
        Waits.done(worker.closed, what + ": the gateway closes the uplink", WAIT);
        assertThat(workerEnd.peerCloseCode()).as(what + ": close code").isEqualTo(code);
    }

    @Test
    void serverClose_runsTheWorkersOnClose_andTheDialerReconnectsWhenTheGatewayReturns() {
        TestGateway g = gateway(0);
        int port = g.port();
        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        dialer(worker(g, TestGateway.TOKEN, connected));
        RecordingReceiver firstEnd = take(connected, "the worker connects", WAIT);
        WebSocketFrameChannel first = firstEnd.webSocket();

        g.nextUplink("first uplink").channel().close("gateway restarting");
        assertThat(Waits.done(firstEnd.closed, "the worker's onClose runs when the gateway closes", WAIT))
                .as("a close frame 1000 is a clean close (no cause)")
                .isNull();
        assertThat(first.peerCloseCode())
                .as("close code of a close with a reason")
                .isEqualTo(1000);
        assertThat(first.peerCloseReason()).as("the reason reaches the worker").isEqualTo("gateway restarting");
        g.close();

        TestGateway again = gateway(port);
        WebSocketFrameChannel second = take(connected, "the dialer reconnects to the restarted gateway by itself", WAIT)
                .webSocket();
        again.nextUplink("the restarted gateway gets the uplink");
        assertThat(second).as("a new connection").isNotSameAs(first);
        assertThat(second.isOpen()).as("the new uplink is open").isTrue();
    }

    /**
     * A drain closes with 1001 Going Away (RFC 6455 section 7.4.1): the worker re-dials at once, not
     * after its backoff. The backoff here is 30 s to 60 s, far past the wait, so only the going-away
     * rule can bring the second connection in time.
     */
    @Test
    void goingAwayClose_1001_isReDialledAtOnce_notAfterTheBackoff() {
        TestGateway g = gateway(0);
        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        dialer(worker(g, TestGateway.TOKEN, connected).reconnect(Duration.ofSeconds(30), Duration.ofSeconds(60)));
        RecordingReceiver firstEnd = take(connected, "the worker connects", WAIT);

        long sent = System.nanoTime();
        g.nextUplink("first uplink").channel().goAway("gateway draining: reconnect");
        Waits.done(firstEnd.closed, "the worker's onClose runs", WAIT);
        assertThat(firstEnd.webSocket().peerCloseCode()).as("Going Away").isEqualTo(1001);
        assertThat(firstEnd.webSocket().peerCloseReason()).isEqualTo("gateway draining: reconnect");

        RecordingReceiver second = take(connected, "the worker re-dials at once", WAIT);
        assertThat(Duration.ofNanos(System.nanoTime() - sent))
                .as("re-dialled within the jitter (and a connect), never the 30 s backoff")
                .isLessThan(Duration.ofSeconds(5));
        assertThat(second.webSocket()).isNotSameAs(firstEnd.webSocket());
        g.nextUplink("the second uplink reaches the gateway");
    }

    @Test
    void goingAwayDelay_staysWithinTheJitter() {
        long most = UplinkDialer.GOING_AWAY_REDIAL_JITTER.toMillis();
        long seenMax = 0;
        for (int i = 0; i < 10_000; i++) {
            long d = UplinkDialer.goingAwayDelayMillis();
            assertThat(d).isBetween(0L, most);
            seenMax = Math.max(seenMax, d);
        }
        assertThat(seenMax).as("the jitter spreads the re-dials").isGreaterThan(most / 2);
    }

    @Test
    void workerClose_reachesTheGatewayAsACleanClose() {
        TestGateway g = gateway(0);
        BlockingQueue<RecordingReceiver> connected = new LinkedBlockingQueue<>();
        UplinkDialer d = dialer(worker(g, TestGateway.TOKEN, connected));
        take(connected, "the worker connects", WAIT);
        TestGateway.Uplink uplink = g.nextUplink("uplink");
        WebSocketFrameChannel gatewayEnd = uplink.received().webSocket();
        d.close();
        assertThat(Waits.done(uplink.received().closed, "the gateway's onClose runs when the worker stops", WAIT))
                .as("a clean close (no cause)")
                .isNull();
        assertThat(gatewayEnd.peerCloseReason()).as("the worker's reason").isEqualTo("worker stopping");
        assertThat(d.isConnected()).as("a closed dialer does not reconnect").isFalse();
    }

    @Test
    void backoff_staysBetweenHalfTheStepAndTheMax() {
        UplinkDialer d = UplinkDialer.builder(java.net.URI.create("ws://127.0.0.1:1/uplink"), "w1", "t", group)
                .build();
        for (int failures = 1; failures <= 40; failures++) {
            long delay = d.backoffMillis(failures);
            long step = Math.min(30_000L, 500L << Math.min(failures - 1, 30));
            assertThat(delay)
                    .as("backoff after %d failures within [step/2, step], capped at RECONNECT_MAX", failures)
                    .isBetween(step / 2, step);
        }
    }

    @Test
    void tokenHashes_matchOnlyTheRightToken() {
        String hash = TokenHashes.sha256Hex("abc");
        assertThat(hash)
                .as("SHA-256 of abc")
                .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assertThat(TokenHashes.matches(hash, "abc")).as("right token").isTrue();
        assertThat(TokenHashes.matches(hash.toUpperCase(java.util.Locale.ROOT), "abc"))
                .as("hex case")
                .isTrue();
        assertThat(TokenHashes.matches(hash, "abd")).as("wrong token").isFalse();
        assertThat(TokenHashes.matches("zz", "abc")).as("malformed hash").isFalse();
    }
}
