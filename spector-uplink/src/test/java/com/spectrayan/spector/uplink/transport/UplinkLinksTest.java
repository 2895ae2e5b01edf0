package com.spectrayan.spector.uplink.transport;

import static com.spectrayan.spector.testkit.Waits.take;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.gateway.GatewayWorkerClient;
import com.spectrayan.spector.uplink.gateway.WorkerDirectory;
import com.spectrayan.spector.uplink.gateway.WorkerLink;
import com.spectrayan.spector.uplink.internal.wire.FrameCodec;
import io.netty.channel.EventLoopGroup;
import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Several uplinks of one worker over real sockets (PROTOCOL.md, "Links per worker"): each dial
 * names its slot in {@code X-Spector-Link}; a new slot joins the worker's links up to the
 * gateway's limit, past it the upgrade is refused 409 {@code UPLINK_LIMIT} before the handshake; a
 * re-dial of a held slot replaces the stale link in it; a malformed slot is a 400.
 */
final class UplinkLinksTest {
    private static final int LIMIT = 2;
    private static final InetAddress LOOPBACK_1 = loopback(1);
    private static final InetAddress LOOPBACK_2 = loopback(2);

    private static InetAddress loopback(int last) {
        try {
            return InetAddress.getByAddress(new byte[] {127, 0, 0, (byte) last});
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    @RegisterExtension
    final Closing closing = new Closing();

    private final EventLoopGroup group = closing.group;
    private final WorkerDirectory directory = new WorkerDirectory(LIMIT);
    private final BlockingQueue<Throwable> failures = new LinkedBlockingQueue<>();

    /** A gateway that registers each accepted link in {@link #directory}, as the real one does. */
    private TestGateway gateway() {
        TestGateway g = new TestGateway(group, 0, null, UplinkAcceptor.DEFAULT_IDLE_TIMEOUT, null, directory::refusal);
        closing.add(g);
        return g;
    }

    private TestGateway.Uplink link(TestGateway g, int slot) {
        TestGateway.Uplink u = g.nextUplink("slot " + slot + " is accepted");
        directory.register(new WorkerLink(
                u.workerId(), u.slot(), "test", Instant.now(), GatewayWorkerClient.over(u.workerId(), u.channel())));
        return u;
    }

    private UplinkDialer dial(TestGateway g, int slot) {
        UplinkDialer d = UplinkDialer.builder(g.uri(), "w1", TestGateway.TOKEN, group)
                .slot(slot)
                .reconnect(Duration.ofMillis(50), Duration.ofMillis(200))
                .onAttemptFailed(failures::add)
                .build();
        closing.add(d);
        d.start();
        return d;
    }

    @Test
    void newSlots_joinUpToTheLimit_andOnePastItIsRefused409BeforeTheHandshake() {
        TestGateway g = gateway();
        dial(g, 0);
        dial(g, 1);
        TestGateway.Uplink first = link(g, 0);
        TestGateway.Uplink second = link(g, 1);
        assertThat(List.of(first.slot(), second.slot())).containsExactlyInAnyOrder(0, 1);
        assertThat(directory.links("w1")).as("two links, one worker").hasSize(2);

        UplinkDialer third = dial(g, 1 + 1);
        Throwable refused = take(failures, "slot 2 past a limit of 2 is refused");
        assertThat(refused.getMessage()).contains("409").contains("spector.uplink.max-links-per-worker");
        assertThat(third.isConnected()).isFalse();
        assertThat(g.uplinks).as("no third link handed over").isEmpty();
        assertThat(first.channel().isOpen() && second.channel().isOpen())
                .as("the held links are untouched")
                .isTrue();
    }

    @Test
    void aRedialOfAHeldSlot_replacesTheStaleLinkInIt_andLeavesTheOtherSlotAlone() {
        TestGateway g = gateway();
        dial(g, 0);
        TestGateway.Uplink zero = link(g, 0);
        dial(g, 1);
        TestGateway.Uplink one = link(g, 1);

        dial(g, 0); // a second worker process with the same slot: as a worker re-dialling slot 0
        TestGateway.Uplink again = link(g, 0);
        Waits.until("the stale link in slot 0 is closed", () -> !zero.channel().isOpen());
        assertThat(one.channel().isOpen()).as("slot 1 stays").isTrue();
        assertThat(directory.links("w1")).extracting(WorkerLink::slot).containsExactly(0, 1);
        assertThat(again.channel().isOpen()).isTrue();
    }

    @Test
    void linksOfAWorker_spreadOverTheAddressesItsGatewayNameResolvesTo() throws Exception {
        // Two "replicas" on one port of two loopback addresses; gw.test resolves to both, as a
        // headless Service's name does to its pods.
        TestGateway one = TestGateway.at(group, LOOPBACK_1, 0);
        closing.add(one);
        TestGateway two = TestGateway.at(group, LOOPBACK_2, one.port());
        closing.add(two);
        URI uri = URI.create("ws://gw.test:" + one.port() + UplinkAcceptor.PATH);
        for (int slot = 0; slot < 4; slot++) {
            UplinkDialer d = UplinkDialer.builder(uri, "w1", TestGateway.TOKEN, group)
                    .slot(slot)
                    .spreadOverAddresses(true)
                    .resolver(host -> new InetAddress[] {LOOPBACK_2, LOOPBACK_1})
                    .build();
            closing.add(d);
            d.start();
        }
        List<Integer> onOne =
                List.of(one.nextUplink("a").slot(), one.nextUplink("b").slot());
        List<Integer> onTwo =
                List.of(two.nextUplink("c").slot(), two.nextUplink("d").slot());
        assertThat(onOne).as("slots k mod 2 == 0 on the first address, sorted").containsExactlyInAnyOrder(0, 2);
        assertThat(onTwo).as("slots k mod 2 == 1 on the second").containsExactlyInAnyOrder(1, 3);
    }

    @ParameterizedTest(name = "X-Spector-Link: {0}")
    @ValueSource(strings = {"64", "-1", "abc", "007", "1.0", ""}) // (" 1" is "1": RFC 9110 §5.5 OWS)
    void malformedSlot_isRefused400_naming_theHeader(String value) throws IOException {
        TestGateway g = gateway();
        String response = rawUpgrade(g.port(), "X-Spector-Link: " + value);
        assertThat(response).as("RFC 9110 §15.5.1").startsWith("HTTP/1.1 400");
        assertThat(response).contains(UplinkAcceptor.LINK_HEADER);
        assertThat(g.uplinks).isEmpty();
    }

    @Test
    void noSlotHeader_isSlot0_asAWorkerFromBeforeSlots() throws IOException {
        TestGateway g = gateway();
        String response = rawUpgrade(g.port(), "X-Other: 1");
        assertThat(response).startsWith("HTTP/1.1 101");
        assertThat(take(g.uplinks, "the upgrade is taken").slot()).isZero();
    }

    private static String rawUpgrade(int port, String extraHeader) throws IOException {
        return RawUpgrade.send(
                port,
                "Authorization: Bearer " + TestGateway.TOKEN,
                "Sec-WebSocket-Protocol: " + FrameCodec.SUBPROTOCOL,
                extraHeader);
    }
}
