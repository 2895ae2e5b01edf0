package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.Release;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Each set of values an operator is expected to use passes {@code helm lint --strict}, renders
 * with {@code helm template} into objects that {@code kubectl apply} would take (every kind known,
 * no unknown field, no value of the wrong type: {@link Manifests}), and installs with {@code helm
 * install --dry-run=client}: both topologies with 1, 3 and 5 owners, and the optional parts on.
 */
final class HelmLintTest {
    /** A value a template names: {@code .Values.a.b} or {@code $.Values.a.b}. */
    private static final Pattern VALUE_REFERENCE = Pattern.compile("\\.Values((?:\\.[A-Za-z0-9_]+)+)");

    /** The owner counts the chart is checked with: a ring of one, the default three, and five. */
    private static final List<Integer> OWNER_COUNTS = List.of(1, 3, 5);

    static List<Arguments> valueSets() {
        List<Arguments> sets = new ArrayList<>();
        sets.add(Arguments.of("defaults", Map.of()));
        for (String mode : List.of("split", "single-role")) {
            for (int owners : OWNER_COUNTS) {
                sets.add(Arguments.of(
                        mode + ", " + owners + " owners", Map.of("topology.mode", mode, "owner.replicas", owners)));
            }
        }
        sets.add(Arguments.of(
                "worker on",
                Map.of("worker.enabled", true, "worker.token", "t0ken", "worker.targets", "echo=http://echo:8080")));
        Map<String, Object> wss = new LinkedHashMap<>();
        wss.put("worker.enabled", true);
        wss.put("worker.token", "t0ken");
        wss.put("worker.gateway", "wss://gw.example.com/uplink");
        wss.put("worker.caPem", "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n");
        sets.add(Arguments.of("worker over wss with a CA", wss));
        sets.add(Arguments.of("TLS on", Map.of("gateway.tls.secretName", "cell-a-gateway-tls")));
        sets.add(Arguments.of(
                "TLS on port 8443", Map.of("gateway.tls.secretName", "cell-a-gateway-tls", "gateway.tls.port", 8443)));
        sets.add(Arguments.of(
                "autoscaling and network policies off",
                Map.of(
                        "gateway.autoscaling.enabled", false,
                        "networkPolicy.ingressFromGatewayOnly", false,
                        "networkPolicy.peerFromGatewayOnly", false)));
        sets.add(Arguments.of("owner admin token", Map.of("owner.adminToken", "a".repeat(44))));
        sets.add(Arguments.of("owner admin token from a Secret", Map.of("owner.adminTokenSecret", "ops-owner-admin")));
        sets.add(Arguments.of(
                "secrets set, Redis off",
                Map.of(
                        "security.jwt.hmacSecret",
                        "h".repeat(48),
                        "cell.peerSecret",
                        "p".repeat(33),
                        "uplink.tokens",
                        "worker-1=" + "ab".repeat(32),
                        "redis.enabled",
                        false)));
        return sets;
    }

    /** Returns the dotted paths of every value (not map) in {@code values}, under {@code prefix}. */
    private static Set<String> leaves(String prefix, Map<?, ?> values) {
        Set<String> leaves = new TreeSet<>();
        values.forEach((key, value) -> {
            String path = prefix + key;
            if (value instanceof Map<?, ?> nested) {
                leaves.addAll(leaves(path + ".", nested));
            } else {
                leaves.add(path);
            }
        });
        return leaves;
    }

    /**
     * Helm renders a value that is not there as empty, and {@code helm lint --strict} does not
     * mind, so a misspelt {@code .Values.gateway.peerPortt} would pass everything but the test of
     * that value: every value a template names must be in values.yaml, and every value there must
     * be used by a template (else it is documented but does nothing).
     */
    @Test
    void templates_nameOnlyValuesOfValuesYaml_andUseEachOfThem() throws IOException {
        Set<String> named = new TreeSet<>();
        try (Stream<Path> files = Files.list(HelmChart.dir().resolve("templates"))) {
            for (Path file : files.toList()) {
                Matcher m = VALUE_REFERENCE.matcher(Files.readString(file, StandardCharsets.UTF_8));
                while (m.find()) {
                    named.add(m.group(1).substring(1));
                }
            }
        }
        Set<String> values = leaves("", HelmChart.defaults());

        assertThat(named).as("values the templates name").isNotEmpty();
        assertThat(named)
                .as("every value a template names is a value of values.yaml")
                .isSubsetOf(values);
        assertThat(values)
                .as("every value of values.yaml is used by a template")
                .isSubsetOf(named);
    }

    @Test
    void chart_refusesAClusterBefore128_whoseStatefulSetPodsHaveNoPodIndexLabel() {
        assertThatThrownBy(() -> new Helm(HelmChart.dir())
                        .template()
                        .withName(HelmChart.RELEASE)
                        .withKubeVersion("1.27.9")
                        .call())
                .as("Chart.yaml's kubeVersion: the owners' node ids come from apps.kubernetes.io/pod-index")
                .hasMessageContaining("chart requires kubeVersion");
        assertThat(new Helm(HelmChart.dir())
                        .template()
                        .withName(HelmChart.RELEASE)
                        .withKubeVersion("1.28.0")
                        .call())
                .contains("kind: StatefulSet");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("valueSets")
    void lint_strict_passes(String name, Map<String, Object> values) {
        LintResult lint = HelmChart.lint(values);

        assertThat(lint.isFailed())
                .as("helm lint --strict with %s: %s", name, lint.getMessages())
                .isFalse();
        assertThat(lint.getMessages())
                .as("helm lint --strict with %s reports nothing above INFO", name)
                .allMatch(m -> m.startsWith("[INFO]"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("valueSets")
    void template_rendersObjectsKubectlWouldApply_andInstallDryRunSucceeds(String name, Map<String, Object> values) {
        Manifests objects = HelmChart.template(values);
        Release release = HelmChart.installDryRun(values);

        assertThat(objects.all())
                .as("helm template with %s renders objects", name)
                .isNotEmpty();
        assertThat(objects.all())
                .as("every object with %s is in the release's namespace", name)
                .allMatch(o -> HelmChart.NAMESPACE.equals(o.getMetadata().getNamespace()));
        assertThat(release.getStatus())
                .as("helm install --dry-run=client with %s", name)
                .isEqualTo("pending-install");
        assertThat(release.getName()).isEqualTo(HelmChart.RELEASE);
        assertThat(release.getNamespace()).isEqualTo(HelmChart.NAMESPACE);
    }
}
