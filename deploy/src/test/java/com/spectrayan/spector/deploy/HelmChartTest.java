package com.spectrayan.spector.deploy;

import static com.spectrayan.spector.deploy.HelmChart.NAMESPACE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodTemplateSpec;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServicePort;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.autoscaling.v2.MetricSpec;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPeer;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicySpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Helm chart's rules (issue #5, seed 001 Phase 4; issue #15), checked on Helm's own rendering
 * parsed into fabric8's typed objects, with the default values and with overrides: the gateway's
 * own image, env, probes and resources; the owners' StatefulSet, headless Service and gateway-only
 * NetworkPolicy; the ring members built from the owners' pod DNS names; {@code
 * topology.mode=single-role} without any gateway object. {@link HelmLintTest} lints the same chart.
 */
final class HelmChartTest {
    private static final String ADR_JAVA_OPTS = "-Xms64m -Xmx256m -XX:+UseG1GC";
    private static final String GATEWAY = HelmChart.RELEASE + "-gateway";
    private static final String OWNER = HelmChart.RELEASE + "-owner";
    private static final String TLS_SECRET = "cell-a-gateway-tls";
    private static final String TLS_DIR = "/etc/spector/tls";

    static Manifests split() {
        return HelmChart.template(Map.of());
    }

    static Manifests render(Object... keyValues) {
        Map<String, Object> overrides = new LinkedHashMap<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            overrides.put((String) keyValues[i], keyValues[i + 1]);
        }
        return HelmChart.template(overrides);
    }

    static Manifests tlsOn() {
        return render("gateway.tls.secretName", TLS_SECRET);
    }

    static Deployment gatewayDeployment(Manifests objects) {
        return objects.deployment(GATEWAY);
    }

    static StatefulSet ownerStatefulSet(Manifests objects) {
        return objects.statefulSet(OWNER);
    }

    static Container container(PodTemplateSpec template, String workload) {
        List<Container> containers = template.getSpec().getContainers();
        assertThat(containers).as("%s has exactly one container", workload).hasSize(1);
        return containers.get(0);
    }

    static Container container(Deployment d) {
        return container(d.getSpec().getTemplate(), d.getMetadata().getName());
    }

    static Container container(StatefulSet s) {
        return container(s.getSpec().getTemplate(), s.getMetadata().getName());
    }

    /** Returns the container's env by name; a {@code valueFrom} entry reads {@code <valueFrom>}. */
    static Map<String, String> env(Container container) {
        Map<String, String> env = new LinkedHashMap<>();
        for (EnvVar e : container.getEnv()) {
            String previous = env.put(e.getName(), e.getValueFrom() == null ? e.getValue() : "<valueFrom>");
            assertThat(previous).as("%s is set once", e.getName()).isNull();
        }
        return env;
    }

    static EnvVar envVar(Container container, String name) {
        return container.getEnv().stream()
                .filter(e -> e.getName().equals(name))
                .findFirst()
                .orElseThrow(() -> new AssertionError(container.getName() + " has no env " + name));
    }

    static Map<String, String> podLabels(PodTemplateSpec template) {
        return template.getMetadata().getLabels();
    }

    static List<Integer> ints(List<IntOrString> ports) {
        return ports.stream().map(IntOrString::getIntVal).toList();
    }

    static List<Integer> policyPorts(NetworkPolicyIngressRule rule) {
        return ints(rule.getPorts().stream().map(NetworkPolicyPort::getPort).toList());
    }

    /** Returns whether a selector's matchLabels (and nothing else) select pods with these labels. */
    static boolean selects(LabelSelector selector, Map<String, String> podLabels) {
        Map<String, String> match = selector.getMatchLabels();
        return !match.isEmpty()
                && selector.getMatchExpressions().isEmpty()
                && podLabels.entrySet().containsAll(match.entrySet());
    }

    @Test
    void everyObject_hasAKindANameAndTheReleaseNamespace() {
        for (Manifests objects : List.of(split(), render("topology.mode", "single-role"))) {
            assertThat(objects.all()).isNotEmpty();
            for (HasMetadata o : objects.all()) {
                assertThat(o.getApiVersion()).as("apiVersion of %s", o).isNotEmpty();
                assertThat(o.getMetadata().getName()).as("name of %s", o).isNotEmpty();
                assertThat(o.getMetadata().getNamespace())
                        .as("namespace of %s", o.getMetadata().getName())
                        .isEqualTo(NAMESPACE);
            }
        }
    }

    @Test
    void splitTopology_rendersTheGatewayDeploymentServiceAndHpa() {
        assertThat(HelmChart.defaults())
                .as("topology.mode defaults to split")
                .extractingByKey("topology")
                .isEqualTo(Map.of("mode", "split"));
        Manifests objects = split();

        assertThat(objects.find(Deployment.class, "cell-a-gateway"))
                .as("gateway Deployment")
                .isPresent();
        assertThat(objects.find(Service.class, "cell-a-gateway"))
                .as("gateway Service")
                .isPresent();
        assertThat(objects.find(HorizontalPodAutoscaler.class, "cell-a-gateway"))
                .as("gateway HPA")
                .isPresent();
        assertThat(objects.find(StatefulSet.class, "cell-a-owner"))
                .as("owner StatefulSet")
                .isPresent();
    }

    @Test
    void singleRoleTopology_rendersNoGatewayObjectAndNoGatewayOnlyPolicy() {
        Manifests objects = render("topology.mode", "single-role");

        for (HasMetadata o : objects.all()) {
            assertThat(o.getMetadata().getLabels())
                    .as(
                            "single-role renders no gateway object, but %s %s is one",
                            o.getKind(), o.getMetadata().getName())
                    .doesNotContainEntry("app.kubernetes.io/component", "gateway");
            assertThat(o.getMetadata().getName())
                    .as("single-role renders no gateway object")
                    .doesNotContain("gateway");
        }
        assertThat(objects.ofType(HorizontalPodAutoscaler.class))
                .as("single-role renders no HPA")
                .isEmpty();
        assertThat(objects.networkPolicies())
                .as("single-role renders no gateway-only NetworkPolicy: no gateway would be let in")
                .isEmpty();
        assertThat(objects.find(StatefulSet.class, "cell-a-owner"))
                .as("single-role still renders the owners")
                .isPresent();
        assertThat(objects.find(Service.class, "cell-a-owner")).isPresent();
    }

    @Test
    void gatewayImage_isTheGatewaysOwn_neverTheOwners() {
        Manifests objects = render(
                "gateway.image.repository", "registry.example/spector-gateway",
                "gateway.image.tag", "abc123",
                "owner.image.repository", "registry.example/spector-owner",
                "owner.image.tag", "abc123");

        String gatewayImage = container(gatewayDeployment(objects)).getImage();
        String ownerImage = container(ownerStatefulSet(objects)).getImage();

        assertThat(gatewayImage)
                .as("the gateway runs gateway.image")
                .isEqualTo("registry.example/spector-gateway:abc123");
        assertThat(ownerImage).as("the owners run owner.image").isEqualTo("registry.example/spector-owner:abc123");
        assertThat(container(gatewayDeployment(split())).getImage())
                .as("by default too, the gateway's image is not the owners'")
                .isNotEqualTo(container(ownerStatefulSet(split())).getImage())
                .contains("spector-gateway");
    }

    @Test
    void gatewayEnv_hasRoleRingRedisAndJavaOpts_andNothingOfTheDataPlane() {
        Manifests objects = render("redis.uri", "redis://redis-master.cache:6379");
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
    void gatewayProbes_hitTheActuatorHealthGroupsOnTheAdminPort() {
        Container c = container(gatewayDeployment(split()));

        assertThat(c.getLivenessProbe().getHttpGet().getPath())
                .as("liveness probe path")
                .isEqualTo("/actuator/health/liveness");
        assertThat(c.getLivenessProbe().getHttpGet().getPort().getStrVal())
                .as("liveness probe port: the admin listener's thread, never behind traffic")
                .isEqualTo("admin");
        assertThat(c.getReadinessProbe().getHttpGet().getPath())
                .as("readiness probe path")
                .isEqualTo("/actuator/health/readiness");
        assertThat(c.getReadinessProbe().getHttpGet().getPort().getStrVal())
                .as("readiness probe port")
                .isEqualTo("admin");
        assertThat(c.getPorts().get(0).getContainerPort()).as("container port").isEqualTo(7070);
        assertThat(c.getPorts()).as("the named admin port the probes use").anySatisfy(p -> {
            assertThat(p.getName()).isEqualTo("admin");
            assertThat(p.getContainerPort()).isEqualTo(7091);
        });
        assertThat(env(c)).containsEntry("SPECTOR_SERVER_ADMIN_PORT", "7091");
    }

    @Test
    void ownerProbes_hitTheOwnersHealthOnPort7070() {
        Container c = container(ownerStatefulSet(split()));

        for (var probe : List.of(c.getLivenessProbe(), c.getReadinessProbe())) {
            assertThat(probe.getHttpGet().getPath()).as("owner probe path").isEqualTo("/health");
            assertThat(probe.getHttpGet().getPort().getIntVal())
                    .as("owner probe port")
                    .isEqualTo(7070);
        }
    }

    @Test
    void gatewayResources_areTheAdrsAfterSoakExactly() {
        var resources = container(gatewayDeployment(split())).getResources();

        assertThat(String.valueOf(resources.getRequests().get("cpu")))
                .as("requests.cpu")
                .isEqualTo("250m");
        assertThat(String.valueOf(resources.getRequests().get("memory")))
                .as("requests.memory")
                .isEqualTo("128Mi");
        assertThat(String.valueOf(resources.getLimits().get("cpu")))
                .as("limits.cpu")
                .isEqualTo("1000m");
        assertThat(String.valueOf(resources.getLimits().get("memory")))
                .as("limits.memory")
                .isEqualTo("256Mi");
    }

    @Test
    void gatewayStop_waitsForTheLoadBalancer_thenDrains_withinTheGracePeriod() {
        Deployment deployment = gatewayDeployment(split());
        Container container = container(deployment);
        String drain = env(container).get("SPECTOR_SERVER_DRAIN_TIMEOUT");
        assertThat(drain).as("the drain timeout reaches the gateway").isEqualTo("20s");
        assertThat(container.getLifecycle())
                .as("a preStop delay lets endpoints drop the pod before SIGTERM")
                .isNotNull();
        assertThat(container.getLifecycle().getPreStop().getExec().getCommand())
                .as("a preStop delay lets endpoints drop the pod before SIGTERM")
                .containsExactly("sh", "-c", "sleep 5");
        Long grace = deployment.getSpec().getTemplate().getSpec().getTerminationGracePeriodSeconds();
        assertThat(grace)
                .as("terminationGracePeriodSeconds covers the preStop delay (5 s) plus the drain (20 s)")
                .isGreaterThan(5L + 20L);
    }

    @Test
    void gateway_mountsNoDataVolume() {
        for (Manifests objects : List.of(split(), tlsOn())) {
            Deployment deployment = gatewayDeployment(objects);

            for (VolumeMount mount : container(deployment).getVolumeMounts()) {
                assertThat(mount.getMountPath())
                        .as("the gateway mounts no /data")
                        .isNotEqualTo("/data")
                        .doesNotStartWith("/data/");
            }
            for (Volume volume : deployment.getSpec().getTemplate().getSpec().getVolumes()) {
                assertThat(volume.getName())
                        .as("the gateway has no data volume")
                        .isNotEqualTo("data");
                assertThat(volume.getPersistentVolumeClaim())
                        .as("the gateway claims no persistent volume")
                        .isNull();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 5})
    void ringMembers_nameTheOwnerStatefulSetsPodDnsNames(int replicas) {
        Manifests objects = render("owner.replicas", replicas);
        StatefulSet sts = ownerStatefulSet(objects);
        String stsName = sts.getMetadata().getName();
        String serviceName = sts.getSpec().getServiceName();
        Service headless = objects.service(serviceName);

        assertThat(sts.getSpec().getReplicas()).as("StatefulSet replicas").isEqualTo(replicas);
        assertThat(headless.getSpec().getClusterIP())
                .as("the StatefulSet's service is headless")
                .isEqualTo("None");
        List<String> expected = IntStream.range(0, replicas)
                .mapToObj(i -> "owner-" + i + "=http://" + stsName + "-" + i + "." + serviceName + "." + NAMESPACE
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
        Container c = container(ownerStatefulSet(split()));
        Map<String, String> env = env(c);
        EnvVar podIndex = envVar(c, "POD_INDEX");

        assertThat(podIndex.getValueFrom().getFieldRef().getFieldPath())
                .as("POD_INDEX is the StatefulSet pod's ordinal")
                .isEqualTo("metadata.labels['apps.kubernetes.io/pod-index']");
        assertThat(env.keySet().stream().toList().indexOf("POD_INDEX"))
                .as("POD_INDEX is defined before SPECTOR_CELL_NODE_ID, which refers to it as $(POD_INDEX)")
                .isLessThan(env.keySet().stream().toList().indexOf("SPECTOR_CELL_NODE_ID"));
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
        Manifests objects = split();
        Service service = objects.service("cell-a-owner");
        Map<String, String> ownerPods =
                podLabels(ownerStatefulSet(objects).getSpec().getTemplate());

        assertThat(service.getSpec().getClusterIP()).as("clusterIP: None").isEqualTo("None");
        assertThat(service.getSpec().getSelector().entrySet())
                .as("the headless service selects the owner pods")
                .isNotEmpty()
                .isSubsetOf(ownerPods.entrySet());
        assertThat(service.getSpec().getPorts().get(0).getPort()).isEqualTo(7070);
    }

    @Test
    void networkPolicy_letsOnlyGatewayPodsReachOwnersOn7070() {
        Manifests objects = split();
        Map<String, String> ownerPods =
                podLabels(ownerStatefulSet(objects).getSpec().getTemplate());
        Map<String, String> gatewayPods =
                podLabels(gatewayDeployment(objects).getSpec().getTemplate());

        assertThat(HelmChart.defaults())
                .as("networkPolicy.ingressFromGatewayOnly and peerFromGatewayOnly default to true")
                .extractingByKey("networkPolicy")
                .isEqualTo(Map.of("ingressFromGatewayOnly", true, "peerFromGatewayOnly", true));
        List<NetworkPolicy> ownerPolicies = objects.networkPolicies().stream()
                .filter(p -> selects(p.getSpec().getPodSelector(), ownerPods))
                .toList();
        assertThat(ownerPolicies).as("one NetworkPolicy for the owners").hasSize(1);
        NetworkPolicySpec spec = ownerPolicies.get(0).getSpec();
        assertThat(selects(spec.getPodSelector(), ownerPods))
                .as("the policy selects the owner pods")
                .isTrue();
        assertThat(selects(spec.getPodSelector(), gatewayPods))
                .as("the policy does not select the gateway pods")
                .isFalse();
        assertThat(spec.getPolicyTypes()).as("policyTypes").containsExactly("Ingress");
        List<NetworkPolicyIngressRule> ingress = spec.getIngress();
        assertThat(ingress).as("one ingress rule").hasSize(1);
        List<NetworkPolicyPeer> from = ingress.get(0).getFrom();
        assertThat(from).as("one peer").hasSize(1);
        NetworkPolicyPeer peer = from.get(0);
        assertThat(peer.getIpBlock() != null || peer.getNamespaceSelector() != null)
                .as("the peer is pods of this namespace only (no ipBlock, no namespaceSelector)")
                .isFalse();
        assertThat(peer.getPodSelector()).as("the peer is a pod selector").isNotNull();
        assertThat(selects(peer.getPodSelector(), gatewayPods))
                .as("the peer is the gateway pods")
                .isTrue();
        assertThat(selects(peer.getPodSelector(), ownerPods))
                .as("the peer is not the owner pods")
                .isFalse();
        List<NetworkPolicyPort> ports = ingress.get(0).getPorts();
        assertThat(ports).as("one port").hasSize(1);
        assertThat(ports.get(0).getPort().getIntVal()).as("port").isEqualTo(7070);
        assertThat(ports.get(0).getProtocol()).as("protocol").isEqualTo("TCP");
    }

    @Test
    void ownerAdminToken_isUnsetByDefault() {
        Manifests objects = split();

        assertThat(env(container(ownerStatefulSet(objects))))
                .as("no token: the admin API answers loopback callers only")
                .doesNotContainKey("SPECTOR_OWNER_ADMIN_TOKEN");
        assertThat(objects.find(io.fabric8.kubernetes.api.model.Secret.class, "cell-a-owner-admin"))
                .isEmpty();
        assertThat(objects.secret("cell-a-secrets").getStringData()).doesNotContainKey("SPECTOR_OWNER_ADMIN_TOKEN");
    }

    @Test
    void ownerAdminToken_reachesOnlyTheOwners_fromTheirOwnSecret_andLetsOwnerPodsReachEachOther() {
        String token = "chart-admin-token-0123456789";
        Manifests objects = render("owner.adminToken", token);
        Container owner = container(ownerStatefulSet(objects));
        EnvVar env = envVar(owner, "SPECTOR_OWNER_ADMIN_TOKEN");

        assertThat(objects.secret("cell-a-owner-admin").getStringData())
                .containsExactly(Map.entry("SPECTOR_OWNER_ADMIN_TOKEN", token));
        assertThat(env.getValue()).as("never an inline value").isNull();
        assertThat(env.getValueFrom().getSecretKeyRef().getName()).isEqualTo("cell-a-owner-admin");
        assertThat(env.getValueFrom().getSecretKeyRef().getKey()).isEqualTo("SPECTOR_OWNER_ADMIN_TOKEN");
        assertThat(env.getValueFrom().getSecretKeyRef().getOptional())
                .as("not optional: a pod without its token does not start")
                .isNotEqualTo(true);
        assertThat(objects.secret("cell-a-secrets").getStringData())
                .as("not in the Secret the gateway reads whole")
                .doesNotContainValue(token);
        Container gateway = container(gatewayDeployment(objects));
        assertThat(gateway.getEnvFrom())
                .extracting(
                        e -> e.getSecretRef() == null ? "" : e.getSecretRef().getName())
                .doesNotContain("cell-a-owner-admin");
        assertThat(env(gateway)).doesNotContainKey("SPECTOR_OWNER_ADMIN_TOKEN");
        assertOwnersReachEachOther(objects);
    }

    @Test
    void ownerAdminTokenSecret_pointsTheOwnersAtASecretOfYourOwn() {
        Manifests objects = render("owner.adminTokenSecret", "ops-owner-admin");
        EnvVar env = envVar(container(ownerStatefulSet(objects)), "SPECTOR_OWNER_ADMIN_TOKEN");

        assertThat(env.getValueFrom().getSecretKeyRef().getName()).isEqualTo("ops-owner-admin");
        assertThat(env.getValueFrom().getSecretKeyRef().getKey()).isEqualTo("SPECTOR_OWNER_ADMIN_TOKEN");
        assertThat(objects.find(io.fabric8.kubernetes.api.model.Secret.class, "cell-a-owner-admin"))
                .as("the chart makes no Secret of its own")
                .isEmpty();
        assertOwnersReachEachOther(objects);
    }

    @Test
    void ownerAdminToken_andASecretOfYourOwn_isRefused() {
        assertThatThrownBy(() -> render(
                        "owner.adminToken",
                        "chart-admin-token-0123456789",
                        "owner.adminTokenSecret",
                        "ops-owner-admin"))
                .hasMessageContaining("owner.adminToken and owner.adminTokenSecret are both set");
    }

    /** With an admin token the owners' policy has a second rule: owner pods, on 7070 (a move's import). */
    private static void assertOwnersReachEachOther(Manifests objects) {
        Map<String, String> ownerPods =
                podLabels(ownerStatefulSet(objects).getSpec().getTemplate());
        Map<String, String> gatewayPods =
                podLabels(gatewayDeployment(objects).getSpec().getTemplate());
        List<NetworkPolicyIngressRule> ingress = objects.get(
                        NetworkPolicy.class, "cell-a-owner-ingress-from-gateway-only")
                .getSpec()
                .getIngress();

        assertThat(ingress).as("the gateway rule, then the owners' own").hasSize(2);
        assertThat(selects(ingress.get(0).getFrom().get(0).getPodSelector(), gatewayPods))
                .isTrue();
        NetworkPolicyIngressRule owners = ingress.get(1);
        assertThat(owners.getFrom()).hasSize(1);
        assertThat(owners.getFrom().get(0).getIpBlock()).isNull();
        assertThat(owners.getFrom().get(0).getNamespaceSelector()).isNull();
        assertThat(selects(owners.getFrom().get(0).getPodSelector(), ownerPods))
                .as("the second rule's peers are the owner pods")
                .isTrue();
        assertThat(selects(owners.getFrom().get(0).getPodSelector(), gatewayPods))
                .isFalse();
        assertThat(policyPorts(owners)).containsExactly(7070);
    }

    @Test
    void networkPolicy_switchedOff_rendersNone() {
        assertThat(render("networkPolicy.ingressFromGatewayOnly", false, "networkPolicy.peerFromGatewayOnly", false)
                        .networkPolicies())
                .isEmpty();
        assertThat(render("networkPolicy.ingressFromGatewayOnly", false).networkPolicies())
                .as("the owners' policy off, the gateways' peer policy stays")
                .extracting(p -> p.getMetadata().getName())
                .containsExactly("cell-a-gateway-peer-from-gateway-only");
    }

    @Test
    void gatewayPeerPort_isOpenOnlyToGatewayPods_whileClientsReach7070And7443AndScrapers7091() {
        Manifests objects = split();
        Map<String, String> gatewayPods =
                podLabels(gatewayDeployment(objects).getSpec().getTemplate());
        NetworkPolicySpec spec = objects.get(NetworkPolicy.class, "cell-a-gateway-peer-from-gateway-only")
                .getSpec();
        assertThat(selects(spec.getPodSelector(), gatewayPods))
                .as("selects the gateway pods")
                .isTrue();
        assertThat(spec.getPolicyTypes()).as("policyTypes").containsExactly("Ingress");
        List<NetworkPolicyIngressRule> ingress = spec.getIngress();
        assertThat(ingress).as("two rules: clients, and peers").hasSize(2);
        assertThat(ingress.get(0).getFrom()).as("clients come from anywhere").isEmpty();
        assertThat(policyPorts(ingress.get(0))).containsExactly(7070, 7443, 7091);
        NetworkPolicyIngressRule peers = ingress.get(1);
        assertThat(peers.getFrom()).hasSize(1);
        assertThat(peers.getFrom().get(0).getPodSelector()).isNotNull();
        assertThat(peers.getFrom().get(0).getNamespaceSelector()).isNull();
        assertThat(peers.getFrom().get(0).getIpBlock()).isNull();
        assertThat(selects(peers.getFrom().get(0).getPodSelector(), gatewayPods))
                .as("the peer port's only peers are the gateway pods")
                .isTrue();
        assertThat(policyPorts(peers)).containsExactly(7090);
    }

    @Test
    void gatewayReplicas_advertiseTheirPodIpOnThePeerPort_andGetThePeerSecretFromTheSecret() {
        Manifests objects = render("cell.peerSecret", "peer-secret-0123456789-0123456789-01");
        Container gateway = container(gatewayDeployment(objects));
        Map<String, String> env = env(gateway);
        assertThat(env).containsEntry("SPECTOR_SERVER_PEER_PORT", "7090");
        EnvVar address = envVar(gateway, "SPECTOR_SERVER_PEER_ADDRESS");
        assertThat(address.getValueFrom().getFieldRef().getFieldPath())
                .as("from the downward API: the pod's IP")
                .isEqualTo("status.podIP");
        assertThat(gateway.getPorts())
                .extracting(ContainerPort::getContainerPort)
                .contains(7090);
        assertThat(objects.secret("cell-a-secrets").getStringData())
                .containsEntry("SPECTOR_CELL_PEER_SECRET", "peer-secret-0123456789-0123456789-01");
        assertThat(env).as("the secret is never an inline value").doesNotContainKey("SPECTOR_CELL_PEER_SECRET");
    }

    @Test
    void gatewayUplinksService_isHeadless_andSelectsTheGatewayPods() {
        Manifests objects = split();
        Service service = objects.service("cell-a-gateway-uplinks");
        assertThat(service.getSpec().getClusterIP()).as("headless").isEqualTo("None");
        assertThat(service.getSpec().getSelector().entrySet())
                .as("it selects the gateway pods")
                .isNotEmpty()
                .isSubsetOf(podLabels(gatewayDeployment(objects).getSpec().getTemplate())
                        .entrySet());
        assertThat(service.getSpec().getPorts())
                .extracting(ServicePort::getPort)
                .containsExactly(7070);
    }

    @Test
    void gatewayService_selectsTheGatewayPodsOn7070() {
        Manifests objects = split();
        Service service = objects.service("cell-a-gateway");

        assertThat(service.getSpec().getClusterIP())
                .as("the gateway service is not headless")
                .isNull();
        assertThat(service.getSpec().getSelector().entrySet())
                .as("the gateway service selects the gateway pods")
                .isNotEmpty()
                .isSubsetOf(podLabels(gatewayDeployment(objects).getSpec().getTemplate())
                        .entrySet());
        assertThat(service.getSpec().getPorts().get(0).getTargetPort().getIntVal())
                .isEqualTo(7070);
    }

    @Test
    void hpa_scalesTheGatewayDeploymentOnCpu() {
        Manifests objects = split();
        HorizontalPodAutoscaler hpa = objects.hpa("cell-a-gateway");

        assertThat(hpa.getApiVersion()).isEqualTo("autoscaling/v2");
        assertThat(hpa.getSpec().getScaleTargetRef().getKind()).isEqualTo("Deployment");
        assertThat(hpa.getSpec().getScaleTargetRef().getName()).isEqualTo("cell-a-gateway");
        assertThat(hpa.getSpec().getScaleTargetRef().getApiVersion()).isEqualTo("apps/v1");
        MetricSpec metric = hpa.getSpec().getMetrics().get(0);
        assertThat(metric.getResource().getName()).as("scales on cpu").isEqualTo("cpu");
        assertThat(metric.getResource().getTarget().getType()).isEqualTo("Utilization");
        assertThat(hpa.getSpec().getMinReplicas())
                .isLessThanOrEqualTo(hpa.getSpec().getMaxReplicas());
        assertThat(gatewayDeployment(objects).getSpec().getReplicas())
                .as("with the HPA on, the Deployment leaves replicas to it")
                .isNull();
        assertThat(gatewayDeployment(render("gateway.autoscaling.enabled", false))
                        .getSpec()
                        .getReplicas())
                .as("with the HPA off, gateway.replicas")
                .isEqualTo(2);
    }

    @Test
    void uplinkTokens_reachTheGatewayFromASecret() {
        String tokens = "worker-1=" + "ab".repeat(32);
        Manifests objects = render("uplink.tokens", tokens);
        Container c = container(gatewayDeployment(objects));

        assertThat(objects.secret("cell-a-secrets").getStringData())
                .as("the Secret holds the token hashes")
                .containsEntry("SPECTOR_UPLINK_TOKENS", tokens);
        assertThat(c.getEnvFrom().get(0).getSecretRef().getName())
                .as("the gateway reads its env from that Secret")
                .isEqualTo("cell-a-secrets");
        assertThat(env(c)).as("the hashes are not inline in the Deployment").doesNotContainKey("SPECTOR_UPLINK_TOKENS");
    }

    @Test
    void gatewayAndOwners_runAsNonRoot() {
        Manifests objects = split();
        for (PodTemplateSpec template : List.of(
                gatewayDeployment(objects).getSpec().getTemplate(),
                ownerStatefulSet(objects).getSpec().getTemplate())) {
            PodSecurityContext sc = template.getSpec().getSecurityContext();
            assertThat(sc.getRunAsNonRoot())
                    .as("%s runs as non-root", template.getMetadata().getLabels())
                    .isTrue();
            assertThat(sc.getRunAsUser()).isPositive();
        }
    }

    @Test
    void worker_isOffByDefault_andWhenOnDialsTheHeadlessGatewayServiceWithTwoLinks() {
        assertThat(split().find(Deployment.class, "cell-a-worker"))
                .as("no worker by default")
                .isEmpty();

        Manifests objects =
                render("worker.enabled", true, "worker.token", "t0ken", "worker.targets", "echo=http://echo:8080");
        Map<String, String> env = env(container(objects.deployment("cell-a-worker")));

        assertThat(env)
                .as("the headless Service: its name resolves to every gateway pod, so the links spread")
                .containsEntry(
                        "SPECTOR_WORKER_GATEWAY", "ws://cell-a-gateway-uplinks." + NAMESPACE + ".svc:7070/uplink")
                .containsEntry("SPECTOR_WORKER_UPLINKS", "2")
                .containsEntry("SPECTOR_WORKER_TARGETS", "echo=http://echo:8080")
                .doesNotContainKey("SPECTOR_WORKER_TOKEN")
                .doesNotContainKey("SPECTOR_WORKER_CA_FILE");
        assertThat(objects.secret("cell-a-worker").getStringData()).containsEntry("SPECTOR_WORKER_TOKEN", "t0ken");
        assertThat(objects.find(io.fabric8.kubernetes.api.model.Secret.class, "cell-a-worker-ca"))
                .as("no CA secret without a CA")
                .isEmpty();
    }

    @Test
    void worker_overWss_withAPrivateCa_mountsItAndNamesTheFile() {
        String ca = "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n";
        Manifests objects = render(
                "worker.enabled", true,
                "worker.token", "t0ken",
                "worker.targets", "echo=http://echo:8080",
                "worker.gateway", "wss://gw.example.com/uplink",
                "worker.caPem", ca);
        Deployment deployment = objects.deployment("cell-a-worker");
        Container worker = container(deployment);
        assertThat(env(worker))
                .containsEntry("SPECTOR_WORKER_GATEWAY", "wss://gw.example.com/uplink")
                .containsEntry("SPECTOR_WORKER_CA_FILE", "/etc/spector/ca/ca.pem");
        assertThat(objects.secret("cell-a-worker-ca").getStringData()).containsEntry("ca.pem", ca);
        assertThat(worker.getVolumeMounts())
                .extracting(VolumeMount::getMountPath)
                .containsExactly("/etc/spector/ca");
        assertThat(deployment.getSpec().getTemplate().getSpec().getVolumes())
                .extracting(v -> Optional.ofNullable(v.getSecret())
                        .map(s -> s.getSecretName())
                        .orElse(""))
                .containsExactly("cell-a-worker-ca");
    }

    @Test
    void gatewayTls_isOffByDefault() {
        Manifests objects = split();
        Deployment deployment = gatewayDeployment(objects);
        Container c = container(deployment);

        assertThat(HelmChart.defaults().get("gateway"))
                .as("gateway.tls defaults: no Secret, port 7443")
                .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.MAP)
                .containsEntry("tls", Map.of("secretName", "", "port", 7443));
        assertThat(env(c).keySet()).as("no TLS setting").noneMatch(k -> k.startsWith("SPECTOR_SERVER_TLS_"));
        assertThat(c.getPorts()).extracting(ContainerPort::getName).containsExactly("http", "peer", "admin");
        assertThat(deployment.getSpec().getTemplate().getSpec().getVolumes())
                .as("no Secret mounted")
                .allMatch(v -> v.getSecret() == null);
        for (String service : List.of("cell-a-gateway", "cell-a-gateway-uplinks")) {
            assertThat(objects.service(service).getSpec().getPorts())
                    .as("%s has no TLS port", service)
                    .extracting(ServicePort::getName)
                    .containsExactly("http");
        }
    }

    @Test
    void gatewayTls_mountsTheSecretReadOnlyAsADirectory_andPointsTheListenerAtItsFiles() {
        Deployment deployment = gatewayDeployment(tlsOn());
        Container c = container(deployment);
        var pod = deployment.getSpec().getTemplate().getSpec();

        List<Volume> secrets =
                pod.getVolumes().stream().filter(v -> v.getSecret() != null).toList();
        assertThat(secrets).as("one Secret volume").hasSize(1);
        Volume tls = secrets.get(0);
        assertThat(tls.getSecret().getSecretName()).isEqualTo(TLS_SECRET);
        assertThat(tls.getSecret().getItems())
                .as("the whole Secret: its kubernetes.io/tls keys tls.crt and tls.key become the files")
                .isEmpty();
        assertThat(tls.getSecret().getOptional())
                .as("not optional: no pod serves without its certificate")
                .isNotEqualTo(true);
        assertThat(tls.getSecret().getDefaultMode())
                .as("files readable by owner and group only")
                .isEqualTo(0440);
        assertThat(pod.getSecurityContext().getFsGroup())
                .as("the files' group is the gateway's (fsGroup), so uid 10001 reads them")
                .isEqualTo(10001L);
        assertThat(pod.getSecurityContext().getRunAsGroup())
                .isEqualTo(pod.getSecurityContext().getFsGroup());

        List<VolumeMount> mounts = c.getVolumeMounts().stream()
                .filter(m -> m.getName().equals(tls.getName()))
                .toList();
        assertThat(mounts).as("the Secret is mounted once").hasSize(1);
        VolumeMount mount = mounts.get(0);
        assertThat(mount.getMountPath()).isEqualTo(TLS_DIR);
        assertThat(mount.getReadOnly()).as("read-only").isTrue();
        assertThat(mount.getSubPath())
                .as("a directory, not subPath: a subPath mount never sees the renewed Secret")
                .isNullOrEmpty();
        assertThat(mount.getSubPathExpr()).isNullOrEmpty();

        assertThat(env(c))
                .as("spector.server.tls.certificate and private-key: the Secret's files in the mounted directory")
                .containsEntry("SPECTOR_SERVER_TLS_CERTIFICATE", mount.getMountPath() + "/tls.crt")
                .containsEntry("SPECTOR_SERVER_TLS_PRIVATE_KEY", mount.getMountPath() + "/tls.key")
                .containsEntry("SPECTOR_SERVER_TLS_PORT", "7443");
        assertThat(c.getSecurityContext().getReadOnlyRootFilesystem())
                .as("the root filesystem stays read-only")
                .isTrue();
    }

    @ParameterizedTest
    @ValueSource(ints = {7443, 8443})
    void gatewayTlsPort_isOnThePod_onBothServices_andOpenToClients(int port) {
        Manifests objects =
                port == 7443 ? tlsOn() : render("gateway.tls.secretName", TLS_SECRET, "gateway.tls.port", port);
        Container c = container(gatewayDeployment(objects));

        assertThat(c.getPorts())
                .as("the pod's TLS port")
                .filteredOn(p -> "https".equals(p.getName()))
                .singleElement()
                .satisfies(p -> {
                    assertThat(p.getContainerPort()).isEqualTo(port);
                    assertThat(p.getProtocol()).isEqualTo("TCP");
                });
        assertThat(env(c)).containsEntry("SPECTOR_SERVER_TLS_PORT", Integer.toString(port));
        for (String service : List.of("cell-a-gateway", "cell-a-gateway-uplinks")) {
            assertThat(objects.service(service).getSpec().getPorts())
                    .as("%s's TLS port", service)
                    .filteredOn(p -> "https".equals(p.getName()))
                    .singleElement()
                    .satisfies(p -> {
                        assertThat(p.getPort()).isEqualTo(port);
                        assertThat(p.getTargetPort().getIntVal()).isEqualTo(port);
                        assertThat(p.getProtocol()).isEqualTo("TCP");
                    });
        }
        NetworkPolicyIngressRule clients = objects.get(NetworkPolicy.class, "cell-a-gateway-peer-from-gateway-only")
                .getSpec()
                .getIngress()
                .get(0);
        assertThat(clients.getFrom()).as("clients come from anywhere").isEmpty();
        assertThat(policyPorts(clients))
                .as("the client rule admits the TLS port")
                .containsExactly(7070, port, 7091);
    }
}
