package com.spectrayan.spector.uplink.gateway;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.uplink.gateway.RawWorker.empty;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.call;
import static com.spectrayan.spector.uplink.gateway.RelayFixture.spectorFailure;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.wire.RelayRequest;
import com.spectrayan.spector.uplink.wire.Frame;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the gateway's relay keeps between relays: nothing. The per-worker slot counter is dropped
 * once a worker's last relay ends (whichever way it ends), and a caller's abort signal that
 * outlives its relays (one per connection, say) keeps no listener of an ended relay.
 */
final class RelayStateTest {
    private final RelayFixture w1 = new RelayFixture();
    private final RawWorker worker = w1.worker;
    private final GatewayRelay relay = w1.relay;

    @AfterEach
    void tearDown() {
        w1.close();
    }

    @Test
    void relaysEndingEveryWay_leaveNoPerWorkerSlotCounter_andNoListenerOnTheCallersLongLivedSignal() {
        AbortSignal connection = new AbortSignal(); // One signal shared by every relay of a caller.

        // Ends normally.
        CompletionStage<RelayedResponse> ok = relay.relay("w1", call("GET", null, connection));
        Frame.Call okCall = worker.take(RelayRequest.OP);
        assertThat(relay.trackedWorkers())
                .as("a running relay has its worker's slot counter")
                .isEqualTo(1);
        assertThat(connection.listenerCount())
                .as("a running relay listens to its signal")
                .isEqualTo(1);
        worker.head(okCall.id(), 204);
        worker.result(okCall.id(), empty());
        done(ok, "the relay that ends normally");
        Waits.until("after a normal end: no slot counter left", () -> relay.trackedWorkers() == 0);
        assertThat(connection.listenerCount())
                .as("after a normal end: no listener left")
                .isZero();

        // Fails with the worker's error.
        CompletionStage<RelayedResponse> refused = relay.relay("w1", call("GET", null, connection));
        worker.refuse(RelayRequest.OP, ErrorCode.RELAY_TARGET_MISSING, "no target app");
        spectorFailure(refused, ErrorCode.RELAY_TARGET_MISSING, "the refused relay");
        Waits.until("after a worker error: no slot counter left", () -> relay.trackedWorkers() == 0);
        assertThat(connection.listenerCount())
                .as("after a worker error: no listener left")
                .isZero();

        // Eight run, a ninth waits and is aborted while it waits, then the eight end.
        List<CompletionStage<RelayedResponse>> eight = new ArrayList<>();
        List<Frame.Call> calls = new ArrayList<>();
        for (int i = 0; i < Limits.RELAYS_PER_WORKER; i++) {
            eight.add(relay.relay("w1", call("GET", null, connection)));
            calls.add(worker.take(RelayRequest.OP));
        }
        AbortSignal ninthSignal = new AbortSignal();
        CompletionStage<RelayedResponse> ninth = relay.relay("w1", call("GET", null, ninthSignal));
        assertThat(connection.listenerCount())
                .as("eight running relays listen to the shared signal")
                .isEqualTo(8);
        CancellationException gone = new CancellationException("the waiting caller went away");
        ninthSignal.abort(gone);
        assertThat(failure(ninth, "the ninth, aborted while it waited")).isSameAs(gone);
        assertThat(relay.trackedWorkers())
                .as("eight still run: the counter stays")
                .isEqualTo(1);
        for (Frame.Call c : calls) {
            worker.head(c.id(), 204);
            worker.result(c.id(), empty());
        }
        for (CompletionStage<RelayedResponse> r : eight) {
            done(r, "each of the eight");
        }
        Waits.until(
                "after eight ends and a waiter that gave up: no slot counter left", () -> relay.trackedWorkers() == 0);
        assertThat(connection.listenerCount())
                .as("after the eight: no listener left")
                .isZero();
        assertThat(worker.seen(RelayRequest.OP))
                .as("the aborted ninth never went out (2 + 8 relay.request)")
                .hasSize(10);

        // The uplink drops mid-relay.
        CompletionStage<RelayedResponse> dropped = relay.relay("w1", call("GET", null, connection));
        worker.take(RelayRequest.OP);
        w1.client.close("the uplink drops");
        spectorFailure(dropped, ErrorCode.WORKER_UNREACHABLE, "the relay whose uplink dropped");
        Waits.until("after the drop: no slot counter left", () -> relay.trackedWorkers() == 0);
        assertThat(connection.listenerCount())
                .as("after the drop: no listener left")
                .isZero();
        assertThat(relay.running("w1")).as("no slot held").isZero();
    }
}
