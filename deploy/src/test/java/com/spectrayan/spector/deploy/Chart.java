package com.spectrayan.spector.deploy;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The Helm chart under {@code deploy/helm/spector}, rendered with {@link TemplateRenderer}: its
 * values.yaml, overridden like {@code --set}, and every template's YAML documents.
 */
final class Chart {
    static final String RELEASE = "cell-a";
    static final String NAMESPACE = "spector";
    static final YAMLMapper YAML = new YAMLMapper();

    private Chart() {}

    /** Returns the chart's directory. */
    static Path dir() {
        return Repo.root().resolve("deploy/helm/spector");
    }

    /** Returns values.yaml with {@code overrides} set: dotted keys, as {@code helm --set a.b=v}. */
    static Map<String, Object> values(Map<String, Object> overrides) {
        try {
            Map<String, Object> values =
                    YAML.readValue(dir().resolve("values.yaml").toFile(), new TypeReference<Map<String, Object>>() {});
            overrides.forEach((key, value) -> set(values, key, value));
            return values;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @SuppressWarnings("unchecked") // values.yaml nests string-keyed maps
    private static void set(Map<String, Object> values, String dotted, Object value) {
        String[] parts = dotted.split("\\.", -1);
        Map<String, Object> node = values;
        for (int i = 0; i < parts.length - 1; i++) {
            node = (Map<String, Object>) node.computeIfAbsent(parts[i], k -> new LinkedHashMap<String, Object>());
        }
        node.put(parts[parts.length - 1], value);
    }

    /** Renders every template with values.yaml and the overrides; returns the objects in file order. */
    static List<JsonNode> render(Map<String, Object> overrides) {
        TemplateRenderer renderer = new TemplateRenderer(values(overrides), RELEASE, NAMESPACE);
        List<JsonNode> objects = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir().resolve("templates"))) {
            for (Path file : files.sorted().toList()) {
                String name = file.getFileName().toString();
                if (!name.endsWith(".yaml")) {
                    throw new AssertionError("templates/" + name + ": only .yaml templates are expected");
                }
                String text = renderer.render(name, Files.readString(file, StandardCharsets.UTF_8));
                for (String doc : text.split("(?m)^---\\s*$", -1)) {
                    JsonNode node = YAML.readTree(doc);
                    if (node != null && !node.isMissingNode() && !node.isNull()) {
                        objects.add(node);
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return objects;
    }
}
