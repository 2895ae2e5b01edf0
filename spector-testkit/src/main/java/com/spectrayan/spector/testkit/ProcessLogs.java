package com.spectrayan.spector.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What a test reads from the output file of a process it started (a gateway, an owner). */
public final class ProcessLogs {
    private ProcessLogs() {}

    /**
     * Waits at most {@code bound} for {@code listening} to appear in {@code log} and returns its
     * first group, a port; fails at once when the process ends first, with its output.
     */
    public static int awaitPort(Process process, Path log, Pattern listening, Duration bound) {
        int[] port = {0};
        Waits.until("the process logs its port", bound, () -> {
            if (!process.isAlive()) {
                throw new AssertionError(
                        "the process ended (exit " + process.exitValue() + "); its output:\n" + output(log));
            }
            Matcher m = listening.matcher(output(log));
            if (m.find()) {
                port[0] = Integer.parseInt(m.group(1));
                return true;
            }
            return false;
        });
        return port[0];
    }

    /** Returns the process's output so far. */
    public static String output(Path log) {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
