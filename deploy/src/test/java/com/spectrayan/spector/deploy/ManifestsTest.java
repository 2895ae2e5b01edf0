package com.spectrayan.spector.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.spectrayan.spector.deploy.Manifests.InvalidManifestException;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link Manifests}: what {@code kubectl apply} refuses (an unknown field, a value of the wrong
 * type, an unknown kind, a key given twice) is refused here too, and what it takes is parsed.
 */
final class ManifestsTest {
    private static final String DEPLOYMENT = """
            apiVersion: apps/v1
            kind: Deployment
            metadata:
              name: d
            spec:
              template:
                spec:
                  containers:
                    - name: c
                      %s
            """;

    private static Manifests container(String field) {
        return Manifests.parse(DEPLOYMENT.formatted(field));
    }

    @Test
    void parse_validObjects_areTypedInStreamOrder_andEmptyDocumentsSkipped() {
        Manifests m = Manifests.parse("---\n# Source: nothing rendered\n---\n"
                + DEPLOYMENT.formatted("ports: [{containerPort: 7070}]")
                + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {k: v}\n"
                + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: t}\ntype: Opaque\n");

        assertThat(m.all()).extracting(o -> o.getMetadata().getName()).containsExactly("d", "s", "t");
        assertThat(m.deployment("d")
                        .getSpec()
                        .getTemplate()
                        .getSpec()
                        .getContainers()
                        .get(0)
                        .getPorts()
                        .get(0)
                        .getContainerPort())
                .isEqualTo(7070);
        assertThat(m.ofType(Secret.class)).hasSize(2);
        assertThat(m.find(Deployment.class, "s")).isEmpty();
    }

    @Test
    void parse_octalMode_isReadAsYaml11DoesAsKubernetes() {
        Manifests m = Manifests.parse("""
                apiVersion: apps/v1
                kind: Deployment
                metadata: {name: d}
                spec:
                  template:
                    spec:
                      containers: [{name: c}]
                      volumes: [{name: v, secret: {secretName: s, defaultMode: 0440}}]
                """);

        assertThat(m.deployment("d")
                        .getSpec()
                        .getTemplate()
                        .getSpec()
                        .getVolumes()
                        .get(0)
                        .getSecret()
                        .getDefaultMode())
                .isEqualTo(0440);
    }

    @Test
    void parse_misspeltField_isRefusedNamingIt() {
        assertThatThrownBy(() -> container("imagePullPolcy: Always"))
                .isInstanceOf(InvalidManifestException.class)
                .hasMessageContaining("Deployment d")
                .hasMessageContaining("imagePullPolcy");
        assertThatThrownBy(() -> container("lifecycle: {preStp: {exec: {command: [sleep, '5']}}}"))
                .isInstanceOf(InvalidManifestException.class)
                .hasMessageContaining("preStp");
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "ports: [{containerPort: \"7070\"}]", // a quoted number for an int
                "env: [{name: A, value: 1}]", // a number for a string: env values must be quoted
                "env: [{name: A, value: true}]", // a boolean for a string
                "securityContext: {runAsNonRoot: \"true\"}", // a string for a boolean
                "ports: {containerPort: 7070}", // a mapping for a list
            })
    void parse_wrongType_isRefused(String field) {
        assertThatThrownBy(() -> container(field)).as(field).isInstanceOf(InvalidManifestException.class);
    }

    @Test
    void parse_intOrStringPorts_takeBothForms() {
        Manifests m = container("livenessProbe: {httpGet: {path: /h, port: http}}\n"
                + "          readinessProbe: {httpGet: {path: /h, port: 7070}}");
        var c = m.deployment("d")
                .getSpec()
                .getTemplate()
                .getSpec()
                .getContainers()
                .get(0);

        assertThat(c.getLivenessProbe().getHttpGet().getPort().getStrVal()).isEqualTo("http");
        assertThat(c.getReadinessProbe().getHttpGet().getPort().getIntVal()).isEqualTo(7070);
    }

    @Test
    void parse_unknownKind_isRefused() {
        assertThatThrownBy(() -> Manifests.parse("apiVersion: apps/v1\nkind: Deploymnt\nmetadata: {name: d}\n"))
                .isInstanceOf(InvalidManifestException.class)
                .hasMessageContaining("no model knows apiVersion apps/v1 kind Deploymnt");
    }

    @Test
    void parse_keyGivenTwice_isRefused() {
        assertThatThrownBy(() -> Manifests.parse(
                        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {a: b}\nstringData: {c: d}\n"))
                .isInstanceOf(InvalidManifestException.class)
                .hasMessageContaining("stringData");
    }

    @Test
    void parse_brokenYaml_isRefused() {
        assertThatThrownBy(() -> Manifests.parse("apiVersion: v1\nkind: Secret\n  metadata: {name: s}\n"))
                .isInstanceOf(InvalidManifestException.class);
        assertThatThrownBy(() -> Manifests.parse("- just\n- a list\n"))
                .isInstanceOf(InvalidManifestException.class)
                .hasMessageContaining("not a mapping");
    }
}
