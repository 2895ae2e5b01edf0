package com.spectrayan.spector.contract;

import static java.util.Objects.requireNonNull;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.jspecify.annotations.Nullable;

/**
 * What the entry points share about their process: reading the {@code SPECTOR_*} environment
 * variables (the owner's and the worker's containers), collecting every problem as {@code KEY:
 * 'value' (expected: ...)} so that one start reports them all, the main wait until the process
 * is asked to stop ({@link #awaitShutdown}), and the system properties every process sets before
 * Netty and its logging start ({@link #processDefaults}). The gateway binds its settings with
 * SmallRye Config instead.
 */
public final class Environment {
    private Environment() {}

    /** Netty's switch for its adaptive allocator's low-memory mode (netty-buffer 4.2). */
    public static final String NETTY_LOW_MEMORY = "io.netty.allocator.lowMemory";

    /**
     * The JDK's TLS switch that refuses a client's renegotiation (read once, when its server
     * handshake class loads). Each renegotiation is a full handshake the server pays for (the
     * THC-SSL-DoS attack); nginx, Envoy and BoringSSL (the gateway's OpenSSL provider) refuse them.
     * It matters where the gateway's TLS runs on the JDK's provider: {@code provider: jdk}, or
     * {@code auto} off linux-x86_64, where the shipped BoringSSL does not load.
     */
    public static final String JDK_REJECT_CLIENT_RENEGOTIATION = "jdk.tls.rejectClientInitiatedRenegotiation";

    /** JBoss Logging's choice of back end (SmallRye Config logs through JBoss Logging). */
    public static final String JBOSS_LOGGING_PROVIDER = "org.jboss.logging.provider";

    /**
     * Sets what a process of ours wants from Netty and from its logging, each unless its command
     * line set it already; call it first in a {@code main}, before anything allocates a Netty buffer
     * (the allocator reads it once, when its class initializes) or logs.
     *
     * <p>{@code io.netty.allocator.lowMemory=false}: Netty's adaptive allocator takes a JVM whose
     * maximum heap is under 512 MiB for a small machine, and then shares its buffer magazines
     * between threads and frees every chunk its short reuse queue cannot hold. Our processes have
     * small heaps by design (the gateway's is 256 MiB) but move their bytes in direct memory, off the
     * heap: with the low-memory mode, a 1 MiB response spent about a tenth of the gateway's event
     * loop allocating, zeroing and freeing direct chunks (issue 14; bench/README.md, "The
     * allocator's low-memory mode"). The normal mode keeps a chunk cache per event loop (up to 8
     * MiB each).
     *
     * <p>{@code org.jboss.logging.provider=slf4j}: SmallRye Config's few lines go where the
     * process's own go, through SLF4J. Without it JBoss Logging looks for a back end at the first
     * settings read, starting JBoss LogManager's probe and then {@code java.util.logging}: about 15
     * ms of a gateway's start-up on this project's 2-core machines (bench/README.md, start-up), and
     * lines in another format. (Caffeine's {@code System.Logger} goes to SLF4J too, through
     * slf4j-jdk-platform-logging on the class path: with both, {@code java.util.logging} never
     * starts.)
     *
     * <p>{@code jdk.tls.rejectClientInitiatedRenegotiation=true}: see {@link
     * #JDK_REJECT_CLIENT_RENEGOTIATION}.
     */
    public static void processDefaults() {
        if (System.getProperty(NETTY_LOW_MEMORY) == null) {
            System.setProperty(NETTY_LOW_MEMORY, "false");
        }
        if (System.getProperty(JBOSS_LOGGING_PROVIDER) == null) {
            System.setProperty(JBOSS_LOGGING_PROVIDER, "slf4j");
        }
        if (System.getProperty(JDK_REJECT_CLIENT_RENEGOTIATION) == null) {
            System.setProperty(JDK_REJECT_CLIENT_RENEGOTIATION, "true");
        }
    }

    /** Starts what a process's main runs; see {@link #startOrExit}. */
    @FunctionalInterface
    public interface Start<T extends AutoCloseable> {
        /** Starts it; throws what its start throws (Netty rethrows a bind's {@code IOException} as is). */
        T start() throws Exception;
    }

    /**
     * Returns what {@code start} started, or ends the process with exit code 1 and {@code name:
     * cannot start: ...} on standard error when it throws (a port taken, a file unreadable): what
     * started before the failure (event loops are not daemon threads) would otherwise keep a process
     * that serves nothing alive for ever, and its supervisor would never see it fail.
     */
    public static <T extends AutoCloseable> T startOrExit(String name, Start<T> start) {
        requireNonNull(name, "name");
        try {
            return start.start();
        } catch (Exception e) {
            System.err.println(name + ": cannot start: " + e);
            System.exit(1);
            throw new IllegalStateException("unreachable: System.exit returned", e);
        }
    }

    /**
     * Blocks the calling thread (a process's main thread) until the JVM is asked to stop (SIGTERM,
     * Ctrl-C), then closes {@code resource} on the shutdown hook's thread, {@code name + "-shutdown"}.
     * A failure to close is printed to standard error as {@code name: while stopping: ...}; it never
     * keeps the process up.
     */
    public static void awaitShutdown(AutoCloseable resource, String name) throws InterruptedException {
        requireNonNull(resource, "resource");
        requireNonNull(name, "name");
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            try {
                                resource.close();
                            } catch (Exception e) {
                                System.err.println(name + ": while stopping: " + e);
                            } finally {
                                stopped.countDown();
                            }
                        },
                        name + "-shutdown"));
        stopped.await(); // the process's main wait: released by SIGTERM or Ctrl-C through the hook
    }

    /** Returns a variable's value, stripped; null when it is unset or blank. */
    public static @Nullable String value(Map<String, String> env, String key) {
        String v = env.get(key);
        return v == null || v.isBlank() ? null : v.strip();
    }

    /**
     * Returns an integer variable within {@code min..max}, or {@code fallback} when it is unset.
     * A value that is not such an integer adds a problem (naming {@code expected}) and returns
     * {@code fallback}.
     */
    public static long integer(
            Map<String, String> env,
            String key,
            long fallback,
            long min,
            long max,
            String expected,
            List<String> problems) {
        String raw = value(env, key);
        if (raw == null) {
            return fallback;
        }
        try {
            long v = Long.parseLong(raw);
            if (v >= min && v <= max) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below, with the value
        }
        problems.add(key + ": '" + raw + "' (expected: " + expected + ")");
        return fallback;
    }

    /** The environment does not describe the process: the message lists every problem, one a line. */
    public static final class Problems extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        @SuppressWarnings("serial") // an immutable list of strings; never serialised in practice
        private final List<String> problems;

        /** Makes the exception for a non-empty list of problems. */
        public Problems(List<String> problems) {
            super(String.join("\n", problems));
            this.problems = List.copyOf(problems);
        }

        /** Returns the problems, one per bad variable: {@code KEY: 'value' (expected: ...)}. */
        public List<String> problems() {
            return problems;
        }
    }
}
