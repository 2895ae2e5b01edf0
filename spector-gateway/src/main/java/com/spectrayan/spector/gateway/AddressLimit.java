package com.spectrayan.spector.gateway;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code spector.server.max-connections-per-address}: the client connections one address may hold
 * open at once, so that one address cannot take every connection {@code max-connections} allows,
 * nor hold the half of the replay budget bodies read first may use with a thousand slow uploads
 * (found by the twenty-seventh session's review). HAProxy's {@code tcp-request connection reject
 * if { src_conn_cur ge N }} is the same rule (nginx's {@code limit_conn} counts requests in
 * progress per address instead), and like both it is off until set: behind a load balancer that
 * does not keep the client's address, every client has the balancer's. The cell's trusted
 * proxies ({@code spector.server.trusted-proxies}) are never counted: they speak for many clients.
 *
 * <p>A connection past the limit is closed as it is accepted, as one past {@code max-connections}
 * with no idle connection to close is (no request has been read, so there is no one to answer; a
 * client sees a reset or an immediate close and may retry).
 *
 * <p>Threading: any thread (accepts and closes happen on every event loop). The map holds one entry
 * per address with a connection open, so it is bounded by the open connections.
 */
final class AddressLimit {
    private final int max;
    private final Set<String> exempt;
    private final ConcurrentHashMap<String, Integer> open = new ConcurrentHashMap<>();

    /**
     * @param max connections per address, {@link com.spectrayan.spector.gateway.config.ServerSettings#UNLIMITED_PER_ADDRESS}: none
     * @param exempt the IP literals never counted (the trusted proxies)
     */
    AddressLimit(int max, Set<String> exempt) {
        this.max = max;
        this.exempt = Set.copyOf(exempt);
    }

    /** Answers whether a limit is set. */
    boolean enabled() {
        return max > 0;
    }

    /**
     * Counts a connection from {@code ip} in and answers true, or answers false when {@code ip}
     * already holds the limit (nothing is counted then). Each true must be matched by one {@link
     * #release}.
     */
    boolean tryAcquire(String ip) {
        if (max <= 0 || exempt.contains(ip)) {
            return true;
        }
        boolean[] taken = {false};
        open.compute(ip, (k, n) -> {
            int held = n == null ? 0 : n;
            if (held >= max) {
                return n;
            }
            taken[0] = true;
            return held + 1;
        });
        return taken[0];
    }

    /** Counts a connection from {@code ip}, acquired before, out. */
    void release(String ip) {
        if (max <= 0 || exempt.contains(ip)) {
            return;
        }
        open.computeIfPresent(ip, (k, n) -> n <= 1 ? null : n - 1);
    }

    /** Returns the connections {@code ip} holds (tests). */
    int held(String ip) {
        return open.getOrDefault(ip, 0);
    }

    /** Returns the addresses holding a connection (tests: the map empties as they close). */
    int addresses() {
        return open.size();
    }
}
