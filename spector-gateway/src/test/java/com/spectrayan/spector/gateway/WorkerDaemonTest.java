package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.gateway.GatewayWorkerClient;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.uplink.transport.UplinkDialer;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The worker daemon against a real gateway: it dials in, its {@code http-forward} target is relayed
 * to, and after the gateway restarts on the same port it reconnects by itself and relays again.
 */
final class WorkerDaemonTest {
    private static final String TOKEN = "daemon-token-0123456789";

    private static GatewayServer gateway(int port, String ownerUri) {
        Map<String, String> props = new HashMap<>();
        props.put("spector.cell.role", "gateway");
        props.put("spector.cell.id", Cell.CELL_ID);
        props.put("spector.cell.ring-members", "owner-0=" + ownerUri);
        props.put("spector.server.port", Integer.toString(port));
        props.put("spector.server.host", "127.0.0.1");
        props.put("spector.routing.redis.enabled", "false");
        props.put("spector.security.jwt.hmac-secret", Cell.SECRET);
        props.put("spector.uplink.tokens", "dw=" + TokenHashes.sha256Hex(TOKEN));
        return GatewayServer.start(GatewaySettings.load(null, Map.of(), props));
    }

    /** The most re-dials {@link #directory_ofLinksTiedOnRelays_givesTheOneOnTheCallersLoop} makes for its premise. */
    private static final int MAX_REDIALS = 4;

    /** Answers whether {@code links} (two) are on one event loop. */
    private static boolean onOneLoop(List<WorkerLink> links) {
        return links.size() == 2 && links.get(0).eventLoop() == links.get(1).eventLoop();
    }

    private static HttpResponse<String> relayEcho(int port) throws Exception {
        // A new client per call: a pooled connection to the stopped gateway must not be reused.
        java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder()
                .version(java.net.http.HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5))
                .build();
        return http.send(
                HttpRequest.newBuilder(URI.create(
                                "http://127.0.0.1:" + port + "/relay/dw/owner/api/v1/namespaces/daemon/echo?x=1"))
                        .timeout(Duration.ofSeconds(20))
                        .header("Authorization", "Bearer " + Cell.token(Cell.TENANT))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void shouldAnswerStatusOnTheLoopbackAdminPortAndForbidRelayOperationsThere() throws Exception {
        io.netty.channel.EventLoopGroup group =
                new io.netty.channel.MultiThreadIoEventLoopGroup(1, io.netty.channel.nio.NioIoHandler.newFactory());
        try (Cell cell = Cell.builder().owners(1).start();
                WorkerDaemon worker = WorkerDaemon.start(
                        URI.create("ws://127.0.0.1:1/uplink"), // no gateway: the admin port works alone
                        "dw",
                        TOKEN,
                        Map.of("owner", cell.owner("owner-0").baseUri()),
                        0)) {
            CompletableFuture<GatewayWorkerClient> connected = new CompletableFuture<>();
            CompletableFuture<FrameChannel> channel = new CompletableFuture<>();
            BlockingQueue<Frame> received = new LinkedBlockingQueue<>();
            try (UplinkDialer admin = UplinkDialer.builder(
                            URI.create("ws://127.0.0.1:" + worker.adminPort() + "/uplink"), "cli", "x", group)
                    .onConnected(ch -> {
                        GatewayWorkerClient client = GatewayWorkerClient.over("dw", ch);
                        channel.complete(ch);
                        connected.complete(client);
                        return new FrameChannel.Receiver() { // the client's receiver, recording each frame
                            @Override
                            public void onFrame(Frame frame) {
                                received.add(frame);
                                client.onFrame(frame);
                            }

                            @Override
                            public void onClose(@Nullable Throwable cause) {
                                client.onClose(cause);
                            }
                        };
                    })
                    .build()) {
                admin.start();
                var client = connected.get(10, TimeUnit.SECONDS);
                var status = client.statusGet().toCompletableFuture().get(10, TimeUnit.SECONDS);
                assertThat(status.workerId()).isEqualTo("dw");
                assertThat(status.targets()).containsExactly("owner");
                long cancelId = 1_000_000; // a raw call, far from the client's own ids
                channel.get(10, TimeUnit.SECONDS)
                        .send(new Frame.Call(
                                cancelId,
                                "relay.cancel",
                                JsonNodeFactory.instance.objectNode().put("relayId", "r1")));
                Frame answer = null;
                while (answer == null || answer.id() != cancelId) {
                    answer = received.poll(10, TimeUnit.SECONDS);
                    assertThat(answer).as("the admin port answers relay.cancel").isNotNull();
                }
                assertThat(answer)
                        .as("relay operations are FORBIDDEN off the gateway's uplink")
                        .isInstanceOfSatisfying(
                                Frame.ErrorFrame.class,
                                e -> assertThat(e.code()).isEqualTo(ErrorCode.FORBIDDEN));
            }
        } finally {
            group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS)
                    .syncUninterruptibly();
        }
    }

    @Test
    void shouldReconnectByItselfAfterTheGatewayRestartsAndRelayAgain() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        try (Cell cell = Cell.builder().owners(1).start()) {
            URI ownerUri = cell.owner("owner-0").baseUri();
            String owner = ownerUri.toString();
            GatewayServer first = gateway(port, owner);
            try (WorkerDaemon worker = WorkerDaemon.start(
                    URI.create("ws://127.0.0.1:" + port + "/uplink"), "dw", TOKEN, Map.of("owner", ownerUri))) {
                await("connected").atMost(Duration.ofSeconds(10)).until(worker::isConnected);
                await("registered")
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> first.workerDirectory().live("dw") != null);
                assertThat(relayEcho(port).statusCode())
                        .as("relayed before the restart")
                        .isEqualTo(200);

                first.close();
                await("the worker saw the uplink drop")
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> !worker.isConnected());
                GatewayServer second = gateway(port, owner);
                try {
                    await("the worker reconnected by itself")
                            .atMost(Duration.ofSeconds(15))
                            .until(() -> second.workerDirectory().live("dw") != null);
                    HttpResponse<String> again = relayEcho(port);
                    assertThat(again.statusCode())
                            .as("relayed after the restart")
                            .isEqualTo(200);
                    assertThat(again.body()).contains("\"node\":\"owner-0\"").contains("\"query\":\"x=1\"");
                } finally {
                    second.close();
                }
            }
        }
    }
    /**
     * Both of the worker's two v2 links are picked by a relay that names their loop: of the links
     * tied on relays running, the directory gives the one on the caller's event loop (a relay then
     * moves each part on one thread). The loops differ, or the test shows nothing: the gateway
     * spreads its connections over its loops in turn.
     */
    @Test
    void directory_ofLinksTiedOnRelays_givesTheOneOnTheCallersLoop() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        try (Cell cell = Cell.builder().owners(1).start()) {
            URI ownerUri = cell.owner("owner-0").baseUri();
            GatewayServer gateway = gateway(port, ownerUri.toString());
            try (WorkerDaemon worker = WorkerDaemon.start(
                    URI.create("ws://127.0.0.1:" + port + "/uplink"), "dw", TOKEN, Map.of("owner", ownerUri))) {
                var directory = gateway.workerDirectory();
                await("both links up").atMost(Duration.ofSeconds(10)).until(() -> worker.connectedUplinks() == 2);
                await("both links registered")
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> directory.links("dw").size() == 2);
                // The premise: two loops. The gateway hands accepted connections to its loops in
                // turn, so it holds unless a dial was retried (a loaded machine): then a link is
                // sent away and re-dialed until the two differ (the next accept takes the next loop).
                for (int redial = 0; redial < MAX_REDIALS && onOneLoop(directory.links("dw")); redial++) {
                    var before = directory.links("dw");
                    gateway.uplinkChannels().iterator().next().close().syncUninterruptibly();
                    await("a link re-dialed").atMost(Duration.ofSeconds(10)).until(() -> {
                        var now = directory.links("dw");
                        return now.size() == 2 && !now.containsAll(before) && worker.connectedUplinks() == 2;
                    });
                }
                var links = directory.links("dw");
                assertThat(links)
                        .allSatisfy(l ->
                                assertThat(l.eventLoop()).as("a v2 link's loop").isNotNull());
                assertThat(links.get(0).eventLoop())
                        .as("the two links are on different loops of the gateway")
                        .isNotSameAs(links.get(1).eventLoop());
                for (var link : links) {
                    for (int turn = 0; turn < 4; turn++) { // ties are otherwise taken in turn
                        assertThat(directory.live("dw", link.eventLoop()))
                                .as("a caller on %s, turn %d", link.eventLoop(), turn)
                                .isSameAs(link);
                    }
                }
                assertThat(relayEcho(port).statusCode())
                        .as("a relay still goes through")
                        .isEqualTo(200);
            } finally {
                gateway.close();
            }
        }
    }
}
