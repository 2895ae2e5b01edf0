package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.contract.HeaderPolicy;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The contract's {@link HeaderPolicy} applied to Netty headers in place, on the hot path: the
 * names to drop are {@link AsciiString}s built once from the policy's lists (their case-insensitive
 * hash cached), and a message's headers are edited rather than copied, so a forwarded exchange
 * allocates no header map and lower-cases no name.
 *
 * <p>Design notes (issue 14). A message carries a handful of fields and the policy names about
 * twenty-five to drop, of which a request holds one or two ({@code Host}, perhaps {@code
 * Connection}). So each filter scans the message's fields once against a {@link NameSet} and
 * removes only the names it found, where it made a hashed {@code remove} per policy name (4 % of
 * the event loop's samples under a 1 KiB load: bench/README.md, twenty-ninth session).
 */
final class HeaderFilter {
    /** Dropped from a client's request before it goes to an owner (the policy, plus Expect). */
    private static final NameSet TO_OWNER = new NameSet(
            HeaderPolicy.HOP_BY_HOP,
            HeaderPolicy.FRAMING,
            HeaderPolicy.GATEWAY_OWNED,
            HeaderPolicy.ROUTING,
            Set.of("expect"));

    /** Client-supplied forwarding facts ({@link HeaderPolicy#CLIENT_FACTS}), dropped unless the client is a trusted proxy. */
    private static final NameSet FORWARDED = new NameSet(HeaderPolicy.CLIENT_FACTS);

    /** Dropped from an owner's response before it goes to the client. */
    private static final NameSet TO_CLIENT = new NameSet(HeaderPolicy.HOP_BY_HOP, HeaderPolicy.FRAMING);

    /** Names a {@code Connection} field cannot take off a message: the gateway sets them itself. */
    private static final NameSet SET_BY_GATEWAY = new NameSet(HeaderPolicy.SET_BY_GATEWAY);

    private HeaderFilter() {}

    /**
     * Edits a client's request headers into the base of an owner request: drops hop-by-hop names,
     * the names {@code Connection} lists, framing, gateway-owned and routing names. Everything
     * else, Idempotency-Key included, stays byte for byte; the forwarding facts are {@link
     * ForwardingHeaders}' to set.
     */
    static void toOwner(HttpHeaders headers) {
        removeAll(headers, TO_OWNER, true);
    }

    /** Drops a client's forwarding facts ({@code Forwarded}, {@code X-Forwarded-*}, {@code X-Real-IP}, ...). */
    static void dropForwardingFacts(HttpHeaders headers) {
        removeAll(headers, FORWARDED, false);
    }

    /** Edits an owner's response headers for the client: no hop-by-hop or framing names. */
    static void toClient(HttpHeaders headers) {
        removeAll(headers, TO_CLIENT, true);
    }

    /**
     * Removes every field whose name is in {@code names}, and with {@code connectionListed} every
     * field {@code Connection} names (RFC 9110 §7.6.1; never one the gateway sets itself): one scan
     * to find them (Netty's header iterator cannot remove), then a {@code remove} per name found,
     * which takes all of that name's fields.
     */
    private static void removeAll(HttpHeaders headers, NameSet names, boolean connectionListed) {
        CharSequence found = null; // the usual request has one such name, Host: no list for it
        List<CharSequence> more = null;
        CharSequence connection = null;
        boolean connections = false; // more than one Connection field
        for (Iterator<Map.Entry<CharSequence, CharSequence>> it = headers.iteratorCharSequence(); it.hasNext(); ) {
            Map.Entry<CharSequence, CharSequence> field = it.next();
            CharSequence name = field.getKey();
            if (names.contains(name)) {
                if (connectionListed && HttpHeaderNames.CONNECTION.contentEqualsIgnoreCase(name)) {
                    connections = connection != null;
                    connection = field.getValue();
                }
                if (found == null) {
                    found = name;
                } else {
                    if (more == null) {
                        more = new ArrayList<>(4);
                    }
                    more.add(name);
                }
            }
        }
        if (connection != null) { // before the Connection fields go: the several-field case reads them all
            removeListed(headers, names, connections ? null : connection);
        }
        if (found != null) {
            headers.remove(found);
            if (more != null) {
                for (CharSequence name : more) {
                    headers.remove(name);
                }
            }
        }
    }

    /**
     * Removes the fields {@code Connection} lists that the scan did not find already: from {@code
     * one}, the only field's value, or from all of them when null (several fields).
     */
    private static void removeListed(HttpHeaders headers, NameSet names, @Nullable CharSequence one) {
        if (one != null && AsciiString.indexOf(one, ',', 0) < 0) {
            // the usual one name ("keep-alive", "close"): no set of tokens made (issue 14)
            CharSequence name = AsciiString.trim(one);
            if (name.length() > 0 && !names.contains(name) && !SET_BY_GATEWAY.contains(name)) {
                headers.remove(name);
            }
            return;
        }
        for (String token : HeaderPolicy.connectionTokens(headers.getAll(HttpHeaderNames.CONNECTION))) {
            if (!names.contains(token)) {
                headers.remove(token);
            }
        }
    }

    /**
     * Header names, matched without regard to case, for a scan of a message's fields: open
     * addressing on the case-insensitive hash Netty's header maps use ({@link
     * AsciiString#hashCode(CharSequence)}), cached in a decoded name, so a name not in the set
     * costs a table slot's look and rarely a comparison. Immutable once built.
     */
    static final class NameSet {
        private final AsciiString[] table;
        private final int mask;

        @SafeVarargs
        NameSet(Set<String>... sets) {
            List<AsciiString> names = new ArrayList<>();
            for (Set<String> set : sets) {
                for (String name : set) {
                    names.add(AsciiString.cached(name));
                }
            }
            int size = Integer.highestOneBit(Math.max(names.size(), 1) * 4 - 1) << 1; // at most a quarter full
            table = new AsciiString[size];
            mask = size - 1;
            for (AsciiString name : names) {
                if (!contains(name)) {
                    int i = name.hashCode() & mask;
                    while (table[i] != null) {
                        i = (i + 1) & mask;
                    }
                    table[i] = name;
                }
            }
        }

        /** Answers whether {@code name} is in the set, in any case. */
        boolean contains(CharSequence name) {
            int hash = AsciiString.hashCode(name);
            for (int i = hash & mask; ; i = (i + 1) & mask) {
                AsciiString candidate = table[i];
                if (candidate == null) {
                    return false;
                }
                if (candidate.hashCode() == hash && candidate.contentEqualsIgnoreCase(name)) {
                    return true;
                }
            }
        }
    }
}
