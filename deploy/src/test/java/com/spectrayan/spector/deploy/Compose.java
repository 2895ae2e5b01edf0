package com.spectrayan.spector.deploy;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A compose file, read into the few types the cell's tests need: a field this model does not
 * know, a key given twice or a value of the wrong shape fails the read (so a misspelt
 * {@code enviroment:} is not silently no environment), and a published port is a typed pair.
 */
record Compose(String name, Map<String, Compose.Service> services) {
    private static final YAMLMapper YAML = YAMLMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .build();

    /** A service; {@code environment} must be the map form, {@code ports} the short form. */
    record Service(
            @Nullable String image,
            @Nullable Build build,
            @Nullable List<String> command,
            @Nullable List<String> ports,
            @Nullable Map<String, String> environment,
            @Nullable Map<String, Attachment> networks,
            @JsonProperty("depends_on") @Nullable JsonNode dependsOn) {

        /** Returns the published ports, in order; none when the service has no {@code ports}. */
        List<Port> published() {
            return ports == null ? List.of() : ports.stream().map(Port::parse).toList();
        }

        /** Returns the network attachment, or fails naming it. */
        Attachment network(String name) {
            Attachment attachment = networks == null ? null : networks.get(name);
            return requireNonNull(attachment, () -> "the service joins no network '" + name + "'");
        }

        /** Returns {@code build:}, or fails: the service is not built. */
        Build built() {
            return requireNonNull(build, "the service has no build");
        }

        /** Returns the environment (empty when there is none). */
        Map<String, String> env() {
            return environment == null ? Map.of() : environment;
        }
    }

    /** {@code build:}: the context (relative to the compose file), the Dockerfile within it, the target. */
    record Build(String context, String dockerfile, String target) {}

    /** A network the service joins, and the names it answers to there. */
    record Attachment(List<String> aliases) {}

    /** A published port, {@code "HOST:CONTAINER"} (TCP). */
    record Port(int published, int target) {
        private static final Pattern SHORT = Pattern.compile("(\\d{1,5}):(\\d{1,5})");

        static Port parse(String spec) {
            Matcher m = SHORT.matcher(spec);
            if (!m.matches()) {
                throw new IllegalArgumentException("port: " + spec + " (expected: HOST:CONTAINER, both numbers)");
            }
            return new Port(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
        }
    }

    /** Returns the service, or fails naming it. */
    Service service(String name) {
        return requireNonNull(services.get(name), () -> "compose has no service '" + name + "'");
    }

    /** Reads a compose file's text. */
    static Compose parse(String yaml) {
        try {
            return YAML.readValue(yaml, Compose.class);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
