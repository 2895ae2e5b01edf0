package com.spectrayan.spector.gateway.config;

import static com.spectrayan.spector.gateway.config.SettingsReader.show;
import static java.util.Objects.requireNonNull;

import io.netty.channel.epoll.Epoll;
import io.netty.channel.uring.IoUring;
import io.netty.handler.ssl.OpenSsl;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The {@code spector.server.*} section: the client side of the gateway, its sockets (plain, and
 * TLS when a certificate is set), request limits, client timeouts and the drain on stop.
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
 * @param sendTimeout {@code spector.server.send-timeout}: the longest a client may take no byte of
 *     a response the gateway holds for it (then the connection is reset)
 * @param maxConnections {@code spector.server.max-connections}, client connections open at once
 * @param maxConnectionsPerAddress {@code spector.server.max-connections-per-address}: client
 *     connections open at once from one address ({@link #UNLIMITED_PER_ADDRESS}: no such limit);
 *     trusted proxies are not counted
 * @param transport {@code spector.server.transport}: the sockets' transport ({@link Transport})
 * @param splicePipes {@code spector.server.splice-pipes}: client connections that may hold a kernel
 *     pipe for response bodies spliced from an owner's socket (0: no splicing)
 * @param drainTimeout {@code spector.server.drain-timeout}: on SIGTERM, how long in-flight
 *     exchanges may finish before they are cut (0: cut at once)
 * @param trustedProxies {@code spector.server.trusted-proxies}: peers whose {@code X-Forwarded-*}
 *     are believed
 * @param accessLog {@code spector.server.access-log}: {@code stdout}, {@code off}, or the path of a
 *     file the JSON lines are appended to
 * @param tls {@code spector.server.tls.*}, the TLS listener, or null when no certificate is set
 * @param peer {@code spector.server.peer-port} and {@code peer-address}: the listener the cell's
 *     other gateway replicas hand relays to
 * @param adminPort {@code spector.server.admin-port}: the listener serving health and metrics on a
 *     thread of its own, 0 for any free port (tests), or {@link #ADMIN_OFF}
 */
public record ServerSettings(
        int port,
        String host,
        int maxHeaderSize,
        int maxInitialLineLength,
        Duration idleTimeout,
        Duration headerTimeout,
        Duration bodyTimeout,
        Duration sendTimeout,
        int maxConnections,
        int maxConnectionsPerAddress,
        Transport transport,
        int splicePipes,
        Duration drainTimeout,
        List<InetAddress> trustedProxies,
        String accessLog,
        @Nullable Tls tls,
        PeerSettings peer,
        int adminPort) {

    /** {@code spector.server.max-connections-per-address} that sets no such limit, its default (as HAProxy's {@code src_conn_cur} rule, off until configured). */
    public static final int UNLIMITED_PER_ADDRESS = 0;

    /** {@code spector.server.admin-port} that turns the admin listener off, its default. */
    public static final int ADMIN_OFF = -1;

    /** The smallest request head cap, {@code spector.server.max-header-size}. */
    static final int MIN_HEADER_SIZE = 1024;

    /** The largest request head cap, {@code spector.server.max-header-size}: 1 MiB. */
    static final int MAX_HEADER_SIZE_LIMIT = 1024 * 1024;

    /** The smallest request line cap, {@code spector.server.max-initial-line-length}. */
    static final int MIN_INITIAL_LINE_LENGTH = 256;

    /** The largest request line cap, {@code spector.server.max-initial-line-length}. */
    static final int MAX_INITIAL_LINE_LENGTH_LIMIT = 65536;

    /**
     * {@code spector.server.splice-pipes}' default: HAProxy's {@code maxpipes} is a quarter of its
     * connection limit; a quarter of {@code max-connections}' default here.
     */
    public static final int DEFAULT_SPLICE_PIPES = 2500;

    /** The largest {@code spector.server.splice-pipes}: two descriptors each, within a process's open files. */
    static final int MAX_SPLICE_PIPES = 100_000;

    /** The longest {@code spector.server.drain-timeout}: a drain longer than this is a stuck stop. */
    public static final Duration MAX_DRAIN_TIMEOUT = Duration.ofMinutes(10);

    /**
     * The shortest {@code spector.server.header-timeout}, {@code body-timeout} and {@code
     * send-timeout}: less cuts honest slow clients.
     */
    static final Duration MIN_CLIENT_TIMEOUT = Duration.ofSeconds(1);

    /** The longest {@code spector.server.header-timeout}: a request head slower than this is an attack. */
    static final Duration MAX_HEADER_TIMEOUT = Duration.ofMinutes(10);

    /** The longest {@code spector.server.body-timeout}: a longer gap between body reads is a stalled client. */
    static final Duration MAX_BODY_TIMEOUT = Duration.ofHours(1);

    /** The longest {@code spector.server.send-timeout}: a client that takes no byte for longer has stalled. */
    static final Duration MAX_SEND_TIMEOUT = Duration.ofHours(1);

    /** Chars of a host name or literal in {@code spector.server.host} (RFC 1035 names, IPv6). */
    static final int MAX_HOST_CHARS = 253;

    /** {@code spector.server.tls.port}'s default. */
    public static final int DEFAULT_TLS_PORT = 7443;

    /**
     * How often the TLS files are checked for a change, {@code spector.server.tls.reload-interval}'s
     * default: two reads of a few KiB, and a renewed certificate (cert-manager renews a third of its
     * life early) is served within seconds.
     */
    public static final Duration TLS_RELOAD_INTERVAL = Duration.ofSeconds(10);

    /** The shortest {@code spector.server.tls.reload-interval}: shorter only rereads the files in a loop. */
    static final Duration MIN_TLS_RELOAD_INTERVAL = Duration.ofMillis(100);

    /** The longest {@code spector.server.tls.reload-interval}: a renewed certificate waits at most this. */
    static final Duration MAX_TLS_RELOAD_INTERVAL = Duration.ofHours(1);

    private static final Pattern IPV4 = Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9a-fA-F:.]+");

    /** Refuses nulls (but {@code tls}) and keeps an unmodifiable copy of the proxies. */
    public ServerSettings {
        requireNonNull(host, "host");
        requireNonNull(idleTimeout, "idleTimeout");
        requireNonNull(headerTimeout, "headerTimeout");
        requireNonNull(bodyTimeout, "bodyTimeout");
        requireNonNull(sendTimeout, "sendTimeout");
        requireNonNull(drainTimeout, "drainTimeout");
        requireNonNull(peer, "peer");
        requireNonNull(accessLog, "accessLog");
        requireNonNull(transport, "transport");
        trustedProxies = List.copyOf(trustedProxies);
    }

    /**
     * The transport every socket of the gateway runs on, {@code spector.server.transport}: the
     * Linux kernel's {@code epoll}, its {@code io_uring}, or the JDK's NIO (any platform), each the
     * Netty transport of that name. epoll is the default; io_uring is opt-in, as Envoy's io_uring
     * socket interface is: it costs a forwarded 1 KiB request about a fifth less CPU here, but it
     * does not splice large bodies (bench/README.md "The io_uring transport").
     */
    public enum Transport {
        /** epoll where the kernel offers it, else NIO. */
        AUTO,
        /** io_uring; refused where it is not available (a container's seccomp profile, an old kernel). */
        IO_URING,
        /** epoll; refused where it is not available (not Linux). */
        EPOLL,
        /** The JDK's NIO: any platform, the most CPU per request. */
        NIO;

        /** The setting's spelling: {@code auto}, {@code io_uring}, {@code epoll}, {@code nio}. */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** Says why this transport cannot run in this process, or null when it can. */
        public @Nullable String unavailability() {
            return switch (this) {
                case AUTO, NIO -> null;
                case IO_URING ->
                    IoUring.isAvailable()
                            ? null
                            : "io_uring is not available here" + cause(IoUring.unavailabilityCause());
                case EPOLL ->
                    Epoll.isAvailable() ? null : "epoll is not available here" + cause(Epoll.unavailabilityCause());
            };
        }

        private static String cause(@Nullable Throwable t) {
            return t == null
                    ? ""
                    : " (" + t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage()) + ")";
        }
    }

    /** Which TLS implementation the listener uses, {@code spector.server.tls.provider}. */
    public enum TlsProvider {
        /** OpenSSL (BoringSSL, netty-tcnative) when it loads on this machine, else the JDK's. */
        AUTO,
        /** The JDK's own TLS ({@code SSLEngine}). */
        JDK,
        /** OpenSSL through netty-tcnative-boringssl-static; refused at start when it does not load. */
        OPENSSL
    }

    /**
     * The {@code spector.server.tls.*} keys: the optional TLS listener beside the plain one, with the
     * same pipeline. {@link #toString()} shows the certificate, never the key.
     *
     * @param certificate {@code certificate}, the PEM certificate chain, the server's first
     * @param privateKey {@code private-key}, the certificate's PKCS#8 PEM key
     * @param port {@code port}; 0 binds any free port
     * @param reloadInterval {@code reload-interval}: how often the two files are checked for a change
     * @param provider {@code provider}
     * @param keyPair the pair as read and checked at start
     */
    public record Tls(
            Path certificate,
            Path privateKey,
            int port,
            Duration reloadInterval,
            TlsProvider provider,
            TlsKeyPair keyPair) {
        /** Refuses nulls. */
        public Tls {
            requireNonNull(certificate, "certificate");
            requireNonNull(privateKey, "privateKey");
            requireNonNull(reloadInterval, "reloadInterval");
            requireNonNull(provider, "provider");
            requireNonNull(keyPair, "keyPair");
        }
    }

    /** Reads the section, recording every problem in {@code r}. */
    static ServerSettings read(SettingsReader r) {
        return read(r, OpenSsl::isAvailable);
    }

    /** Reads the section; {@code openSsl} answers whether OpenSSL loads here. */
    static ServerSettings read(SettingsReader r, BooleanSupplier openSsl) {
        int port = (int) r.integer(Keys.SERVER_PORT, 0, 65535, "a port in 0..65535 (0: any free port)");
        ServerSettings read = new ServerSettings(
                port,
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
                clientTimeout(r, Keys.SERVER_SEND_TIMEOUT, MAX_SEND_TIMEOUT),
                (int) r.integer(Keys.SERVER_MAX_CONNECTIONS, 1, Integer.MAX_VALUE, "an integer >= 1"),
                (int) r.integer(
                        Keys.SERVER_MAX_CONNECTIONS_PER_ADDRESS, 0, Integer.MAX_VALUE, "an integer >= 0 (0: no limit)"),
                transport(r, Transport::unavailability),
                (int) r.integer(
                        Keys.SERVER_SPLICE_PIPES,
                        0,
                        MAX_SPLICE_PIPES,
                        "an integer in 0.." + MAX_SPLICE_PIPES + " (0: no splicing)"),
                r.duration(
                        Keys.SERVER_DRAIN_TIMEOUT,
                        null,
                        Duration.ZERO,
                        MAX_DRAIN_TIMEOUT,
                        "a duration in 0s.." + Durations.format(MAX_DRAIN_TIMEOUT) + ", "
                                + SettingsReader.DURATION_EXAMPLES),
                trustedProxies(r),
                accessLog(r),
                tls(r, port, openSsl),
                PeerSettings.read(r),
                (int) r.integer(
                        Keys.SERVER_ADMIN_PORT,
                        ADMIN_OFF,
                        65535,
                        "a port in 1..65535, 0 for any free port, or " + ADMIN_OFF + " for no admin listener"));
        adminPortFree(r, read);
        peerPortFree(r, read);
        return read;
    }

    /**
     * Records a problem when {@code spector.server.peer-port} names the client port or the TLS
     * port: before, the second bind failed with an anonymous "Address already in use" and exit 1
     * (the third review). Its default (7090) is checked only when the listener binds ({@link
     * #peerPortBinds}), so a client port of 7090 without the peer hop stays a valid setting.
     */
    private static void peerPortFree(SettingsReader r, ServerSettings read) {
        int peer = read.peer.port();
        String taken = !peerPortBinds(r, read)
                ? null
                : peer == read.port
                        ? Keys.SERVER_PORT
                        : read.tls != null && peer == read.tls.port() ? Keys.TLS_PORT : null;
        if (taken != null) {
            r.problem(Keys.SERVER_PEER_PORT, show(String.valueOf(peer)), "a port other than " + taken + "'s");
        }
    }

    /**
     * Answers whether {@code spector.server.peer-port} is one to keep free of the other listeners:
     * a fixed port set by hand, or the default (7090) when the peer listener binds, which it does
     * with a peer secret set (Redis always has its default). Regression: an admin port of 7090 was
     * refused even when no peer listener would ever bind it.
     */
    private static boolean peerPortBinds(SettingsReader r, ServerSettings read) {
        int peer = read.peer.port();
        return peer > 0 && (peer != PeerSettings.DEFAULT_PORT || r.raw(Keys.CELL_PEER_SECRET) != null);
    }

    /** Records a problem when {@code spector.server.admin-port} names another listener's port. */
    private static void adminPortFree(SettingsReader r, ServerSettings read) {
        int admin = read.adminPort;
        String taken = admin <= 0
                ? null
                : admin == read.port
                        ? Keys.SERVER_PORT
                        : read.tls != null && admin == read.tls.port()
                                ? Keys.TLS_PORT
                                : admin == read.peer.port() && peerPortBinds(r, read) ? Keys.SERVER_PEER_PORT : null;
        if (taken != null) {
            r.problem(Keys.SERVER_ADMIN_PORT, show(String.valueOf(admin)), "a port other than " + taken + "'s");
        }
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
        d.put(Keys.SERVER_SEND_TIMEOUT, "60s");
        d.put(Keys.SERVER_MAX_CONNECTIONS, "10000");
        d.put(Keys.SERVER_MAX_CONNECTIONS_PER_ADDRESS, String.valueOf(UNLIMITED_PER_ADDRESS));
        d.put(Keys.SERVER_TRANSPORT, Transport.AUTO.label());
        d.put(Keys.SERVER_SPLICE_PIPES, String.valueOf(DEFAULT_SPLICE_PIPES));
        d.put(Keys.SERVER_DRAIN_TIMEOUT, "20s");
        d.put(Keys.SERVER_ACCESS_LOG, "stdout");
        d.put(Keys.TLS_PORT, String.valueOf(DEFAULT_TLS_PORT));
        d.put(Keys.TLS_RELOAD_INTERVAL, Durations.format(TLS_RELOAD_INTERVAL));
        d.put(Keys.TLS_PROVIDER, "auto");
        PeerSettings.defaults(d);
        d.put(Keys.SERVER_ADMIN_PORT, String.valueOf(ADMIN_OFF));
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
        d.put(Keys.SERVER_SEND_TIMEOUT, Durations.format(sendTimeout));
        d.put(Keys.SERVER_MAX_CONNECTIONS, String.valueOf(maxConnections));
        d.put(Keys.SERVER_MAX_CONNECTIONS_PER_ADDRESS, String.valueOf(maxConnectionsPerAddress));
        d.put(Keys.SERVER_TRANSPORT, transport.label());
        d.put(Keys.SERVER_SPLICE_PIPES, String.valueOf(splicePipes));
        d.put(Keys.SERVER_DRAIN_TIMEOUT, Durations.format(drainTimeout));
        d.put(
                Keys.SERVER_TRUSTED_PROXIES,
                trustedProxies.stream().map(InetAddress::getHostAddress).collect(Collectors.joining(",")));
        d.put(Keys.SERVER_ACCESS_LOG, accessLog);
        Tls t = tls;
        d.put(Keys.TLS_CERTIFICATE, t == null ? "" : t.certificate().toString());
        d.put(Keys.TLS_PRIVATE_KEY, t == null ? "" : t.privateKey().toString());
        d.put(Keys.TLS_PORT, t == null ? "" : String.valueOf(t.port()));
        d.put(Keys.TLS_RELOAD_INTERVAL, t == null ? "" : Durations.format(t.reloadInterval()));
        d.put(Keys.TLS_PROVIDER, t == null ? "" : t.provider().name().toLowerCase(Locale.ROOT));
        d.putAll(peer.describe());
        d.put(Keys.SERVER_ADMIN_PORT, String.valueOf(adminPort));
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

    /**
     * Reads {@code spector.server.tls.*}: null when neither file is set; every bound is still
     * checked, so a typo in the port is reported even before the files are.
     */
    private static @Nullable Tls tls(SettingsReader r, int plainPort, BooleanSupplier openSsl) {
        int port = (int) r.integer(Keys.TLS_PORT, 0, 65535, "a port in 0..65535 (0: any free port)");
        if (port != 0 && port == plainPort) {
            r.problem(Keys.TLS_PORT, show(String.valueOf(port)), "a port other than " + Keys.SERVER_PORT + "'s");
        }
        Duration interval = r.duration(
                Keys.TLS_RELOAD_INTERVAL,
                null,
                MIN_TLS_RELOAD_INTERVAL,
                MAX_TLS_RELOAD_INTERVAL,
                "a duration in " + Durations.format(MIN_TLS_RELOAD_INTERVAL) + ".."
                        + Durations.format(MAX_TLS_RELOAD_INTERVAL) + ", " + SettingsReader.DURATION_EXAMPLES);
        TlsProvider provider = provider(r, openSsl);
        String cert = r.raw(Keys.TLS_CERTIFICATE);
        String key = r.raw(Keys.TLS_PRIVATE_KEY);
        if (cert == null && key == null) {
            return null;
        }
        if (cert == null || key == null) {
            String missing = cert == null ? Keys.TLS_CERTIFICATE : Keys.TLS_PRIVATE_KEY;
            String set = cert == null ? Keys.TLS_PRIVATE_KEY : Keys.TLS_CERTIFICATE;
            r.problem(
                    missing, SettingsReader.UNSET, "a PEM file while " + set + " is set: the TLS listener needs both");
            return null;
        }
        Path certPath = path(r, Keys.TLS_CERTIFICATE, cert);
        Path keyPath = path(r, Keys.TLS_PRIVATE_KEY, key);
        if (certPath == null || keyPath == null) {
            return null;
        }
        TlsKeyPair pair;
        try {
            pair = TlsKeyPair.read(certPath, keyPath);
        } catch (TlsFileException e) {
            boolean isCert = e.part() == TlsFileException.Part.CERTIFICATE;
            r.problem(isCert ? Keys.TLS_CERTIFICATE : Keys.TLS_PRIVATE_KEY, show(isCert ? cert : key), e.expected());
            return null;
        }
        if (!pair.validAt(Instant.now())) {
            r.warn(Keys.TLS_CERTIFICATE + ": the certificate " + pair.describe()
                    + " is not valid now: clients that verify it refuse the TLS listener");
        }
        return new Tls(certPath, keyPath, port, interval, provider, pair);
    }

    private static @Nullable Path path(SettingsReader r, String key, String value) {
        try {
            return Path.of(value);
        } catch (InvalidPathException e) {
            r.problem(key, show(value), "a file path");
            return null;
        }
    }

    /** {@code spector.server.transport}, in any case; one that cannot run here is refused, saying why. */
    static Transport transport(SettingsReader r, Function<Transport, @Nullable String> unavailable) {
        Transport transport = oneOf(r, Keys.SERVER_TRANSPORT, Transport.class, "auto, io_uring, epoll or nio");
        if (transport == null) {
            return Transport.AUTO;
        }
        String why = unavailable.apply(transport);
        if (why != null) {
            r.problem(Keys.SERVER_TRANSPORT, show(r.text(Keys.SERVER_TRANSPORT)), "auto or another transport: " + why);
            return Transport.AUTO;
        }
        return transport;
    }

    /** The constant of {@code type} that {@code key} names in any case, or null after recording a problem. */
    private static <E extends Enum<E>> @Nullable E oneOf(SettingsReader r, String key, Class<E> type, String expected) {
        String value = r.text(key);
        try {
            return Enum.valueOf(type, value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            r.problem(key, show(value), expected);
            return null;
        }
    }

    static TlsProvider provider(SettingsReader r, BooleanSupplier openSsl) {
        TlsProvider provider = oneOf(r, Keys.TLS_PROVIDER, TlsProvider.class, "auto, jdk or openssl");
        if (provider == null) {
            return TlsProvider.AUTO;
        }
        if (provider == TlsProvider.OPENSSL && !openSsl.getAsBoolean()) {
            Throwable cause = OpenSsl.unavailabilityCause();
            r.problem(
                    Keys.TLS_PROVIDER,
                    show(r.text(Keys.TLS_PROVIDER)),
                    "auto or jdk: OpenSSL (netty-tcnative-boringssl-static) does not load here"
                            + (cause == null ? "" : " (" + cause.getClass().getSimpleName() + ")"));
            return TlsProvider.JDK;
        }
        return provider;
    }

    /** {@code stdout}, {@code off}, or a file path (no control chars; its directory is checked at start). */
    private static String accessLog(SettingsReader r) {
        String value = r.text(Keys.SERVER_ACCESS_LOG);
        boolean ok = !value.isEmpty() && value.length() <= 4096 && value.chars().noneMatch(c -> c < 0x20 || c == 0x7f);
        if (!ok) {
            r.problem(Keys.SERVER_ACCESS_LOG, show(value), "stdout, off, or the path of a file to append to");
            return "off";
        }
        return value;
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
