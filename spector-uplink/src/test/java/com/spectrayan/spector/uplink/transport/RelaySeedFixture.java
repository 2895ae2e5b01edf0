package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.internal.gateway.RelayHooks;
import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.testing.TestHooks;
import com.spectrayan.spector.uplink.wire.Frame;
import com.spectrayan.spector.uplink.worker.UplinkSession;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Sets up one end-to-end relay for the seed 000 scenario classes ({@code Relay*EndToEndTest}): a real gateway ({@link
 * GatewayRelay} over a {@link com.spectrayan.spector.uplink.gateway.WorkerDirectory} of real {@link
 * com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient}s) and a real worker ({@link UplinkSession}
 * behind {@link UplinkDialer}) over a real WebSocket uplink on loopback, with a fake relay target that answers per path
 * ({@link #route}) and records when each path's request signal aborts ({@link #aborted}).
 *
 * <p>DESIGN.md section 5: the seed's {@code lease.renew} is a {@code status.get}, its {@code device.exec} a second
 * relay. What only a broken gateway would send is written as raw frames (or raw {@code RealGatewayWorkerClient} calls)
 * over that same uplink, and the wire is observed by a {@link RecordingChannel} between the gateway's client and the
 * real WebSocket channel. The gateway-side protocol violations stay in {@code GatewayRelayTest}. Each test class registers
 * one as an extension, which closes it after each test.
 */
final class RelaySeedFixture implements AutoCloseable, AfterEachCallback {
    static final int KIB = 1024;
    static final int MIB = 1024 * KIB;
    static final int CHUNK = (int) Limits.CHUNK_BYTES.max();
    static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    final RelayHarness h = new RelayHarness();
    private final Map<String, TargetRoute> routes = new ConcurrentHashMap<>();
    private final Map<String, CompletableFuture<Throwable>> aborts = new ConcurrentHashMap<>();

    /** What the fake target does for one path. */
    @FunctionalInterface
    interface TargetRoute {
        CompletionStage<RelayedResponse> handle(RelayedRequest request) throws Exception;
    }

    RelaySeedFixture() {
        h.target(request -> {
            String path = request.url().getPath();
            request.signal().onAbort(aborted(path)::complete);
            TargetRoute route = routes.get(path);
            if (route == null) {
                return respond(404, null);
            }
            try {
                return route.handle(request);
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                return CompletableFuture.failedFuture(e);
            }
        });
    }

    @Override
    public void close() {
        h.close();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        close();
    }

    CompletableFuture<Throwable> aborted(String path) {
        return aborts.computeIfAbsent(path, p -> new CompletableFuture<>());
    }

    void route(String path, TargetRoute route) {
        routes.put(path, route);
    }

    static SpectorException spector(Throwable failure, ErrorCode code, String what) {
        assertThat(failure).as(what + ": fails with a SpectorException").isInstanceOf(SpectorException.class);
        SpectorException e = (SpectorException) failure;
        assertThat(e.code())
                .as(what + ": error code (message: " + e.getMessage() + ")")
                .isEqualTo(code);
        return e;
    }

    static SpectorException spector(CompletionStage<?> stage, ErrorCode code, String what) {
        return spector(failure(stage, what, WAIT), code, what);
    }

    static Frame answer(RecordingChannel wire, long id, String what) {
        return done(wire.answer(id), what, WAIT);
    }

    static ObjectNode resultOf(Frame frame, String what) {
        assertThat(frame).as(what + ": answered with a result frame").isInstanceOf(Frame.Result.class);
        return ((Frame.Result) frame).output();
    }

    static Frame.ErrorFrame errorOf(Frame frame, ErrorCode code, String what) {
        assertThat(frame).as(what + ": answered with an error frame").isInstanceOf(Frame.ErrorFrame.class);
        Frame.ErrorFrame error = (Frame.ErrorFrame) frame;
        assertThat(error.code())
                .as(what + ": error code (message: " + error.message() + ")")
                .isEqualTo(code);
        return error;
    }

    static RelayHooks hooks(Consumer<RelayHead> heads, Consumer<RelayChunk> chunks) {
        return TestHooks.of(heads, chunks, problem -> {
            throw new AssertionError("the worker sent an invalid push", problem);
        });
    }

    static RelayHooks noHooks() {
        return hooks(head -> {}, chunk -> {});
    }

    static RelayRequest wireRequest(String relayId, String method, String path, boolean hasBody) {
        return new RelayRequest(
                relayId, "app", method, "http://app.local" + path, List.of(), "acme", null, hasBody, -1);
    }

    /** A relay.request input that passes every bound; tests change one field. */
    static ObjectNode requestInput(String relayId, String path) {
        ObjectNode input = JSON.objectNode()
                .put("relayId", relayId)
                .put("target", "app")
                .put("method", "GET")
                .put("url", "http://app.local" + path)
                .put("tenant", "acme")
                .put("hasBody", false);
        input.putArray("headers");
        input.putNull("leaseId");
        return input;
    }

    /**
     * The target reads nothing and never answers: it waits for its request's signal, and stops
     * (its stage fails with the signal's reason) when that aborts, freeing the worker's slot.
     */
    static CompletionStage<RelayedResponse> never(RelayedRequest request) {
        CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
        request.signal().onAbort(answer::completeExceptionally);
        return answer;
    }

    static <T> T requireNonNull(@Nullable T value) {
        if (value == null) {
            throw new AssertionError("expected a value, got null");
        }
        return value;
    }
}
