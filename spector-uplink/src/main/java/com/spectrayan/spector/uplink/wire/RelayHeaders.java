package com.spectrayan.spector.uplink.wire;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.HeaderPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * The header lists of the relay: filtered by {@link HeaderPolicy} first, then bounded.
 *
 * <ul>
 *   <li>A relayed request keeps what {@link HeaderPolicy#forwardsOverUplink} allows: no hop-by-hop
 *       name, no name its {@code Connection} header lists, no framing name ({@code Host}, {@code
 *       Content-Length}), no credential ({@code Authorization}, {@code X-Agent-Device-Token}), no
 *       gateway-owned or routing name.
 *   <li>A relayed response keeps what {@link HeaderPolicy#forwardsToClient} allows: no hop-by-hop,
 *       Connection-listed or framing name. The relay re-creates the framing each hop.
 *   <li>Then: at most {@code Limits.HEADER_COUNT} headers; each name an RFC 9110 token of {@code
 *       Limits.HEADER_NAME_CHARS}; each value {@code Limits.HEADER_VALUE_CHARS} with no CR, LF or
 *       NUL and no char above U+00FF (HTTP/1.1 writes header values as ISO-8859-1 bytes).
 * </ul>
 *
 * <p>Refusals are BAD_REQUEST naming {@code headers}, or {@code headers[i].name} and {@code
 * headers[i].value} with {@code i} the index among the headers kept after filtering. The bounds
 * apply where a relayed request or response head is built, on both sides.
 */
public final class RelayHeaders {
    private RelayHeaders() {}

    /** Returns the headers of a request that cross the uplink, in order, repeats kept. */
    public static List<Header> forRequest(List<Header> headers) {
        return filter(headers, HeaderPolicy::forwardsOverUplink);
    }

    /** Returns the headers of a target's response that cross the uplink, in order, repeats kept. */
    public static List<Header> forResponse(List<Header> headers) {
        return filter(headers, HeaderPolicy::forwardsToClient);
    }

    private static List<Header> filter(List<Header> headers, BiPredicate<String, Set<String>> crosses) {
        requireNonNull(headers, "headers");
        List<String> connectionValues = new ArrayList<>();
        for (Header header : headers) {
            if (header.name().equalsIgnoreCase("connection")) {
                connectionValues.add(header.value());
            }
        }
        Set<String> connectionTokens = HeaderPolicy.connectionTokens(connectionValues);
        List<Header> kept = new ArrayList<>(headers.size());
        for (Header header : headers) {
            if (crosses.test(header.name(), connectionTokens)) {
                kept.add(header);
            }
        }
        return kept;
    }
}
