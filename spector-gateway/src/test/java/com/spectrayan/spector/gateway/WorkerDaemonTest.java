package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.gateway.config.GatewaySettings;
import com.spectrayan.spector.uplink.transport.TokenHashes;
import com.spectrayan.spector.worker.WorkerDaemon;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
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

    private static HttpResponse<String> relayEcho(Cell cell, int port) throws Exception {
        return cell.http.send(
                HttpRequest.newBuilder(URI.create(
                                "http://127.0.0.1:" + port + "/relay/dw/owner/api/v1/namespaces/daemon/echo?x=1"))
                        .timeout(Duration.ofSeconds(20))
                        .header("Authorization", "Bearer " + Cell.token(Cell.TENANT))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
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
                assertThat(relayEcho(cell, port).statusCode())
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
                    HttpResponse<String> again = relayEcho(cell, port);
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
}
