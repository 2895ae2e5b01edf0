package com.spectrayan.spector.owner;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.Environment;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Runs one reference owner alone, configured from the environment, as the owner container image
 * does: {@code java -cp ... com.spectrayan.spector.owner.OwnerMain}. Stops on SIGTERM; exits 2 on a
 * bad value, naming the variable, the value and what was expected.
 *
 * <p>The variables use the gateway's key names where the gateway has the key ({@code
 * spector.cell.ring-members} is {@code SPECTOR_CELL_RING_MEMBERS}):
 *
 * <ul>
 *   <li>{@code SPECTOR_CELL_NODE_ID}: this node's ring member id; {@code HOSTNAME} when unset;
 *   <li>{@code SPECTOR_CELL_RING_MEMBERS}: {@code id} or {@code id=http://host:port}, comma-separated
 *       (only the ids matter here); this node alone when unset, and must list this node when set;
 *   <li>{@code SPECTOR_CELL_RING_EPOCH} ({@value OwnerSpec#DEFAULT_RING_EPOCH}), {@code
 *       SPECTOR_CELL_ID} ({@value OwnerSpec#DEFAULT_CELL_ID});
 *   <li>{@code SPECTOR_SERVER_PORT} ({@value #DEFAULT_PORT}), {@code SPECTOR_SERVER_HOST} ({@value
 *       #DEFAULT_HOST});
 *   <li>optional: {@code SPECTOR_ROUTING_REDIS_URI} (ownership changes are published there, and
 *       the cell's published ring, {@code spector ring publish}, replaces the configured one for
 *       this node's 421s), {@code SPECTOR_DATA_DIR}, {@code SPECTOR_SECURITY_JWT_HMAC_SECRET};
 *   <li>optional: {@code SPECTOR_OWNER_ADMIN_TOKEN}, the cell's admin token ({@link
 *       OwnerSpec#adminToken()}): with it, every admin caller must send {@code Authorization: Bearer
 *       <token>}, from any address; without it, the admin API answers loopback callers only.
 * </ul>
 *
 * Neither secret is ever printed: a problem with one names its length or what is wrong, not its
 * text.
 *
 * An empty value counts as unset.
 */
public final class OwnerMain {
    /** The port when {@code SPECTOR_SERVER_PORT} is unset: the cell's one port. */
    static final int DEFAULT_PORT = 7070;

    /** The bind address when {@code SPECTOR_SERVER_HOST} is unset: every interface, as in a container. */
    static final String DEFAULT_HOST = "0.0.0.0";

    static final String NODE_ID = "SPECTOR_CELL_NODE_ID";
    static final String HOSTNAME = "HOSTNAME";
    static final String RING_MEMBERS = "SPECTOR_CELL_RING_MEMBERS";
    static final String RING_EPOCH = "SPECTOR_CELL_RING_EPOCH";
    static final String CELL_ID = "SPECTOR_CELL_ID";
    static final String PORT = "SPECTOR_SERVER_PORT";
    static final String HOST = "SPECTOR_SERVER_HOST";
    static final String REDIS_URI = "SPECTOR_ROUTING_REDIS_URI";
    static final String DATA_DIR = "SPECTOR_DATA_DIR";
    static final String HMAC_SECRET = "SPECTOR_SECURITY_JWT_HMAC_SECRET";
    static final String ADMIN_TOKEN = "SPECTOR_OWNER_ADMIN_TOKEN";

    private OwnerMain() {}

    /** Starts the owner and waits for the JVM to be asked to stop. */
    public static void main(String[] args) throws InterruptedException {
        Environment.processDefaults(); // first: before any Netty buffer class loads or anything logs
        OwnerSpec spec;
        try {
            spec = specFrom(System.getenv());
        } catch (Environment.Problems e) {
            System.err.println("spector owner: refusing to start:\n" + e.getMessage());
            System.exit(2);
            return;
        }
        ReferenceOwner owner = Environment.startOrExit("spector owner", () -> ReferenceOwner.start(spec));
        System.out.println("spector owner " + spec.nodeId() + " ready on port " + owner.port());
        Environment.awaitShutdown(owner, "spector-owner");
    }

    /**
     * Returns the spec the environment describes.
     *
     * @throws Environment.Problems naming every bad variable, its value and what was expected
     */
    static OwnerSpec specFrom(Map<String, String> env) {
        List<String> problems = new ArrayList<>();
        String nodeId = Environment.value(env, NODE_ID);
        if (nodeId == null) {
            nodeId = Environment.value(env, HOSTNAME);
        }
        if (nodeId == null) {
            problems.add(NODE_ID + ": (unset) (expected: this node's ring member id; HOSTNAME is unset too)");
        } else if (!isLabel(NODE_ID, nodeId, problems)) {
            nodeId = null;
        }
        List<String> members = ringMembers(env, nodeId, problems);
        long epoch =
                Environment.integer(env, RING_EPOCH, OwnerSpec.DEFAULT_RING_EPOCH, 0, Long.MAX_VALUE, ">= 0", problems);
        int port = (int) Environment.integer(env, PORT, DEFAULT_PORT, 0, 65535, "0..65535", problems);
        String host = Environment.value(env, HOST);
        String cellId = Environment.value(env, CELL_ID);
        if (cellId != null) {
            try {
                RoutingKey.checkName(CELL_ID, cellId);
            } catch (SpectorException e) {
                problems.add(CELL_ID + ": '" + cellId + "' (expected: a name of [a-z0-9][a-z0-9._-]{0,62})");
            }
        }
        String redis = Environment.value(env, REDIS_URI);
        if (redis != null && !(redis.startsWith("redis://") || redis.startsWith("rediss://"))) {
            problems.add(REDIS_URI + ": '" + redis + "' (expected: redis://host:port or rediss://host:port)");
        }
        Path dataDir = null;
        String dir = Environment.value(env, DATA_DIR);
        if (dir != null) {
            try {
                dataDir = Path.of(dir);
            } catch (InvalidPathException e) {
                problems.add(DATA_DIR + ": '" + dir + "' (expected: a directory path)");
            }
        }
        String secret = Environment.value(env, HMAC_SECRET);
        byte[] secretBytes = secret == null ? null : secret.getBytes(StandardCharsets.UTF_8);
        if (secretBytes != null && secretBytes.length < OwnerLimits.MIN_HMAC_SECRET_BYTES) {
            // The secret itself is never shown, only its length.
            problems.add(HMAC_SECRET + ": " + secretBytes.length + " bytes (expected: >= "
                    + OwnerLimits.MIN_HMAC_SECRET_BYTES + " bytes)");
        }
        String adminToken = Environment.value(env, ADMIN_TOKEN);
        String tokenProblem = adminToken == null ? null : OwnerSpec.adminTokenProblem(adminToken);
        if (tokenProblem != null) {
            problems.add(ADMIN_TOKEN + ": " + tokenProblem); // never the token itself
        }
        if (nodeId == null || members == null || !problems.isEmpty()) {
            throw new Environment.Problems(problems);
        }
        OwnerSpec.Builder spec = OwnerSpec.builder(nodeId)
                .bindHost(host == null ? DEFAULT_HOST : host)
                .port(port)
                .ringMembers(members)
                .ringEpoch(epoch);
        if (cellId != null) {
            spec.cellId(cellId);
        }
        if (redis != null) {
            spec.redisUri(redis);
        }
        if (dataDir != null) {
            spec.dataDir(dataDir);
        }
        if (secretBytes != null) {
            spec.hmacSecret(secretBytes);
        }
        if (adminToken != null) {
            spec.adminToken(adminToken);
        }
        return spec.build();
    }

    /** Returns the ring's ids (this node alone when unset), or null after adding the problems. */
    private static @Nullable List<String> ringMembers(
            Map<String, String> env, @Nullable String nodeId, List<String> problems) {
        String raw = Environment.value(env, RING_MEMBERS);
        if (raw == null) {
            return nodeId == null ? null : List.of(nodeId);
        }
        List<String> ids = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        boolean ok = true;
        for (String entry : raw.split(",", -1)) {
            String member = entry.strip();
            int eq = member.indexOf('=');
            String id = eq < 0 ? member : member.substring(0, eq);
            if (!isLabel(RING_MEMBERS, id, problems)) {
                ok = false;
            } else if (!seen.add(id)) {
                problems.add(RING_MEMBERS + ": '" + raw + "' (expected: each id once; '" + id + "' is listed twice)");
                ok = false;
            } else {
                ids.add(id);
            }
        }
        if (!Limits.RING_MEMBERS.allows(ids.size())) {
            problems.add(RING_MEMBERS + ": " + ids.size() + " members (expected: " + Limits.RING_MEMBERS.min() + ".."
                    + Limits.RING_MEMBERS.max() + " members)");
            return null;
        }
        if (ok && nodeId != null && !seen.contains(nodeId)) {
            problems.add(NODE_ID + ": '" + nodeId + "' (expected: one of the ring members " + ids + ")");
        }
        return ok ? ids : null;
    }

    /** Adds a problem and answers false when {@code id} is not a ring member label. */
    private static boolean isLabel(String key, String id, List<String> problems) {
        try {
            OwnershipGuard.checkNode(key, id);
            return true;
        } catch (SpectorException e) {
            problems.add(key + ": '" + id + "' (expected: a ring member id of " + Limits.RING_MEMBER_CHARS.min() + ".."
                    + Limits.RING_MEMBER_CHARS.max() + " chars without commas, spaces or control chars)");
            return false;
        }
    }
}
