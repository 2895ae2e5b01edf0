package com.spectrayan.spector.uplink.internal.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.Header;
import java.io.UncheckedIOException;
import java.util.List;
import org.assertj.core.api.AbstractThrowableAssert;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

/** Assertions and builders the schema tests share. */
final class BadRequests {
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private BadRequests() {}

    /**
     * Asserts that {@code call} is refused with BAD_REQUEST whose details name {@code field}; the
     * description {@code bound} says which bound the test breaks.
     */
    static AbstractThrowableAssert<?, ? extends Throwable> assertRefused(
            ThrowingCallable call, String field, String bound) {
        return assertThatThrownBy(call)
                .as("%s is refused", bound)
                .isInstanceOfSatisfying(SpectorException.class, e -> {
                    assertThat(e.code()).as("%s: code", bound).isEqualTo(ErrorCode.BAD_REQUEST);
                    assertThat(e.details().get("field"))
                            .as("%s: the field named", bound)
                            .isEqualTo(field);
                })
                .hasMessageStartingWith(field + ": ");
    }

    /** Parses JSON text written with single quotes for readability. */
    static JsonNode json(String singleQuoted) {
        try {
            return MAPPER.readTree(singleQuoted.replace('\'', '"'));
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Returns {@code [[n0, v0], [n1, v1], ...]}. */
    static ArrayNode pairs(List<Header> headers) {
        ArrayNode array = JsonNodeFactory.instance.arrayNode();
        headers.forEach(h -> array.addArray().add(h.name()).add(h.value()));
        return array;
    }
}
