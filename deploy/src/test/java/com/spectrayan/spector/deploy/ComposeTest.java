package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.deploy.Compose.Port;
import com.spectrayan.spector.deploy.Compose.Service;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The three-owner compose cell ({@code deploy/compose/cell-3node}), read into {@link Compose}'s
 * typed model: owners unpublished, the gateway replicas published on 7070 and 7080 with the three
 * owners as their ring, a worker whose token the gateway knows by its SHA-256, every image built
 * from the Dockerfile target of its process.
 */
final class ComposeTest {
    private static final String DIR = "deploy/compose/cell-3node";
    private static final List<String> OWNERS = List.of("owner-0", "owner-1", "owner-2");
    private static final List<String> GATEWAYS = List.of("gateway-a", "gateway-b");

    /** The port the gateway image listens on (spector.server.port's default; the file sets no other). */
    private static final int GATEWAY_PORT = 7070;

    private static Compose compose() {
        return Compose.parse(Repo.read(DIR + "/docker-compose.yml"));
    }

    private static String env(Service service, String key) {
        String value = service.env().get(key);
        assertThat(value).as("%s is set", key).isNotNull();
        return java.util.Objects.requireNonNull(value, key);
    }

    private static Map<String, String> members(String ring) {
        Map<String, String> members = new LinkedHashMap<>();
        for (String m : ring.split(",", -1)) {
            int eq = m.indexOf('=');
            assertThat(eq).as("name=value: %s", m).isPositive();
            assertThat(members.put(m.substring(0, eq), m.substring(eq + 1)))
                    .as("%s listed once", m.substring(0, eq))
                    .isNull();
        }
        return members;
    }

    @Test
    void composeFile_readsIntoTheModel_andTheModelRefusesWhatComposeWouldNotMean() {
        assertThat(compose().name()).isEqualTo("spector-cell-3node");
        assertThat(compose().services().keySet())
                .containsExactlyInAnyOrder(
                        "redis", "owner-0", "owner-1", "owner-2", "gateway-a", "gateway-b", "upstream", "worker-1");
        assertThatThrownBy(() -> Compose.parse("name: x\nservices:\n  a:\n    enviroment: {A: b}\n"))
                .as("a misspelt key")
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("enviroment");
        assertThatThrownBy(() -> Compose.parse("name: x\nservices:\n  a:\n    environment: [A=b]\n"))
                .as("the list form of environment, which the tests do not read")
                .isInstanceOf(UncheckedIOException.class);
        assertThatThrownBy(() -> Compose.parse("name: x\nservices:\n  a: {image: i}\n  a: {image: j}\n"))
                .as("a service given twice")
                .isInstanceOf(UncheckedIOException.class);
        assertThatThrownBy(() -> Port.parse("7070"))
                .as("a port without its host side")
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(Port.parse("7080:7070")).isEqualTo(new Port(7080, 7070));
    }

    @Test
    void owners_areNotPublished() {
        Compose compose = compose();
        List<String> unpublished = new ArrayList<>(OWNERS);
        unpublished.addAll(List.of("redis", "upstream", "worker-1"));

        for (String name : unpublished) {
            assertThat(compose.service(name).ports())
                    .as("%s publishes no port: only the gateway is reachable from outside", name)
                    .isNull();
        }
    }

    /**
     * The owners run in separate containers, so a move's import between them is a non-loopback
     * admin call: they share one admin token (docs/OPERATIONS.md, "Moving a namespace").
     */
    @Test
    void owners_shareOneAdminToken() {
        Compose compose = compose();
        String token = env(compose.service(OWNERS.get(0)), "SPECTOR_OWNER_ADMIN_TOKEN");
        for (String name : OWNERS) {
            assertThat(env(compose.service(name), "SPECTOR_OWNER_ADMIN_TOKEN"))
                    .as(name)
                    .isEqualTo(token);
        }
        assertThat(token.length()).as("within the owner's bounds").isBetween(16, 256);
    }

    @Test
    void twoGatewayReplicas_publish7070And7080_andAnswerToTheOneNameGateway() {
        Compose compose = compose();
        Map<String, Port> published =
                Map.of("gateway-a", new Port(7070, GATEWAY_PORT), "gateway-b", new Port(7080, GATEWAY_PORT));
        for (Map.Entry<String, Port> e : published.entrySet()) {
            Service replica = compose.service(e.getKey());
            assertThat(replica.published())
                    .as(
                            "%s publishes one port, host %d to the gateway's %d",
                            e.getKey(), e.getValue().published(), GATEWAY_PORT)
                    .containsExactly(e.getValue());
            assertThat(replica.env())
                    .as("the gateway listens on its default port")
                    .doesNotContainKey("SPECTOR_SERVER_PORT");
            assertThat(replica.network("default").aliases())
                    .as("%s answers to the name the worker dials, as a Service's pods do", e.getKey())
                    .containsExactly("gateway");
        }
    }

    @Test
    void gatewayReplicas_shareOnePeerSecret_andAdvertiseTheirOwnPeerAddress() {
        Compose compose = compose();
        String a = env(compose.service("gateway-a"), "SPECTOR_CELL_PEER_SECRET");
        assertThat(a).as("a peer secret of at least 32 chars").hasSizeGreaterThanOrEqualTo(32);
        assertThat(env(compose.service("gateway-b"), "SPECTOR_CELL_PEER_SECRET"))
                .as("one secret for the cell")
                .isEqualTo(a);
        for (String replica : GATEWAYS) {
            assertThat(env(compose.service(replica), "SPECTOR_SERVER_PEER_ADDRESS"))
                    .as("%s advertises its own service name and the peer port", replica)
                    .isEqualTo(replica + ":7090");
            assertThat(env(compose.service(replica), "SPECTOR_ROUTING_REDIS_URI"))
                    .as("the replicas find each other's links in the cell's Redis")
                    .isEqualTo("redis://redis:6379");
        }
    }

    @Test
    void ringMembers_nameTheThreeOwnerServices() {
        Compose compose = compose();
        String gatewayRing = env(compose.service("gateway-a"), "SPECTOR_CELL_RING_MEMBERS");
        Map<String, String> ring = members(gatewayRing);

        for (String replica : GATEWAYS) {
            assertThat(env(compose.service(replica), "SPECTOR_CELL_ROLE")).isEqualTo("gateway");
            assertThat(env(compose.service(replica), "SPECTOR_CELL_RING_MEMBERS"))
                    .as("both replicas have one ring")
                    .isEqualTo(gatewayRing);
        }
        assertThat(ring.keySet()).as("the ring's ids are the owner services").containsExactlyElementsOf(OWNERS);
        for (String owner : OWNERS) {
            assertThat(ring.get(owner))
                    .as("ring member %s is reached at its service name on 7070", owner)
                    .isEqualTo("http://" + owner + ":7070");
            Service s = compose.service(owner);
            assertThat(env(s, "SPECTOR_CELL_NODE_ID")).as("%s's node id", owner).isEqualTo(owner);
            assertThat(env(s, "SPECTOR_CELL_RING_MEMBERS"))
                    .as("%s is told the gateway's ring", owner)
                    .isEqualTo(gatewayRing);
        }
    }

    @Test
    void worker_dialsTheGatewayService() {
        Compose compose = compose();
        URI gateway = URI.create(env(compose.service("worker-1"), "SPECTOR_WORKER_GATEWAY"));

        assertThat(gateway.getScheme()).isEqualTo("ws");
        assertThat(gateway.getHost()).as("the worker dials the gateway service").isEqualTo("gateway");
        assertThat(gateway.getPort()).isEqualTo(GATEWAY_PORT);
        assertThat(gateway.getPath()).isEqualTo("/uplink");
        assertThat(env(compose.service("worker-1"), "SPECTOR_WORKER_UPLINKS"))
                .as("two links, spread over the replicas' addresses")
                .isEqualTo("2");
    }

    @Test
    void gatewayTokenHash_isTheSha256OfTheWorkersToken() throws Exception {
        Compose compose = compose();
        Service worker = compose.service("worker-1");
        String token = env(worker, "SPECTOR_WORKER_TOKEN");
        String id = env(worker, "SPECTOR_WORKER_ID");
        String sha256 = HexFormat.of()
                .formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));

        for (String replica : GATEWAYS) {
            Map<String, String> tokens = members(env(compose.service(replica), "SPECTOR_UPLINK_TOKENS"));
            assertThat(tokens)
                    .as("%s knows worker %s by the SHA-256 of its token (spector.uplink.tokens)", replica, id)
                    .containsEntry(id, sha256);
            assertThat(tokens.values())
                    .as("%s lists hashes only: 64 lower-case hex digits", replica)
                    .allMatch(h -> h.matches("[0-9a-f]{64}"));
            assertThat(compose.service(replica).env().values())
                    .as("%s never holds the raw token", replica)
                    .noneMatch(v -> v.contains(token));
        }
    }

    @Test
    void workerTarget_pointsAtTheUpstreamService() {
        Compose compose = compose();
        String targets = env(compose.service("worker-1"), "SPECTOR_WORKER_TARGETS");
        URI upstream = URI.create(members(targets).getOrDefault("echo", ""));

        assertThat(compose.services())
                .as("the worker's target %s is a service of the cell", upstream)
                .containsKey(upstream.getHost());
        assertThat(env(compose.service(upstream.getHost()), "SPECTOR_CELL_NODE_ID"))
                .as("the upstream is an owner alone in its ring, so it serves every namespace")
                .isEqualTo(upstream.getHost());
    }

    @Test
    void everyBuiltImage_comesFromTheDockerfileTargetOfItsProcess() throws Exception {
        Compose compose = compose();
        Path dir = Repo.root().resolve(DIR);
        Map<String, String> expected = new LinkedHashMap<>();
        OWNERS.forEach(o -> expected.put(o, "owner"));
        expected.put("upstream", "owner");
        GATEWAYS.forEach(g -> expected.put(g, "gateway"));
        expected.put("worker-1", "worker");

        for (Map.Entry<String, String> e : expected.entrySet()) {
            Compose.Build build = compose.service(e.getKey()).built();
            Path context = dir.resolve(build.context()).normalize();
            Path dockerfile = context.resolve(build.dockerfile()).normalize();

            assertThat(context)
                    .as("%s builds with the repository as its context", e.getKey())
                    .isEqualTo(Repo.root());
            assertThat(dockerfile)
                    .as("%s builds from deploy/docker/Dockerfile", e.getKey())
                    .isEqualTo(Repo.root().resolve("deploy/docker/Dockerfile"));
            assertThat(Files.isRegularFile(dockerfile)).isTrue();
            assertThat(build.target())
                    .as("%s builds the %s target", e.getKey(), e.getValue())
                    .isEqualTo(e.getValue());
            Dockerfile.parse(Files.readString(dockerfile, StandardCharsets.UTF_8))
                    .stage(e.getValue());
        }
    }
}
