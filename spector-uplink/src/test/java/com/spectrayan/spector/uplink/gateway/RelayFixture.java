package com.spectrayan.spector.uplink.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.InMemoryFrameChannels;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.wire.Header;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.jspecify.annotations.Nullable;

/**
 * One worker "w1" on an in-memory uplink, the test playing the worker with raw frames, registered in a directory
 * with a gateway relay over it (30 s deadline, 8 relays per worker). {@link #close} after each test.
 */
final class RelayFixture implements AutoCloseable {
    final InMemoryFrameChannels.Pair<RealGatewayWorkerClient, RawWorker> ends =
            InMemoryFrameChannels.pair(ch -> RealGatewayWorkerClient.over("w1", ch), RawWorker::new);
    final RealGatewayWorkerClient client = ends.gateway();
    final WorkerLink link;
    final RawWorker worker = ends.worker();

    final WorkerDirectory directory;
    final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2);
    final GatewayRelay relay;

    RelayFixture() {
        this(new WorkerDirectory());
    }

    /** Registers w1 in {@code directory} (a second fixture on one directory is a newer link of w1). */
    RelayFixture(WorkerDirectory directory) {
        this(directory, 0);
    }

    /** Registers w1's link {@code slot} in {@code directory}: another slot joins w1's links. */
    RelayFixture(WorkerDirectory directory, int slot) {
        this.directory = directory;
        this.link = new WorkerLink("w1", slot, "in-memory", java.time.Instant.EPOCH, client);
        this.relay = new GatewayRelay(directory, Duration.ofSeconds(30), 8, scheduler);
        directory.register(link);
    }

    @Override
    public void close() {
        client.close("test over");
        scheduler.shutdownNow();
    }

    static RelayCall call(String method, @Nullable BodySource body, AbortSignal signal) {
        return new RelayCall(
                "app",
                new RelayedRequest(
                        method,
                        URI.create("https://app.local/a?x=1"),
                        List.of(new Header("x-a", "1")),
                        "acme",
                        "l-1",
                        body,
                        signal));
    }

    static RelayCall get() {
        return call("GET", null, new AbortSignal());
    }

    static SpectorException spectorFailure(CompletionStage<?> stage, ErrorCode code, String what) {
        Throwable t = Waits.failure(stage, what);
        assertThat(t).as(what + ": fails with a SpectorException").isInstanceOf(SpectorException.class);
        SpectorException e = (SpectorException) t;
        assertThat(e.code()).as(what + ": error code").isEqualTo(code);
        return e;
    }

    static String text(@Nullable ByteBuffer part) {
        assertThat(part).as("a body part, not the end").isNotNull();
        ByteBuffer p = part == null ? ByteBuffer.allocate(0) : part;
        byte[] bytes = new byte[p.remaining()];
        p.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
