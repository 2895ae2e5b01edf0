package com.spectrayan.spector.owner;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Owners restarted after a namespace move, each on its own data directory, over loopback. Defends
 * review finding 1: the moves lived only in memory, so a restarted old owner served the moved
 * namespace from its stale copy beside the new owner (two writers, then acknowledged writes lost),
 * and a restarted new owner sent its requests back to the old owner at the old epoch (the
 * namespace down until an operator stepped in). Overrides are now saved in the data directory
 * ({@link OwnershipFile}) before the move answers and loaded before the owner binds its port; a
 * damaged file stops the start.
 */
final class OwnerRestartTest {
    private static final String CELL = "cell-r";
    private static final List<String> MEMBERS = List.of("owner-a", "owner-b");
    private static final KetamaRing RING = KetamaRing.of(1, MEMBERS);

    @TempDir
    Path dirA;

    @TempDir
    Path dirB;

    private ReferenceOwner a;
    private ReferenceOwner b;

    @BeforeEach
    void start() {
        a = ReferenceOwner.start(spec("owner-a", dirA));
        b = ReferenceOwner.start(spec("owner-b", dirB));
    }

    @AfterEach
    void stop() {
        a.close();
        b.close();
    }

    @Test
    void shouldKeepAnsweringMovedAfterTheOldOwnerRestarts() throws Exception {
        String ns = namespaceOf("owner-a");
        assertThat(put(new OwnerClient(a), ns, "one", "before the move").statusCode())
                .isEqualTo(201);
        move(ns);

        a.close();
        a = ReferenceOwner.start(spec("owner-a", dirA));

        HttpResponse<byte[]> atOld = get(new OwnerClient(a), ns, "one", "0");
        assertThat(atOld.statusCode())
                .as("no stale copy served beside the new owner: " + new String(atOld.body(), StandardCharsets.UTF_8))
                .isEqualTo(421);
        assertThat(atOld.headers().firstValue("X-Spector-Owner")).hasValue("owner-b");
        assertThat(atOld.headers().firstValue("X-Spector-Epoch")).hasValue("2");
        assertThat(put(new OwnerClient(a), ns, "two", "a write").statusCode())
                .as("nor a write taken")
                .isEqualTo(421);
    }

    @Test
    void shouldKeepServingTheMovedNamespaceAfterTheNewOwnerRestarts() throws Exception {
        String ns = namespaceOf("owner-a");
        assertThat(put(new OwnerClient(a), ns, "one", "before the move").statusCode())
                .isEqualTo(201);
        move(ns);

        b.close();
        b = ReferenceOwner.start(spec("owner-b", dirB));

        HttpResponse<byte[]> atNew = get(new OwnerClient(b), ns, "one", "2");
        assertThat(atNew.statusCode())
                .as("the new owner still owns it: " + new String(atNew.body(), StandardCharsets.UTF_8))
                .isEqualTo(200);
        assertThat(new String(atNew.body(), StandardCharsets.UTF_8)).isEqualTo("before the move");
        assertThat(b.guard().viewOf(RoutingKey.of(CELL, "acme", ns))).isEqualTo(new RouteEntry("owner-b", 2, 2));
    }

    @Test
    void shouldKeepAnOperatorsOverrideAfterARestart() throws Exception {
        HttpResponse<byte[]> set = new OwnerClient(a)
                .postJson(
                        "/admin/ownership",
                        "{\"tenant\":\"acme\",\"namespace\":\"orders\",\"owner\":\"owner-b\",\"epoch\":7}");
        assertThat(set.statusCode()).isEqualTo(200);

        a.close();
        a = ReferenceOwner.start(spec("owner-a", dirA));

        assertThat(OwnerClient.json(new OwnerClient(a).get("/admin/ownership?tenant=acme&namespace=orders"))
                        .path("epoch")
                        .asLong())
                .isEqualTo(7);
    }

    @Test
    void shouldRefuseToStartOnADamagedOwnershipFile() throws Exception {
        move(namespaceOf("owner-a"));
        a.close();
        Path file = dirA.resolve(OwnershipFile.NAME);
        byte[] saved = Files.readAllBytes(file);
        Files.write(file, Arrays.copyOf(saved, saved.length / 2)); // a torn write

        assertThatThrownBy(() -> a = ReferenceOwner.start(spec("owner-a", dirA)))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("not JSON")
                .hasMessageContaining("does not start without its namespace moves");
    }

    private void move(String ns) throws Exception {
        OwnerClient toA = new OwnerClient(a);
        HttpResponse<byte[]> moved = toA.postJson(
                "/admin/move",
                "{\"tenant\":\"acme\",\"namespace\":\"" + ns + "\",\"to\":\"owner-b\",\"toUrl\":\"" + b.baseUri()
                        + "\"}");
        assertThat(moved.statusCode())
                .as(new String(moved.body(), StandardCharsets.UTF_8))
                .isEqualTo(200);
    }

    private static OwnerSpec spec(String node, Path dataDir) {
        return OwnerSpec.builder(node)
                .cellId(CELL)
                .ringMembers(MEMBERS)
                .dataDir(dataDir)
                .build();
    }

    private static HttpResponse<byte[]> get(OwnerClient c, String ns, String key, String fence) throws Exception {
        return c.send(c.request(objectPath(ns, key))
                .header("X-Spector-Tenant", "acme")
                .header("X-Spector-Fence", fence)
                .GET()
                .build());
    }

    private static HttpResponse<byte[]> put(OwnerClient c, String ns, String key, String body) throws Exception {
        return c.send(c.request(objectPath(ns, key))
                .header("X-Spector-Tenant", "acme")
                .PUT(HttpRequest.BodyPublishers.ofString(body))
                .build());
    }

    private static String objectPath(String ns, String key) {
        return "/api/v1/namespaces/" + ns + "/objects/" + key;
    }

    private static String namespaceOf(String owner) {
        for (int i = 0; ; i++) {
            if (RING.ownerOf("acme/ns-" + i).equals(owner)) {
                return "ns-" + i;
            }
        }
    }
}
