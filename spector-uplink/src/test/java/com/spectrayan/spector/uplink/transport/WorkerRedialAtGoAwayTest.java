package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.take;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A gateway's drain on a v2 link (PROTOCOL.md section 9.8): the gateway sends GOAWAY as the drain
 * begins, and the worker dials its slot again at once while the old link finishes the relay it
 * carries; the old link's close then dials nothing more. Before, the gateway said nothing until
 * the relay ended and the worker re-dialled only at the close: for the whole drain (up to the drain
 * timeout, 20 s by default, behind one long relay) the worker had no link a new relay could take.
 * Real sockets, a real worker session and dialer; the gateway's side is the relay engine's.
 */
final class WorkerRedialAtGoAwayTest {
    private final RelayHarness h = new RelayHarness();

    @AfterEach
    void close() {
        h.close();
    }

    @Test
    void aGatewaysGoAway_makesTheWorkerDialItsSlotAgain_whileTheOldLinkFinishesItsRelay() throws Exception {
        CompletableFuture<RelayedResponse> heldAnswer = new CompletableFuture<>();
        h.target(request -> request.url().getPath().equals("/hold") ? heldAnswer : respond(200, null));
        h.connect(Protocol.V2);
        WorkerLink old = h.link(W1);
        CompletableFuture<RelayedResponse> held =
                h.relay().relay(W1, call("GET", "/hold", null)).toCompletableFuture();
        RelayedRequest holding = take(h.targetCalls, "the held relay reaches the target", WAIT);
        assertThat(holding.url().getPath()).isEqualTo("/hold");

        old.goAway("gateway draining: reconnect");

        h.nextGatewayEnd(W1); // before: no second uplink until the held relay ended and the link closed
        assertThat(old.client().isOpen()).as("the old link finishes its relay").isTrue();
        assertThat(held).as("the held relay goes on").isNotDone();
        WorkerLink fresh = h.link(W1);
        assertThat(fresh).as("the new link took the slot").isNotSameAs(old);
        assertThat(fresh.slot()).isEqualTo(old.slot());

        RelayedResponse meanwhile = h.relay()
                .relay(W1, call("GET", "/ok", null))
                .toCompletableFuture()
                .get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(meanwhile.status())
                .as("a relay during the drain, on the new link")
                .isEqualTo(200);
        take(h.targetCalls, "the new relay reaches the target", WAIT);

        heldAnswer.complete(new RelayedResponse(200, List.of(), null));
        assertThat(held.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).status())
                .as("the held relay ends well on the old link")
                .isEqualTo(200);
        until(
                "the old link closes after its last relay",
                WAIT,
                () -> !old.client().isOpen());
        assertThat(fresh.client().isOpen()).isTrue();
        await("the old link's close dials nothing more")
                .during(Duration.ofMillis(400))
                .atMost(Duration.ofSeconds(2))
                .until(() -> h.dialer(W1).attempts() == 2);
    }

    /**
     * A gateway that sends the new link away too while the old one still runs its relay: the
     * worker keeps at most one link finishing (a hostile gateway that sent every link away and
     * closed none would otherwise make it dial and hold one more link per GOAWAY), and dials the
     * slot again when the sent-away link it kept as current closes.
     */
    @Test
    void aSecondGoAway_whileTheFirstLinkStillRuns_dialsNoThirdLink_untilTheSecondCloses() throws Exception {
        CompletableFuture<RelayedResponse> first = new CompletableFuture<>();
        CompletableFuture<RelayedResponse> second = new CompletableFuture<>();
        h.target(request -> request.url().getPath().equals("/first") ? first : second);
        h.connect(Protocol.V2);
        WorkerLink one = h.link(W1);
        CompletableFuture<RelayedResponse> onOne =
                h.relay().relay(W1, call("GET", "/first", null)).toCompletableFuture();
        take(h.targetCalls, "the first relay reaches the target", WAIT);
        one.goAway("gateway draining: reconnect");
        h.nextGatewayEnd(W1);
        WorkerLink two = h.link(W1);
        CompletableFuture<RelayedResponse> onTwo =
                h.relay().relay(W1, call("GET", "/second", null)).toCompletableFuture();
        take(h.targetCalls, "the second relay reaches the target", WAIT);

        two.goAway("gateway draining: reconnect");
        await("no third link while the first still finishes")
                .during(Duration.ofMillis(400))
                .atMost(Duration.ofSeconds(2))
                .until(() -> h.dialer(W1).attempts() == 2);

        first.complete(new RelayedResponse(200, List.of(), null));
        assertThat(onOne.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).status()).isEqualTo(200);
        until("the first link closes", WAIT, () -> !one.client().isOpen());
        assertThat(h.dialer(W1).attempts()).as("its close dials nothing").isEqualTo(2);

        second.complete(new RelayedResponse(200, List.of(), null));
        assertThat(onTwo.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).status()).isEqualTo(200);
        h.nextGatewayEnd(W1); // the second link's close (1001) is re-dialled, as any
        assertThat(h.dialer(W1).attempts()).isEqualTo(3);
    }
}
