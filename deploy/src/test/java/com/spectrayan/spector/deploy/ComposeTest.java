package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
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
 * The three-owner compose cell ({@code deploy/compose/cell-3node}): owners unpublished, the gateway
 * published on 7070 with the three owners as its ring, a worker whose token the gateway knows by
 * its SHA-256, every image built from the Dockerfile target of its process.
 */
final class ComposeTest {
    private static final String DIR = "deploy/compose/cell-3node";
    private static final List<String> OWNERS = List.of("owner-0", "owner-1", "owner-2");
    private static final List<String> GATEWAYS = List.of("gateway-a", "gateway-b");

    private static JsonNode compose() throws Exception {
        return new com.fasterxml.jackson.dataformat.yaml.YAMLMapper().readTree(Repo.read(DIR + "/docker-compose.yml"));
    }

    private static JsonNode service(JsonNode compose, String name) {
        JsonNode s = compose.path("services").path(name);
        assertThat(s.isObject()).as("compose has a service '%s'", name).isTrue();
        return s;
    }

    private static String env(JsonNode service, String key) {
        JsonNode env = service.path("environment");
        assertThat(env.isObject()).as("environment is a map").isTrue();
        assertThat(env.has(key)).as("%s is set", key).isTrue();
        return env.path(key).asText();
    }

    private static Map<String, String> members(String ring) {
        Map<String, String> members = new LinkedHashMap<>();
        for (String m : ring.split(",", -1)) {
            int eq = m.indexOf('=');
            members.put(m.substring(0, eq), m.substring(eq + 1));
        }
        return members;
    }

    @Test
    void owners_areNotPublished() throws Exception {
        JsonNode compose = compose();
        List<String> unpublished = new ArrayList<>(OWNERS);
        unpublished.addAll(List.of("redis", "upstream", "worker-1"));

        for (String name : unpublished) {
            assertThat(service(compose, name).has("ports"))
                    .as("%s publishes no port: only the gateway is reachable from outside", name)
                    .isFalse();
        }
    }

    @Test
    void twoGatewayReplicas_publish7070And7080_andAnswerToTheOneNameGateway() throws Exception {
        JsonNode compose = compose();
        Map<String, String> published = Map.of("gateway-a", "7070:7070", "gateway-b", "7080:7070");
        for (Map.Entry<String, String> e : published.entrySet()) {
            JsonNode replica = service(compose, e.getKey());
            JsonNode ports = replica.path("ports");
            assertThat(ports.size()).as("%s publishes one port", e.getKey()).isEqualTo(1);
            assertThat(ports.get(0).asText())
                    .as("%s's published port", e.getKey())
                    .isEqualTo(e.getValue());
            assertThat(replica.path("networks")
                            .path("default")
                            .path("aliases")
                            .get(0)
                            .asText())
                    .as("%s answers to the name the worker dials, as a Service's pods do", e.getKey())
                    .isEqualTo("gateway");
        }
    }

    @Test
    void gatewayReplicas_shareOnePeerSecret_andAdvertiseTheirOwnPeerAddress() throws Exception {
        JsonNode compose = compose();
        String a = env(service(compose, "gateway-a"), "SPECTOR_CELL_PEER_SECRET");
        assertThat(a).as("a peer secret of at least 32 chars").hasSizeGreaterThanOrEqualTo(32);
        assertThat(env(service(compose, "gateway-b"), "SPECTOR_CELL_PEER_SECRET"))
                .as("one secret for the cell")
                .isEqualTo(a);
        for (String replica : GATEWAYS) {
            assertThat(env(service(compose, replica), "SPECTOR_SERVER_PEER_ADDRESS"))
                    .as("%s advertises its own service name and the peer port", replica)
                    .isEqualTo(replica + ":7090");
            assertThat(env(service(compose, replica), "SPECTOR_ROUTING_REDIS_URI"))
                    .as("the replicas find each other's links in the cell's Redis")
                    .isEqualTo("redis://redis:6379");
        }
    }

    @Test
    void ringMembers_nameTheThreeOwnerServices() throws Exception {
        JsonNode compose = compose();
        Map<String, String> ring = members(env(service(compose, "gateway-a"), "SPECTOR_CELL_RING_MEMBERS"));

        for (String replica : GATEWAYS) {
            assertThat(env(service(compose, replica), "SPECTOR_CELL_ROLE")).isEqualTo("gateway");
            assertThat(env(service(compose, replica), "SPECTOR_CELL_RING_MEMBERS"))
                    .as("both replicas have one ring")
                    .isEqualTo(env(service(compose, "gateway-a"), "SPECTOR_CELL_RING_MEMBERS"));
        }
        assertThat(ring.keySet()).as("the ring's ids are the owner services").containsExactlyElementsOf(OWNERS);
        for (String owner : OWNERS) {
            assertThat(ring.get(owner))
                    .as("ring member %s is reached at its service name on 7070", owner)
                    .isEqualTo("http://" + owner + ":7070");
            JsonNode s = service(compose, owner);
            assertThat(env(s, "SPECTOR_CELL_NODE_ID")).as("%s's node id", owner).isEqualTo(owner);
            assertThat(env(s, "SPECTOR_CELL_RING_MEMBERS"))
                    .as("%s is told the gateway's ring", owner)
                    .isEqualTo(env(service(compose, "gateway-a"), "SPECTOR_CELL_RING_MEMBERS"));
        }
    }

    @Test
    void worker_dialsTheGatewayService() throws Exception {
        JsonNode compose = compose();
        URI gateway = URI.create(env(service(compose, "worker-1"), "SPECTOR_WORKER_GATEWAY"));

        assertThat(gateway.getScheme()).isEqualTo("ws");
        assertThat(gateway.getHost()).as("the worker dials the gateway service").isEqualTo("gateway");
        assertThat(gateway.getPort()).isEqualTo(7070);
        assertThat(gateway.getPath()).isEqualTo("/uplink");
        assertThat(env(service(compose, "worker-1"), "SPECTOR_WORKER_UPLINKS"))
                .as("two links, spread over the replicas' addresses")
                .isEqualTo("2");
    }

    @Test
    void gatewayTokenHash_isTheSha256OfTheWorkersToken() throws Exception {
        JsonNode compose = compose();
        JsonNode worker = service(compose, "worker-1");
        String token = env(worker, "SPECTOR_WORKER_TOKEN");
        String id = env(worker, "SPECTOR_WORKER_ID");
        String sha256 = HexFormat.of()
                .formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));

        for (String replica : GATEWAYS) {
            Map<String, String> tokens = members(env(service(compose, replica), "SPECTOR_UPLINK_TOKENS"));
            assertThat(tokens)
                    .as("%s knows worker %s by the SHA-256 of its token (spector.uplink.tokens)", replica, id)
                    .containsEntry(id, sha256);
            assertThat(env(service(compose, replica), "SPECTOR_UPLINK_TOKENS"))
                    .as("%s never holds the raw token", replica)
                    .doesNotContain(token);
        }
    }

    @Test
    void workerTarget_pointsAtTheUpstreamService() throws Exception {
        JsonNode compose = compose();
        String targets = env(service(compose, "worker-1"), "SPECTOR_WORKER_TARGETS");
        URI upstream = URI.create(members(targets).getOrDefault("echo", ""));

        assertThat(compose.path("services").has(upstream.getHost()))
                .as("the worker's target %s is a service of the cell", upstream)
                .isTrue();
        assertThat(env(service(compose, upstream.getHost()), "SPECTOR_CELL_NODE_ID"))
                .as("the upstream is an owner alone in its ring, so it serves every namespace")
                .isEqualTo(upstream.getHost());
    }

    @Test
    void everyBuiltImage_comesFromTheDockerfileTargetOfItsProcess() throws Exception {
        JsonNode compose = compose();
        Path dir = Repo.root().resolve(DIR);
        Map<String, String> expected = new LinkedHashMap<>();
        OWNERS.forEach(o -> expected.put(o, "owner"));
        expected.put("upstream", "owner");
        GATEWAYS.forEach(g -> expected.put(g, "gateway"));
        expected.put("worker-1", "worker");

        for (Map.Entry<String, String> e : expected.entrySet()) {
            JsonNode build = service(compose, e.getKey()).path("build");
            Path context = dir.resolve(build.path("context").asText()).normalize();
            Path dockerfile = context.resolve(build.path("dockerfile").asText()).normalize();

            assertThat(context)
                    .as("%s builds with the repository as its context", e.getKey())
                    .isEqualTo(Repo.root());
            assertThat(dockerfile)
                    .as("%s builds from deploy/docker/Dockerfile", e.getKey())
                    .isEqualTo(Repo.root().resolve("deploy/docker/Dockerfile"));
            assertThat(Files.isRegularFile(dockerfile)).isTrue();
            assertThat(build.path("target").asText())
                    .as("%s builds the %s target", e.getKey(), e.getValue())
                    .isEqualTo(e.getValue());
            Dockerfile.parse(Files.readString(dockerfile, StandardCharsets.UTF_8))
                    .stage(e.getValue());
        }
    }
}
