package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.done;
import static com.spectrayan.spector.testkit.Waits.failure;
import static com.spectrayan.spector.testkit.Waits.until;
import static com.spectrayan.spector.uplink.testing.TestBodies.body;
import static com.spectrayan.spector.uplink.testing.TestBodies.readAll;
import static com.spectrayan.spector.uplink.transport.RelayHarness.W1;
import static com.spectrayan.spector.uplink.transport.RelayHarness.call;
import static com.spectrayan.spector.uplink.transport.RelayHarness.respond;
import static com.spectrayan.spector.uplink.transport.RelaySeedFixture.spector;
import static com.spectrayan.spector.uplink.transport.TestGateway.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import com.spectrayan.spector.uplink.gateway.GatewayRelay;
import com.spectrayan.spector.uplink.gateway.RelayCall;
import com.spectrayan.spector.uplink.testing.ArrayBody;
import com.spectrayan.spector.uplink.testing.FedBody;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Relayed upgrades have a share of their own per worker (docs/PROTOCOL.md section 9.7, "Limits"):
 * a switched relay gives its slot back at its {@code 101} and keeps only an upgrade permit, an
 * upgrade past the share is refused at once, and every ending of a switched stream frees its
 * permit, once. Regression: a switched relay kept its ordinary slot for its whole life, so as many
 * idle WebSockets as the worker has slots made every other relay to it wait until its deadline.
 * Over a real v2 uplink on loopback ({@link RelaySeedFixture}); the slots are as few as the share,
 * so that the switched relays alone could fill them.
 */
final class RelayUpgradeShareEndToEndTest {
    private static final int SHARE = 2;
    private static final int SLOTS = 2;

    /** How soon an ordinary relay is answered while the share is full (it waited for its deadline). */
    private static final Duration PROMPTLY = Duration.ofSeconds(1);

    @RegisterExtension
    final RelaySeedFixture seed = new RelaySeedFixture();

    private final RelayHarness h = seed.h;

    /** The worker's side of each switched relay the target answered, in order. */
    private final BlockingQueue<FedBody> upstreams = new LinkedBlockingQueue<>();

    /** Every caller's side the test opened, and every body it got: let go after each test. */
    private final List<FedBody> callerSides = new CopyOnWriteArrayList<>();

    private final List<BodySource> bodies = new CopyOnWriteArrayList<>();

    private final GatewayRelay relay = new GatewayRelay(
            h.directory,
            Duration.ofSeconds(30),
            SLOTS,
            SHARE,
            Limits.UNREAD_RELAY_BYTES,
            Limits.UNREAD_RELAY_BYTES_ALL,
            h.scheduler);

    @AfterEach
    void letEverythingGo() {
        for (BodySource b : bodies) {
            b.cancel(new CancellationException("the test ended"));
        }
        for (FedBody f : callerSides) {
            f.end();
        }
        for (FedBody f : upstreams) {
            f.end();
        }
    }

    private void connect() {
        seed.route("/ws", request -> {
            FedBody upstream = new FedBody();
            upstreams.add(upstream);
            return CompletableFuture.completedFuture(RelayedResponse.switching(List.of(), upstream));
        });
        seed.route("/plain", request -> respond(200, ArrayBody.of("ok")));
        h.connect(Protocol.V2);
    }

    /** A switched relay: its caller's side (fed by the test), its abort, its result. */
    private record Upgrade(FedBody callerSide, AbortSignal signal, CompletionStage<RelayedResponse> result) {}

    private Upgrade upgrade() {
        FedBody callerSide = new FedBody();
        callerSides.add(callerSide);
        AbortSignal signal = new AbortSignal();
        RelayCall call = new RelayCall(
                "app",
                new RelayedRequest(
                        "GET",
                        URI.create("http://app.local/ws"),
                        List.of(),
                        "acme",
                        null,
                        callerSide,
                        signal,
                        "websocket"));
        return new Upgrade(callerSide, signal, relay.relay(W1, call));
    }

    /** Opens {@code n} upgrades and waits for each one's 101; returns them with their bodies. */
    private List<Upgrade> switched(int n) {
        List<Upgrade> opened = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            // One at a time: the worker's targets run in the order their streams open, so the i-th
            // of upstreams is the i-th of bodies (opened together, two could swap, and a test that
            // ended the first upstream read the second body: a flake in CI).
            Upgrade u = upgrade();
            opened.add(u);
            RelayedResponse r = done(u.result(), "upgrade " + i + " resolves at its 101", WAIT);
            assertThat(r.status()).as("upgrade " + i).isEqualTo(RelayedResponse.SWITCHING_PROTOCOLS);
            bodies.add(body(r, "upgrade " + i));
        }
        return opened;
    }

    private void assertPlainRelayAnsweredPromptly(String when) {
        long started = System.nanoTime();
        RelayedResponse r = done(relay.relay(W1, call("GET", "/plain", null)), "a plain GET " + when, PROMPTLY);
        assertThat(r.status()).isEqualTo(200);
        BodySource b = body(r, "the plain GET");
        assertThat(new String(done(readAll(b), "its body", WAIT), StandardCharsets.UTF_8))
                .isEqualTo("ok");
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(PROMPTLY);
    }

    @Test
    void shouldAnswerAnOrdinaryRelayPromptly_whileTheUpgradeShareIsFullOfSwitchedRelays() {
        connect();
        switched(SHARE);

        for (int i = 0; i < SLOTS + 1; i++) {
            assertPlainRelayAnsweredPromptly("while " + SHARE + " switched relays are open (" + i + ")");
        }
        assertThat(relay.running(W1))
                .as("a switched relay gave its slot back at its 101")
                .isZero();
        assertThat(relay.upgrades(W1)).as("each keeps its upgrade permit").isEqualTo(SHARE);
        until("every plain relay's slot is back", WAIT, () -> relay.running(W1) == 0);
        assertThat(relay.upgrades(W1)).isEqualTo(SHARE);
    }

    @Test
    void shouldAcceptUpgradesUpToTheShare_andRefuseTheNextAtOnceWith503AndRetryAfter() {
        connect();
        switched(SHARE); // at the share: each accepted
        int called = h.targetCalls.size();

        CompletableFuture<RelayedResponse> past = upgrade().result().toCompletableFuture();

        assertThat(past)
                .as("the upgrade past the share is refused at once, never queued")
                .isCompletedExceptionally();
        SpectorException refused = spector(
                failure(past, "the upgrade past the share", WAIT), ErrorCode.GATEWAY_ROUTING_FAILURE, "refused");
        assertThat(refused.code().httpStatus()).isEqualTo(503);
        assertThat(refused.details())
                .containsEntry("reason", "relay-upgrades-full")
                .containsEntry("retryAfterSeconds", 1L);
        assertThat(h.targetCalls).as("nothing of it reached the worker").hasSize(called);
        assertThat(relay.upgrades(W1)).as("the refusal took no permit").isEqualTo(SHARE);
        assertThat(relay.running(W1)).as("nor a slot").isZero();
    }

    @Test
    void shouldFreeTheUpgradePermitOnceWhenASwitchedRelayEnds_eitherWay() {
        connect();
        List<Upgrade> open = switched(SHARE);
        List<FedBody> workerSides = new ArrayList<>(upstreams);

        // Both half closes: the worker's END_STREAM (the caller reads it), then the caller's.
        workerSides.get(0).end();
        assertThat(done(readAll(bodies.get(0)), "the worker's side ends", WAIT)).isEmpty();
        open.get(0).callerSide().end();
        done(open.get(0).result(), "the first switched relay", WAIT);
        until("the closed relay's permit is back", WAIT, () -> relay.upgrades(W1) == SHARE - 1);

        Upgrade next = switched(1).get(0);
        assertThat(relay.upgrades(W1))
                .as("the freed permit went to the next upgrade")
                .isEqualTo(SHARE);
        assertThat(upgrade().result().toCompletableFuture())
                .as("the share is full again")
                .isCompletedExceptionally();

        // The caller's abort (its client went away): a RESET CANCEL.
        open.get(1).signal().abort(new CancellationException("the client went away"));
        until("the aborted relay's permit is back", WAIT, () -> relay.upgrades(W1) == SHARE - 1);
        done(h.client(W1).statusGet(), "a status.get round trip", WAIT);
        assertThat(relay.upgrades(W1)).as("released once, never twice").isEqualTo(SHARE - 1);

        // The worker's RESET: its upstream failed.
        FedBody nextUpstream = new ArrayList<>(upstreams).get(SHARE);
        nextUpstream.fail(new IllegalStateException("the upstream broke"));
        assertThat(failure(next.result().thenCompose(r -> readAll(bodies.get(SHARE))), "the reset relay", WAIT))
                .isNotNull();
        until("every permit is back", WAIT, () -> relay.upgrades(W1) == 0);
        assertThat(relay.trackedWorkers()).as("no counter left for the worker").isZero();
        switched(SHARE);
    }

    @Test
    void shouldFreeEveryUpgradePermitWhenTheLinkIsLost() {
        connect();
        switched(SHARE);
        assertThat(relay.upgrades(W1)).isEqualTo(SHARE);

        h.stopWorker(W1);
        until("the link is gone", WAIT, () -> h.directory.live(W1) == null);
        until("the link's loss ended every switched relay", WAIT, () -> relay.upgrades(W1) == 0);
        assertThat(relay.running(W1)).isZero();
        assertThat(relay.trackedWorkers()).as("no counter left for the worker").isZero();
        for (BodySource b : bodies) {
            spector(
                    failure(readAll(b), "a switched body after the link's loss", WAIT),
                    ErrorCode.WORKER_UNREACHABLE,
                    "the link's loss");
        }
    }
}
