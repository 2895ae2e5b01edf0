package com.spectrayan.spector.owner;

import static com.spectrayan.spector.owner.RingOwnerExtension.MINE;
import static com.spectrayan.spector.owner.RingOwnerExtension.THEIRS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.SpectorHeaders;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Collections;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One owner of a three-member ring over loopback: the guard's answers as a gateway sees them (421,
 * 503), the request log, and ownership moved with {@code POST /admin/ownership}.
 */
final class OwnershipScenarioTest {
    @RegisterExtension
    final RingOwnerExtension ring = new RingOwnerExtension();

    private OwnerClient client;

    @BeforeEach
    void startClient() {
        client = new OwnerClient(ring.owner());
    }

    private HttpResponse<byte[]> echo(String namespace, String... headers) throws Exception {
        HttpRequest.Builder b = client.request("/api/v1/namespaces/" + namespace + "/echo");
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return client.send(b.GET().build());
    }

    @Test
    void shouldServeTheNamespacesTheRingGivesIt() throws Exception {
        HttpResponse<byte[]> r = echo(MINE, SpectorHeaders.EPOCH, "1", SpectorHeaders.FENCE, "0");

        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(OwnerClient.node(r)).isEqualTo("owner-0");
    }

    @Test
    void shouldAnswer421WithTheOwnerForANamespaceAnotherNodeOwns() throws Exception {
        HttpResponse<byte[]> r = echo(THEIRS, "X-Trace", "t-1");

        assertThat(r.statusCode()).as("not-owner rule").isEqualTo(421);
        assertThat(r.headers().firstValue(SpectorHeaders.OWNER)).hasValue("owner-1");
        assertThat(r.headers().firstValue(SpectorHeaders.EPOCH)).hasValue("1");
        assertThat(r.headers().firstValue(SpectorHeaders.FENCE)).hasValue("0");
        assertThat(r.headers().firstValue("Cache-Control")).hasValue("no-store");
        assertThat(r.headers().firstValue("Content-Type")).hasValue(Problem.CONTENT_TYPE);
        assertThat(OwnerClient.node(r)).isEqualTo("owner-0");
        assertThat(OwnerClient.json(r).path("code").asText()).isEqualTo("MISDIRECTED");

        HttpResponse<byte[]> log = client.get("/admin/requests");
        JsonNode rows = OwnerClient.json(log);
        JsonNode last = rows.get(rows.size() - 1);
        assertThat(log.statusCode()).isEqualTo(200);
        assertThat(last.path("status").asInt()).as("the 421 is logged").isEqualTo(421);
        assertThat(last.path("path").asText()).isEqualTo("/api/v1/namespaces/" + THEIRS + "/echo");
        assertThat(last.path("namespace").asText()).isEqualTo(THEIRS);
        assertThat(last.path("tenant").isNull()).isTrue();
        assertThat(last.path("method").asText()).isEqualTo("GET");
        assertThat(last.path("headers").path("X-Trace").get(0).asText()).isEqualTo("t-1");
        assertThat(ring.owner().requests())
                .last()
                .extracting(RecordedRequest::status)
                .isEqualTo(421);
    }

    @Test
    void shouldRouteByTheGatewaysTenantAndNamespaceHeaders() throws Exception {
        String tenantMine = null;
        for (int i = 0; tenantMine == null; i++) {
            if (RingOwnerExtension.RING.ownerOf("t-" + i + "/" + THEIRS).equals("owner-0")) {
                tenantMine = "t-" + i;
            }
        }

        HttpResponse<byte[]> r = echo(THEIRS, SpectorHeaders.TENANT, tenantMine);
        HttpResponse<byte[]> contradicting =
                echo(THEIRS, SpectorHeaders.TENANT, tenantMine, SpectorHeaders.NAMESPACE, MINE);

        assertThat(r.statusCode()).as("tenant/namespace hashes to this node").isEqualTo(200);
        assertThat(ring.owner().requests())
                .last()
                .extracting(RecordedRequest::tenant)
                .isEqualTo(tenantMine);
        assertThat(contradicting.statusCode())
                .as("header namespace contradicts the path")
                .isIn(400, 421);
    }

    @Test
    void shouldAnswer421WithTheNewerViewForAnOlderEpoch_and503ForANewerOne() throws Exception {
        ring.owner()
                .guard()
                .setOverride(
                        com.spectrayan.spector.cluster.routing.RoutingKey.ofUntenanted("default", MINE),
                        "owner-0",
                        3,
                        3);

        HttpResponse<byte[]> older = echo(MINE, SpectorHeaders.EPOCH, "2");
        HttpResponse<byte[]> equal = echo(MINE, SpectorHeaders.EPOCH, "3");
        HttpResponse<byte[]> newer = echo(MINE, SpectorHeaders.EPOCH, "4");
        HttpResponse<byte[]> malformed = echo(MINE, SpectorHeaders.EPOCH, "three");

        assertThat(older.statusCode()).as("epoch one below the owner's").isEqualTo(421);
        assertThat(older.headers().firstValue(SpectorHeaders.OWNER)).hasValue("owner-0");
        assertThat(older.headers().firstValue(SpectorHeaders.EPOCH)).hasValue("3");
        assertThat(equal.statusCode()).as("epoch equal").isEqualTo(200);
        assertThat(newer.statusCode()).as("epoch one above: the owner lags").isEqualTo(503);
        assertThat(newer.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(OwnerClient.json(newer).path("code").asText()).isEqualTo("GATEWAY_ROUTING_FAILURE");
        assertThat(OwnerClient.json(newer).path("details").path("reason").asText())
                .isEqualTo("owner-lagging");
        assertThat(malformed.statusCode()).isEqualTo(400);
        assertThat(ring.owner().requests()).extracting(RecordedRequest::status).containsSubsequence(421, 200, 503, 400);
    }

    @Test
    void shouldRefuseAWriteWithAStaleFenceBeforeWritingAnything() throws Exception {
        client.postJson(
                "/admin/ownership", "{\"namespace\":\"" + MINE + "\",\"owner\":\"owner-0\",\"epoch\":2,\"fence\":5}");
        String path = "/api/v1/namespaces/" + MINE + "/objects/doc";

        HttpResponse<byte[]> stale = client.send(client.request(path)
                .header(SpectorHeaders.EPOCH, "2")
                .header(SpectorHeaders.FENCE, "4")
                .PUT(HttpRequest.BodyPublishers.ofString("v1"))
                .build());
        HttpResponse<byte[]> afterStale = client.get(path);
        HttpResponse<byte[]> current = client.send(client.request(path)
                .header(SpectorHeaders.EPOCH, "2")
                .header(SpectorHeaders.FENCE, "5")
                .PUT(HttpRequest.BodyPublishers.ofString("v2"))
                .build());

        assertThat(stale.statusCode()).as("fence one below").isEqualTo(421);
        assertThat(stale.headers().firstValue(SpectorHeaders.FENCE)).hasValue("5");
        assertThat(OwnerClient.json(stale).path("details").path("reason").asText())
                .isEqualTo("stale-fence");
        assertThat(afterStale.statusCode()).as("nothing was written").isEqualTo(404);
        assertThat(current.statusCode()).as("fence equal").isEqualTo(201);
    }

    @Test
    void shouldMoveOwnershipWithTheAdminApi() throws Exception {
        assertThat(echo(MINE).statusCode()).isEqualTo(200);

        HttpResponse<byte[]> moved = client.postJson(
                "/admin/ownership", "{\"tenant\":null,\"namespace\":\"" + MINE + "\",\"owner\":\"owner-2\"}");
        HttpResponse<byte[]> afterMove = echo(MINE);
        HttpResponse<byte[]> backwards = client.postJson(
                "/admin/ownership", "{\"namespace\":\"" + MINE + "\",\"owner\":\"owner-0\",\"epoch\":1}");
        HttpResponse<byte[]> back =
                client.postJson("/admin/ownership", "{\"namespace\":\"" + MINE + "\",\"owner\":\"owner-0\"}");
        HttpResponse<byte[]> afterBack = echo(MINE, SpectorHeaders.EPOCH, "3", SpectorHeaders.FENCE, "3");

        JsonNode view = OwnerClient.json(moved);
        assertThat(moved.statusCode()).isEqualTo(200);
        assertThat(view.path("owner").asText()).isEqualTo("owner-2");
        assertThat(view.path("epoch").asLong())
                .as("epoch defaults to the view's + 1")
                .isEqualTo(2);
        assertThat(view.path("fence").asLong())
                .as("fence defaults to the epoch")
                .isEqualTo(2);
        assertThat(view.path("published").asBoolean()).as("no Redis configured").isFalse();
        assertThat(afterMove.statusCode()).isEqualTo(421);
        assertThat(afterMove.headers().firstValue(SpectorHeaders.OWNER)).hasValue("owner-2");
        assertThat(afterMove.headers().firstValue(SpectorHeaders.EPOCH)).hasValue("2");
        assertThat(afterMove.headers().firstValue(SpectorHeaders.FENCE)).hasValue("2");
        assertThat(backwards.statusCode()).as("ownership never moves backwards").isEqualTo(400);
        assertThat(OwnerClient.json(back).path("epoch").asLong()).isEqualTo(3);
        assertThat(afterBack.statusCode()).isEqualTo(200);
    }

    @Test
    void shouldRefuseMalformedOwnershipBodies() throws Exception {
        assertThat(client.postJson("/admin/ownership", "{\"owner\":\"owner-1\"}")
                        .statusCode())
                .as("namespace missing")
                .isEqualTo(400);
        assertThat(client.postJson("/admin/ownership", "{\"namespace\":\"a\"}").statusCode())
                .as("owner missing")
                .isEqualTo(400);
        assertThat(client.postJson("/admin/ownership", "{\"namespace\":\"a\",\"owner\":\"o\",\"epoch\":-1}")
                        .statusCode())
                .as("negative epoch")
                .isEqualTo(400);
        assertThat(client.postJson("/admin/ownership", "[]").statusCode())
                .as("not an object")
                .isEqualTo(400);
        assertThat(client.get("/admin/nothing").statusCode()).isEqualTo(404);
    }

    @Test
    void shouldAnswerAdminCallsFromLoopbackOnly() throws Exception {
        Optional<InetAddress> external = nonLoopbackAddress();
        assumeThat(external).as("a non-loopback IPv4 address on this machine").isPresent();
        ring.restart(OwnerSpec.builder("owner-0")
                .bindHost("0.0.0.0")
                .ringMembers(RingOwnerExtension.MEMBERS)
                .build());
        OwnerClient remote = new OwnerClient(URI.create(
                "http://" + external.get().getHostAddress() + ":" + ring.owner().port()));

        HttpResponse<byte[]> refused = remote.get("/admin/requests");
        HttpResponse<byte[]> api = remote.get("/health");
        HttpResponse<byte[]> local = new OwnerClient(ring.owner()).get("/admin/requests");

        assertThat(refused.statusCode()).as("admin from " + external.get()).isEqualTo(403);
        assertThat(OwnerClient.json(refused).path("code").asText()).isEqualTo("FORBIDDEN");
        assertThat(api.statusCode()).isEqualTo(200);
        assertThat(local.statusCode()).isEqualTo(200);
    }

    private static Optional<InetAddress> nonLoopbackAddress() throws Exception {
        for (NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!nif.isUp() || nif.isLoopback()) {
                continue;
            }
            for (InetAddress a : Collections.list(nif.getInetAddresses())) {
                if (a instanceof Inet4Address && !a.isLoopbackAddress()) {
                    return Optional.of(a);
                }
            }
        }
        return Optional.empty();
    }
}
