package com.spectrayan.spector.uplink.worker;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.wire.StatusReport;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;

/**
 * What an {@link UplinkSession} serves: the worker's id, its relay targets by capability name, the
 * startup gate every operation waits behind, when the worker started, and where target code runs.
 * Immutable; build one with {@link #builder(String)}.
 */
public final class WorkerOptions {
    private static final AtomicInteger THREADS = new AtomicInteger();

    /** Runs target calls and body reads when no executor is given: daemon threads, made on demand. */
    private static final ExecutorService DEFAULT_EXECUTOR = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "uplink-worker-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
    });

    private final String workerId;
    private final Map<String, RelayTarget> relayTargets;
    private final CompletionStage<Void> startupGate;
    private final Instant startedAt;
    private final Executor executor;

    private WorkerOptions(Builder b, Instant startedAt) {
        this.workerId = b.workerId;
        this.relayTargets = Collections.unmodifiableMap(new LinkedHashMap<>(b.relayTargets));
        this.startupGate = b.startupGate;
        this.startedAt = startedAt;
        this.executor = b.executor;
    }

    /** Returns a builder for a worker with this id. */
    public static Builder builder(String workerId) {
        return new Builder(workerId);
    }

    /** Returns the worker's id. */
    public String workerId() {
        return workerId;
    }

    /** Returns the relay targets by capability name, in registration order, unmodifiable. */
    public Map<String, RelayTarget> relayTargets() {
        return relayTargets;
    }

    /** Returns the stage every operation waits for; it completes once the worker has started. */
    public CompletionStage<Void> startupGate() {
        return startupGate;
    }

    /** Returns when the worker started. */
    public Instant startedAt() {
        return startedAt;
    }

    /** Returns the executor target calls and body reads run on (never the connection's thread). */
    public Executor executor() {
        return executor;
    }

    /** Builds {@link WorkerOptions}. Not thread-safe. */
    public static final class Builder {
        private final String workerId;
        private final Map<String, RelayTarget> relayTargets = new LinkedHashMap<>();
        private CompletionStage<Void> startupGate = CompletableFuture.completedFuture(null);
        private Clock clock = Clock.systemUTC();
        private @Nullable Instant startedAt;
        private Executor executor = DEFAULT_EXECUTOR;

        private Builder(String workerId) {
            this.workerId = requireNonNull(workerId, "workerId");
        }

        /** Registers a relay target under its capability name; a name given twice is refused. */
        public Builder relayTarget(String name, RelayTarget target) {
            requireNonNull(name, "name");
            requireNonNull(target, "target");
            if (relayTargets.putIfAbsent(name, target) != null) {
                throw new IllegalArgumentException("relay target " + name + " registered twice");
            }
            return this;
        }

        /** Registers every target of the map (capability name to target). */
        public Builder relayTargets(Map<String, RelayTarget> targets) {
            targets.forEach(this::relayTarget);
            return this;
        }

        /** Sets the startup gate (default: already complete). */
        public Builder startupGate(CompletionStage<Void> gate) {
            this.startupGate = requireNonNull(gate, "gate");
            return this;
        }

        /** Sets the clock {@code startedAt} is read from when it is not given (default: UTC). */
        public Builder clock(Clock clock) {
            this.clock = requireNonNull(clock, "clock");
            return this;
        }

        /** Sets when the worker started (default: the clock's instant at {@link #build()}). */
        public Builder startedAt(Instant startedAt) {
            this.startedAt = requireNonNull(startedAt, "startedAt");
            return this;
        }

        /** Sets the executor target calls and body reads run on (default: a shared daemon pool). */
        public Builder executor(Executor executor) {
            this.executor = requireNonNull(executor, "executor");
            return this;
        }

        /**
         * Returns the options.
         *
         * @throws IllegalArgumentException when the worker id or a target name breaks the status
         *     report's bounds
         */
        public WorkerOptions build() {
            Instant started = startedAt != null ? startedAt : clock.instant();
            try {
                var unused = new StatusReport(workerId, new ArrayList<>(relayTargets.keySet()), 0, started);
            } catch (SpectorException e) {
                throw new IllegalArgumentException("worker options: " + e.getMessage(), e);
            }
            return new WorkerOptions(this, started);
        }
    }
}
