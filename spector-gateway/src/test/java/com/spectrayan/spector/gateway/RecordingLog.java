package com.spectrayan.spector.gateway;

import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;

/**
 * Records what the process logs while it is open: slf4j-simple writes each line to the current
 * {@link System#err} (its default {@code System.err} target is looked up per line), so this tees
 * it into a buffer and puts the original back on {@link #close}. Lines of every thread are
 * recorded; tests look for their own by content. Thread-safe.
 */
final class RecordingLog implements AutoCloseable {
    private final PrintStream original;
    private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();

    private RecordingLog() {
        this.original = System.err;
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                original.write(b);
                synchronized (buffer) {
                    buffer.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                original.write(b, off, len);
                synchronized (buffer) {
                    buffer.write(b, off, len);
                }
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
    }

    /** Starts recording. */
    static RecordingLog start() {
        return new RecordingLog();
    }

    /** Returns the lines logged so far. */
    List<String> lines() {
        synchronized (buffer) {
            return buffer.toString(StandardCharsets.UTF_8).lines().toList();
        }
    }

    /** Waits, at most {@code within}, for a line that matches, and returns it. */
    String awaitLine(String what, Duration within, Predicate<String> line) {
        await(what).atMost(within).until(() -> lines().stream().anyMatch(line));
        return lines().stream().filter(line).findFirst().orElseThrow();
    }

    @Override
    public void close() {
        System.setErr(original);
    }
}
