package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The {@code spector.server.*} section: the client side of the gateway, its socket, request
 * limits, client timeouts and the drain on stop.
 *
 * <p>{@link GatewaySettings#load} builds it and has validated every value; the constructor only
 * refuses nulls and copies the proxies.
 *
 * @param port {@code spector.server.port}; 0 binds any free port
 * @param host {@code spector.server.host}, the address to bind
 * @param maxHeaderSize {@code spector.server.max-header-size}, request head bytes (431 past it)
 * @param maxInitialLineLength {@code spector.server.max-initial-line-length}, request line bytes
 *     (414 past it)
 * @param idleTimeout {@code spector.server.idle-timeout}; idle client connections are closed after it
 * @param headerTimeout {@code spector.server.header-timeout}: a request's whole head must arrive
 *     within it (408 past it)
 * @param bodyTimeout {@code spector.server.body-timeout}: the longest gap between two reads of a
 *     request body (then 408)
 * @param maxConnections {@code spector.server.max-connections}, client connections open at once
 * @param drainTimeout {@code spector.server.drain-timeout}: on SIGTERM, how long in-flight
 *     exchanges may finish before they are cut (0: cut at once)
 * @param trustedProxies {@code spector.server.trusted-proxies}: peers whose {@code X-Forwarded-*}
 *     are believed
 * @param peer {@code spector.server.peer-port} and {@code peer-address}: the listener the cell's
 *     other gateway replicas hand relays to
 */
public record ServerSettings(
        int port,
        String host,
        int maxHeaderSize,
        int maxInitialLineLength,
        Duration idleTimeout,
        Duration headerTimeout,
        Duration bodyTimeout,
        int maxConnections,
        Duration drainTimeout,
        List<InetAddress> trustedProxies,
        PeerSettings peer) {

    /** The smallest request head cap, {@code spector.server.max-header-size}. */
    static final int MIN_HEADER_SIZE = 1024;

    /** The largest request head cap, {@code spector.server.max-header-size}: 1 MiB. */
    static final int MAX_HEADER_SIZE_LIMIT = 1024 * 1024;

    /** The smallest request line cap, {@code spector.server.max-initial-line-length}. */
    static final int MIN_INITIAL_LINE_LENGTH = 256;

    /** The largest request line cap, {@code spector.server.max-initial-line-length}. */
    static final int MAX_INITIAL_LINE_LENGTH_LIMIT = 65536;

    /** The longest {@code spector.server.drain-timeout}: a drain longer than this is a stuck stop. */
    public static final Duration MAX_DRAIN_TIMEOUT = Duration.ofMinutes(10);

    /** The shortest {@code spector.server.header-timeout} and {@code body-timeout}: less cuts honest slow clients. */
    static final Duration MIN_CLIENT_TIMEOUT = Duration.ofSeconds(1);

    /** The longest {@code spector.server.header-timeout}: a request head slower than this is an attack. */
    static final Duration MAX_HEADER_TIMEOUT = Duration.ofMinutes(10);

    /** The longest {@code spector.server.body-timeout}: a longer gap between body reads is a stalled client. */
    static final Duration MAX_BODY_TIMEOUT = Duration.ofHours(1);

    /** Chars of a host name or literal in {@code spector.server.host} (RFC 1035 names, IPv6). */
    static final int MAX_HOST_CHARS = 253;

    private static final Pattern IPV4 = Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9a-fA-F:.]+");

    /** Refuses nulls and keeps an unmodifiable copy of the proxies. */
    public ServerSettings {
        requireNonNull(host, "host");
        requireNonNull(idleTimeout, "idleTimeout");
        requireNonNull(headerTimeout, "headerTimeout");
        requireNonNull(bodyTimeout, "bodyTimeout");
        requireNonNull(drainTimeout, "drainTimeout");
        requireNonNull(peer, "peer");
        trustedProxies = List.copyOf(trustedProxies);
    }

    /** Reads the section, recording every problem in {@code r}. */
    static ServerSettings read(SettingsReader r) {
        return new ServerSettings(
                (int) r.integer(Keys.SERVER_PORT, 0, 65535, "a port in 0..65535 (0: any free port)"),
                host(r),
                (int) r.integer(
                        Keys.SERVER_MAX_HEADER_SIZE,
                        MIN_HEADER_SIZE,
                        MAX_HEADER_SIZE_LIMIT,
                        "an integer in " + MIN_HEADER_SIZE + ".." + MAX_HEADER_SIZE_LIMIT + " bytes"),
                (int) r.integer(
                        Keys.SERVER_MAX_INITIAL_LINE,
                        MIN_INITIAL_LINE_LENGTH,
                        MAX_INITIAL_LINE_LENGTH_LIMIT,
                        "an integer in " + MIN_INITIAL_LINE_LENGTH + ".." + MAX_INITIAL_LINE_LENGTH_LIMIT + " bytes"),
                r.positive(Keys.SERVER_IDLE_TIMEOUT, null, "60s"),
                clientTimeout(r, Keys.SERVER_HEADER_TIMEOUT, MAX_HEADER_TIMEOUT),
                clientTimeout(r, Keys.SERVER_BODY_TIMEOUT, MAX_BODY_TIMEOUT),
                (int) r.integer(Keys.SERVER_MAX_CONNECTIONS, 1, Integer.MAX_VALUE, "an integer >= 1"),
                r.duration(
                        Keys.SERVER_DRAIN_TIMEOUT,
                        null,
                        Duration.ZERO,
                        MAX_DRAIN_TIMEOUT,
                        "a duration in 0s.." + Durations.format(MAX_DRAIN_TIMEOUT) + ", "
                                + SettingsReader.DURATION_EXAMPLES),
                trustedProxies(r),
                PeerSettings.read(r));
    }

    /** Puts the defaults of the keys that have one. */
    static void defaults(Map<String, String> d) {
        d.put(Keys.SERVER_PORT, "7070");
        d.put(Keys.SERVER_HOST, "0.0.0.0");
        d.put(Keys.SERVER_MAX_HEADER_SIZE, "16384");
        d.put(Keys.SERVER_MAX_INITIAL_LINE, "8192");
        d.put(Keys.SERVER_IDLE_TIMEOUT, "60s");
        d.put(Keys.SERVER_HEADER_TIMEOUT, "30s");
        d.put(Keys.SERVER_BODY_TIMEOUT, "60s");
        d.put(Keys.SERVER_MAX_CONNECTIONS, "10000");
        d.put(Keys.SERVER_DRAIN_TIMEOUT, "20s");
        PeerSettings.defaults(d);
    }

    /** Returns this section's keys with their effective values, in the documented order. */
    Map<String, String> describe() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(Keys.SERVER_PORT, String.valueOf(port));
        d.put(Keys.SERVER_HOST, host);
        d.put(Keys.SERVER_MAX_HEADER_SIZE, String.valueOf(maxHeaderSize));
        d.put(Keys.SERVER_MAX_INITIAL_LINE, String.valueOf(maxInitialLineLength));
        d.put(Keys.SERVER_IDLE_TIMEOUT, Durations.format(idleTimeout));
        d.put(Keys.SERVER_HEADER_TIMEOUT, Durations.format(headerTimeout));
        d.put(Keys.SERVER_BODY_TIMEOUT, Durations.format(bodyTimeout));
        d.put(Keys.SERVER_MAX_CONNECTIONS, String.valueOf(maxConnections));
        d.put(Keys.SERVER_DRAIN_TIMEOUT, Durations.format(drainTimeout));
        d.put(
                Keys.SERVER_TRUSTED_PROXIES,
                trustedProxies.stream().map(InetAddress::getHostAddress).collect(Collectors.joining(",")));
        d.putAll(peer.describe());
        return d;
    }

    @Override
    public String toString() {
        return "ServerSettings" + describe();
    }

    private static Duration clientTimeout(SettingsReader r, String key, Duration max) {
        return r.duration(
                key,
                null,
                MIN_CLIENT_TIMEOUT,
                max,
                "a duration in " + Durations.format(MIN_CLIENT_TIMEOUT) + ".." + Durations.format(max) + ", "
                        + SettingsReader.DURATION_EXAMPLES);
    }

    private static String host(SettingsReader r) {
        String value = r.text(Keys.SERVER_HOST);
        boolean ok = value.length() <= MAX_HOST_CHARS;
        for (int i = 0; ok && i < value.length(); i++) {
            char c = value.charAt(i);
            ok = c > 0x20 && c < 0x7f && c != '/' && c != '@';
        }
        if (!ok) {
            r.problem(Keys.SERVER_HOST, show(value), "a host name or IP literal to bind, e.g. 0.0.0.0 or ::");
            return Keys.DEFAULTS.getOrDefault(Keys.SERVER_HOST, "0.0.0.0");
        }
        return value;
    }

    private static List<InetAddress> trustedProxies(SettingsReader r) {
        List<InetAddress> proxies = new ArrayList<>();
        for (String entry : r.list(Keys.SERVER_TRUSTED_PROXIES)) {
            InetAddress address = ipLiteral(entry);
            if (address == null) {
                r.problem(Keys.SERVER_TRUSTED_PROXIES, show(entry), "IP literals, e.g. 10.0.0.1 or ::1");
            } else {
                proxies.add(address);
            }
        }
        return proxies;
    }

    /** Parses an IPv4 or IPv6 literal without ever asking DNS; null when it is not one. */
    static @Nullable InetAddress ipLiteral(String text) {
        String s = text.startsWith("[") && text.endsWith("]") ? text.substring(1, text.length() - 1) : text;
        if (s.indexOf(':') >= 0) {
            if (!IPV6_CHARS.matcher(s).matches()) {
                return null; // no zone ids, nothing that could make the JDK resolve a name
            }
        } else {
            var m = IPV4.matcher(s);
            if (!m.matches()) {
                return null;
            }
            for (int g = 1; g <= 4; g++) {
                if (Integer.parseInt(m.group(g)) > 255) {
                    return null;
                }
            }
        }
        try {
            return InetAddress.getByName(s); // a literal: parsed, never resolved
        } catch (UnknownHostException e) {
            return null;
        }
    }
}
