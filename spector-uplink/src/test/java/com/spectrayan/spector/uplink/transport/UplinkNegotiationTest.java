package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import com.spectrayan.spector.uplink.internal.wire.RelayBody;
import com.spectrayan.spector.uplink.wire.StatusReport;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import com.spectrayan.spector.uplink.worker.WorkerOptions;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The version negotiation of docs/PROTOCOL.md section 9.1, over real loopback WebSockets: a worker
 * that offers v2 gets it from a gateway that speaks it, and v1 from one that does not; a v1 worker
 * gets v1 from a v2 gateway; calls ({@code status.get}) work on either; a refusal names the
 * versions the gateway speaks, best first.
 */
class UplinkNegotiationTest {
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
    private final List<AutoCloseable> closing = new ArrayList<>();
    private final BlockingQueue<FrameChannel> gatewayEnds = new LinkedBlockingQueue<>();
    private final BlockingQueue<RealGatewayWorkerClient> clients = new LinkedBlockingQueue<>();
    private final BlockingQueue<FrameChannel> workerEnds = new LinkedBlockingQueue<>();

    /** The gateway's client of the last link {@link #connectedAndAnswering} saw (the link's receiver). */
    private @Nullable RealGatewayWorkerClient lastClient;

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : closing) {
            c.close();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(10_000);
    }

    private URI gateway(boolean v2) {
        String hash = TokenHashes.sha256Hex(TestGateway.TOKEN);
        UplinkAcceptor acceptor = UplinkAcceptor.builder(
                        (workerId, token) -> TokenHashes.matches(hash, token), (workerId, slot, channel) -> {
                            gatewayEnds.add(channel);
                            RealGatewayWorkerClient client = RealGatewayWorkerClient.over(workerId, channel);
                            clients.add(client);
                            return client;
                        })
                .v2(v2)
                .build();
        Channel server = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        ch.pipeline().addLast(new HttpServerCodec()).addLast(acceptor.newHandler());
                    }
                })
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
                .syncUninterruptibly()
                .channel();
        closing.add(() -> server.close().syncUninterruptibly());
        int port = ((InetSocketAddress) server.localAddress()).getPort();
        return URI.create("ws://127.0.0.1:" + port + UplinkAcceptor.PATH);
    }

    private void dial(URI uri, Function<UplinkDialer.Builder, UplinkDialer.Builder> configure) {
        UplinkDialer dialer = configure
                .apply(UplinkDialer.builder(uri, "w1", TestGateway.TOKEN, group)
                        .reconnect(Duration.ofMillis(100), Duration.ofMillis(400)))
                .build();
        closing.add(0, dialer);
        dialer.start();
    }

    private FrameChannel.Receiver session(FrameChannel channel) {
        workerEnds.add(channel);
        return UplinkSession.start(
                channel,
                UplinkSession.Role.GATEWAY_UPLINK,
                WorkerOptions.builder("w1").build());
    }

    /** Both ends' channels, and a status.get answered over the negotiated link. */
    private List<FrameChannel> connectedAndAnswering() {
        FrameChannel gatewayEnd = take(gatewayEnds, "the gateway accepts the uplink", WAIT);
        FrameChannel workerEnd = take(workerEnds, "the worker's end opens", WAIT);
        RealGatewayWorkerClient client = take(clients, "the gateway's client", WAIT);
        lastClient = client;
        StatusReport status = done(client.statusGet(), "status.get over the link");
        assertThat(status.workerId()).as("the worker's own answer").isEqualTo("w1");
        return List.of(gatewayEnd, workerEnd);
    }

    @Test
    void v2Worker_v2Gateway_speakV2_andCallsTravelAsCallFrames() {
        dial(gateway(true), b -> b.onUplink(this::session));
        List<FrameChannel> ends = connectedAndAnswering();
        assertThat(ends).as("both ends speak v2").allMatch(c -> c instanceof V2FrameChannel);
    }

    @Test
    void v2Worker_v1Gateway_speakV1() {
        dial(gateway(false), b -> b.onUplink(this::session));
        assertThat(connectedAndAnswering())
                .as("a v2 worker speaks v1 with a gateway that does not pick v2")
                .allMatch(c -> c instanceof WebSocketFrameChannel);
    }

    @Test
    void v1Worker_v2Gateway_speakV1() {
        dial(gateway(true), b -> b.onConnected(this::session));
        assertThat(connectedAndAnswering())
                .as("a worker that offers v1 only gets v1 from a v2 gateway")
                .allMatch(c -> c instanceof WebSocketFrameChannel);
    }

    @Test
    void v2TurnedOffAtTheWorker_speakV1() {
        dial(gateway(true), b -> b.onUplink(this::session).offerV2(false));
        assertThat(connectedAndAnswering()).allMatch(c -> c instanceof WebSocketFrameChannel);
    }

    /** RFC 6455 section 4.2.2: the server selects one of the offered subprotocols, or refuses here. */
    @Test
    void noCommonVersion_isRefused400_namingTheVersionsBestFirst() throws Exception {
        URI uri = gateway(true);
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), uri.getPort())) {
            s.setSoTimeout((int) WAIT.toMillis());
            OutputStream out = s.getOutputStream();
            out.write(("GET /uplink HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                            + "Sec-WebSocket-Protocol: spector-uplink.v9\r\nX-Spector-Worker: w1\r\n"
                            + "Authorization: Bearer " + TestGateway.TOKEN + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            String response = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
            assertThat(response).startsWith("HTTP/1.1 400 ");
            assertThat(response)
                    .as("the versions this gateway speaks, v2 first")
                    .contains(UplinkAcceptor.VERSIONS_HEADER + ": " + V2Limits.SUBPROTOCOL + ", "
                            + FrameCodec.SUBPROTOCOL);
        }
    }

    /** Section 9.8: v1's relay operations as CALLs on a v2 link are answered BAD_REQUEST; the link stays. */
    @Test
    void v2Link_v1RelayOperationAsACall_isBadRequest_andTheLinkCarriesOn() {
        dial(gateway(true), b -> b.onUplink(this::session));
        List<FrameChannel> ends = connectedAndAnswering();
        RealGatewayWorkerClient client = java.util.Objects.requireNonNull(lastClient, "connected");
        Map<String, CompletionStage<Void>> calls = Map.of(
                "relay.cancel", client.relayCancel("g1"), "relay.body", client.relayBody(new RelayBody.End("g1")));
        calls.forEach((op, call) -> {
            Throwable failure = Waits.failure(call, op + " over a v2 link");
            assertThat(failure).as(op).isInstanceOf(SpectorException.class).hasMessageContaining("relays are streams");
            assertThat(((SpectorException) failure).code()).isEqualTo(ErrorCode.BAD_REQUEST);
        });
        assertThat(ends.get(0).isOpen())
                .as("a refused call does not close the link")
                .isTrue();
    }

    /** Section 9.8: a drain's GOAWAY and 1001 reach a v2 worker, which re-dials at once. */
    @Test
    void v2Link_goingAway_closes1001_andTheWorkerRedialsAtOnce() {
        dial(gateway(true), b -> b.onUplink(this::session));
        List<FrameChannel> ends = connectedAndAnswering();
        ends.get(0).goAway("gateway draining: reconnect");
        V2FrameChannel workerEnd = (V2FrameChannel) ends.get(1);
        FrameChannel again = take(gatewayEnds, "the worker re-dials after 1001", Duration.ofSeconds(2));
        assertThat(workerEnd.peerCloseCode()).as("Going Away").isEqualTo(1001);
        assertThat(workerEnd.peerCloseReason()).isEqualTo("gateway draining: reconnect");
        assertThat(again).isInstanceOf(V2FrameChannel.class);
    }
}
