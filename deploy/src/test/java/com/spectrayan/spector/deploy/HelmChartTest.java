package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Helm chart's rules (issue #5, seed 001 Phase 4), checked on its rendering with the default
 * values and with overrides: the gateway's own image, env, probes and resources; the owners'
 * StatefulSet, headless Service and gateway-only NetworkPolicy; the ring members built from the
 * owners' pod DNS names; {@code topology.mode=single-role} without any gateway object.
 */
final class HelmChartTest {
    private static final String ADR_JAVA_OPTS = "-Xms64m -Xmx256m -XX:+UseG1GC";

    private static List<JsonNode> split() {
        return Chart.render(Map.of());
    }

    private static List<JsonNode> render(Object... keyValues) {
        Map<String, Object> overrides = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            overrides.put((String) keyValues[i], keyValues[i + 1]);
        }
        return Chart.render(overrides);
    }

    private static List<JsonNode> ofKind(List<JsonNode> objects, String kind) {
        return objects.stream()
                .filter(o -> o.path("kind").asText().equals(kind))
                .toList();
    }

    private static Optional<JsonNode> find(List<JsonNode> objects, String kind, String name) {
        return ofKind(objects, kind).stream()
                .filter(o -> o.path("metadata").path("name").asText().equals(name))
                .findFirst();
    }

    private static JsonNode get(List<JsonNode> objects, String kind, String name) {
        return find(objects, kind, name)
                .orElseThrow(() -> new AssertionError("the chart renders no " + kind + " named " + name));
    }

    private static JsonNode gatewayDeployment(List<JsonNode> objects) {
        return get(objects, "Deployment", Chart.RELEASE + "-gateway");
    }

    private static JsonNode ownerStatefulSet(List<JsonNode> objects) {
        return get(objects, "StatefulSet", Chart.RELEASE + "-owner");
    }

    private static JsonNode container(JsonNode workload) {
        JsonNode containers =
                workload.path("spec").path("template").path("spec").path("containers");
        assertThat(containers.size())
                .as("%s has exactly one container", workload.path("metadata").path("name"))
                .isEqualTo(1);
        return containers.get(0);
    }

    private static Map<String, String> env(JsonNode container) {
        Map<String, String> env = new LinkedHashMap<>();
        for (JsonNode e : container.path("env")) {
            env.put(e.path("name").asText(), e.has("value") ? e.path("value").asText() : "<valueFrom>");
        }
        return env;
    }

    private static Map<String, String> labels(JsonNode labels) {
        Map<String, String> out = new HashMap<>();
        labels.properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
        return out;
    }

    private static Map<String, String> podLabels(JsonNode workload) {
        return labels(workload.path("spec").path("template").path("metadata").path("labels"));
    }

    /** Returns whether a selector's matchLabels select pods with these labels. */
    private static boolean selects(JsonNode selector, Map<String, String> podLabels) {
        Map<String, String> match = labels(selector.path("matchLabels"));
        return !match.isEmpty()
                && selector.path("matchExpressions").isMissingNode()
                && podLabels.entrySet().containsAll(match.entrySet());
    }

    @Test
    void everyObject_hasAKindANameAndTheReleaseNamespace() {
        for (List<JsonNode> objects : List.of(split(), render("topology.mode", "single-role"))) {
            assertThat(objects).isNotEmpty();
            for (JsonNode o : objects) {
                assertThat(o.path("apiVersion").asText())
                        .as("apiVersion of %s", o)
                        .isNotEmpty();
                assertThat(o.path("metadata").path("name").asText())
                        .as("name of %s", o)
                        .isNotEmpty();
                assertThat(o.path("metadata").path("namespace").asText())
                        .as("namespace of %s", o.path("metadata").path("name"))
                        .isEqualTo(Chart.NAMESPACE);
            }
        }
    }

    @Test
    void splitTopology_rendersTheGatewayDeploymentServiceAndHpa() {
        assertThat(Chart.values(Map.of()))
                .as("topology.mode defaults to split")
                .extractingByKey("topology")
                .isEqualTo(Map.of("mode", "split"));
        List<JsonNode> objects = split();

        assertThat(find(objects, "Deployment", "cell-a-gateway"))
                .as("gateway Deployment")
                .isPresent();
        assertThat(find(objects, "Service", "cell-a-gateway"))
                .as("gateway Service")
                .isPresent();
        assertThat(find(objects, "HorizontalPodAutoscaler", "cell-a-gateway"))
                .as("gateway HPA")
                .isPresent();
        assertThat(find(objects, "StatefulSet", "cell-a-owner"))
                .as("owner StatefulSet")
                .isPresent();
    }

    @Test
    void singleRoleTopology_rendersNoGatewayObjectAndNoGatewayOnlyPolicy() {
        List<JsonNode> objects = render("topology.mode", "single-role");

        for (JsonNode o : objects) {
            String kind = o.path("kind").asText();
            assertThat(o.path("metadata")
                            .path("labels")
                            .path("app.kubernetes.io/component")
                            .asText())
                    .as(
                            "single-role renders no gateway object, but %s %s is one",
                            kind, o.path("metadata").path("name"))
                    .isNotEqualTo("gateway");
            assertThat(o.path("metadata").path("name").asText())
                    .as("single-role renders no gateway object")
                    .doesNotContain("gateway");
        }
        assertThat(ofKind(objects, "HorizontalPodAutoscaler"))
                .as("single-role renders no HPA")
                .isEmpty();
        assertThat(ofKind(objects, "NetworkPolicy"))
                .as("single-role renders no gateway-only NetworkPolicy: no gateway would be let in")
                .isEmpty();
        assertThat(find(objects, "StatefulSet", "cell-a-owner"))
                .as("single-role still renders the owners")
                .isPresent();
        assertThat(find(objects, "Service", "cell-a-owner")).isPresent();
    }

    @Test
    void gatewayImage_isTheGatewaysOwn_neverTheOwners() {
        List<JsonNode> objects = render(
                "gateway.image.repository", "registry.example/spector-gateway",
                "gateway.image.tag", "abc123",
                "owner.image.repository", "registry.example/spector-owner",
                "owner.image.tag", "abc123");

        String gatewayImage =
                container(gatewayDeployment(objects)).path("image").asText();
        String ownerImage = container(ownerStatefulSet(objects)).path("image").asText();

        assertThat(gatewayImage)
                .as("the gateway runs gateway.image")
                .isEqualTo("registry.example/spector-gateway:abc123");
        assertThat(ownerImage).as("the owners run owner.image").isEqualTo("registry.example/spector-owner:abc123");
        assertThat(container(gatewayDeployment(split())).path("image").asText())
                .as("by default too, the gateway's image is not the owners'")
                .isNotEqualTo(container(ownerStatefulSet(split())).path("image").asText())
                .contains("spector-gateway");
    }

    @Test
    void gatewayEnv_hasRoleRingRedisAndJavaOpts_andNothingOfTheDataPlane() {
        List<JsonNode> objects = render("redis.uri", "redis://redis-master.cache:6379");
        Map<String, String> env = env(container(gatewayDeployment(objects)));

        assertThat(env).as("SPECTOR_CELL_ROLE").containsEntry("SPECTOR_CELL_ROLE", "gateway");
        assertThat(env)
                .as("Redis URI from values")
                .containsEntry("SPECTOR_ROUTING_REDIS_URI", "redis://redis-master.cache:6379");
        assertThat(env).as("ring members").containsKey("SPECTOR_CELL_RING_MEMBERS");
        assertThat(env).as("JAVA_OPTS default of the ADR").containsEntry("JAVA_OPTS", ADR_JAVA_OPTS);
        assertThat(env.keySet())
                .as("no SPECTOR_EMBEDDING_*, SPECTOR_GENERATION_* or SPECTOR_DATA_DIR on the gateway")
                .noneMatch(k -> k.startsWith("SPECTOR_EMBEDDING_")
                        || k.startsWith("SPECTOR_GENERATION_")
                        || k.equals("SPECTOR_DATA_DIR"));
        assertThat(String.join(" ", env.values()))
                .as("no Panama flags in the gateway's JAVA_OPTS")
                .doesNotContain("jdk.incubator.vector")
                .doesNotContain("--enable-native-access");
    }

    @Test
    void gatewayProbes_hitTheActuatorHealthGroupsOnPort7070() {
        JsonNode c = container(gatewayDeployment(split()));

        assertThat(c.path("livenessProbe").path("httpGet").path("path").asText())
                .as("liveness probe path")
                .isEqualTo("/actuator/health/liveness");
        assertThat(c.path("livenessProbe").path("httpGet").path("port").asInt())
                .as("liveness probe port")
                .isEqualTo(7070);
        assertThat(c.path("readinessProbe").path("httpGet").path("path").asText())
                .as("readiness probe path")
                .isEqualTo("/actuator/health/readiness");
        assertThat(c.path("readinessProbe").path("httpGet").path("port").asInt())
                .as("readiness probe port")
                .isEqualTo(7070);
        assertThat(c.path("ports").get(0).path("containerPort").asInt())
                .as("container port")
                .isEqualTo(7070);
    }

    @Test
    void gatewayResources_areTheAdrsAfterSoakExactly() {
        JsonNode resources = container(gatewayDeployment(split())).path("resources");

        assertThat(resources.path("requests").path("cpu").asText())
                .as("requests.cpu")
                .isEqualTo("250m");
        assertThat(resources.path("requests").path("memory").asText())
                .as("requests.memory")
                .isEqualTo("128Mi");
        assertThat(resources.path("limits").path("cpu").asText())
                .as("limits.cpu")
                .isEqualTo("1000m");
        assertThat(resources.path("limits").path("memory").asText())
                .as("limits.memory")
                .isEqualTo("256Mi");
    }

    @Test
    void gatewayStop_waitsForTheLoadBalancer_thenDrains_withinTheGracePeriod() {
        JsonNode deployment = gatewayDeployment(split());
        JsonNode container = container(deployment);
        String drain = env(container).get("SPECTOR_SERVER_DRAIN_TIMEOUT");
        assertThat(drain).as("the drain timeout reaches the gateway").isEqualTo("20s");
        JsonNode preStop =
                container.path("lifecycle").path("preStop").path("exec").path("command");
        assertThat(preStop.toString())
                .as("a preStop delay lets endpoints drop the pod before SIGTERM")
                .contains("sleep 5");
        int grace = deployment
                .path("spec")
                .path("template")
                .path("spec")
                .path("terminationGracePeriodSeconds")
                .asInt();
        assertThat(grace)
                .as("terminationGracePeriodSeconds covers the preStop delay (5 s) plus the drain (20 s)")
                .isGreaterThan(5 + 20);
    }

    @Test
    void gateway_mountsNoDataVolume() {
        JsonNode deployment = gatewayDeployment(split());
        JsonNode podSpec = deployment.path("spec").path("template").path("spec");

        for (JsonNode mount : container(deployment).path("volumeMounts")) {
            assertThat(mount.path("mountPath").asText())
                    .as("the gateway mounts no /data")
                    .isNotEqualTo("/data")
                    .doesNotStartWith("/data/");
        }
        for (JsonNode volume : podSpec.path("volumes")) {
            assertThat(volume.path("name").asText())
                    .as("the gateway has no data volume")
                    .isNotEqualTo("data");
            assertThat(volume.has("persistentVolumeClaim"))
                    .as("the gateway claims no persistent volume")
                    .isFalse();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 5})
    void ringMembers_nameTheOwnerStatefulSetsPodDnsNames(int replicas) {
        List<JsonNode> objects = render("owner.replicas", replicas);
        JsonNode sts = ownerStatefulSet(objects);
        String stsName = sts.path("metadata").path("name").asText();
        String serviceName = sts.path("spec").path("serviceName").asText();
        JsonNode headless = get(objects, "Service", serviceName);

        assertThat(sts.path("spec").path("replicas").asInt())
                .as("StatefulSet replicas")
                .isEqualTo(replicas);
        assertThat(headless.path("spec").path("clusterIP").asText())
                .as("the StatefulSet's service is headless")
                .isEqualTo("None");
        List<String> expected = IntStream.range(0, replicas)
                .mapToObj(i -> "owner-" + i + "=http://" + stsName + "-" + i + "." + serviceName + "." + Chart.NAMESPACE
                        + ".svc:7070")
                .toList();
        String gatewayRing = env(container(gatewayDeployment(objects))).get("SPECTOR_CELL_RING_MEMBERS");
        assertThat(gatewayRing)
                .as("the gateway's ring names every owner pod by its stable DNS name")
                .isEqualTo(String.join(",", expected));
        assertThat(env(container(sts)).get("SPECTOR_CELL_RING_MEMBERS"))
                .as("the owners are told the same ring")
                .isEqualTo(gatewayRing);
    }

    @Test
    void ownerNodeIds_areTheRingIdsOfTheirPods() {
        List<JsonNode> objects = split();
        JsonNode c = container(ownerStatefulSet(objects));
        Map<String, String> env = env(c);
        JsonNode podIndex = StreamSupport.stream(c.path("env").spliterator(), false)
                .filter(e -> e.path("name").asText().equals("POD_INDEX"))
                .findFirst()
                .orElseThrow(() -> new AssertionError("the owner container has no POD_INDEX"));

        assertThat(podIndex.path("valueFrom").path("fieldRef").path("fieldPath").asText())
                .as("POD_INDEX is the StatefulSet pod's ordinal")
                .isEqualTo("metadata.labels['apps.kubernetes.io/pod-index']");
        List<String> ringIds = new ArrayList<>();
        for (String member : env.getOrDefault("SPECTOR_CELL_RING_MEMBERS", "").split(",", -1)) {
            ringIds.add(member.substring(0, member.indexOf('=')));
        }
        List<String> nodeIds = IntStream.range(0, 3)
                .mapToObj(
                        i -> env.getOrDefault("SPECTOR_CELL_NODE_ID", "").replace("$(POD_INDEX)", Integer.toString(i)))
                .toList();
        assertThat(nodeIds).as("pod N's node id is ring member owner-N").isEqualTo(ringIds);
    }

    @Test
    void ownerService_isHeadlessAndSelectsTheOwnerPods() {
        List<JsonNode> objects = split();
        JsonNode service = get(objects, "Service", "cell-a-owner");
        Map<String, String> ownerPods = podLabels(ownerStatefulSet(objects));

        assertThat(service.path("spec").path("clusterIP").asText())
                .as("clusterIP: None")
                .isEqualTo("None");
        assertThat(labels(service.path("spec").path("selector")).entrySet())
                .as("the headless service selects the owner pods")
                .isSubsetOf(ownerPods.entrySet());
        assertThat(service.path("spec").path("ports").get(0).path("port").asInt())
                .isEqualTo(7070);
    }

    @Test
    void networkPolicy_letsOnlyGatewayPodsReachOwnersOn7070() {
        List<JsonNode> objects = split();
        Map<String, String> ownerPods = podLabels(ownerStatefulSet(objects));
        Map<String, String> gatewayPods = podLabels(gatewayDeployment(objects));
        List<JsonNode> policies = ofKind(objects, "NetworkPolicy");

        assertThat(Chart.values(Map.of()))
                .as("networkPolicy.ingressFromGatewayOnly and peerFromGatewayOnly default to true")
                .extractingByKey("networkPolicy")
                .isEqualTo(Map.of("ingressFromGatewayOnly", true, "peerFromGatewayOnly", true));
        List<JsonNode> ownerPolicies = policies.stream()
                .filter(p -> selects(p.path("spec").path("podSelector"), ownerPods))
                .toList();
        assertThat(ownerPolicies).as("one NetworkPolicy for the owners").hasSize(1);
        JsonNode spec = ownerPolicies.get(0).path("spec");
        assertThat(selects(spec.path("podSelector"), ownerPods))
                .as("the policy selects the owner pods")
                .isTrue();
        assertThat(selects(spec.path("podSelector"), gatewayPods))
                .as("the policy does not select the gateway pods")
                .isFalse();
        assertThat(spec.path("policyTypes").toString()).as("policyTypes").isEqualTo("[\"Ingress\"]");
        JsonNode ingress = spec.path("ingress");
        assertThat(ingress.size()).as("one ingress rule").isEqualTo(1);
        JsonNode from = ingress.get(0).path("from");
        assertThat(from.size()).as("one peer").isEqualTo(1);
        JsonNode peer = from.get(0);
        assertThat(peer.has("ipBlock") || peer.has("namespaceSelector"))
                .as("the peer is pods of this namespace only (no ipBlock, no namespaceSelector)")
                .isFalse();
        assertThat(selects(peer.path("podSelector"), gatewayPods))
                .as("the peer is the gateway pods")
                .isTrue();
        assertThat(selects(peer.path("podSelector"), ownerPods))
                .as("the peer is not the owner pods")
                .isFalse();
        JsonNode ports = ingress.get(0).path("ports");
        assertThat(ports.size()).as("one port").isEqualTo(1);
        assertThat(ports.get(0).path("port").asInt()).as("port").isEqualTo(7070);
        assertThat(ports.get(0).path("protocol").asText()).as("protocol").isEqualTo("TCP");
    }

    @Test
    void networkPolicy_switchedOff_rendersNone() {
        assertThat(ofKind(
                        render(
                                "networkPolicy.ingressFromGatewayOnly",
                                false,
                                "networkPolicy.peerFromGatewayOnly",
                                false),
                        "NetworkPolicy"))
                .isEmpty();
        assertThat(ofKind(render("networkPolicy.ingressFromGatewayOnly", false), "NetworkPolicy"))
                .as("the owners' policy off, the gateways' peer policy stays")
                .extracting(p -> p.path("metadata").path("name").asText())
                .containsExactly("cell-a-gateway-peer-from-gateway-only");
    }

    @Test
    void gatewayPeerPort_isOpenOnlyToGatewayPods_whileClientsReach7070And7443() {
        List<JsonNode> objects = split();
        Map<String, String> gatewayPods = podLabels(gatewayDeployment(objects));
        JsonNode policy = get(objects, "NetworkPolicy", "cell-a-gateway-peer-from-gateway-only");
        JsonNode spec = policy.path("spec");
        assertThat(selects(spec.path("podSelector"), gatewayPods))
                .as("selects the gateway pods")
                .isTrue();
        JsonNode ingress = spec.path("ingress");
        assertThat(ingress.size()).as("two rules: clients, and peers").isEqualTo(2);
        assertThat(ingress.get(0).has("from")).as("clients come from anywhere").isFalse();
        assertThat(ingress.get(0).path("ports").findValuesAsText("port")).containsExactly("7070", "7443");
        JsonNode peers = ingress.get(1);
        assertThat(peers.path("from").size()).isEqualTo(1);
        assertThat(selects(peers.path("from").get(0).path("podSelector"), gatewayPods))
                .as("the peer port's only peers are the gateway pods")
                .isTrue();
        assertThat(peers.path("ports").findValuesAsText("port")).containsExactly("7090");
    }

    @Test
    void gatewayReplicas_advertiseTheirPodIpOnThePeerPort_andGetThePeerSecretFromTheSecret() {
        List<JsonNode> objects = render("cell.peerSecret", "peer-secret-0123456789-0123456789-01");
        JsonNode gateway = container(gatewayDeployment(objects));
        Map<String, String> env = env(gateway);
        assertThat(env).containsEntry("SPECTOR_SERVER_PEER_PORT", "7090");
        JsonNode address = null;
        for (JsonNode e : gateway.path("env")) {
            if (e.path("name").asText().equals("SPECTOR_SERVER_PEER_ADDRESS")) {
                address = e;
            }
        }
        assertThat(address).as("SPECTOR_SERVER_PEER_ADDRESS is set").isNotNull();
        assertThat(java.util.Objects.requireNonNull(address)
                        .path("valueFrom")
                        .path("fieldRef")
                        .path("fieldPath")
                        .asText())
                .as("from the downward API: the pod's IP")
                .isEqualTo("status.podIP");
        assertThat(gateway.path("ports").findValuesAsText("containerPort")).contains("7090");
        assertThat(get(objects, "Secret", "cell-a-secrets")
                        .path("stringData")
                        .path("SPECTOR_CELL_PEER_SECRET")
                        .asText())
                .isEqualTo("peer-secret-0123456789-0123456789-01");
        assertThat(env).as("the secret is never an inline value").doesNotContainKey("SPECTOR_CELL_PEER_SECRET");
    }

    @Test
    void gatewayUplinksService_isHeadless_andSelectsTheGatewayPods() {
        List<JsonNode> objects = split();
        JsonNode service = get(objects, "Service", "cell-a-gateway-uplinks");
        assertThat(service.path("spec").path("clusterIP").asText())
                .as("headless")
                .isEqualTo("None");
        assertThat(labels(service.path("spec").path("selector")).entrySet())
                .as("it selects the gateway pods")
                .isSubsetOf(podLabels(gatewayDeployment(objects)).entrySet());
        assertThat(service.path("spec").path("ports").findValuesAsText("port")).containsExactly("7070");
    }

    @Test
    void gatewayService_selectsTheGatewayPodsOn7070() {
        List<JsonNode> objects = split();
        JsonNode service = get(objects, "Service", "cell-a-gateway");

        assertThat(service.path("spec").has("clusterIP"))
                .as("the gateway service is not headless")
                .isFalse();
        assertThat(labels(service.path("spec").path("selector")).entrySet())
                .as("the gateway service selects the gateway pods")
                .isSubsetOf(podLabels(gatewayDeployment(objects)).entrySet());
        assertThat(service.path("spec").path("ports").get(0).path("targetPort").asInt())
                .isEqualTo(7070);
    }

    @Test
    void hpa_scalesTheGatewayDeploymentOnCpu() {
        JsonNode hpa = get(split(), "HorizontalPodAutoscaler", "cell-a-gateway");

        assertThat(hpa.path("apiVersion").asText()).isEqualTo("autoscaling/v2");
        assertThat(hpa.path("spec").path("scaleTargetRef").path("kind").asText())
                .isEqualTo("Deployment");
        assertThat(hpa.path("spec").path("scaleTargetRef").path("name").asText())
                .isEqualTo("cell-a-gateway");
        JsonNode metric = hpa.path("spec").path("metrics").get(0);
        assertThat(metric.path("resource").path("name").asText())
                .as("scales on cpu")
                .isEqualTo("cpu");
        assertThat(metric.path("resource").path("target").path("type").asText()).isEqualTo("Utilization");
        assertThat(hpa.path("spec").path("minReplicas").asInt())
                .isLessThanOrEqualTo(hpa.path("spec").path("maxReplicas").asInt());
    }

    @Test
    void uplinkTokens_reachTheGatewayFromASecret() {
        String tokens = "worker-1=" + "ab".repeat(32);
        List<JsonNode> objects = render("uplink.tokens", tokens);
        JsonNode secret = get(objects, "Secret", "cell-a-secrets");
        JsonNode c = container(gatewayDeployment(objects));

        assertThat(secret.path("stringData").path("SPECTOR_UPLINK_TOKENS").asText())
                .as("the Secret holds the token hashes")
                .isEqualTo(tokens);
        assertThat(c.path("envFrom").get(0).path("secretRef").path("name").asText())
                .as("the gateway reads its env from that Secret")
                .isEqualTo("cell-a-secrets");
        assertThat(env(c)).as("the hashes are not inline in the Deployment").doesNotContainKey("SPECTOR_UPLINK_TOKENS");
    }

    @Test
    void gatewayAndOwners_runAsNonRoot() {
        List<JsonNode> objects = split();
        for (JsonNode workload : List.of(gatewayDeployment(objects), ownerStatefulSet(objects))) {
            JsonNode sc = workload.path("spec").path("template").path("spec").path("securityContext");
            assertThat(sc.path("runAsNonRoot").asBoolean())
                    .as("%s runs as non-root", workload.path("metadata").path("name"))
                    .isTrue();
            assertThat(sc.path("runAsUser").asInt()).isPositive();
        }
    }

    @Test
    void worker_isOffByDefault_andWhenOnDialsTheHeadlessGatewayServiceWithTwoLinks() {
        assertThat(find(split(), "Deployment", "cell-a-worker"))
                .as("no worker by default")
                .isEmpty();

        List<JsonNode> objects =
                render("worker.enabled", true, "worker.token", "t0ken", "worker.targets", "echo=http://echo:8080");
        Map<String, String> env = env(container(get(objects, "Deployment", "cell-a-worker")));

        assertThat(env)
                .as("the headless Service: its name resolves to every gateway pod, so the links spread")
                .containsEntry(
                        "SPECTOR_WORKER_GATEWAY", "ws://cell-a-gateway-uplinks." + Chart.NAMESPACE + ".svc:7070/uplink")
                .containsEntry("SPECTOR_WORKER_UPLINKS", "2")
                .containsEntry("SPECTOR_WORKER_TARGETS", "echo=http://echo:8080")
                .doesNotContainKey("SPECTOR_WORKER_TOKEN")
                .doesNotContainKey("SPECTOR_WORKER_CA_FILE");
        assertThat(get(objects, "Secret", "cell-a-worker")
                        .path("stringData")
                        .path("SPECTOR_WORKER_TOKEN")
                        .asText())
                .isEqualTo("t0ken");
        assertThat(find(objects, "Secret", "cell-a-worker-ca"))
                .as("no CA secret without a CA")
                .isEmpty();
    }

    @Test
    void worker_overWss_withAPrivateCa_mountsItAndNamesTheFile() {
        String ca = "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n";
        List<JsonNode> objects = render(
                "worker.enabled", true,
                "worker.token", "t0ken",
                "worker.targets", "echo=http://echo:8080",
                "worker.gateway", "wss://gw.example.com/uplink",
                "worker.caPem", ca);
        JsonNode deployment = get(objects, "Deployment", "cell-a-worker");
        JsonNode worker = container(deployment);
        assertThat(env(worker))
                .containsEntry("SPECTOR_WORKER_GATEWAY", "wss://gw.example.com/uplink")
                .containsEntry("SPECTOR_WORKER_CA_FILE", "/etc/spector/ca/ca.pem");
        assertThat(get(objects, "Secret", "cell-a-worker-ca")
                        .path("stringData")
                        .path("ca.pem")
                        .asText())
                .isEqualTo(ca);
        assertThat(worker.path("volumeMounts").findValuesAsText("mountPath")).containsExactly("/etc/spector/ca");
        assertThat(deployment
                        .path("spec")
                        .path("template")
                        .path("spec")
                        .path("volumes")
                        .findValuesAsText("secretName"))
                .containsExactly("cell-a-worker-ca");
    }
}
