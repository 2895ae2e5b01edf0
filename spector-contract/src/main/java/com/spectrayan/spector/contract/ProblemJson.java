package com.spectrayan.spector.contract;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.UncheckedIOException;

/** Renders and parses {@code application/problem+json} bodies. Thread-safe. */
public final class ProblemJson {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private ProblemJson() {}

    /** Returns the UTF-8 JSON of a problem. */
    public static byte[] toBytes(Problem problem) {
        try {
            return MAPPER.writeValueAsBytes(problem);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a Problem is always serialisable", e);
        }
    }

    /** Parses a problem body; unknown members are ignored. */
    public static Problem parse(byte[] json) {
        try {
            return MAPPER.readValue(json, Problem.class);
        } catch (IOException e) {
            throw new UncheckedIOException("not a problem+json body", e);
        }
    }
}
