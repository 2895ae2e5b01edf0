package com.spectrayan.spector.deploy;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.marcnuri.helm.DryRun;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.InstallCommand;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.Release;
import com.marcnuri.helm.TemplateCommand;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;

/**
 * The chart under {@code deploy/helm/spector}, run through Helm itself: helm-java calls Helm's Go
 * code ({@code template}, {@code lint}, {@code install --dry-run=client}) in a native library that
 * Maven brings as a dependency, so no {@code helm} binary and no download at run time (the
 * module's surefire sets {@code com.marcnuri.jkube-helm.skipRemoteJar}).
 *
 * <p>Values are given as dotted keys with typed values ({@code "owner.replicas", 5}), written as
 * a values file ({@code helm -f}), so a number stays a number and a PEM keeps its newlines. A
 * rendering is kept per set of values for the whole test run: each set costs Helm once.
 */
final class HelmChart {
    static final String RELEASE = "cell-a";
    static final String NAMESPACE = "spector";

    /** The cluster version the chart is rendered for: Chart.yaml wants 1.28+ (the pod-index label). */
    static final String KUBE_VERSION = "1.31.0";

    private static final YAMLMapper YAML = new YAMLMapper();

    /** Guarded by the class: helm-java's native calls are made one at a time. */
    private static final Map<Map<String, Object>, Manifests> RENDERED = new HashMap<>();

    private HelmChart() {}

    /** Returns the chart's directory. */
    static Path dir() {
        return Repo.root().resolve("deploy/helm/spector");
    }

    /** Returns values.yaml as it is. */
    static Map<String, Object> defaults() {
        try {
            return YAML.readValue(dir().resolve("values.yaml").toFile(), new TypeReference<Map<String, Object>>() {});
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns {@code dotted} ({@code a.b=v}) as the nested values file Helm reads. */
    static Map<String, Object> nested(Map<String, Object> dotted) {
        Map<String, Object> values = new LinkedHashMap<>();
        dotted.forEach((key, value) -> put(values, key, value));
        return values;
    }

    @SuppressWarnings("unchecked") // values nest string-keyed maps
    private static void put(Map<String, Object> values, String dotted, Object value) {
        String[] parts = dotted.split("\\.", -1);
        Map<String, Object> node = values;
        for (int i = 0; i < parts.length - 1; i++) {
            node = (Map<String, Object>) node.computeIfAbsent(parts[i], k -> new LinkedHashMap<String, Object>());
        }
        node.put(parts[parts.length - 1], requireNonNull(value, dotted));
    }

    /** Returns {@code defaults} with {@code overrides} merged in, map by map, as Helm merges a values file. */
    @SuppressWarnings("unchecked") // values nest string-keyed maps
    static Map<String, Object> merge(Map<String, Object> defaults, Map<String, Object> overrides) {
        Map<String, Object> merged = new LinkedHashMap<>(defaults);
        overrides.forEach((key, value) -> {
            Object base = merged.get(key);
            if (base instanceof Map<?, ?> baseMap && value instanceof Map<?, ?> valueMap) {
                merged.put(key, merge((Map<String, Object>) baseMap, (Map<String, Object>) valueMap));
            } else {
                merged.put(key, value);
            }
        });
        return merged;
    }

    /**
     * Returns {@code helm template cell-a deploy/helm/spector -n spector --kube-version 1.31.0 -f
     * VALUES}, parsed strictly.
     *
     * @throws IllegalStateException when Helm fails (its message)
     * @throws Manifests.InvalidManifestException when an object would not pass {@code kubectl apply}
     */
    static synchronized Manifests template(Map<String, Object> dotted) {
        Map<String, Object> key = Map.copyOf(dotted);
        Manifests cached = RENDERED.get(key);
        if (cached == null) {
            cached = Manifests.parse(withValuesFile(
                    dotted, file -> template().withValuesFile(file).call()));
            RENDERED.put(key, cached);
        }
        return cached;
    }

    /** Returns Helm's {@code template} command for the release, namespace and cluster version of the tests. */
    static TemplateCommand template() {
        return new Helm(dir())
                .template()
                .withName(RELEASE)
                .withNamespace(NAMESPACE)
                .withKubeVersion(KUBE_VERSION);
    }

    /** Returns {@code helm install cell-a deploy/helm/spector -n spector --dry-run=client -f VALUES}. */
    static synchronized Release installDryRun(Map<String, Object> dotted) {
        return withValuesFile(dotted, file -> install().withValuesFile(file).call());
    }

    /** Returns Helm's {@code install --dry-run=client} for the tests' release, namespace and cluster version. */
    static InstallCommand install() {
        return new Helm(dir())
                .install()
                .withName(RELEASE)
                .withNamespace(NAMESPACE)
                .withKubeVersion(KUBE_VERSION)
                .withDryRunOption(DryRun.CLIENT)
                .clientOnly();
    }

    /**
     * Returns {@code helm lint --strict} with {@code dotted} (strict: a template naming a value
     * that is not there fails). helm-java's lint takes no values, so it lints a copy of the chart
     * whose values.yaml is values.yaml merged with them, which is what {@code helm lint -f} does.
     */
    static synchronized LintResult lint(Map<String, Object> dotted) {
        Path copy = null;
        try {
            copy = Files.createTempDirectory("spector-chart-");
            copyTree(dir(), copy);
            YAML.writeValue(copy.resolve("values.yaml").toFile(), merge(defaults(), nested(dotted)));
            return new Helm(copy).lint().strict().call();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            deleteTree(copy);
        }
    }

    private interface HelmCall<T> {
        T call(Path valuesFile);
    }

    private static <T> T withValuesFile(Map<String, Object> dotted, HelmCall<T> call) {
        Path file = null;
        try {
            file = Files.createTempFile("spector-values-", ".yaml");
            YAML.writeValue(file.toFile(), nested(dotted));
            return call.call(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            deleteTree(file);
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> paths = Files.walk(from)) {
            for (Path p : paths.toList()) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(p, target);
                }
            }
        }
    }

    private static void deleteTree(@Nullable Path root) {
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
