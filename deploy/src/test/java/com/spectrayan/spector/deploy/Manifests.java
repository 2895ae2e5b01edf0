package com.spectrayan.spector.deploy;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.MapperFeature;
import tools.jackson.databind.cfg.CoercionAction;
import tools.jackson.databind.cfg.CoercionInputShape;
import tools.jackson.databind.cfg.MapperConfig;
import tools.jackson.databind.introspect.Annotated;
import tools.jackson.databind.introspect.JacksonAnnotationIntrospector;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.type.LogicalType;

/**
 * Kubernetes manifests (a multi-document YAML stream, as {@code helm template} prints it) parsed
 * into fabric8's typed objects as strictly as {@code kubectl apply} decodes them.
 *
 * <p>Design notes. fabric8's model classes take any field they do not know into an
 * {@code additionalProperties} map, and Jackson coerces {@code "7070"} into an {@code int} and
 * {@code 1} into a string; the API server refuses both (strict field validation, the default of
 * {@code kubectl apply} since 1.27, and Go's typed JSON decoding). So the mapper here ignores every
 * {@code @JsonAnySetter}, fails on unknown properties, refuses scalar coercions, and a kind that no
 * model on the classpath knows (fabric8's fallback {@link GenericKubernetesResource}) is refused
 * too, as is a YAML mapping with a key twice. The YAML is read by Jackson 2's YAML parser (YAML 1.1,
 * as Kubernetes' own {@code sigs.k8s.io/yaml}: {@code 0440} is octal) and handed to fabric8's
 * Jackson 3 as JSON.
 */
final class Manifests {
    private static final YAMLMapper YAML = YAMLMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .build();

    /** Ignores {@code @JsonAnySetter}, so a field the model does not declare is an unknown property. */
    private static final class NoAnySetter extends JacksonAnnotationIntrospector {
        private static final long serialVersionUID = 1L;

        @Override
        public Boolean hasAnySetter(MapperConfig<?> config, Annotated a) {
            return Boolean.FALSE;
        }
    }

    private static final JsonMapper STRICT = JsonMapper.builder()
            .annotationIntrospector(new NoAnySetter())
            .enable(tools.jackson.databind.DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(tools.jackson.databind.DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(tools.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            .withCoercionConfig(
                    LogicalType.Textual,
                    c -> c.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                            .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                            .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail))
            .build();

    private final List<HasMetadata> objects;

    private Manifests(List<HasMetadata> objects) {
        this.objects = List.copyOf(objects);
    }

    /** A manifest that {@code kubectl apply} would refuse; the message names the document and why. */
    static final class InvalidManifestException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InvalidManifestException(String message, Throwable cause) {
            super(message, cause);
        }

        InvalidManifestException(String message) {
            super(message);
        }
    }

    /**
     * Returns the objects of a YAML stream, in order; empty documents are skipped.
     *
     * @throws InvalidManifestException on a YAML error, a duplicate key, an unknown kind, field or
     *     a value of the wrong type
     */
    static Manifests parse(String yaml) {
        requireNonNull(yaml, "yaml");
        List<HasMetadata> objects = new ArrayList<>();
        try (MappingIterator<JsonNode> docs = YAML.readerFor(JsonNode.class).readValues(yaml)) {
            int index = 0;
            while (docs.hasNextValue()) {
                JsonNode doc = docs.nextValue();
                index++;
                if (doc == null || doc.isNull() || doc.isMissingNode()) { // a document of comments only
                    continue;
                }
                objects.add(object(index, doc));
            }
        } catch (IOException e) {
            throw new InvalidManifestException("not a YAML stream of objects: " + e.getMessage(), e);
        }
        return new Manifests(objects);
    }

    private static HasMetadata object(int index, JsonNode doc) {
        String where = "document " + index + " (" + doc.path("kind").asText("?") + " "
                + doc.path("metadata").path("name").asText("?") + ")";
        if (!doc.isObject()) {
            throw new InvalidManifestException(where + ": not a mapping: " + doc);
        }
        HasMetadata object;
        try {
            object = STRICT.readValue(doc.toString(), HasMetadata.class);
        } catch (JacksonException e) {
            throw new InvalidManifestException(where + ": " + e.getOriginalMessage(), e);
        }
        if (object instanceof GenericKubernetesResource) {
            throw new InvalidManifestException(where + ": no model knows apiVersion "
                    + doc.path("apiVersion").asText("?") + " kind "
                    + doc.path("kind").asText("?"));
        }
        return object;
    }

    /** Returns every object, in the order of the stream. */
    List<HasMetadata> all() {
        return objects;
    }

    /** Returns the objects of one type, in order. */
    <T extends HasMetadata> List<T> ofType(Class<T> type) {
        return objects.stream().filter(type::isInstance).map(type::cast).toList();
    }

    /** Returns the object of that type and name, if there is one. */
    <T extends HasMetadata> Optional<T> find(Class<T> type, String name) {
        return ofType(type).stream()
                .filter(o -> name.equals(o.getMetadata().getName()))
                .findFirst();
    }

    /** Returns the object of that type and name; an assertion error names what is missing. */
    <T extends HasMetadata> T get(Class<T> type, String name) {
        return find(type, name)
                .orElseThrow(() -> new AssertionError("no " + type.getSimpleName() + " named " + name + " in "
                        + objects.stream()
                                .map(o -> o.getKind() + "/" + o.getMetadata().getName())
                                .toList()));
    }

    Deployment deployment(String name) {
        return get(Deployment.class, name);
    }

    StatefulSet statefulSet(String name) {
        return get(StatefulSet.class, name);
    }

    Service service(String name) {
        return get(Service.class, name);
    }

    Secret secret(String name) {
        return get(Secret.class, name);
    }

    HorizontalPodAutoscaler hpa(String name) {
        return get(HorizontalPodAutoscaler.class, name);
    }

    List<NetworkPolicy> networkPolicies() {
        return ofType(NetworkPolicy.class);
    }
}
