package com.spectrayan.spector.uplink.internal.wire;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.RelayHeaders;
import java.util.ArrayList;
import java.util.List;

/**
 * A header list on the wire: the member {@code headers}, an array of {@code [name, value]} string
 * pairs, and its bounds, checked after {@link RelayHeaders} filtered the list. Public for the
 * heads of protocol v2, which carry the same list.
 */
public final class HeaderLists {
    /** The member holding the list. */
    public static final String FIELD = "headers";

    private static final String VALUE_EXPECTED =
            "a field value (RFC 9110 section 5.5): no control char but HTAB, no DEL, no char above U+00FF,"
                    + " no leading space or tab";

    private HeaderLists() {}

    /** Returns the headers, unmodifiable, when each bound holds; refuses them otherwise. */
    public static List<Header> checked(List<Header> headers) {
        Checks.count(FIELD, headers.size(), Limits.HEADER_COUNT);
        for (int i = 0; i < headers.size(); i++) {
            Header header = headers.get(i);
            String nameField = FIELD + "[" + i + "].name";
            Checks.token(nameField, header.name(), Limits.HEADER_NAME_CHARS);
            String valueField = FIELD + "[" + i + "].value";
            String value = Checks.length(valueField, header.value(), Limits.HEADER_VALUE_CHARS);
            for (int c = 0; c < value.length(); c++) {
                char ch = value.charAt(c);
                // RFC 9110 §5.5 field-content, as Netty's header map checks it where the head is
                // written: a value this lets through, HTTP/1.1 can carry (a DEL, an ESC or a
                // leading space passed here and then threw there, and the client waited unanswered).
                if ((ch < 0x20 && ch != '\t') || ch == 0x7f || ch > 0xff || (c == 0 && (ch == ' ' || ch == '\t'))) {
                    throw Checks.badChar(valueField, c, ch, VALUE_EXPECTED);
                }
            }
        }
        return List.copyOf(headers);
    }

    /** Reads a JSON array of {@code [name, value]} string pairs; bounds are not applied yet. */
    public static List<Header> parse(JsonNode object) {
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
    public static ArrayNode toJson(List<Header> headers) {
        ArrayNode array = JsonNodeFactory.instance.arrayNode(headers.size());
        for (Header header : headers) {
            array.addArray().add(header.name()).add(header.value());
        }
        return array;
    }
}
