package com.spectrayan.spector.owner;

import java.util.ArrayDeque;
import java.util.List;

/**
 * The last {@link OwnerLimits#REQUEST_LOG_ROWS} {@code /api/v1} requests of a node, oldest first.
 * Thread-safe: event loops add, admin requests and tests read a snapshot.
 */
final class RequestLog {
    private final ArrayDeque<RecordedRequest> rows = new ArrayDeque<>(); // Guarded by this.
    private long total; // Guarded by this.

    synchronized void add(RecordedRequest row) {
        if (rows.size() == OwnerLimits.REQUEST_LOG_ROWS) {
            rows.removeFirst();
        }
        rows.addLast(row);
        total++;
    }

    /** Returns the rows held, oldest first. */
    synchronized List<RecordedRequest> snapshot() {
        return List.copyOf(rows);
    }

    /** Returns how many rows were ever added. */
    synchronized long total() {
        return total;
    }
}
