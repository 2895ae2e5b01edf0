package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.testing.TestBodies.body;
import static com.spectrayan.spector.uplink.testing.TestBodies.pattern;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.KIB;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.testkit.ManualScheduler;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.internal.v2.V2Limits;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.FedBody;
import io.netty.buffer.ByteBuf;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A v2 worker that answers each relay with a whole response (END_STREAM) while the callers do not
 * read: each ended stream's unread bytes stay in the gateway, and the relay keeps its worker's slot
 * until its caller took the body (read it whole, cancelled it, aborted, or the deadline dropped it),
 * so the worker's slots ({@link Limits#RELAYS_PER_WORKER}) bound what its ended streams hold there,
 * as its open streams' windows do. Regression: the slot and the stream's credit went back at
 * END_STREAM, so a worker could leave a window's worth unread per relay, without bound, until each
 * client's send timeout. Over a real v2 uplink on loopback ({@link RelaySeedFixture}).
 */
final class RelayEndedUnreadEndToEndTest {
    /** A whole response: inside the stream's first window, so END_STREAM comes without any read. */
    private static final int BODY_BYTES = 64 * KIB;

    private static final int SLOTS = Limits.RELAYS_PER_WORKER;

    @RegisterExtension
    final RelaySeedFixture seed = new RelaySeedFixture();

    private final RelayHarness h = seed.h;
    private final byte[] data = pattern(BODY_BYTES, 7);

    /** Every response body a test got, cancelled after it (nothing then for one read whole or dropped). */
    private final List<BodySource> bodies = new CopyOnWriteArrayList<>();

    @AfterEach
    void letEveryBodyGo() {
        for (BodySource b : bodies) {
            b.cancel(new CancellationException("the test ended"));
        }
    }

    private RecordingChannel connect() {
        assertThat(BODY_BYTES).isLessThan(V2Limits.INITIAL_STREAM_WINDOW);
        seed.route("/whole", request -> respond(200, new ArrayBody(data, 16 * KIB)));
        return h.connect(Protocol.V2);
    }

    /** Waits until the gateway handled every frame the worker sent before a status.get's answer. */
    private void gatewayCaughtUp() {
        done(h.client(W1).statusGet(), "a status.get round trip (the link's frames are handled in order)", WAIT);
    }

    private BodySource bodyOf(CompletionStage<RelayedResponse> relayed, String what) {
        BodySource b = body(done(relayed, what + " resolves at its head", WAIT), what);
        bodies.add(b);
        return b;
    }

    /**
     * Runs one relay per slot, each answered whole, none read; returns their bodies once every
     * stream ended at the gateway.
     */
    private List<BodySource> slotsFullOfEndedUnreadResponses(GatewayRelay relay, List<AbortSignal> signals) {
        List<CompletionStage<RelayedResponse>> relayed = new ArrayList<>();
        for (int i = 0; i < SLOTS; i++) {
            AbortSignal signal = new AbortSignal();
            signals.add(signal);
            relayed.add(relay.relay(W1, call("GET", "/whole", null, signal)));
        }
        List<BodySource> unread = new ArrayList<>();
        for (int i = 0; i < SLOTS; i++) {
            unread.add(bodyOf(relayed.get(i), "relay " + i));
        }
        until(
                "every stream ended (END_STREAM), no body read",
                WAIT,
                () -> h.link(W1).activeRelays() == 0);
        gatewayCaughtUp();
        return unread;
    }

    private static int streamsOpened(RecordingChannel wire) {
        return wire.v2().seen(f -> f.sent() && f.isHeaders()).size();
    }

    @Test
    void shouldHoldEachSlotWhileItsEndedResponseIsUnread_andStartTheNextRelayOnceOneIsReadWhole() {
        RecordingChannel wire = connect();
        GatewayRelay relay = h.relay();
        List<BodySource> unread = slotsFullOfEndedUnreadResponses(relay, new ArrayList<>());

        assertThat(relay.running(W1))
                .as("each ended stream's unread body holds its slot")
                .isEqualTo(SLOTS);

        CompletionStage<RelayedResponse> next = relay.relay(W1, call("GET", "/whole", null));
        gatewayCaughtUp();
        assertThat(streamsOpened(wire))
                .as("the relay past the worker's slots opened no stream: it waits for a slot")
                .isEqualTo(SLOTS);
        assertThat(next.toCompletableFuture()).as("the waiting relay").isNotDone();

        assertThat(done(readAll(unread.get(0)), "the first caller reads its response", WAIT))
                .as("the ended response, read late, is whole")
                .isEqualTo(data);

        assertThat(done(readAll(bodyOf(next, "the waiting relay")), "the waiting relay's response", WAIT))
                .as("the waiting relay ran once a response was read whole")
                .isEqualTo(data);
        assertThat(streamsOpened(wire)).isEqualTo(SLOTS + 1);
        assertThat(relay.running(W1))
                .as("one slot went back for each body read (never twice)")
                .isEqualTo(SLOTS - 1);
        for (BodySource b : unread.subList(1, SLOTS)) {
            assertThat(done(readAll(b), "each other caller reads its response", WAIT))
                    .isEqualTo(data);
        }
        until("every slot is free again", WAIT, () -> relay.running(W1) == 0);
        assertThat(relay.trackedWorkers()).as("no slot counter left").isZero();
    }

    @Test
    void shouldReleaseTheSlotOfAnEndedResponseWhoseCallerCancelsMidRead() {
        RecordingChannel wire = connect();
        FedBody fed = new FedBody();
        seed.route("/fed", request -> respond(200, fed));
        GatewayRelay relay = h.relay();
        List<CompletionStage<RelayedResponse>> relayed = new ArrayList<>();
        for (int i = 0; i < SLOTS - 1; i++) {
            relayed.add(relay.relay(W1, call("GET", "/whole", null)));
        }
        BodySource midRead = bodyOf(relay.relay(W1, call("GET", "/fed", null)), "the fed relay");
        fed.offer(pattern(16 * KIB, 1));
        ByteBuf first = done(midRead.nextBuf(), "the caller reads the first part", WAIT);
        assertThat(first).isNotNull();
        assertThat(first.readableBytes()).isEqualTo(16 * KIB);
        first.release();
        fed.offer(pattern(16 * KIB, 2));
        fed.end(); // END_STREAM, its second part unread
        for (int i = 0; i < SLOTS - 1; i++) {
            bodyOf(relayed.get(i), "relay " + i);
        }
        until("every stream ended (END_STREAM)", WAIT, () -> h.link(W1).activeRelays() == 0);
        gatewayCaughtUp();
        assertThat(relay.running(W1))
                .as("every ended, unread body holds its slot")
                .isEqualTo(SLOTS);
        CompletionStage<RelayedResponse> next = relay.relay(W1, call("GET", "/whole", null));
        gatewayCaughtUp();
        assertThat(streamsOpened(wire)).as("the next relay waits for a slot").isEqualTo(SLOTS);

        midRead.cancel(new CancellationException("the client went away mid-body"));

        assertThat(done(readAll(bodyOf(next, "the waiting relay")), "the waiting relay's response", WAIT))
                .as("the cancelled body's slot went to the waiting relay")
                .isEqualTo(data);
        assertThat(relay.running(W1)).as("the cancel released one slot, once").isEqualTo(SLOTS - 1);
    }

    @Test
    void shouldReleaseTheSlotOfAnEndedResponseWhenItsCallerAborts_theBodyFailingWithTheReason() {
        RecordingChannel wire = connect();
        GatewayRelay relay = h.relay();
        List<AbortSignal> signals = new ArrayList<>();
        List<BodySource> unread = slotsFullOfEndedUnreadResponses(relay, signals);
        CompletionStage<RelayedResponse> next = relay.relay(W1, call("GET", "/whole", null));
        gatewayCaughtUp();
        assertThat(streamsOpened(wire)).as("the next relay waits for a slot").isEqualTo(SLOTS);

        CancellationException gone = new CancellationException("the caller went away");
        signals.get(0).abort(gone);

        assertThat(failure(readAll(unread.get(0)), "a read of the aborted caller's body", WAIT))
                .as("its unread bytes were dropped: never read as a whole body")
                .isSameAs(gone);
        assertThat(done(readAll(bodyOf(next, "the waiting relay")), "the waiting relay's response", WAIT))
                .isEqualTo(data);
        assertThat(relay.running(W1)).as("the abort released one slot, once").isEqualTo(SLOTS - 1);
    }

    @Test
    void shouldDropAnEndedResponseNobodyReadAtTheDeadline_releasingItsSlot() {
        ManualScheduler deadlines = new ManualScheduler();
        Duration deadline = Duration.ofSeconds(30);
        RecordingChannel wire = connect();
        GatewayRelay relay = new GatewayRelay(h.directory, deadline, SLOTS, deadlines);
        List<BodySource> unread = slotsFullOfEndedUnreadResponses(relay, new ArrayList<>());
        deadlines.advance(Duration.ofSeconds(10));
        CompletionStage<RelayedResponse> next = relay.relay(W1, call("GET", "/whole", null));
        gatewayCaughtUp();
        assertThat(streamsOpened(wire)).as("the next relay waits for a slot").isEqualTo(SLOTS);
        assertThat(relay.running(W1)).isEqualTo(SLOTS);

        deadlines.advance(Duration.ofSeconds(20)); // the first relays' deadline; the next's is 10 s on

        for (BodySource b : unread) {
            spector(
                    failure(readAll(b), "a read of a body its caller left past the deadline", WAIT),
                    ErrorCode.WORKER_UNREACHABLE,
                    "a body dropped at the deadline");
        }
        assertThat(done(readAll(bodyOf(next, "the waiting relay")), "the waiting relay's response", WAIT))
                .as("the waiting relay took a slot the deadline freed, within its own deadline")
                .isEqualTo(data);
        until("every slot is free again", WAIT, () -> relay.running(W1) == 0);
        assertThat(deadlines.pending())
                .as("no deadline left: each was cancelled or fired")
                .isZero();
    }

    @Test
    void shouldKeepTheSlotsOfEndedUnreadResponsesPastTheLinksLoss_untilTheyAreRead() {
        connect();
        GatewayRelay relay = h.relay();
        List<BodySource> unread = slotsFullOfEndedUnreadResponses(relay, new ArrayList<>());

        h.stopWorker(W1);
        until("the link is gone", WAIT, () -> h.directory.live(W1) == null);

        assertThat(relay.running(W1))
                .as("the bytes are still held here: so are the slots")
                .isEqualTo(SLOTS);
        for (BodySource b : unread) {
            assertThat(done(readAll(b), "each caller reads its response after the link's loss", WAIT))
                    .isEqualTo(data);
        }
        assertThat(relay.running(W1)).as("each read released its slot, once").isZero();
        assertThat(relay.trackedWorkers()).isZero();
    }
}
