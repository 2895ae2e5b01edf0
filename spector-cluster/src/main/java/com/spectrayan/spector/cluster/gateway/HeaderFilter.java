package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.contract.HeaderPolicy;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The contract's {@link HeaderPolicy} applied to Netty headers in place, on the hot path: the
 * names to drop are {@link AsciiString}s built once from the policy's lists (their case-insensitive
 * hash cached), and a message's headers are edited rather than copied, so a forwarded exchange
 * allocates no header map and lower-cases no name.
 */
final class HeaderFilter {
    /** Dropped from a client's request before it goes to an owner (the policy, plus Expect). */
    private static final AsciiString[] TO_OWNER = names(
            HeaderPolicy.HOP_BY_HOP,
            HeaderPolicy.FRAMING,
            HeaderPolicy.GATEWAY_OWNED,
            HeaderPolicy.ROUTING,
            Set.of("expect"));

    /** Client-supplied forwarding facts, dropped unless the client is a trusted proxy. */
    private static final AsciiString[] FORWARDED =
            names(Set.of("forwarded", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-port"));

    /** Dropped from an owner's response before it goes to the client. */
    private static final AsciiString[] TO_CLIENT = names(HeaderPolicy.HOP_BY_HOP, HeaderPolicy.FRAMING);

    private HeaderFilter() {}

    /**
     * Edits a client's request headers into the base of an owner request: drops hop-by-hop names,
     * the names {@code Connection} lists, framing, gateway-owned and routing names. Everything
     * else, Idempotency-Key included, stays byte for byte; the forwarding facts are {@link
     * ForwardingHeaders}' to set.
     */
    static void toOwner(HttpHeaders headers) {
        removeConnectionListed(headers);
        for (AsciiString name : TO_OWNER) {
            headers.remove(name);
        }
    }

    /** Drops a client's forwarding facts ({@code Forwarded}, {@code X-Forwarded-*}). */
    static void dropForwardingFacts(HttpHeaders headers) {
        for (AsciiString name : FORWARDED) {
            headers.remove(name);
        }
    }

    /** Edits an owner's response headers for the client: no hop-by-hop or framing names. */
    static void toClient(HttpHeaders headers) {
        removeConnectionListed(headers);
        for (AsciiString name : TO_CLIENT) {
            headers.remove(name);
        }
    }

    private static void removeConnectionListed(HttpHeaders headers) {
        List<String> connection = headers.getAll(HttpHeaderNames.CONNECTION);
        if (connection.size() == 1 && connection.get(0).indexOf(',') < 0) {
            // the usual one name ("keep-alive", "close"): no set of tokens made (issue 14)
            String name = connection.get(0).strip();
            if (!name.isEmpty() && !HeaderPolicy.isSetByGateway(name)) {
                headers.remove(name);
            }
        } else if (!connection.isEmpty()) {
            for (String token : HeaderPolicy.connectionTokens(connection)) {
                headers.remove(token);
            }
        }
    }

    @SafeVarargs
    private static AsciiString[] names(Set<String>... sets) {
        List<AsciiString> out = new ArrayList<>();
        for (Set<String> set : sets) {
            for (String name : set) {
                out.add(AsciiString.cached(name));
            }
        }
        return out.toArray(new AsciiString[0]);
    }
}
