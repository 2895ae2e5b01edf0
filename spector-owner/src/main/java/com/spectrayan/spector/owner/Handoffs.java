package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The namespaces this node is handing to another owner, and the writes of each key still running
 * here. A request of a key being handed off is answered {@code 503} with {@code
 * X-Spector-Handoff} (the gateway holds it); a move copies the key's state only once no write of
 * the key runs any more, so every write this node acknowledged is in the copy.
 *
 * <pre>
 *   serving --start(to)--> handing off (new writes refused; running ones drain) --end--> serving
 * </pre>
 *
 * <p>Concurrency: thread-safe, lock-free. {@link #admit} counts a write before it reads the
 * hand-off mark and {@link #start} sets the mark before the mover reads the count, so a write
 * either sees the mark (and is refused) or is counted (and waited for): never neither.
 */
final class Handoffs {
    private final ConcurrentHashMap<RoutingKey, String> handingTo = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<RoutingKey, AtomicInteger> writes = new ConcurrentHashMap<>();

    /**
     * Admits a request of {@code key}: returns the node the key is being handed to (the request is
     * then refused and not counted), or null; an admitted write is counted until {@link #left}.
     */
    @Nullable
    String admit(RoutingKey key, boolean write) {
        requireNonNull(key, "key");
        if (!write) {
            return handingTo.get(key);
        }
        AtomicInteger n = writes.computeIfAbsent(key, k -> new AtomicInteger());
        n.incrementAndGet();
        String to = handingTo.get(key);
        if (to != null) {
            n.decrementAndGet();
        }
        return to;
    }

    /** An admitted write of {@code key} ended (answered, or its connection closed). */
    void left(RoutingKey key) {
        AtomicInteger n = writes.get(key);
        if (n != null) {
            n.decrementAndGet();
        }
    }

    /** Returns the writes of {@code key} running now. */
    int writesRunning(RoutingKey key) {
        AtomicInteger n = writes.get(key);
        return n == null ? 0 : n.get();
    }

    /** Marks {@code key} handing off to {@code to}; answers false when a hand-off of it runs already. */
    boolean start(RoutingKey key, String to) {
        return handingTo.putIfAbsent(requireNonNull(key, "key"), requireNonNull(to, "to")) == null;
    }

    /** Ends the hand-off of {@code key} (done, or called off): its requests are decided as before. */
    void end(RoutingKey key) {
        handingTo.remove(key);
    }

    /** Returns the node {@code key} is being handed to, or null. */
    @Nullable
    String handingTo(RoutingKey key) {
        return handingTo.get(key);
    }
}
