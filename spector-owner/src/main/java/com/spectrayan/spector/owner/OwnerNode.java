package com.spectrayan.spector.owner;

import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.cluster.routing.RingMetrics;
import com.spectrayan.spector.cluster.routing.RouteEntry;
import com.spectrayan.spector.cluster.routing.RoutingKey;
import com.spectrayan.spector.cluster.routing.RoutingKeyExtractor;
import com.spectrayan.spector.contract.SpectorException;
import java.io.IOException;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state one reference owner's connections share. Every member is thread-safe; the handlers of
 * all event loops use them at once.
 *
 * <p>Ownership overrides change only through {@link #takeOverride} and {@link #handOverride},
 * which save the whole set to the {@link OwnershipFile} (guarded by {@code overridesLock}: one
 * change and its save at a time, so the file follows the changes' order). {@link #restoreOverrides}
 * loads the file at start, before the node binds its port.
 */
final class OwnerNode {
    private static final Logger log = LoggerFactory.getLogger(OwnerNode.class);

    final OwnerSpec spec;
    final String nodeId;
    final OwnershipGuard guard;
    final RoutingKeyExtractor extractor;
    final EventHub events = new EventHub();
    final ObjectStore objects;
    final IdempotencyStore idempotency = new IdempotencyStore();
    final TokenIssuer tokens;
    final RequestLog requests = new RequestLog();
    final Handoffs handoffs = new Handoffs();
    final Clock clock;
    final @Nullable RedisRouting redis;

    /** This node's overrides on disk; changed only under {@link #overridesLock}. */
    final OwnershipFile ownershipFile;

    /** Orders override changes and their saves: one at a time. */
    private final Object overridesLock = new Object();

    /** The token every admin caller must present, or null: the admin API answers loopback callers only. */
    final @Nullable AdminToken adminToken;

    /** The reads of the published ring (when there is Redis). */
    final RingMetrics ringMetrics = new RingMetrics();

    /** The last command sequence number handed out; a replay shows the stored one. */
    final AtomicLong commandSequence = new AtomicLong();

    /** Commands executing now (claimed, not yet answered). */
    final AtomicInteger commandsInFlight = new AtomicInteger();

    /** {@code /stream} responses being written now. */
    final AtomicInteger activeStreams = new AtomicInteger();

    OwnerNode(OwnerSpec spec, ObjectStore objects, Clock clock, @Nullable RedisRouting redis) {
        this.spec = spec;
        this.nodeId = spec.nodeId();
        this.guard = OwnershipGuard.of(spec.nodeId(), spec.ring());
        this.extractor = new RoutingKeyExtractor(spec.cellId());
        this.objects = objects;
        this.tokens = new TokenIssuer(spec.hmacSecret(), clock);
        this.clock = clock;
        this.redis = redis;
        this.ownershipFile = new OwnershipFile(objects.root());
        String token = spec.adminToken();
        this.adminToken = token == null ? null : AdminToken.of(token);
    }

    /**
     * Loads the overrides saved in the data directory into the guard; an override the ring has
     * already outrun (older epoch) no longer counts and is skipped. Returns how many were taken.
     * Called once at start, before the port is bound.
     *
     * @throws IOException naming the file when it is damaged (the owner must not start)
     */
    int restoreOverrides() throws IOException {
        synchronized (overridesLock) {
            int taken = 0;
            long ringEpoch = guard.ring().epoch();
            for (Map.Entry<RoutingKey, RouteEntry> e :
                    ownershipFile.load(spec.cellId()).entrySet()) {
                RouteEntry o = e.getValue();
                if (o.epoch() < ringEpoch) {
                    continue;
                }
                try {
                    guard.setOverride(e.getKey(), o.owner(), o.epoch(), o.fence());
                } catch (SpectorException refused) {
                    throw new IOException(
                            ownershipFile.path() + ": " + e.getKey() + ": " + refused.getMessage(), refused);
                }
                taken++;
            }
            return taken;
        }
    }

    /**
     * Takes an override (this node's view of a key) after saving it with every other: a node that
     * answers it will remember it after a restart. A failed save changes nothing and throws.
     *
     * @throws SpectorException BAD_REQUEST for an override the guard refuses ({@link
     *     OwnershipGuard#setOverride})
     * @throws IOException when it could not be saved; the override is then not taken
     */
    RouteEntry takeOverride(RoutingKey key, String owner, long epoch, long fence) throws IOException {
        synchronized (overridesLock) {
            RouteEntry next = guard.checkOverride(key, owner, epoch, fence);
            Map<RoutingKey, RouteEntry> all = new HashMap<>(guard.overrides());
            all.put(key, next);
            ownershipFile.save(all);
            try {
                return guard.setOverride(key, owner, epoch, fence);
            } catch (SpectorException raced) { // the ring moved past it meanwhile: save what holds
                ownershipFile.save(guard.overrides());
                throw raced;
            }
        }
    }

    /**
     * Takes an override at once, then saves it: for the old owner of a move, which must stop
     * serving the key whatever its disk says, as the new owner already holds it.
     *
     * @throws SpectorException BAD_REQUEST for an override the guard refuses
     * @throws UnsavedOverride when the save failed; the override is taken all the same
     */
    RouteEntry handOverride(RoutingKey key, String owner, long epoch, long fence) throws UnsavedOverride {
        synchronized (overridesLock) {
            RouteEntry taken = guard.setOverride(key, owner, epoch, fence);
            try {
                ownershipFile.save(guard.overrides());
            } catch (IOException e) {
                throw new UnsavedOverride(taken, e);
            }
            return taken;
        }
    }

    /**
     * Stores in L2 again the route of every key this node took by an override that still decides
     * (the ring has not moved past it), with the entry's TTL renewed: without it the entry lapses
     * 30 s after the move and gateways fall back to the ring's owner, the old one, which may be
     * gone (review finding 3). Asynchronous; a failure is logged at DEBUG and the next tick tries
     * again. Called every {@link OwnerSpec#routeRefresh()} on an event loop.
     */
    void refreshOwnRoutes() {
        RedisRouting r = redis;
        if (r == null) {
            return;
        }
        for (Map.Entry<RoutingKey, RouteEntry> e : guard.overrides().entrySet()) {
            RoutingKey key = e.getKey();
            RouteEntry own = e.getValue();
            if (!own.owner().equals(nodeId) || !guard.viewOf(key).equals(own)) {
                continue; // another's key, or one the ring has taken over
            }
            try {
                r.cache().putOwned(key, own).whenComplete((stored, error) -> {
                    if (error != null) {
                        log.debug("{}: could not refresh the route of {}: {}", nodeId, key, error.toString());
                    }
                });
            } catch (RuntimeException error) {
                log.debug("{}: could not refresh the route of {}: {}", nodeId, key, error.toString());
            }
        }
    }

    /** An override taken in memory whose save failed: a restart would forget it. */
    static final class UnsavedOverride extends IOException {
        private static final long serialVersionUID = 1L;

        private final transient RouteEntry entry;

        UnsavedOverride(RouteEntry entry, IOException cause) {
            super("the override " + entry + " is taken but not saved: " + cause, cause);
            this.entry = entry;
        }

        /** Returns the override taken. */
        RouteEntry entry() {
            return entry;
        }
    }
}
