package com.spectrayan.spector.contract;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.TimeZone;

/**
 * Renders and parses {@code application/problem+json} bodies. Thread-safe.
 *
 * <p>A process calls {@link #prepare} while it starts: the first problem rendered or parsed
 * initializes Jackson, which reads the JDK's time-zone data from a file ({@code lib/tzdb.dat})
 * unless it was read before. A first problem while the process has no file descriptor left
 * ({@code EMFILE}, the moment a gateway most needs to answer 502 and 503) would fail that
 * initialization, and a class whose initialization failed stays unusable for the life of the
 * JVM: every later problem would throw {@code NoClassDefFoundError}.
 */
public final class ProblemJson {
    /** The mapper, made at the first problem: {@link #prepare} leaves Jackson unloaded (idle, it is never needed). */
    private static final class Holder {
        static final ObjectMapper MAPPER = JsonMapper.builder()
                .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .build();
    }

    private ProblemJson() {}

    /**
     * Reads the one file rendering needs, the JDK's time-zone data, so that the first problem needs
     * none: call once while the process starts, before it accepts connections. The rest of
     * Jackson loads from the jar the JVM holds open, so it stays lazy (initialized here, it cost an
     * idle gateway 8 MiB and its start 90 ms).
     */
    public static void prepare() {
        TimeZone.getTimeZone("UTC"); // as Jackson's BaseSettings asks for its default
    }

    /** Returns the UTF-8 JSON of a problem. */
    public static byte[] toBytes(Problem problem) {
        try {
            return Holder.MAPPER.writeValueAsBytes(problem);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a Problem is always serialisable", e);
        }
    }

    /** Parses a problem body; unknown members are ignored. */
    public static Problem parse(byte[] json) {
        try {
            return Holder.MAPPER.readValue(json, Problem.class);
        } catch (IOException e) {
            throw new UncheckedIOException("not a problem+json body", e);
        }
    }
}
