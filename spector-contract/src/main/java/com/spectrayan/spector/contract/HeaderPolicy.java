package com.spectrayan.spector.contract;

import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * Which header names cross which hop. One policy for the gateway's forwarder, the uplink's two
 * halves and the worker's {@code http-forward} target.
 *
 * <ul>
 *   <li>Hop-by-hop names (RFC 9110 section 7.6.1) and every name the {@code Connection} header
 *       lists describe one connection and never cross a hop.
 *   <li>Framing names ({@code Host}, {@code Content-Length}) are re-created by whoever writes the
 *       next hop.
 *   <li>Credential names never cross an uplink: a worker never holds a gateway credential.
 *   <li>Gateway-owned names ({@code X-Spector-Epoch}, {@code -Fence}, {@code -Owner}, {@code
 *       -Attempt}, and the peer hop's {@code X-Spector-Peer-*}) are never taken from a client; the
 *       gateway writes them.
 * </ul>
 *
 * <p>All sets hold lower-case names; the methods take names in any case.
 */
public final class HeaderPolicy {
    /** Hop-by-hop names, plus the non-standard {@code proxy-connection} that proxies drop too. */
    public static final Set<String> HOP_BY_HOP = Set.of(
            "connection",
            "keep-alive",
            "proxy-authenticate",
            "proxy-authorization",
            "proxy-connection",
            "te",
            "trailer",
            "transfer-encoding",
            "upgrade");

    /** Names the writer of the next hop re-creates. */
    public static final Set<String> FRAMING = Set.of("host", "content-length");

    /** Names that never travel over an uplink. */
    public static final Set<String> CREDENTIALS = Set.of("authorization", "x-agent-device-token");

    /** Names only the gateway writes on a forwarded request; a client's copy is dropped. */
    public static final Set<String> GATEWAY_OWNED = Set.of(
            lower(SpectorHeaders.EPOCH),
            lower(SpectorHeaders.FENCE),
            lower(SpectorHeaders.OWNER),
            lower(SpectorHeaders.ATTEMPT),
            lower(SpectorHeaders.PEER_TIME),
            lower(SpectorHeaders.PEER_TENANT),
            lower(SpectorHeaders.PEER_LEASE),
            lower(SpectorHeaders.PEER_MAC),
            lower(SpectorHeaders.PEER_REFUSED));

    /** The names the gateway writes on the next hop itself ({@link #isSetByGateway}). */
    public static final Set<String> SET_BY_GATEWAY =
            Set.of(lower(SpectorHeaders.REQUEST_ID), "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "via");

    /**
     * What a client says about itself in a proxy's words, dropped unless the client is a trusted
     * proxy: the standard forwarding fields, and the ones frameworks read as the client's address,
     * scheme or original URL when a proxy in front sets them (Go chi's {@code RealIP} prefers
     * {@code True-Client-IP} and {@code X-Real-IP}; Rails and Spring read {@code X-Forwarded-Ssl}
     * and {@code -Prefix}; IIS and older Symfony take {@code X-Original-URL} as the request's
     * path). From anyone else they are forged: an owner or worker must see only what the gateway
     * saw (its {@code X-Forwarded-For}, {@code -Proto}, {@code -Host}).
     */
    public static final Set<String> CLIENT_FACTS = Set.of(
            "forwarded",
            "x-forwarded-for",
            "x-forwarded-proto",
            "x-forwarded-host",
            "x-forwarded-port",
            "x-forwarded-prefix",
            "x-forwarded-ssl",
            "x-forwarded-scheme",
            "x-forwarded-server",
            "x-real-ip",
            "true-client-ip",
            "x-client-ip",
            "x-cluster-client-ip",
            "cf-connecting-ip",
            "fastly-client-ip",
            "x-original-url",
            "x-rewrite-url",
            "front-end-https",
            "x-url-scheme");

    /**
     * The client facts that name a path in place of the request's own ({@link #CLIENT_FACTS}): IIS,
     * older Symfony and Zend route by them. A worker's {@code http-forward} never sends them to its
     * upstream: the target's base path bounds what a relay reaches, whoever set them (a trusted
     * proxy in front of the gateway passes them on; found by a review).
     */
    public static final Set<String> PATH_OVERRIDES = Set.of("x-original-url", "x-rewrite-url");

    /** The routing names the gateway re-sets from the routing key it resolved. */
    public static final Set<String> ROUTING = Set.of(lower(SpectorHeaders.NAMESPACE), lower(SpectorHeaders.TENANT));

    /**
     * The names the gateway owns, sets or drops from a client, as a CGI or WSGI server on the next
     * hop would read an underscore spelling of them ({@link #isGatewayNameInDisguise}).
     */
    private static final Set<String> OWNED_ANY_SPELLING = owned();

    /** The first chars (both cases) of {@link #OWNED_ANY_SPELLING}'s names, by char: the check's first look. */
    private static final boolean[] OWNED_FIRST_CHARS = firstChars(OWNED_ANY_SPELLING);

    /** How many names one {@code Connection} header may list before the request is refused. */
    public static final int MAX_CONNECTION_TOKENS = 32;

    private HeaderPolicy() {}

    /**
     * Returns the lower-case names listed by the {@code Connection} header values, so that they
     * are dropped with the hop-by-hop names.
     *
     * @throws SpectorException BAD_REQUEST when the values list more than {@link
     *     #MAX_CONNECTION_TOKENS} names
     */
    public static Set<String> connectionTokens(Iterable<String> connectionValues) {
        Set<String> tokens = new HashSet<>();
        for (String value : connectionValues) {
            for (String token : value.split(",", -1)) {
                String name = token.strip();
                if (!name.isEmpty() && !isSetByGateway(name)) {
                    tokens.add(lower(name));
                    if (tokens.size() > MAX_CONNECTION_TOKENS) {
                        throw SpectorException.badRequest(
                                "Connection",
                                "lists more than " + MAX_CONNECTION_TOKENS + " names (expected: <= "
                                        + MAX_CONNECTION_TOKENS + ")");
                    }
                }
            }
        }
        return tokens;
    }

    /**
     * Returns the first transfer coding in {@code transferEncodingValues} other than {@code
     * chunked} (at most 40 chars of it), or null. The gateway undoes only the chunking (RFC 9112
     * §7), so a message with any other coding would cross the hop still coded, with no word of it
     * once the hop-by-hop field goes: a request's is a 501 (§6.1), an owner's answer a 502; nginx
     * answers both so ("unknown Transfer-Encoding").
     */
    public static @Nullable String unknownTransferCoding(Iterable<String> transferEncodingValues) {
        for (String value : transferEncodingValues) {
            for (String coding : value.split(",", -1)) {
                String c = coding.strip();
                if (!c.equalsIgnoreCase("chunked")) {
                    return c.length() > 40 ? c.substring(0, 40) + "..." : c;
                }
            }
        }
        return null;
    }

    /**
     * Answers whether the gateway writes {@code name} on the next hop itself ({@code X-Request-Id},
     * {@code X-Forwarded-For}, {@code -Proto}, {@code -Host}, its entry in {@code Via}): a client's
     * {@code Connection} cannot list it away (a {@code Connection: via} took the gateway's own
     * {@code Via} entry, and its loop check, off the next hop: the third review). RFC 9110 §7.6.1
     * has an intermediary drop the fields its sender nominated; these the gateway sends, so the id
     * the client gets back is the one the owner or worker logs, and the address a target reads is
     * the one the gateway saw.
     */
    public static boolean isSetByGateway(String name) {
        return SET_BY_GATEWAY.contains(lower(name));
    }

    /**
     * Answers whether {@code name} spells a name the gateway owns with an underscore for a dash
     * ({@code X_Spector_Tenant}, {@code X-Forwarded_For}): a CGI or WSGI server (Python's {@code
     * wsgiref}, PHP, Ruby's Rack) reads both as {@code HTTP_X_SPECTOR_TENANT} and merges them with
     * the gateway's own, so a client would speak in the gateway's name to such an owner (the
     * exhaustion review). Such a field is dropped as it is decoded; other names with underscores
     * pass. nginx drops every name with an underscore by default ({@code underscores_in_headers
     * off}); Envoy can ({@code headers_with_underscores_action}).
     */
    public static boolean isGatewayNameInDisguise(CharSequence name) {
        int n = name.length();
        char first = n < 2 ? 0 : name.charAt(0);
        if (first >= OWNED_FIRST_CHARS.length || !OWNED_FIRST_CHARS[first]) {
            return false; // the owned names start with x, t, c or f (any case): most names cost one look
        }
        boolean underscore = false;
        for (int i = 1; i < n && !underscore; i++) {
            underscore = name.charAt(i) == '_';
        }
        return underscore && OWNED_ANY_SPELLING.contains(lower(name.toString()).replace('_', '-'));
    }

    private static Set<String> owned() {
        Set<String> all = new HashSet<>();
        all.addAll(GATEWAY_OWNED);
        all.addAll(ROUTING);
        all.addAll(SET_BY_GATEWAY);
        all.add(lower(SpectorHeaders.LEASE));
        all.addAll(CLIENT_FACTS);
        return Set.copyOf(all);
    }

    private static boolean[] firstChars(Set<String> names) {
        boolean[] table = new boolean[128];
        for (String name : names) {
            char c = name.charAt(0);
            table[Character.toLowerCase(c)] = true;
            table[Character.toUpperCase(c)] = true;
        }
        return table;
    }

    /** Answers whether a name is hop-by-hop, by itself or because {@code Connection} lists it. */
    public static boolean isHopByHop(String name, Set<String> connectionTokens) {
        String lower = lower(name);
        return HOP_BY_HOP.contains(lower) || connectionTokens.contains(lower);
    }

    /** Answers whether a client's request header is copied onto the request to an owner. */
    public static boolean forwardsToOwner(String name, Set<String> connectionTokens) {
        String lower = lower(name);
        return !HOP_BY_HOP.contains(lower)
                && !connectionTokens.contains(lower)
                && !FRAMING.contains(lower)
                && !GATEWAY_OWNED.contains(lower)
                && !ROUTING.contains(lower);
    }

    /** Answers whether a client's request header is copied onto a relayed request (uplink). */
    public static boolean forwardsOverUplink(String name, Set<String> connectionTokens) {
        return forwardsToOwner(name, connectionTokens) && !CREDENTIALS.contains(lower(name));
    }

    /** Answers whether an owner's or a target's response header is copied to the client. */
    public static boolean forwardsToClient(String name, Set<String> connectionTokens) {
        String lower = lower(name);
        return !HOP_BY_HOP.contains(lower) && !connectionTokens.contains(lower) && !FRAMING.contains(lower);
    }

    private static String lower(String name) {
        return name.toLowerCase(Locale.ROOT);
    }
}
