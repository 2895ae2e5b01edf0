package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One row of a reference owner's request log ({@code GET /admin/requests}): an {@code /api/v1}
 * request as it arrived and the status it was answered with, refusals (421, 503, 400) included.
 *
 * @param method the request method
 * @param path the request path, without its query
 * @param tenant the routing key's tenant, or null when untenanted or when no key could be formed
 * @param namespace the routing key's namespace, or null when no key could be formed
 * @param status the response status
 * @param headers the request headers as received, name to values in arrival order
 */
public record RecordedRequest(
        String method,
        String path,
        @Nullable String tenant,
        @Nullable String namespace,
        int status,
        Map<String, List<String>> headers) {
    public RecordedRequest {
        requireNonNull(method, "method");
        requireNonNull(path, "path");
        Map<String, List<String>> copy = new LinkedHashMap<>();
        requireNonNull(headers, "headers").forEach((name, values) -> copy.put(name, List.copyOf(values)));
        headers = Collections.unmodifiableMap(copy);
    }

    /** Returns the first value of a header, matching its name in any case, or null. */
    public @Nullable String header(String name) {
        for (Map.Entry<String, List<String>> e : headers.entrySet()) {
            if (e.getKey().equalsIgnoreCase(name) && !e.getValue().isEmpty()) {
                return e.getValue().get(0);
            }
        }
        return null;
    }
}
