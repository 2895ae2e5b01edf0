package com.spectrayan.spector.cluster.routing;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The identity a request is routed by: a cell, an optional tenant and a namespace. Each name
 * matches {@code [a-z0-9][a-z0-9._-]{0,62}}; anything else is refused BAD_REQUEST at construction.
 *
 * <p>The {@link #ringKey()} is what the ring hashes: {@code namespace} for an untenanted key,
 * {@code tenant/namespace} otherwise. The cell id is not hashed: a ring serves one cell.
 */
public final class RoutingKey {
    private final String cellId;
    private final @Nullable String tenant;
    private final String namespace;
    private final String ringKey;

    private RoutingKey(String cellId, @Nullable String tenant, String namespace) {
        this.cellId = checkName("cellId", cellId);
        this.tenant = tenant == null ? null : checkName("tenant", tenant);
        this.namespace = checkName("namespace", namespace);
        this.ringKey = tenant == null ? namespace : tenant + "/" + namespace;
    }

    /** Creates a key for a tenant's namespace; untenanted when {@code tenant} is null. */
    public static RoutingKey of(String cellId, @Nullable String tenant, String namespace) {
        return new RoutingKey(cellId, tenant, namespace);
    }

    /** Creates a key with no tenant, e.g. {@code ofUntenanted(cell, "default")}. */
    public static RoutingKey ofUntenanted(String cellId, String namespace) {
        return new RoutingKey(cellId, null, namespace);
    }

    /** Returns the cell id. */
    public String cellId() {
        return cellId;
    }

    /** Returns the tenant, or null for an untenanted key. */
    public @Nullable String tenant() {
        return tenant;
    }

    /** Returns the namespace. */
    public String namespace() {
        return namespace;
    }

    /** Returns the text the ring hashes: {@code namespace} or {@code tenant/namespace}. */
    public String ringKey() {
        return ringKey;
    }

    /**
     * Returns the name when it matches {@code [a-z0-9][a-z0-9._-]{0,62}}.
     *
     * @throws SpectorException BAD_REQUEST naming the field otherwise
     */
    public static String checkName(String field, String name) {
        requireNonNull(name, field);
        if (!Limits.ROUTING_NAME_CHARS.allows(name.length())) {
            throw SpectorException.badRequest(
                    field,
                    name.length() + " chars (expected: " + Limits.ROUTING_NAME_CHARS.min() + ".."
                            + Limits.ROUTING_NAME_CHARS.max() + " chars of [a-z0-9._-])");
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
            if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) {
                throw SpectorException.badRequest(
                        field,
                        "'" + printable(name) + "' has '" + printable(String.valueOf(c)) + "' at " + i
                                + " (expected: [a-z0-9][a-z0-9._-]{0,62})");
            }
        }
        return name;
    }

    private static String printable(String s) {
        StringBuilder out = new StringBuilder(Math.min(s.length(), 80));
        for (int i = 0; i < s.length() && i < 80; i++) {
            char c = s.charAt(i);
            out.append(c < 0x20 || c == 0x7f ? '?' : c);
        }
        return out.toString();
    }

    @Override
    public boolean equals(@Nullable Object o) {
        return o == this
                || (o instanceof RoutingKey k
                        && cellId.equals(k.cellId)
                        && Objects.equals(tenant, k.tenant)
                        && namespace.equals(k.namespace));
    }

    @Override
    public int hashCode() {
        return 31 * cellId.hashCode() + ringKey.hashCode();
    }

    @Override
    public String toString() {
        return cellId + ":" + ringKey;
    }
}
