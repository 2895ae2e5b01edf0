package com.spectrayan.spector.owner;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.cluster.routing.RoutingKey;
import java.util.concurrent.ConcurrentHashMap;
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
 * <p>Concurrency: thread-safe, lock-free (each map's atomic per-key operations). {@link #admit}
 * counts a write before it reads the hand-off mark and {@link #start} sets the mark before the
 * mover reads the count, so a write either sees the mark (and is refused) or is counted (and
 * waited for): never neither.
 *
 * <p>Memory: a key has a write count only while a write of it runs; the last write to leave
 * removes the entry, so the map holds the keys being written now, not every key ever written.
 */
final class Handoffs {
    /** The node each key is being handed to; a key is here only during its move. */
    private final ConcurrentHashMap<RoutingKey, String> handingTo = new ConcurrentHashMap<>();

    /** The writes running per key, always >= 1: a count that drops to 0 is removed. */
    private final ConcurrentHashMap<RoutingKey, Integer> writes = new ConcurrentHashMap<>();

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
        writes.merge(key, 1, Integer::sum); // counted before the mark is read (see the notes)
        String to = handingTo.get(key);
        if (to != null) {
            left(key);
        }
        return to;
    }

    /**
     * An admitted write of {@code key} ended: answered, or its connection closed with nothing of it
     * left to run (a delayed command leaves only once it has run).
     */
    void left(RoutingKey key) {
        writes.computeIfPresent(key, (k, n) -> n == 1 ? null : n - 1);
    }

    /** Returns the writes of {@code key} running now. */
    int writesRunning(RoutingKey key) {
        return writes.getOrDefault(key, 0);
    }

    /** Returns how many keys have a write running now (each holds one entry). */
    int keysWritten() {
        return writes.size();
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
