package com.spectrayan.spector.owner;

import com.spectrayan.spector.cluster.routing.RedisRouting;
import com.spectrayan.spector.cluster.routing.RingMetrics;
import com.spectrayan.spector.cluster.routing.RoutingKeyExtractor;
import java.time.Clock;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;

/**
 * The state one reference owner's connections share. Every member is thread-safe; the handlers of
 * all event loops use them at once.
 */
final class OwnerNode {
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
        String token = spec.adminToken();
        this.adminToken = token == null ? null : AdminToken.of(token);
    }
}
