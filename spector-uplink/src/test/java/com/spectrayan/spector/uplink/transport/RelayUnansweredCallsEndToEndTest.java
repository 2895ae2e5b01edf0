package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.FrameChannel;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.gateway.RealGatewayWorkerClient;
import com.spectrayan.spector.uplink.internal.wire.RelayCancel;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.Frame;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A v1 worker that leaves the gateway's calls unanswered, over a real link (PROTOCOL.md section 2):
 * a relay that ends forgets its {@code relay.request} and its {@code relay.cancel}, so aborted
 * relays leave nothing waiting; and the calls that may wait at once are bounded ({@link
 * RealGatewayWorkerClient#MAX_PENDING_CALLS}): the one past it closes the link 1008.
 */
final class RelayUnansweredCallsEndToEndTest {
    private final RelayHarness h = new RelayHarness();
    private final SilentWorker worker = new SilentWorker();

    @AfterEach
    void tearDown() {
        h.close();
    }

    /** A v1 worker that records each call and answers none. */
    private static final class SilentWorker implements FrameChannel.Receiver {
        final BlockingQueue<Frame.Call> calls = new LinkedBlockingQueue<>();

        @Override
        public void onFrame(Frame frame) {
            if (frame instanceof Frame.Call c) {
                calls.add(c);
            }
        }

        @Override
        public void onClose(@Nullable Throwable cause) {}
    }

    /**
     * Regression (a review): each aborted relay left its {@code relay.request} and its {@code
     * relay.cancel} waiting for the link's life, and through the first's hooks the relay's
     * request and its caller.
     */
    @Test
    void relaysAbortedBeforeAnAnswer_leaveNoCallWaiting() {
        h.connectRawV1(W1, channel -> worker);
        RealGatewayWorkerClient client = h.client(W1);
        int relays = 100;
        for (int i = 0; i < relays; i++) {
            AbortSignal signal = new AbortSignal();
            CompletionStage<RelayedResponse> stage = h.relay().relay(W1, call("GET", "/r" + i, null, signal));
            assertThat(take(worker.calls, "relay " + i + ": the worker gets relay.request", WAIT)
                            .op())
                    .isEqualTo(RelayRequest.OP);
            signal.abort(new IOException("the caller went away"));
            failure(stage, "relay " + i + ": the aborted relay fails", WAIT);
            assertThat(take(worker.calls, "relay " + i + ": the worker gets relay.cancel", WAIT)
                            .op())
                    .isEqualTo(RelayCancel.OP);
        }
        until("every aborted relay forgot its calls", WAIT, () -> client.pendingCalls() == 0);
        assertThat(client.isOpen()).isTrue();
    }

    /** {@link RealGatewayWorkerClient#MAX_PENDING_CALLS} unanswered calls: the link stays; one more closes it 1008. */
    @Test
    void unansweredCalls_atTheBoundTheLinkStays_onePastClosesIt1008() {
        h.connectRawV1(W1, channel -> worker);
        RealGatewayWorkerClient client = h.client(W1);
        int bound = RealGatewayWorkerClient.MAX_PENDING_CALLS;
        List<CompletionStage<?>> waiting = new ArrayList<>();
        for (int i = 0; i < bound; i++) {
            waiting.add(client.statusGet());
        }
        for (int i = 0; i < bound; i++) {
            take(worker.calls, "status.get " + i + " reaches the worker", WAIT);
        }
        assertThat(client.pendingCalls()).isEqualTo(bound);
        assertThat(client.isOpen()).as("at the bound").isTrue();

        CompletionStage<?> past = client.statusGet();

        spector(past, ErrorCode.WORKER_UNREACHABLE, "the call past the bound");
        for (CompletionStage<?> w : waiting) {
            spector(w, ErrorCode.WORKER_UNREACHABLE, "a call waiting at the close");
        }
        assertThat(client.pendingCalls()).isZero();
        WebSocketFrameChannel workerEnd = (WebSocketFrameChannel) h.workerEnd(W1);
        until("the worker reads the gateway's close", WAIT, () -> workerEnd.peerCloseCode() != -1);
        assertThat(workerEnd.peerCloseCode()).isEqualTo(WebSocketCloseStatus.POLICY_VIOLATION.code());
        assertThat(workerEnd.peerCloseReason())
                .isEqualTo((bound + 1) + " calls wait for the worker's answer (expected: <= " + bound
                        + ", RealGatewayWorkerClient.MAX_PENDING_CALLS)");
    }
}
