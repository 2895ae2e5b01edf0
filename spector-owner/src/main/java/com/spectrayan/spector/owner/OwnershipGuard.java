package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.CellRing;
import com.spectrayan.spector.cluster.routing.KetamaRing;
import com.spectrayan.spector.cluster.routing.OwnershipResolver;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.contract.SpectorHeaders;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * Decides, before any side effect and from the routing headers alone, whether this node serves a
 * request (DESIGN.md section 4, "Owner side"). Usable by any Java owner.
 *
 * <p>The node's <em>view</em> of a key is its override, if one was set at an epoch not older than
 * the ring's, else the ring's owner at the ring's epoch with {@link RouteEntry#NO_FENCE}. The ring
 * is swapped whole by {@link #offerRing} (the cell's published ring, read from Redis), only for
 * one that supersedes it, as the gateways swap theirs: a ring at a higher epoch outranks every
 * override made at a lower one, so the owner and the gateways agree on each key. Rules, in
 * order:
 *
 * <ol>
 *   <li>the view names another node: 421 with the view ({@code not-owner});
 *   <li>the request's epoch is older than the view's: 421 with the view ({@code stale-epoch}), so
 *       the gateway refreshes;
 *   <li>the request's epoch is newer than the view's: 503 with {@code Retry-After} ({@code
 *       owner-lagging}); the gateway changes no cache;
 *   <li>a write whose fence is lower than the view's: 421 with the view ({@code stale-fence}),
 *       refused before any side effect. A write without a fence counts as {@link
 *       RouteEntry#NO_FENCE}: it only passes while the key has no fence;
 *   <li>otherwise serve.
 * </ol>
 *
 * <p>A request without an epoch (a client calling the owner directly) skips rules 2 and 3.
 *
 * <p>Concurrency: thread-safe; {@link #decide} takes no lock. Overrides only move forward: an
 * override is taken only if its {@code (epoch, fence)} is not older than the key's current view.
 */
public final class OwnershipGuard {
    private final String nodeId;
    private final OwnershipResolver ring;
    private final ConcurrentHashMap<RoutingKey, RouteEntry> overrides = new ConcurrentHashMap<>();

    private OwnershipGuard(String nodeId, KetamaRing ring) {
        this.nodeId = checkNode("nodeId", nodeId);
        this.ring = new OwnershipResolver(requireNonNull(ring, "ring"));
    }

    /** Creates the guard of node {@code nodeId} over a ring (an empty ring refuses with 503). */
    public static OwnershipGuard of(String nodeId, KetamaRing ring) {
        return new OwnershipGuard(nodeId, ring);
    }

    /** Returns this node's id, as on the ring. */
    public String nodeId() {
        return nodeId;
    }

    /** Returns the ring held now. */
    public KetamaRing ring() {
        return ring.ring();
    }

    /** Returns the ring held now with its source ({@code config}, or {@code redis} once published). */
    public CellRing snapshot() {
        return ring.snapshot();
    }

    /**
     * Swaps in a published ring when it supersedes the held one ({@link CellRing#supersedes});
     * returns whether it did. Overrides older than the new ring's epoch stop counting.
     */
    public boolean offerRing(CellRing next) {
        return ring.offer(next);
    }

    /**
     * Returns this node's view of a key: the override if one was set, else the ring's owner.
     *
     * @throws SpectorException GATEWAY_ROUTING_FAILURE when the key has no override and the ring
     *     is empty
     */
    public RouteEntry viewOf(RoutingKey key) {
        requireNonNull(key, "key");
        return view(overrides.get(key), key);
    }

    /** The view of a key given its override: the override unless the ring has moved past its epoch. */
    private RouteEntry view(@Nullable RouteEntry override, RoutingKey key) {
        KetamaRing r = ring.ring(); // one snapshot for the epoch and the owner
        return override != null && override.epoch() >= r.epoch() ? override : ringView(r, key);
    }

    private static RouteEntry ringView(KetamaRing r, RoutingKey key) {
        return new RouteEntry(r.ownerOf(key.ringKey()), r.epoch(), RouteEntry.NO_FENCE);
    }

    /**
     * Decides whether this node serves a request.
     *
     * @param key the request's routing key
     * @param requestEpoch the {@code X-Spector-Epoch} the request carries, if any
     * @param requestFence the {@code X-Spector-Fence} the request carries, if any
     * @param write whether the request writes ({@link #isWrite(String)})
     * @throws SpectorException GATEWAY_ROUTING_FAILURE when the view cannot be formed (empty ring)
     */
    public OwnershipDecision decide(
            RoutingKey key, OptionalLong requestEpoch, OptionalLong requestFence, boolean write) {
        requireNonNull(requestEpoch, "requestEpoch");
        requireNonNull(requestFence, "requestFence");
        RouteEntry view = viewOf(key);
        if (!view.owner().equals(nodeId)) {
            return new OwnershipDecision(
                    OwnershipDecision.Outcome.MISDIRECTED,
                    view,
                    OwnershipDecision.REASON_NOT_OWNER,
                    key + " is owned by " + view.owner() + " at epoch " + view.epoch() + ", not by " + nodeId);
        }
        if (requestEpoch.isPresent()) {
            long epoch = requestEpoch.getAsLong();
            if (epoch < view.epoch()) {
                return new OwnershipDecision(
                        OwnershipDecision.Outcome.MISDIRECTED,
                        view,
                        OwnershipDecision.REASON_STALE_EPOCH,
                        "request epoch " + epoch + " is older than " + nodeId + "'s epoch " + view.epoch() + " for "
                                + key);
            }
            if (epoch > view.epoch()) {
                return new OwnershipDecision(
                        OwnershipDecision.Outcome.LAGGING,
                        view,
                        OwnershipDecision.REASON_LAGGING,
                        "request epoch " + epoch + " is newer than " + nodeId + "'s epoch " + view.epoch() + " for "
                                + key + "; retry");
            }
        }
        long fence = requestFence.orElse(RouteEntry.NO_FENCE);
        if (write && fence < view.fence()) {
            return new OwnershipDecision(
                    OwnershipDecision.Outcome.MISDIRECTED,
                    view,
                    OwnershipDecision.REASON_STALE_FENCE,
                    "write fence " + fence + " is lower than " + view.fence() + " for " + key);
        }
        return new OwnershipDecision(
                OwnershipDecision.Outcome.SERVE, view, OwnershipDecision.REASON_OWNER, nodeId + " owns " + key);
    }

    /**
     * Decides from raw header values: the method says whether it writes, the epoch and fence are
     * parsed with {@link #parseToken}.
     *
     * @throws SpectorException BAD_REQUEST for a malformed epoch or fence header
     */
    public OwnershipDecision decide(
            RoutingKey key, String method, @Nullable String epochHeader, @Nullable String fenceHeader) {
        return decide(
                key,
                parseToken(SpectorHeaders.EPOCH, epochHeader),
                parseToken(SpectorHeaders.FENCE, fenceHeader),
                isWrite(method));
    }

    /**
     * Sets this node's view of a key and returns it. The key's {@code (epoch, fence)} never moves
     * backwards: an override older than the current view, or one at the same {@code (epoch,
     * fence)} naming another owner, is refused.
     *
     * @throws SpectorException BAD_REQUEST for a backwards or conflicting override, a negative epoch
     *     or fence, or a malformed owner
     */
    public RouteEntry setOverride(RoutingKey key, String owner, long epoch, long fence) {
        requireNonNull(key, "key");
        checkNode("owner", owner);
        if (epoch < 0) {
            throw SpectorException.badRequest("epoch", epoch + " (expected: >= 0)");
        }
        if (fence < 0) {
            throw SpectorException.badRequest("fence", fence + " (expected: >= 0)");
        }
        RouteEntry next = new RouteEntry(owner, epoch, fence);
        return overrides.compute(key, (k, held) -> checked(view(held, k), next, k));
    }

    /**
     * Returns the override {@link #setOverride} would take now, without taking it: for a caller
     * that saves it before it applies (the reference owner's ownership file).
     *
     * @throws SpectorException BAD_REQUEST as {@link #setOverride} would
     */
    RouteEntry checkOverride(RoutingKey key, String owner, long epoch, long fence) {
        requireNonNull(key, "key");
        checkNode("owner", owner);
        if (epoch < 0 || fence < 0) {
            throw SpectorException.badRequest("epoch", "(" + epoch + ", " + fence + ") (expected: >= 0)");
        }
        return checked(viewOf(key), new RouteEntry(owner, epoch, fence), key);
    }

    private static RouteEntry checked(RouteEntry current, RouteEntry next, RoutingKey k) {
        if (next.isOlderThan(current)) {
            throw SpectorException.badRequest(
                    "epoch",
                    "(" + next.epoch() + ", " + next.fence() + ") is older than the view (" + current.epoch() + ", "
                            + current.fence() + ") of " + k + " (expected: not older; overrides only move"
                            + " forward)");
        }
        if (!current.isOlderThan(next) && !current.owner().equals(next.owner())) {
            throw SpectorException.badRequest(
                    "epoch",
                    "(" + next.epoch() + ", " + next.fence() + ") already names " + current.owner() + " for " + k
                            + " (expected: a newer epoch or fence to move it to " + next.owner() + ")");
        }
        return next;
    }

    /** Returns the overrides set so far, a snapshot. */
    public Map<RoutingKey, RouteEntry> overrides() {
        return Map.copyOf(overrides);
    }

    /** Answers whether a method writes: POST, PUT, PATCH and DELETE do. */
    public static boolean isWrite(String method) {
        return switch (method.toUpperCase(Locale.ROOT)) {
            case "POST", "PUT", "PATCH", "DELETE" -> true;
            default -> false;
        };
    }

    /**
     * Parses an epoch or fence header: absent when null, else a decimal in {@code
     * 0..Long.MAX_VALUE}.
     *
     * @throws SpectorException BAD_REQUEST naming the header otherwise
     */
    public static OptionalLong parseToken(String header, @Nullable String value) {
        if (value == null) {
            return OptionalLong.empty();
        }
        String v = value.strip();
        boolean digits = !v.isEmpty() && v.length() <= 19;
        for (int i = 0; digits && i < v.length(); i++) {
            char c = v.charAt(i);
            digits = c >= '0' && c <= '9';
        }
        if (digits) {
            try {
                return OptionalLong.of(Long.parseLong(v));
            } catch (NumberFormatException e) {
                // 19 digits past Long.MAX_VALUE; refused below.
            }
        }
        throw SpectorException.badRequest(
                header, "'" + printable(v) + "' (expected: a decimal in 0.." + Long.MAX_VALUE + ")");
    }

    static String checkNode(String field, String node) {
        requireNonNull(node, field);
        if (!Limits.RING_MEMBER_CHARS.allows(node.length())) {
            throw SpectorException.badRequest(
                    field,
                    node.length() + " chars (expected: " + Limits.RING_MEMBER_CHARS.min() + ".."
                            + Limits.RING_MEMBER_CHARS.max() + " chars)");
        }
        for (int i = 0; i < node.length(); i++) {
            char c = node.charAt(i);
            if (c == ',' || c <= 0x20 || c >= 0x7f) {
                throw SpectorException.of(
                        ErrorCode.BAD_REQUEST,
                        field + ": '" + printable(node) + "' has a comma, a space or a control character at " + i
                                + " (expected: a ring member label)",
                        Map.of("field", field, "reason", "not a ring member label"));
            }
        }
        return node;
    }

    private static String printable(String s) {
        StringBuilder out = new StringBuilder(Math.min(s.length(), 64));
        for (int i = 0; i < s.length() && i < 64; i++) {
            char c = s.charAt(i);
            out.append(c < 0x20 || c >= 0x7f ? '?' : c);
        }
        return out.toString();
    }
}
