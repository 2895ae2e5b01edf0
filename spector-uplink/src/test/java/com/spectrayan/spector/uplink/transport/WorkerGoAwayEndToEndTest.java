package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.internal.v2.V2ErrorCode;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A worker's GOAWAY on a v2 link (docs/PROTOCOL.md section 9.8): the link finishes the streams at
 * or below its last id, and no new relay picks it from that moment, though it stays open for them.
 * Before, the gateway kept choosing it, and every stream it opened there was refused (503 to the
 * client) while the worker's other link sat idle.
 */
final class WorkerGoAwayEndToEndTest {
    @RegisterExtension
    final RelaySeedFixture seed = new RelaySeedFixture();

    private final RelayHarness h = seed.h;

    @Test
    void aWorkersGoAway_takesItsLinkOutOfTheChoice_whileItsRunningRelayGoesOn() {
        seed.route("/hold", RelaySeedFixture::never);
        h.connect(Protocol.V2);
        AbortSignal signal = new AbortSignal();
        CompletionStage<RelayedResponse> held = h.relay().relay(W1, call("GET", "/hold", null, signal));
        take(h.targetCalls, "the held relay reaches the target", WAIT);
        assertThat(h.directory.live(W1))
                .as("before the GOAWAY the link is live")
                .isNotNull();

        V2FrameChannel worker = (V2FrameChannel) h.workerEnd(W1);
        worker.connection().goAway(1, V2ErrorCode.NO_ERROR, "worker restarting"); // the held stream is 1

        until("the gateway's end has the GOAWAY", WAIT, () -> h.directory.live(W1) == null);
        assertThat(h.directory.links(W1))
                .as("the link stays open for the stream at or below its last id")
                .hasSize(1);
        assertThat(held.toCompletableFuture()).as("the running relay goes on").isNotDone();
        spector(
                h.relay().relay(W1, call("GET", "/hold", null)),
                ErrorCode.WORKER_UNREACHABLE,
                "a new relay finds no link that takes it");
        assertThat(h.targetCalls).as("nothing new reached the target").isEmpty();
        signal.abort(new CancellationException("done"));
    }
}
