package com.spectrayan.spector.uplink.transport;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Captures what the module logs while it is open. Tests log through SLF4J's simple binding, which
 * writes each line to whatever {@code System.err} is at that moment; this tees it into a buffer
 * (the lines still reach the original stream) and restores it on close. Tests of this module run
 * one at a time, so nothing else swaps the stream meanwhile.
 */
final class LogCapture implements AutoCloseable {
    private final PrintStream original = System.err;
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

    LogCapture() {
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                synchronized (captured) {
                    captured.write(b);
                }
                original.write(b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                synchronized (captured) {
                    captured.write(b, off, len);
                }
                original.write(b, off, len);
            }

            @Override
            public void flush() {
                original.flush();
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
    }

    /** Returns what was logged so far. */
    String text() {
        synchronized (captured) {
            return captured.toString(StandardCharsets.UTF_8);
        }
    }

    @Override
    public void close() {
        System.setErr(original);
    }
}
