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
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
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

    /** The admin token of the tests that set one. */
    private static final String ADMIN_TOKEN = "scenario-admin-token-0123456789abcdef";

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

        assertThat(r.statusCode()).as("tenant/namespace hashes to this node").isEqualTo(200);
        assertThat(ring.owner().requests())
                .last()
                .extracting(RecordedRequest::tenant)
                .isEqualTo(tenantMine);
        HttpResponse<byte[]> contradicting =
                echo(THEIRS, SpectorHeaders.TENANT, tenantMine, SpectorHeaders.NAMESPACE, MINE);
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
        OwnerClient remote = restartForRemoteCallers(OwnerSpec.builder("owner-0"));

        HttpResponse<byte[]> refused = remote.get("/admin/requests");
        HttpResponse<byte[]> api = remote.get("/health");
        HttpResponse<byte[]> local = new OwnerClient(ring.owner()).get("/admin/requests");

        assertThat(refused.statusCode()).as("admin from another address").isEqualTo(403);
        assertThat(OwnerClient.json(refused).path("code").asText()).isEqualTo("FORBIDDEN");
        assertThat(OwnerClient.json(refused).path("details").path("reason").asText())
                .isEqualTo("admin-not-loopback");
        assertThat(refused.headers().firstValue("WWW-Authenticate"))
                .as("no token configured: no challenge")
                .isEmpty();
        assertThat(api.statusCode()).isEqualTo(200);
        assertThat(local.statusCode()).isEqualTo(200);
    }

    /** RFC 6750 §2.1 (the credentials), §3 and §3.1 (the challenge); RFC 9110 §11.6.1. */
    @Test
    void shouldAskEveryAdminCallerForTheTokenOnceOneIsSet_loopbackIncluded() throws Exception {
        ring.restart(OwnerSpec.builder("owner-0")
                .ringMembers(RingOwnerExtension.MEMBERS)
                .adminToken(ADMIN_TOKEN)
                .build());
        OwnerClient local = new OwnerClient(ring.owner());

        HttpResponse<byte[]> none = admin(local, "/admin/requests");
        HttpResponse<byte[]> wrong = admin(local, "/admin/requests", "Bearer " + ADMIN_TOKEN + "x");
        HttpResponse<byte[]> prefix = admin(local, "/admin/requests", "Bearer " + ADMIN_TOKEN.substring(1));
        HttpResponse<byte[]> basic = admin(local, "/admin/requests", "Basic " + ADMIN_TOKEN);
        HttpResponse<byte[]> right = admin(local, "/admin/requests", "Bearer " + ADMIN_TOKEN);
        HttpResponse<byte[]> anyCase = admin(local, "/admin/stats", "bEARER " + ADMIN_TOKEN);

        assertThat(none.statusCode()).as("loopback without the token").isEqualTo(401);
        assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"spector-admin\"");
        assertThat(none.headers().firstValue("Content-Type")).hasValue(Problem.CONTENT_TYPE);
        assertThat(OwnerClient.node(none)).isEqualTo("owner-0");
        JsonNode problem = OwnerClient.json(none);
        assertThat(problem.path("code").asText()).isEqualTo("UNAUTHENTICATED");
        assertThat(problem.path("status").asInt()).isEqualTo(401);
        assertThat(problem.path("details").path("reason").asText()).isEqualTo("admin-token");
        assertThat(new String(none.body(), StandardCharsets.UTF_8)).doesNotContain(ADMIN_TOKEN);
        for (HttpResponse<byte[]> r : List.of(wrong, prefix)) {
            assertThat(r.statusCode()).as("a wrong token").isEqualTo(401);
            assertThat(r.headers().firstValue("WWW-Authenticate"))
                    .hasValue("Bearer realm=\"spector-admin\", error=\"invalid_token\"");
            assertThat(OwnerClient.json(r).path("details").path("reason").asText())
                    .isEqualTo("admin-token");
        }
        assertThat(basic.statusCode())
                .as("another scheme carries no bearer token")
                .isEqualTo(401);
        assertThat(basic.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"spector-admin\"");
        assertThat(right.statusCode()).as("the token").isEqualTo(200);
        assertThat(anyCase.statusCode())
                .as("the scheme in any case, RFC 9110 §11.1")
                .isEqualTo(200);
        assertThat(local.get("/health").statusCode())
                .as("/health asks for no token")
                .isEqualTo(200);
        assertThat(local.get("/api/v1/namespaces/" + MINE + "/echo").statusCode())
                .as("/api/v1 asks for no token")
                .isEqualTo(200);
    }

    @Test
    void shouldRefuseAnAdminWriteWithoutTheToken_beforeApplyingIt_andKeepTheConnection() throws Exception {
        ring.restart(OwnerSpec.builder("owner-0")
                .ringMembers(RingOwnerExtension.MEMBERS)
                .adminToken(ADMIN_TOKEN)
                .build());
        String body = "{\"namespace\":\"" + MINE + "\",\"owner\":\"owner-2\"}";

        try (RawHttp raw = new RawHttp(ring.owner())) {
            raw.write("POST /admin/ownership HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body);
            RawHttp.Head refused = raw.readFinalHead();
            raw.readBody(refused);
            raw.write("GET /admin/ownership?namespace=" + MINE + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                    + ADMIN_TOKEN + "\r\n\r\n");
            RawHttp.Head view = raw.readFinalHead();
            JsonNode owner = OwnerClient.JSON.readTree(raw.readBody(view));

            assertThat(refused.status()).isEqualTo(401);
            assertThat(refused.header("WWW-Authenticate")).isEqualTo("Bearer realm=\"spector-admin\"");
            assertThat(view.status())
                    .as("the same connection, its body drained")
                    .isEqualTo(200);
            assertThat(owner.path("owner").asText())
                    .as("the refused write was not applied")
                    .isEqualTo("owner-0");
        }
    }

    @Test
    void shouldServeARemoteAdminCallerWithTheToken_andAskOneWithoutItForTheToken() throws Exception {
        OwnerClient remote =
                restartForRemoteCallers(OwnerSpec.builder("owner-0").adminToken(ADMIN_TOKEN));

        HttpResponse<byte[]> with = admin(remote, "/admin/requests", "Bearer " + ADMIN_TOKEN);
        HttpResponse<byte[]> without = admin(remote, "/admin/requests");

        assertThat(with.statusCode())
                .as("admin from another address with the token: the address does not matter")
                .isEqualTo(200);
        assertThat(without.statusCode()).as("without it: 401, not 403").isEqualTo(401);
        assertThat(without.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"spector-admin\"");
        assertThat(OwnerClient.json(without).path("details").path("reason").asText())
                .isEqualTo("admin-token");
        assertThat(remote.get("/health").statusCode()).isEqualTo(200);
    }

    /**
     * Restarts the owner from {@code spec} on every interface, in the three-member ring, and
     * returns a client that reaches it at a non-loopback IPv4 address of this machine; the test
     * is skipped on a machine without one.
     */
    private OwnerClient restartForRemoteCallers(OwnerSpec.Builder spec) throws Exception {
        Optional<InetAddress> external = nonLoopbackAddress();
        assumeThat(external).as("a non-loopback IPv4 address on this machine").isPresent();
        ring.restart(
                spec.bindHost("0.0.0.0").ringMembers(RingOwnerExtension.MEMBERS).build());
        return new OwnerClient(URI.create(
                "http://" + external.get().getHostAddress() + ":" + ring.owner().port()));
    }

    private static HttpResponse<byte[]> admin(OwnerClient c, String path, String... authorization) throws Exception {
        HttpRequest.Builder b = c.request(path).GET();
        for (String a : authorization) {
            b.header("Authorization", a);
        }
        return c.send(b.build());
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
