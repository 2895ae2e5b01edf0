package com.spectrayan.spector.cli;

import com.spectrayan.spector.contract.Environment;
import java.io.IOException;
import java.util.concurrent.Callable;

/**
 * A command that starts something and runs until the process is asked to stop (SIGTERM or
 * Ctrl-C): {@code gateway}, {@code owner}, {@code worker} and {@code demo}. What {@link #launch()}
 * returns is closed on the way out, and the command exits 0; a failure to start exits with its
 * error code (see {@link SpectorCli}).
 */
abstract class DaemonCommand implements Callable<Integer> {
    /** Starts what the command runs; the process's stop closes it. */
    abstract AutoCloseable launch() throws IOException;

    @Override
    public final Integer call() throws IOException, InterruptedException {
        Environment.awaitShutdown(launch(), "spector");
        return 0;
    }
}
