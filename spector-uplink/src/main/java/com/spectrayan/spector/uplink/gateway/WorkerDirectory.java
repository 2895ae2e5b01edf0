package com.spectrayan.spector.uplink.gateway;

import com.spectrayan.spector.contract.ErrorCode;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;

/**
 * The gateway's live worker links by worker id. A second link for the same id replaces the first
 * and closes it (its relays fail {@link ErrorCode#WORKER_UNREACHABLE}); a link leaves the
 * directory when it closes. Thread-safe.
 */
public final class WorkerDirectory {
    private final ConcurrentHashMap<String, WorkerLink> links = new ConcurrentHashMap<>();

    /** Registers a link, replacing and closing the worker's previous one. */
    public void register(WorkerLink link) {
        String id = link.workerId();
        WorkerLink previous = links.put(id, link);
        link.closed().whenComplete((v, e) -> links.remove(id, link));
        if (previous != null && previous != link) {
            previous.close("replaced by a newer uplink of worker " + id);
        }
    }

    /** Returns the worker's link when it is open, else null. */
    public @Nullable WorkerLink live(String workerId) {
        WorkerLink link = links.get(workerId);
        return link != null && link.isOpen() ? link : null;
    }

    /** Returns the open links, one per worker, in no particular order. */
    public List<WorkerLink> liveLinks() {
        List<WorkerLink> open = new ArrayList<>();
        for (WorkerLink link : links.values()) {
            if (link.isOpen()) {
                open.add(link);
            }
        }
        return open;
    }

    /** Returns the ids of the workers with a registered link. */
    public Set<String> workerIds() {
        return Set.copyOf(links.keySet());
    }
}
