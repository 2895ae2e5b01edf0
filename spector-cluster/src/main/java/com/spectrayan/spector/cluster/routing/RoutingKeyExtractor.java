package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.util.concurrent.FastThreadLocal;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Finds a request's {@link RoutingKey} (DESIGN.md section 4), independent of any HTTP library.
 *
 * <ul>
 *   <li>namespace: the {@code X-Spector-Namespace} header, else the path {@code
 *       /api/v1/namespaces/{ns}/...}, else the token's {@code namespace} claim, else {@code
 *       default}. A header that names another namespace than the path is BAD_REQUEST;
 *   <li>tenant: the {@code X-Spector-Tenant} header, else the token's {@code tenant} claim, else
 *       none. With a token, a header tenant must be the token's: one that contradicts it, or any
 *       header tenant with a token that names none, is FORBIDDEN: a caller may not route into a
 *       tenant its token does not grant (an untenanted token was every tenant's, the fourth
 *       review). Without a token (edge auth off, or a route it skips) the header stands alone.
 * </ul>
 *
 * <p>Names that break the bounds are BAD_REQUEST. Thread-safe and allocation-light: the hot path
 * calls it once per request.
 */
public final class RoutingKeyExtractor {
    /** The namespace of a request that names none. */
    public static final String DEFAULT_NAMESPACE = "default";

    /** The path prefix whose next segment is the namespace. */
    public static final String NAMESPACE_PATH_PREFIX = "/api/v1/namespaces/";

    /** The token claim that names the tenant. */
    public static final String TENANT_CLAIM = "tenant";

    /** The token claim that names the namespace. */
    public static final String NAMESPACE_CLAIM = "namespace";

    private final String cellId;

    /**
     * The key this thread made last: a connection's requests mostly name one namespace, and the
     * same key object skips the name checks, the {@code tenant/namespace} text and its hash, and
     * compares by identity in the L1 cache (issue 14). Per thread, so nothing is shared.
     */
    private final FastThreadLocal<RoutingKey> last = new FastThreadLocal<>();

    /** Creates an extractor for one cell. */
    public RoutingKeyExtractor(String cellId) {
        this.cellId = RoutingKey.checkName("cellId", cellId);
    }

    /**
     * Returns the routing key of a request.
     *
     * @param headerNamespace the {@code X-Spector-Namespace} value, or null when absent
     * @param headerTenant the {@code X-Spector-Tenant} value, or null when absent
     * @param path the request path without its query
     * @param claims the verified token's claims; empty when the request carries no token
     * @throws SpectorException BAD_REQUEST for a malformed name, FORBIDDEN for a tenant mismatch
     */
    public RoutingKey extract(
            @Nullable String headerNamespace, @Nullable String headerTenant, String path, Map<String, ?> claims) {
        requireNonNull(path, "path");
        requireNonNull(claims, "claims");
        String claimTenant = stringClaim(claims, TENANT_CLAIM);
        String tenant = headerTenant != null ? headerTenant : claimTenant;
        if (headerTenant != null && !claims.isEmpty() && !headerTenant.equals(claimTenant)) {
            throw SpectorException.of(
                    ErrorCode.FORBIDDEN,
                    SpectorHeaders.TENANT + " names a tenant the token does not grant"
                            + (claimTenant == null ? " (the token names none)" : ""),
                    Map.of("reason", "tenant-mismatch"));
        }
        String namespace = headerNamespace;
        if (namespace == null) {
            namespace = pathNamespace(path);
        } else if (!namespace.equals(Objects.requireNonNullElse(pathNamespace(path), namespace))) {
            // The path names the data, the header the owner: a request routed by one to the other
            // namespace's owner would have that owner write data it does not own (single writer).
            // The reference owner refuses the same; the edge does so before any owner is asked.
            throw SpectorException.badRequest(
                    SpectorHeaders.NAMESPACE, "contradicts the path's namespace (expected: the same, or absent)");
        }
        if (namespace == null) {
            namespace = stringClaim(claims, NAMESPACE_CLAIM);
        }
        if (namespace == null) {
            namespace = DEFAULT_NAMESPACE;
        }
        RoutingKey k = last.get();
        if (k == null || !namespace.equals(k.namespace()) || !Objects.equals(tenant, k.tenant())) {
            k = RoutingKey.of(cellId, tenant, namespace);
            last.set(k);
        }
        return k;
    }

    /** Returns the segment after {@code /api/v1/namespaces/}, or null when there is none. */
    static @Nullable String pathNamespace(String path) {
        if (!path.startsWith(NAMESPACE_PATH_PREFIX)) {
            return null;
        }
        int start = NAMESPACE_PATH_PREFIX.length();
        int end = path.indexOf('/', start);
        String segment = end < 0 ? path.substring(start) : path.substring(start, end);
        return segment.isEmpty() ? null : segment;
    }

    private static @Nullable String stringClaim(Map<String, ?> claims, String name) {
        Object value = claims.get(name);
        if (value == null) {
            return null;
        }
        if (!(value instanceof String s)) {
            throw SpectorException.badRequest("claim " + name, "not a string");
        }
        return s;
    }
}
