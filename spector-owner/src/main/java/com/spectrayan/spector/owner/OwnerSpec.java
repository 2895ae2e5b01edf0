package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.Limits;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link ReferenceOwner} is: its node id, where it listens, its cell and ring, where it
 * keeps objects, the secret it signs tokens with, the Redis it publishes ownership changes to, and
 * the admin token its admin API asks for.
 * Immutable; built with {@link #builder(String)}, which validates every value.
 *
 * <pre>{@code
 * OwnerSpec spec = OwnerSpec.builder("owner-1")
 *         .port(7101)
 *         .ringMembers(List.of("owner-0", "owner-1", "owner-2"))
 *         .ringEpoch(1)
 *         .build();
 * }</pre>
 */
public final class OwnerSpec {
    /** The bind host when none is set: loopback only. */
    public static final String DEFAULT_BIND_HOST = "127.0.0.1";

    /** The cell id when none is set. */
    public static final String DEFAULT_CELL_ID = "default";

    /** The ring epoch when none is set. */
    public static final long DEFAULT_RING_EPOCH = 1;

    private final String nodeId;
    private final String bindHost;
    private final int port;
    private final String cellId;
    private final List<String> ringMembers;
    private final long ringEpoch;
    private final @Nullable Path dataDir;
    private final byte[] hmacSecret;
    private final @Nullable String redisUri;
    private final @Nullable String adminToken;
    private final Duration routeRefresh;

    private OwnerSpec(Builder b) {
        this.nodeId = OwnershipGuard.checkNode("nodeId", b.nodeId);
        this.bindHost = b.bindHost;
        this.port = b.port;
        this.cellId = b.cellId;
        this.ringMembers = b.ringMembers == null ? List.of(b.nodeId) : b.ringMembers;
        this.ringEpoch = b.ringEpoch;
        this.dataDir = b.dataDir;
        this.hmacSecret = b.hmacSecret == null ? randomSecret() : b.hmacSecret.clone();
        this.redisUri = b.redisUri;
        this.adminToken = b.adminToken;
        this.routeRefresh = b.routeRefresh;
        // Validates the members (labels, duplicates, count) now rather than at start.
        KetamaRing.of(ringEpoch, ringMembers);
    }

    /** Starts a spec for a node; every other value has a default. */
    public static Builder builder(String nodeId) {
        return new Builder(nodeId);
    }

    /** Returns the node id: this node's label on the ring, sent as {@code X-Spector-Node}. */
    public String nodeId() {
        return nodeId;
    }

    /** Returns the host or address the node listens on; {@value #DEFAULT_BIND_HOST} by default. */
    public String bindHost() {
        return bindHost;
    }

    /** Returns the port; 0 (the default) picks a free one, read back with {@link ReferenceOwner#port()}. */
    public int port() {
        return port;
    }

    /** Returns the cell id; {@value #DEFAULT_CELL_ID} by default. */
    public String cellId() {
        return cellId;
    }

    /** Returns the ring members; just this node by default. */
    public List<String> ringMembers() {
        return ringMembers;
    }

    /** Returns the ring epoch; {@value #DEFAULT_RING_EPOCH} by default. */
    public long ringEpoch() {
        return ringEpoch;
    }

    /** Returns the directory objects are kept in, or null for a temporary one made at start. */
    public @Nullable Path dataDir() {
        return dataDir;
    }

    /** Returns a copy of the HMAC secret issued tokens are signed with (random by default). */
    public byte[] hmacSecret() {
        return hmacSecret.clone();
    }

    /**
     * Returns the Redis URI ownership changes are published to and the cell's published ring is
     * read from, or null when there is none (the node then decides on its configured ring alone).
     */
    public @Nullable String redisUri() {
        return redisUri;
    }

    /**
     * Returns the admin token, or null when there is none (the default): with one, every caller
     * of the admin API, loopback included, must send {@code Authorization: Bearer <token>}, and a
     * move sends it on its import; without one, the admin API answers loopback callers only.
     */
    public @Nullable String adminToken() {
        return adminToken;
    }

    /**
     * Returns what makes {@code token} no admin token, without its text (e.g. {@code "15 bytes
     * (expected: 16..256 bytes)"}), or null when it is one: {@value OwnerLimits#MIN_ADMIN_TOKEN_BYTES}
     * to {@value OwnerLimits#MAX_ADMIN_TOKEN_BYTES} bytes of RFC 9110 token68 ({@code
     * A-Za-z0-9-._~+/}, {@code =} only at the end).
     */
    public static @Nullable String adminTokenProblem(String token) {
        return AdminToken.problemOf(token);
    }

    /**
     * Returns how often the node stores in L2 again the routes of the keys it took by an override
     * ({@link OwnerLimits#ROUTE_REFRESH_INTERVAL} unless a test set a shorter one).
     */
    Duration routeRefresh() {
        return routeRefresh;
    }

    /** Returns the ring this spec describes. */
    public KetamaRing ring() {
        return KetamaRing.of(ringEpoch, ringMembers);
    }

    @Override
    public String toString() {
        return "OwnerSpec{nodeId=" + nodeId + ", bind=" + bindHost + ":" + port + ", cell=" + cellId + ", ring="
                + ringMembers + "@" + ringEpoch + ", dataDir=" + dataDir + ", redis=" + (redisUri != null)
                + ", adminToken=" + (adminToken != null) + "}";
    }

    private static byte[] randomSecret() {
        byte[] secret = new byte[OwnerLimits.MIN_HMAC_SECRET_BYTES];
        new SecureRandom().nextBytes(secret);
        return secret;
    }

    /** Builds an {@link OwnerSpec}; not thread-safe. */
    public static final class Builder {
        private final String nodeId;
        private String bindHost = DEFAULT_BIND_HOST;
        private int port;
        private String cellId = DEFAULT_CELL_ID;
        private @Nullable List<String> ringMembers;
        private long ringEpoch = DEFAULT_RING_EPOCH;
        private @Nullable Path dataDir;
        private byte @Nullable [] hmacSecret;
        private @Nullable String redisUri;
        private @Nullable String adminToken;
        private Duration routeRefresh = OwnerLimits.ROUTE_REFRESH_INTERVAL;

        private Builder(String nodeId) {
            this.nodeId = requireNonNull(nodeId, "nodeId");
        }

        /** Sets the host or address to listen on, e.g. {@code 0.0.0.0}. */
        public Builder bindHost(String bindHost) {
            requireNonNull(bindHost, "bindHost");
            if (bindHost.isBlank()) {
                throw new IllegalArgumentException("bindHost: '' (expected: a host name or address)");
            }
            this.bindHost = bindHost;
            return this;
        }

        /** Sets the port, 0 for a free one. */
        public Builder port(int port) {
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port: " + port + " (expected: 0..65535)");
            }
            this.port = port;
            return this;
        }

        /** Sets the cell id ({@code [a-z0-9][a-z0-9._-]{0,62}}). */
        public Builder cellId(String cellId) {
            this.cellId = RoutingKey.checkName("cellId", cellId);
            return this;
        }

        /** Sets the ring members (ids, as {@code spector.cell.ring-members}). */
        public Builder ringMembers(List<String> ringMembers) {
            this.ringMembers = List.copyOf(requireNonNull(ringMembers, "ringMembers"));
            return this;
        }

        /** Sets the ring epoch (>= 0). */
        public Builder ringEpoch(long ringEpoch) {
            if (ringEpoch < 0) {
                throw new IllegalArgumentException("ringEpoch: " + ringEpoch + " (expected: >= 0)");
            }
            this.ringEpoch = ringEpoch;
            return this;
        }

        /** Sets the directory objects are kept in; it is created when missing. */
        public Builder dataDir(Path dataDir) {
            this.dataDir = requireNonNull(dataDir, "dataDir");
            return this;
        }

        /** Sets the HMAC secret for issued tokens (copied; at least 32 bytes). */
        public Builder hmacSecret(byte[] hmacSecret) {
            requireNonNull(hmacSecret, "hmacSecret");
            if (hmacSecret.length < OwnerLimits.MIN_HMAC_SECRET_BYTES) {
                throw new IllegalArgumentException("hmacSecret: " + hmacSecret.length + " bytes (expected: >= "
                        + OwnerLimits.MIN_HMAC_SECRET_BYTES + ")");
            }
            this.hmacSecret = hmacSecret.clone();
            return this;
        }

        /** Sets the Redis URI ({@code redis://host:port}) ownership changes are published to. */
        public Builder redisUri(String redisUri) {
            this.redisUri = requireNonNull(redisUri, "redisUri");
            return this;
        }

        /**
         * Sets the admin token ({@link OwnerSpec#adminToken()}): {@value
         * OwnerLimits#MIN_ADMIN_TOKEN_BYTES}..{@value OwnerLimits#MAX_ADMIN_TOKEN_BYTES} bytes of
         * token68 ({@code A-Za-z0-9-._~+/}, {@code =} only at the end).
         *
         * @throws IllegalArgumentException naming what is wrong with it, never its text
         */
        public Builder adminToken(String adminToken) {
            this.adminToken = AdminToken.check(adminToken);
            return this;
        }

        /**
         * Sets how often the node's own routes are stored in L2 again: for tests, which cannot wait
         * {@link OwnerLimits#ROUTE_REFRESH_INTERVAL}.
         *
         * @throws IllegalArgumentException unless it is above 0 and below the L2 TTL
         */
        Builder routeRefresh(Duration routeRefresh) {
            requireNonNull(routeRefresh, "routeRefresh");
            if (routeRefresh.isNegative() || routeRefresh.isZero() || routeRefresh.compareTo(Limits.L2_TTL) >= 0) {
                throw new IllegalArgumentException(
                        "routeRefresh: " + routeRefresh + " (expected: > 0 and < " + Limits.L2_TTL + ")");
            }
            this.routeRefresh = routeRefresh;
            return this;
        }

        /**
         * Builds the spec.
         *
         * @throws com.spectrayan.spector.contract.SpectorException BAD_REQUEST for a malformed
         *     node id or ring member, or a duplicate member
         */
        public OwnerSpec build() {
            return new OwnerSpec(this);
        }
    }
}
