package com.spectrayan.spector.gateway;

import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.transport.UplinkDialer;
import com.spectrayan.spector.uplink.transport.WebSocketFrameChannel;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import com.spectrayan.spector.uplink.worker.WorkerOptions;
import io.netty.channel.EventLoopGroup;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jspecify.annotations.Nullable;

/**
 * A worker that dials a test cell's real {@code /uplink} WebSocket and serves fake relay targets,
 * as the worker daemon would, over uplink v1 ({@link #dial}) or v2 ({@link #dialV2}). Records each
 * link it made (a v1 link's channel in {@link #connections} too) and each failed attempt.
 */
final class DialedWorker implements AutoCloseable {
    final String id;
    final UplinkDialer dialer;
    final List<WebSocketFrameChannel> connections = new CopyOnWriteArrayList<>();
    final List<FrameChannel> links = new CopyOnWriteArrayList<>();
    final List<Throwable> failures = new CopyOnWriteArrayList<>();

    private DialedWorker(
            Cell cell,
            String id,
            String token,
            Map<String, RelayTarget> targets,
            Duration reconnectMin,
            EventLoopGroup group,
            boolean v2) {
        this.id = id;
        WorkerOptions.Builder options = WorkerOptions.builder(id);
        targets.forEach(options::relayTarget);
        WorkerOptions built = options.build();
        UplinkDialer.Builder builder =
                UplinkDialer.builder(URI.create("ws://127.0.0.1:" + cell.gateway.port() + "/uplink"), id, token, group);
        if (v2) {
            builder.onUplink(
                    ch -> { // offers v2, then v1
                        links.add(ch);
                        if (ch instanceof WebSocketFrameChannel v1) {
                            connections.add(v1);
                        }
                        return UplinkSession.start(ch, UplinkSession.Role.GATEWAY_UPLINK, built);
                    });
        } else {
            builder.onConnected(ch -> {
                links.add(ch);
                connections.add(ch);
                return UplinkSession.start(ch, UplinkSession.Role.GATEWAY_UPLINK, built);
            });
        }
        this.dialer = builder.onAttemptFailed(failures::add)
                .reconnect(reconnectMin, reconnectMin.multipliedBy(4))
                .build();
        dialer.start();
    }

    /** Dials with a quick reconnect (50 ms to 200 ms). */
    static DialedWorker dial(
            Cell cell, String id, String token, Map<String, RelayTarget> targets, EventLoopGroup group) {
        return new DialedWorker(cell, id, token, targets, Duration.ofMillis(50), group, false);
    }

    /** Dials as {@link #dial} does, offering uplink v2 (then v1), as the worker daemon does. */
    static DialedWorker dialV2(
            Cell cell, String id, String token, Map<String, RelayTarget> targets, EventLoopGroup group) {
        return new DialedWorker(cell, id, token, targets, Duration.ofMillis(50), group, true);
    }

    /** Dials with a reconnect slower than any test, so a lost uplink stays lost. */
    static DialedWorker dialOnce(
            Cell cell, String id, String token, Map<String, RelayTarget> targets, EventLoopGroup group) {
        return new DialedWorker(cell, id, token, targets, Duration.ofMinutes(5), group, false);
    }

    /** Waits until this worker's uplink is the gateway's live link for its id. */
    DialedWorker awaitLive(Cell cell) {
        await(id + "'s uplink connected and registered with the gateway")
                .atMost(Duration.ofSeconds(10))
                .until(() -> dialer.isConnected()
                        && !links.isEmpty()
                        && cell.gateway.workerDirectory().live(id) != null);
        return this;
    }

    /** Returns the connection made last. */
    WebSocketFrameChannel lastConnection() {
        return connections.get(connections.size() - 1);
    }

    /** A response body of one part. */
    static BodySource body(byte[] bytes) {
        boolean[] sent = {false};
        return new BodySource() {
            @Override
            public CompletionStage<@Nullable ByteBuffer> next() {
                if (sent[0]) {
                    return CompletableFuture.completedFuture(null);
                }
                sent[0] = true;
                return CompletableFuture.completedFuture(ByteBuffer.wrap(bytes));
            }

            @Override
            public void cancel(Throwable reason) {}
        };
    }

    /** A UTF-8 text response body of one part. */
    static BodySource body(String text) {
        return body(text.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void close() {
        dialer.close();
    }
}
