package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.cluster.gateway.ResponseSplice;
import java.io.IOException;
import java.util.Arrays;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.jspecify.annotations.Nullable;

/**
 * Owner answers off the wire, generated, through a gateway that splices ({@code ResponseSplice}):
 * a body length anywhere from below the splice threshold to several slices' worth of pipe-fulls,
 * the bytes before the owner's pause anywhere from one to 64 KiB, half the answers cut off at a
 * random byte, and a quarter whole but with the owner closing right behind them, unannounced (RFC
 * 9112 §9.6: its FIN races the splice). Every answer goes through two gateways, one on epoll
 * ({@code ResponseSplice}) and one on io_uring ({@code UringSplice}). Whatever the owner does, the client gets either the whole body, byte for
 * byte, on a connection that carries the next exchange (RFC 9112 §6.3, §9.3), or a prefix of it
 * and the connection's end, never a complete response (§8); and the gateway goes on.
 */
final class EdgeSplicePropertiesTest {
    private static @Nullable StagedOwner owner;
    private static @Nullable Cell cell;
    private static @Nullable Cell uringCell;
    private static int cutRuns;
    private static int wholeRuns;
    private static int quitRuns;

    /**
     * One answer: {@code len} body bytes, {@code first} sent before the pause, cut after {@code
     * cut} bytes in all, or -1 for a whole answer; {@code quit}: the owner closes after a whole one.
     */
    record Answer(int len, int first, int cut, boolean quit) {}

    @BeforeContainer
    static void start() throws IOException {
        owner = StagedOwner.start();
        cell = Cell.builder().owners(1).member("staged-p", owner.baseUri()).start();
        uringCell = Cell.builder()
                .owners(1)
                .member("staged-p", owner.baseUri())
                .set("spector.server.transport", "io_uring")
                .start();
    }

    @AfterContainer
    static void stop() {
        // Both gateways spliced (the rest of the checks hold on copied bodies too).
        assertThat(requireNonNull(cell).gateway.forwarder().metrics().splicedResponses())
                .as("spliced on epoll")
                .isPositive();
        assertThat(requireNonNull(uringCell).gateway.forwarder().metrics().splicedResponses())
                .as("spliced on io_uring")
                .isPositive();
        requireNonNull(cell).close();
        requireNonNull(uringCell).close();
        requireNonNull(owner).close();
        // The generator is not lopsided: both kinds of answers were tried.
        assertThat(cutRuns).as("cut answers").isPositive();
        assertThat(wholeRuns).as("whole answers").isPositive();
        assertThat(quitRuns).as("whole answers the owner closed behind").isPositive();
    }

    @Provide
    Arbitrary<Answer> answers() {
        Arbitrary<Integer> lengths = Arbitraries.oneOf(
                Arbitraries.integers()
                        .between((int) ResponseSplice.MIN_LENGTH - 2, (int) ResponseSplice.MIN_LENGTH + 2),
                Arbitraries.integers().between(1, 3 * 1024 * 1024));
        return lengths.flatMap(len -> Combinators.combine(
                        Arbitraries.integers().between(1, Math.min(len, 64 * 1024)),
                        Arbitraries.integers().between(0, 99))
                .as((first, pick) -> {
                    if (pick < 50 || len - first < 2) {
                        return new Answer(len, first, -1, pick >= 25);
                    }
                    // a cut strictly inside the rest of the body
                    int cut = first + 1 + (int) ((long) (len - first - 1) * (pick - 50) / 50);
                    return new Answer(len, first, Math.min(cut, len - 1), false);
                }));
    }

    @Property(tries = 60)
    void theClientGetsTheWholeBodyOrAPrefixAndTheEnd(@ForAll("answers") Answer a) throws IOException {
        answer(requireNonNull(cell), a);
        answer(requireNonNull(uringCell), a);
    }

    private static void answer(Cell cell, Answer a) throws IOException {
        StagedOwner owner = requireNonNull(EdgeSplicePropertiesTest.owner);
        String ns = cell.namespaceOwnedBy("staged-p");
        byte[] body = StagedOwner.body(a.len());
        try (EdgeSpliceTest.Wire c = new EdgeSpliceTest.Wire(cell.gateway.port())) {
            String query = "len=" + a.len() + "&first=" + a.first() + (a.cut() >= 0 ? "&cut=" + a.cut() : "")
                    + (a.quit() ? "&quit=1" : "");
            c.send(EdgeSpliceTest.get(ns, query));
            Map<String, String> head = c.readHead();
            assertThat(head).containsEntry("content-length", String.valueOf(a.len()));
            byte[] first = c.readNBytes(a.first());
            if (a.first() < (a.cut() >= 0 ? a.cut() : a.len())) {
                owner.release(); // the owner paused after `first` bytes
            }
            if (a.cut() < 0) {
                byte[] all = EdgeSpliceTest.concat(first, c.readNBytes(a.len() - a.first()));
                assertThat(all).isEqualTo(body);
                // The connection carries the next exchange (a small answer, sent whole).
                c.send(EdgeSpliceTest.get(ns, "len=10"));
                c.readHead();
                assertThat(c.readNBytes(10)).isEqualTo(StagedOwner.body(10));
                if (a.quit()) {
                    quitRuns++;
                } else {
                    wholeRuns++;
                }
            } else {
                byte[] all = EdgeSpliceTest.concat(first, c.readToEnd());
                assertThat(all.length).isLessThanOrEqualTo(a.cut()).isLessThan(a.len());
                assertThat(all).isEqualTo(Arrays.copyOf(body, all.length));
                cutRuns++;
            }
        }
    }
}
