package com.spectrayan.spector.gateway;

import io.netty.util.NetUtil;
import java.util.Arrays;
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
 * <p>An IPv6 client is counted by its /64 ({@link #IPV6_PREFIX_BITS}), not its whole address: a
 * /64 is one network's, the smallest any ISP assigns (RFC 6177, RFC 7421), and a host in it may use
 * any of its 2^64 addresses (RFC 8981's temporary addresses do so by design), so a limit on whole
 * addresses would not hold one client at all. HAProxy's {@code src,ipmask(32,64)} is the same key.
 * An IPv4-mapped address counts as its IPv4 address, and so does one NAT64 made from an IPv4
 * client's (RFC 6052's well-known prefix {@code 64:ff9b::/96}: behind a stateless translator every
 * IPv4 client would otherwise share one /64); a link-local address counts as itself, with its
 * scope (a whole link is no one client).
 *
 * <p>A worker's uplink is counted only until its handshake is accepted ({@link
 * GatewayServer}'s {@code onUplink} releases it): an authenticated worker's links are bounded by
 * {@code spector.uplink.max-links-per-worker}, and a fleet of workers in one subnet must not share
 * the limit meant for one HTTP client.
 *
 * <p>A connection past the limit is closed as it is accepted, as one past {@code max-connections}
 * with no idle connection to close is (no request has been read, so there is no one to answer; a
 * client sees a reset or an immediate close and may retry).
 *
 * <p>Threading: any thread (accepts and closes happen on every event loop). The map holds one entry
 * per address with a connection open, so it is bounded by the open connections.
 */
final class AddressLimit {
    /** The leading bits of an IPv6 address that name the client it is counted as. */
    static final int IPV6_PREFIX_BITS = 64;

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
        open.compute(key(ip), (k, n) -> {
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
        open.computeIfPresent(key(ip), (k, n) -> n <= 1 ? null : n - 1);
    }

    /** Returns the connections {@code ip}'s key holds (its /64 for IPv6). */
    int held(String ip) {
        return open.getOrDefault(key(ip), 0);
    }

    /**
     * Returns what {@code ip} is counted as: an IPv4 address itself, an IPv6 one its /64 ({@code
     * 2001:db8:1:2::/64}), an IPv4-mapped or NAT64 ({@code 64:ff9b::/96}) one its IPv4 address, a
     * link-local one itself.
     */
    static String key(String ip) {
        if (ip.indexOf(':') < 0) {
            return ip;
        }
        int scope = ip.indexOf('%'); // parsed without it; a link-local key keeps it
        byte[] bytes = NetUtil.createByteArrayFromIpAddressString(scope < 0 ? ip : ip.substring(0, scope));
        if (bytes == null) {
            return ip; // not an address (never from a socket): counted as it is
        }
        if (bytes.length == 4) {
            return NetUtil.bytesToIpAddress(bytes);
        }
        if (isIpv4Mapped(bytes) || isNat64(bytes)) {
            return NetUtil.bytesToIpAddress(Arrays.copyOfRange(bytes, 12, 16));
        }
        if ((bytes[0] & 0xff) == 0xfe && (bytes[1] & 0xc0) == 0x80) {
            return ip; // link-local (fe80::/10): the address itself, scope and all
        }
        Arrays.fill(bytes, IPV6_PREFIX_BITS / 8, bytes.length, (byte) 0);
        return NetUtil.bytesToIpAddress(bytes) + "/" + IPV6_PREFIX_BITS;
    }

    /** RFC 6052's well-known NAT64 prefix, {@code 64:ff9b::/96}: the IPv4 address in the last 32 bits. */
    private static boolean isNat64(byte[] v6) {
        if (v6[0] != 0 || v6[1] != 0x64 || v6[2] != (byte) 0xff || v6[3] != (byte) 0x9b) {
            return false;
        }
        for (int i = 4; i < 12; i++) {
            if (v6[i] != 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean isIpv4Mapped(byte[] v6) {
        for (int i = 0; i < 10; i++) {
            if (v6[i] != 0) {
                return false;
            }
        }
        return v6[10] == (byte) 0xff && v6[11] == (byte) 0xff;
    }

    /** Returns the addresses holding a connection (tests: the map empties as they close). */
    int addresses() {
        return open.size();
    }
}
