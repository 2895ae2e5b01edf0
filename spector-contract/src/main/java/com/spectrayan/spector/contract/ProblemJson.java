package com.spectrayan.spector.contract;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;

/**
 * Renders and parses {@code application/problem+json} bodies. Thread-safe.
 *
 * <p>A process calls {@link #prepare} while it starts: this class's first use initializes Jackson,
 * which reads the JDK's time-zone data from a file ({@code lib/tzdb.dat}). A first use while the
 * process has no file descriptor left ({@code EMFILE}, the moment a gateway most needs to answer
 * 502 and 503) fails that initialization, and a class whose initialization failed stays unusable
 * for the life of the JVM: every later problem would throw {@code NoClassDefFoundError}.
 */
public final class ProblemJson {
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private ProblemJson() {}

    /**
     * Makes rendering ready (Jackson, the JDK's time-zone data, the serializer of a {@link Problem})
     * by rendering one: call once while the process starts, before it accepts connections.
     */
    public static void prepare() {
        toBytes(Problem.of(ErrorCode.INTERNAL, "start-up", Map.of(), null));
    }

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
