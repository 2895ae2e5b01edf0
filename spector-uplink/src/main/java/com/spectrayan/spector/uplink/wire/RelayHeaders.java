package com.spectrayan.spector.uplink.wire;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.HeaderPolicy;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
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
 *   <li>Then: at most {@link Limits#HEADER_COUNT} headers; each name an RFC 9110 token of {@link
 *       Limits#HEADER_NAME_CHARS}; each value {@link Limits#HEADER_VALUE_CHARS} with no CR, LF or
 *       NUL and no char above U+00FF (HTTP/1.1 writes header values as ISO-8859-1 bytes).
 * </ul>
 *
 * <p>Refusals are BAD_REQUEST naming {@code headers}, or {@code headers[i].name} and {@code
 * headers[i].value} with {@code i} the index among the headers kept after filtering.
 */
public final class RelayHeaders {
    static final String FIELD = "headers";

    private static final String NAME_EXPECTED = "an RFC 9110 token";
    private static final String VALUE_EXPECTED = "no CR, LF, NUL or char above U+00FF";

    private RelayHeaders() {}

    /** Returns the headers of a request that cross the uplink, in order, repeats kept. */
    public static List<Header> forRequest(List<Header> headers) {
        return filter(headers, HeaderPolicy::forwardsOverUplink);
    }

    /** Returns the headers of a target's response that cross the uplink, in order, repeats kept. */
    public static List<Header> forResponse(List<Header> headers) {
        return filter(headers, HeaderPolicy::forwardsToClient);
    }

    /** Returns the headers, unmodifiable, when each bound holds; refuses them otherwise. */
    static List<Header> checked(List<Header> headers) {
        Checks.count(FIELD, headers.size(), Limits.HEADER_COUNT);
        for (int i = 0; i < headers.size(); i++) {
            Header header = headers.get(i);
            String nameField = FIELD + "[" + i + "].name";
            String name = Checks.length(nameField, header.name(), Limits.HEADER_NAME_CHARS);
            for (int c = 0; c < name.length(); c++) {
                if (!Checks.isTchar(name.charAt(c))) {
                    throw Checks.badChar(nameField, c, name.charAt(c), NAME_EXPECTED);
                }
            }
            String valueField = FIELD + "[" + i + "].value";
            String value = Checks.length(valueField, header.value(), Limits.HEADER_VALUE_CHARS);
            for (int c = 0; c < value.length(); c++) {
                char ch = value.charAt(c);
                if (ch == '\r' || ch == '\n' || ch == 0 || ch > 0xff) {
                    throw Checks.badChar(valueField, c, ch, VALUE_EXPECTED);
                }
            }
        }
        return List.copyOf(headers);
    }

    /** Reads a JSON array of {@code [name, value]} string pairs; bounds are not applied yet. */
    static List<Header> parse(JsonNode object) {
        JsonNode node = object.get(FIELD);
        if (node == null || node.isNull()) {
            throw Inputs.missing(FIELD, "an array of [name, value] pairs");
        }
        if (!node.isArray()) {
            throw Inputs.wrongType(FIELD, node, "an array of [name, value] pairs");
        }
        List<Header> headers = new ArrayList<>(Math.min(node.size(), (int) Limits.HEADER_COUNT.max() + 1));
        for (int i = 0; i < node.size(); i++) {
            JsonNode pair = node.get(i);
            if (!pair.isArray()
                    || pair.size() != 2
                    || !pair.get(0).isTextual()
                    || !pair.get(1).isTextual()) {
                throw SpectorException.badRequest(
                        FIELD + "[" + i + "]", Inputs.kind(pair) + " (expected: a [name, value] pair of strings)");
            }
            headers.add(new Header(pair.get(0).textValue(), pair.get(1).textValue()));
        }
        return headers;
    }

    /** Writes headers as a JSON array of {@code [name, value]} pairs. */
    static ArrayNode toJson(List<Header> headers) {
        ArrayNode array = JsonNodeFactory.instance.arrayNode(headers.size());
        for (Header header : headers) {
            array.addArray().add(header.name()).add(header.value());
        }
        return array;
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
