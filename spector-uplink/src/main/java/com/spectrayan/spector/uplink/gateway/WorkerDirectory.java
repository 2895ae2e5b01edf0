package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.contract.ErrorCode;
import io.netty.channel.EventLoop;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * The gateway's live uplinks, by worker. A worker may hold several links at once, each in a slot
 * of its own (the worker's {@code X-Spector-Link}, 0 when absent), and they act as one worker:
 *
 * <ul>
 *   <li>A new link joins the worker's others. A link for a slot the worker already holds replaces
 *       the held one and closes it (its relays fail {@link ErrorCode#WORKER_UNREACHABLE}): the
 *       worker re-dials a slot only after it lost it, so the held one is stale. A worker that
 *       sends no slot has one link, replaced on each re-dial, as before links had slots.
 *   <li>A worker holds at most {@link #maxLinksPerWorker()} links, in slots below that number: a
 *       new one past it is refused before its handshake ({@link #refusal}, {@link
 *       ErrorCode#UPLINK_LIMIT}) and, should two handshakes race, closed at {@link #register}.
 *   <li>{@link #live} picks, of the worker's open links, the one with the fewest relays running,
 *       ties taken in turn: so the links are capacity, not only redundancy. The relays a worker
 *       may run at once are counted across its links ({@link GatewayRelay}).
 *   <li>A link leaves when it closes; only its own relays fail, the worker's other links carry on.
 *   <li>{@link Listener}s hear of every change to a worker's links (a link joined, replaced one,
 *       or left), after it, outside the swap: the gateway's registry of uplink holders follows it.
 * </ul>
 *
 * <p>Thread-safety: each worker's links are an immutable list, swapped under {@link
 * ConcurrentHashMap#compute}; links are closed, and listeners told, outside it.
 */
public final class WorkerDirectory {
    /** Links one worker may hold at once, by default ({@code spector.uplink.max-links-per-worker}). */
    public static final int DEFAULT_MAX_LINKS_PER_WORKER = 8;

    /** The most links per worker a gateway may be configured to allow. */
    public static final int MAX_LINKS_PER_WORKER = 64;

    private final int maxLinks;
    private final ConcurrentHashMap<String, List<WorkerLink>> links = new ConcurrentHashMap<>();
    private final AtomicInteger turn = new AtomicInteger();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();

    /** Hears that a worker's links changed. */
    @FunctionalInterface
    public interface Listener {
        /**
         * The links of {@code workerId} changed; {@link #links} says what it holds now. Called on
         * the thread that registered or closed the link, after the change: it must not block,
         * and should not throw (a throw is not caught for it: it reaches that thread's caller).
         */
        void linksChanged(String workerId);
    }

    /** A directory allowing {@link #DEFAULT_MAX_LINKS_PER_WORKER} links per worker. */
    public WorkerDirectory() {
        this(DEFAULT_MAX_LINKS_PER_WORKER);
    }

    /**
     * A directory allowing {@code maxLinksPerWorker} links per worker.
     *
     * @throws IllegalArgumentException outside 1..{@link #MAX_LINKS_PER_WORKER}
     */
    public WorkerDirectory(int maxLinksPerWorker) {
        if (maxLinksPerWorker < 1 || maxLinksPerWorker > MAX_LINKS_PER_WORKER) {
            throw new IllegalArgumentException(
                    "maxLinksPerWorker " + maxLinksPerWorker + " is outside 1.." + MAX_LINKS_PER_WORKER);
        }
        this.maxLinks = maxLinksPerWorker;
    }

    /** Adds a listener that hears of every later change to any worker's links. */
    public void addListener(Listener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    private void changed(String workerId) {
        for (Listener l : listeners) {
            l.linksChanged(workerId);
        }
    }

    /** Returns the links one worker may hold at once. */
    public int maxLinksPerWorker() {
        return maxLinks;
    }

    /**
     * Returns why a new link of {@code workerId} in {@code slot} would be refused now, or null
     * when it would be taken: a slot past the limit, or a new slot while the worker holds the most.
     */
    public @Nullable String refusal(String workerId, int slot) {
        return refusalOf(workerId, slot, links.getOrDefault(workerId, List.of()));
    }

    /**
     * Registers a link: it joins the worker's others, replacing and closing the one in its slot
     * (one that is going away is left to finish its relays: it closes itself after the last, and
     * the worker dialled again because it was told so). Returns false, having closed the new link,
     * when it is refused ({@link #refusal}).
     */
    public boolean register(WorkerLink link) {
        String id = link.workerId();
        WorkerLink[] replaced = new WorkerLink[1];
        String[] refused = new String[1];
        links.compute(id, (k, held) -> {
            List<WorkerLink> now = held == null ? List.of() : held;
            String why = refusalOf(id, link.slot(), now);
            if (why != null) {
                refused[0] = why;
                return held;
            }
            List<WorkerLink> next = new ArrayList<>(now.size() + 1);
            for (WorkerLink l : now) {
                if (l.slot() == link.slot()) {
                    replaced[0] = l;
                } else {
                    next.add(l);
                }
            }
            next.add(link);
            next.sort(Comparator.comparingInt(WorkerLink::slot));
            return List.copyOf(next);
        });
        if (refused[0] != null) {
            link.close(refused[0]);
            return false;
        }
        link.closed().whenComplete((v, e) -> remove(link));
        WorkerLink previous = replaced[0];
        if (previous != null && previous != link && !previous.isGoingAway()) {
            previous.close("replaced by a newer uplink in slot " + link.slot() + " of worker " + id);
        }
        changed(id);
        return true;
    }

    private @Nullable String refusalOf(String workerId, int slot, List<WorkerLink> held) {
        if (slot < 0 || slot >= maxLinks) {
            return "link slot " + slot + " is outside 0.." + (maxLinks - 1) + ": this gateway takes " + maxLinks
                    + " links per worker (spector.uplink.max-links-per-worker)";
        }
        boolean replaces = held.stream().anyMatch(l -> l.slot() == slot);
        if (!replaces && held.size() >= maxLinks) {
            return "worker " + workerId + " already holds " + held.size() + " links, the most this gateway takes"
                    + " (spector.uplink.max-links-per-worker)";
        }
        return null;
    }

    private void remove(WorkerLink link) {
        boolean[] removed = {false};
        links.computeIfPresent(link.workerId(), (k, held) -> {
            List<WorkerLink> next = held.stream().filter(l -> l != link).toList();
            removed[0] = next.size() < held.size();
            return next.isEmpty() ? null : next;
        });
        if (removed[0]) {
            changed(link.workerId());
        }
    }

    /**
     * Returns the worker's open link with the fewest relays running (ties taken in turn), or null
     * when it has none; a link that is going away (sent away by {@link WorkerLink#goAway}, or by
     * the worker's own GOAWAY) is none.
     */
    public @Nullable WorkerLink live(String workerId) {
        return live(workerId, null);
    }

    /**
     * Returns the worker's open link with the fewest relays running, or null when it has none; of
     * those tied, one on {@code prefer} (the caller's event loop) first, else the next in turn. A
     * relay on its client's loop moves each part without a hop between threads, as Envoy keeps a
     * connection pool per worker thread; the count still spreads the load (a busier link on the
     * caller's loop loses to an idler one elsewhere).
     */
    public @Nullable WorkerLink live(String workerId, @Nullable EventLoop prefer) {
        return live(workerId, prefer, List.of());
    }

    /**
     * As {@link #live(String, EventLoop)}, leaving out the links in {@code excluded}: those that
     * refused a relay's stream ({@code REFUSED_STREAM}), which it may retry on another.
     */
    public @Nullable WorkerLink live(String workerId, @Nullable EventLoop prefer, List<WorkerLink> excluded) {
        List<WorkerLink> held = links.get(workerId);
        if (held == null) {
            return null;
        }
        int n = held.size();
        int start = Math.floorMod(turn.getAndIncrement(), n);
        WorkerLink best = null;
        for (int i = 0; i < n; i++) {
            WorkerLink l = held.get((start + i) % n);
            if (!l.takesNewRelays() || excluded.contains(l)) {
                continue;
            }
            if (best == null
                    || l.activeRelays() < best.activeRelays()
                    || (prefer != null
                            && l.activeRelays() == best.activeRelays()
                            && l.eventLoop() == prefer
                            && best.eventLoop() != prefer)) {
                best = l;
            }
        }
        return best;
    }

    /** Returns the worker's open links, by slot. */
    public List<WorkerLink> links(String workerId) {
        return links.getOrDefault(workerId, List.of()).stream()
                .filter(WorkerLink::isOpen)
                .toList();
    }

    /** Returns every open link, several per worker when it holds several, in no particular order. */
    public List<WorkerLink> liveLinks() {
        List<WorkerLink> open = new ArrayList<>();
        for (List<WorkerLink> held : links.values()) {
            for (WorkerLink link : held) {
                if (link.isOpen()) {
                    open.add(link);
                }
            }
        }
        return open;
    }

    /**
     * Sends every open link away ({@link WorkerLink#goAway}): each closes with 1001 and {@code
     * reason} once its relays ended. Returns how many links were sent away.
     */
    public int goAway(String reason) {
        List<WorkerLink> open = liveLinks();
        for (WorkerLink link : open) {
            link.goAway(reason);
        }
        return open.size();
    }

    /** Returns the ids of the workers with a registered link. */
    public Set<String> workerIds() {
        return Set.copyOf(links.keySet());
    }
}
