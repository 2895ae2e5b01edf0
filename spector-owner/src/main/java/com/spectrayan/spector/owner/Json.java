package com.spectrayan.spector.owner;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.spectrayan.spector.contract.SpectorException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/** The node's one JSON mapper and its two uses: render a value, parse a small body. Thread-safe. */
final class Json {
    static final ObjectMapper MAPPER = JsonMapper.builder().build();

    private Json() {}

    /** Returns the UTF-8 JSON of a value made of maps, lists, strings, numbers and booleans. */
    static byte[] bytes(Object value) {
        try {
            return MAPPER.writeValueAsBytes(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(
                    "not serialisable: " + value.getClass().getName(), e);
        }
    }

    /** Returns the JSON of a value as one line of text. */
    static String text(Object value) {
        return new String(bytes(value), StandardCharsets.UTF_8);
    }

    /**
     * Parses a JSON object body.
     *
     * @throws SpectorException BAD_REQUEST naming {@code body} when it is not a JSON object
     */
    static JsonNode object(byte[] body) {
        JsonNode node;
        try {
            node = MAPPER.readTree(body);
        } catch (IOException e) {
            throw SpectorException.badRequest("body", "not JSON (expected: a JSON object)");
        }
        if (node == null || !node.isObject()) {
            throw SpectorException.badRequest("body", "not a JSON object (expected: a JSON object)");
        }
        return node;
    }
}
