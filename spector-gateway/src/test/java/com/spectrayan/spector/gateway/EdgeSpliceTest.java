package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.spectrayan.spector.cluster.gateway.ForwarderMetrics;
import com.spectrayan.spector.cluster.gateway.ResponseSplice;
import com.spectrayan.spector.testkit.TcpTable;
import io.netty.channel.EventLoop;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Response bodies the gateway splices from the owner's socket to the client's in the kernel
 * ({@code ResponseSplice}, issue 14), on the wire: raw sockets at both ends, the owner a {@link
 * StagedOwner} that sends the head and the first bytes of a body, then the rest when the test
 * says, so the gateway's first read always ends inside the body. Each test checks the bytes the
 * client got against the body the owner sent, the owner's side (its connections, reused or
 * ended), and whether the body was spliced (the forwarder's counter).
 *
 * <p>The rules defended: a body framed by its length is delivered whole and exact (RFC 9112 §6.3),
 * an incomplete one is never completed (RFC 9112 §8: the client sees the connection end before
 * the length), persistent connections on both sides go on after a spliced body (RFC 9112 §9.3),
 * and pipelined requests are answered in order (§9.3.2).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EdgeSpliceTest {
    /** The body bytes a staged answer sends before the test releases the rest. */
    static final int FIRST = 1024;

    private static final Duration BOUND = Duration.ofSeconds(20);
    /**
     * The body bytes the owner's socket holds before the test lets the gateway read them: less
     * than any Linux's initial receive window (64 KiB with {@code tcp_adv_win_scale} 1).
     */
    private static final int QUEUED = 48 * 1024;

    private StagedOwner owner;
    private Cell cell;
    private static final String TOKEN = Cell.token(Cell.TENANT);
    private Path accessLog;
    private SSLContext trusting;

    /** The gateway's {@code spector.server.transport}: the default here, io_uring in {@link EdgeSpliceUringTest}. */
    String transport() {
        return "auto";
    }

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        owner = StagedOwner.start();
        TestPki ca = TestPki.authority("splice");
        trusting = TestPki.clientTrusting(ca);
        accessLog = dir.resolve("access.log");
        cell = Cell.builder()
                .owners(1)
                .member("staged-0", owner.baseUri())
                .set("spector.server.access-log", accessLog.toString())
                .set("spector.server.transport", transport())
                .tls(ca, dir)
                .start();
    }

    @AfterAll
    void stop() {
        cell.close();
        owner.close();
    }

    @Test
    void largeBody_isSplicedExactly_andBothConnectionsCarryTheNextExchange() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 1024 * 1024;
        long spliced = spliced(cell);
        try (Wire c = new Wire(cell.gateway.port())) {
            assertThat(c.stagedGet(owner, ns, len)).isEqualTo(StagedOwner.body(len));
            // The access log counts the spliced bytes as sent.
            String id = java.util.Objects.requireNonNull(c.lastHead.get("x-request-id"), "X-Request-Id");
            assertThat(AccessLogTest.lineOf(accessLog, id).get("bytesOut").asLong())
                    .isEqualTo(len);
            int ownerConnections = owner.connections();
            int ended = owner.connectionsEnded();
            // The same client connection and, back from its pool, the same owner connection.
            assertThat(c.stagedGet(owner, ns, len)).isEqualTo(StagedOwner.body(len));
            assertThat(owner.connections()).isEqualTo(ownerConnections);
            assertThat(owner.connectionsEnded()).isEqualTo(ended);
        }
        assertThat(spliced(cell) - spliced).isEqualTo(2);
        assertThat(owner.requests().stream().filter(r -> r.path().endsWith("/" + ns + "/big")))
                .hasSize(2)
                .allSatisfy(r -> assertThat(r.method()).isEqualTo("GET"));
    }

    @Test
    void contentLengthAtTheThreshold_isSpliced_oneBelow_isCopied() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int min = (int) ResponseSplice.MIN_LENGTH;
        try (Wire c = new Wire(cell.gateway.port())) {
            long before = spliced(cell);
            assertThat(c.stagedGet(owner, ns, min)).isEqualTo(StagedOwner.body(min));
            assertThat(spliced(cell) - before).isEqualTo(1);

            before = spliced(cell);
            assertThat(c.stagedGet(owner, ns, min - 1)).isEqualTo(StagedOwner.body(min - 1));
            assertThat(spliced(cell) - before).isZero();
        }
    }

    @Test
    void aBodySlicedManyTimes_arrivesWhole() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 2 * ResponseSplice.SLICE + 12_345; // three slices, the last a short one
        long before = spliced(cell);
        try (Wire c = new Wire(cell.gateway.port())) {
            assertThat(c.stagedGet(owner, ns, len)).isEqualTo(StagedOwner.body(len));
        }
        assertThat(spliced(cell) - before).isEqualTo(1);
    }

    @Test
    void ownerCutsTheBodyShort_theClientSeesTheConnectionEnd_neverACompleteResponse() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 1024 * 1024;
        int cut = 300 * 1024;
        long before = spliced(cell);
        try (Wire c = new Wire(cell.gateway.port())) {
            c.send(get(ns, "len=" + len + "&first=" + FIRST + "&cut=" + cut));
            byte[] got = c.readStagedStart(len);
            owner.release();
            byte[] all = concat(got, c.readToEnd());
            // At most what the owner sent (a reset may drop the tail), each byte the owner's.
            assertThat(all.length).isLessThanOrEqualTo(cut);
            assertThat(all).isEqualTo(Arrays.copyOf(StagedOwner.body(len), all.length));
        }
        assertThat(spliced(cell) - before).isEqualTo(1);
        assertNextExchangeWhole(ns);
    }

    @Test
    void clientGoesAwayMidBody_theOwnerConnectionIsClosed_notPooled() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 16 * 1024 * 1024;
        int ended = owner.connectionsEnded();
        ForwarderMetrics m = cell.gateway.forwarder().metrics();
        long cancelled = m.cancelled();
        long failed = m.failed();
        try (Wire c = new Wire(cell.gateway.port())) {
            c.send(get(ns, "len=" + len + "&first=" + FIRST));
            c.readStagedStart(len);
            c.reset();
        }
        owner.release();
        await().atMost(BOUND).until(() -> owner.connectionsEnded() > ended);
        // A client that went is a cancelled exchange, as during a copied body; not a failure.
        await().atMost(BOUND).until(() -> m.cancelled() > cancelled);
        assertThat(m.cancelled() - cancelled).isEqualTo(1);
        assertThat(m.failed() - failed).isZero();
        assertNextExchangeWhole(ns);
    }

    @Test
    void aReaderThatStops_getsEveryByteWhenItReadsAgain() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 8 * 1024 * 1024;
        try (Wire c = new Wire(cell.gateway.port())) {
            c.send(get(ns, "len=" + len + "&first=" + FIRST));
            byte[] first = c.readStagedStart(len);
            long written = owner.written();
            owner.release();
            // The client reads nothing while the owner writes 2 MiB: the splice waits for it.
            await().atMost(BOUND).until(() -> owner.written() - written >= 2 * 1024 * 1024);
            byte[] rest = c.readNBytes(len - FIRST);
            assertThat(concat(first, rest)).isEqualTo(StagedOwner.body(len));
        }
    }

    /**
     * A client that stops reading mid-body holds its own exchange only: the event loop its
     * connection shares goes on answering others (the splice never waits on the loop for the
     * client's socket: on io_uring that socket blocks, and the ring's worker waits for it). Probed
     * with small GETs on connections of the same loop while the stalled body's buffers are full.
     */
    @Test
    void aClientThatStopsReadingMidSplice_holdsNoOtherConnectionOnItsLoop() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 32 * 1024 * 1024;
        long before = spliced(cell);
        try (Wire stalled = new Wire(cell.gateway.port(), 16 * 1024)) {
            stalled.send(get(ns, "len=" + len + "&first=" + FIRST));
            byte[] first = stalled.readStagedStart(len);
            owner.release();
            int port = stalled.localPort();
            await().atMost(BOUND).until(() -> TcpTable.receiveQueue(port, cell.gateway.port()) >= 8 * 1024);
            EventLoop loop = loopOf(cell, stalled);
            int probes = 0; // a probe may land on the other loop: up to 200 connections to find 5 on this one
            for (int tries = 0; probes < 5 && tries < 200; tries++) {
                try (Wire other = new Wire(cell.gateway.port())) {
                    EventLoop l = await().atMost(BOUND)
                            .ignoreExceptions()
                            .until(() -> loopOf(cell, other), java.util.Objects::nonNull);
                    if (l != loop) {
                        continue;
                    }
                    other.socket.setSoTimeout(5_000); // the loop answers at once, or the test fails
                    int small = 4 * 1024;
                    other.send(get(ns, "len=" + small + "&first=" + small));
                    assertThat(other.readHead()).containsEntry("content-length", String.valueOf(small));
                    assertThat(other.readNBytes(small)).isEqualTo(StagedOwner.body(small));
                    probes++;
                }
            }
            assertThat(probes)
                    .as("connections probed on the stalled client's loop")
                    .isEqualTo(5);
            assertThat(concat(first, stalled.readNBytes(len - FIRST))).isEqualTo(StagedOwner.body(len));
        }
        assertThat(spliced(cell) - before).isEqualTo(1);
    }

    /**
     * Clients that stop reading mid-body hold no kernel thread each. On io_uring the splice to a
     * client runs on a worker thread of the ring ({@code iou-wrk-*}), which would wait in the
     * client's full socket for as long as the client reads nothing: a dozen stalled clients, a
     * dozen threads, and the pipe budget allows thousands. The worker waits a clock tick at most
     * and the splice then polls for room on the loop. The clients stall one after the other, each
     * until the gateway sends it nothing more, so a worker that was let go serves the next.
     */
    @Test
    void clientsThatStopReadingMidSplice_holdNoKernelThreadEach() throws Exception {
        int clients = 12;
        int len = 8 * 1024 * 1024;
        java.util.List<Wire> stalled = new java.util.ArrayList<>();
        // A cell of its own: the owner connections these bodies leave pooled serve no other test.
        try (StagedOwner own = StagedOwner.start();
                Cell one = cellWithPipes(own, "staged-1", clients)) {
            String ns = one.namespaceOwnedBy("staged-1");
            ForwarderMetrics m = one.gateway.forwarder().metrics();
            for (int i = 0; i < clients; i++) {
                Wire c = new Wire(one.gateway.port(), 16 * 1024);
                stalled.add(c);
                c.send(get(ns, "len=" + len));
                assertThat(c.readHead()).containsEntry("content-length", String.valueOf(len));
                long started = i + 1L;
                await().atMost(BOUND).until(() -> spliced(one) >= started);
                long[] seen = {-1};
                await("the gateway sends the stalled client nothing more")
                        .atMost(BOUND)
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> {
                            long now = m.splicedBytes();
                            boolean still = now == seen[0];
                            seen[0] = now;
                            return still;
                        });
            }
            // One thread per stalled client (12) is the defect; a healthy ring shows 1 to 6 here
            // (the kernel starts a worker whenever none is free, so a loaded machine sees a few
            // more: 6 once in CI, at the old bound of fewer than half).
            assertThat(ringWorkers())
                    .as("the ring's worker threads with %d clients stalled mid-splice", clients)
                    .isLessThanOrEqualTo(clients * 2 / 3);
            for (Wire c : stalled) {
                assertThat(c.readNBytes(len)).isEqualTo(StagedOwner.body(len));
            }
        } finally {
            for (Wire c : stalled) {
                c.close();
            }
        }
    }

    /** This process's io_uring worker threads (named {@code iou-wrk-<pid>}); none on epoll. */
    private static long ringWorkers() throws IOException {
        try (java.util.stream.Stream<Path> tasks = java.nio.file.Files.list(Path.of("/proc/self/task"))) {
            return tasks.filter(t -> {
                        try {
                            return java.nio.file.Files.readString(t.resolve("comm"))
                                    .startsWith("iou-wrk");
                        } catch (IOException e) {
                            return false; // the thread ended meanwhile
                        }
                    })
                    .count();
        }
    }

    @Test
    void pipelinedRequests_areAnsweredInOrder_behindASplicedBody() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len1 = 512 * 1024;
        int len2 = 200 * 1024;
        long before = spliced(cell);
        try (Wire c = new Wire(cell.gateway.port())) {
            c.send(get(ns, "len=" + len1 + "&first=" + FIRST) + get(ns, "len=" + len2 + "&first=" + FIRST));
            byte[] first = c.readStagedStart(len1);
            owner.release();
            assertThat(concat(first, c.readNBytes(len1 - FIRST))).isEqualTo(StagedOwner.body(len1));
            first = c.readStagedStart(len2);
            owner.release();
            assertThat(concat(first, c.readNBytes(len2 - FIRST))).isEqualTo(StagedOwner.body(len2));
        }
        assertThat(spliced(cell) - before).isEqualTo(2);
    }

    /**
     * A response head that reaches the gateway with its body already queued behind it in the
     * socket (an owner that writes both at once, as a file server does, while the gateway's loop
     * is busy): the read batch ends with the read that holds the head, so that read alone is copied
     * and the rest of the body is spliced ({@code ResponseSplice.ReadCount#endBatch}). Before, the
     * batch read on while its buffers filled (up to 16 reads) and copied everything it read. The
     * gateway's loop is held by a task of the test while the owner writes, until the socket holds
     * {@link #QUEUED} bytes; a new owner connection's first read takes 2 KiB (Netty's adaptive
     * buffer starts there), so copying more than {@link #QUEUED} / 2 means the batch read on.
     */
    @Test
    void headWithItsBodyQueuedBehindIt_onlyTheReadHoldingTheHeadIsCopied_theRestIsSpliced() throws Exception {
        try (StagedOwner own = StagedOwner.start();
                Cell one = cellWithPipes(own, "staged-3", 8)) {
            String ns = one.namespaceOwnedBy("staged-3");
            int len = 4 * 1024 * 1024;
            ForwarderMetrics m = one.gateway.forwarder().metrics();
            try (Wire c = new Wire(one.gateway.port())) {
                c.send(get(ns, "len=" + len + "&hold=1")); // the owner writes nothing until released
                await().atMost(BOUND).until(() -> own.requests().size() == 1);
                CountDownLatch held = new CountDownLatch(1);
                CountDownLatch free = new CountDownLatch(1);
                loopOf(one, c).execute(() -> {
                    held.countDown();
                    awaitQuietly(free);
                });
                try {
                    assertThat(held.await(BOUND.toSeconds(), TimeUnit.SECONDS)).isTrue();
                    own.release();
                    await().atMost(BOUND)
                            .until(() ->
                                    TcpTable.receiveQueueTowards(own.baseUri().getPort()) >= QUEUED);
                } finally {
                    free.countDown();
                }
                assertThat(c.readHead()).containsEntry("content-length", String.valueOf(len));
                assertThat(c.readNBytes(len)).isEqualTo(StagedOwner.body(len));
            }
            await().atMost(BOUND).until(() -> m.bytesToClients() == len); // every part reported
            assertThat(m.splicedResponses()).isEqualTo(1);
            assertThat(len - m.splicedBytes()).as("body bytes copied").isBetween(0L, (long) QUEUED / 2);
        }
    }

    /**
     * An owner that closes after its body (RFC 9112 §9.6, {@code Connection: close}) while the
     * client has not read yet: the body is copied, not spliced (Netty's splice would close the
     * owner connection at its FIN with body bytes still unread), and arrives whole.
     */
    @Test
    void ownerThatClosesAfterTheBody_toAClientNotReadingYet_isCopiedAndArrivesWhole() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 1024 * 1024;
        long before = spliced(cell);
        int ended = owner.connectionsEnded();
        try (Wire c = new Wire(cell.gateway.port())) {
            c.send(get(ns, "len=" + len + "&first=" + FIRST + "&close=1"));
            byte[] first = c.readStagedStart(len);
            owner.release();
            // The owner writes the rest and closes before the client reads another byte.
            await().atMost(BOUND).until(() -> owner.connectionsEnded() > ended);
            assertThat(concat(first, c.readNBytes(len - FIRST))).isEqualTo(StagedOwner.body(len));
        }
        assertThat(spliced(cell) - before).isZero();
    }

    /**
     * A keep-alive owner that closes right after a body it framed by length, saying nothing (a
     * server that shuts down gracefully, or whose keep-alive timeout ends, closes an idle
     * connection at once: RFC 9112 §9.6), while the client has not read yet: the owner's FIN
     * reaches the gateway with up to a socket buffer of the body unread behind it. Every byte
     * still arrives, the client's connection carries the next exchange (RFC 9112 §9.3), and the
     * owner's connection is not pooled (a new one serves that exchange).
     */
    @Test
    void keepAliveOwnerThatClosesRightAfterASplicedBody_toAClientNotReadingYet_deliversEveryByte() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 6 * 1024 * 1024;
        long before = spliced(cell);
        long drains = cell.gateway.forwarder().metrics().spliceDrains();
        int ended = owner.connectionsEnded();
        try (Wire c = new Wire(cell.gateway.port(), 16 * 1024)) {
            c.send(get(ns, "len=" + len + "&first=" + FIRST + "&quit=1"));
            byte[] first = c.readStagedStart(len);
            int connections = owner.connections();
            owner.release();
            // The owner writes the rest and closes before the client reads another byte. (Whether
            // its FIN reaches the gateway before the client reads depends on the kernel's buffers
            // here; ResponseSpliceTest drives that case with fixed ones.)
            await().atMost(BOUND).until(() -> owner.connectionsEnded() > ended);
            assertThat(concat(first, c.readNBytes(len - FIRST))).isEqualTo(StagedOwner.body(len));
            int next = 256 * 1024;
            assertThat(c.stagedGet(owner, ns, next)).isEqualTo(StagedOwner.body(next));
            assertThat(owner.connections()).isEqualTo(connections + 1);
        }
        assertThat(spliced(cell) - before).isEqualTo(2);
        assertThat(cell.gateway.forwarder().metrics().spliceDrains() - drains).isLessThanOrEqualTo(1);
    }

    @Test
    void headAndChunkedAnswers_areNotSpliced() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 4 * 1024 * 1024; // more than one read batch of the gateway's (16 reads of 64 KiB)
        long before = spliced(cell);
        try (Wire c = new Wire(cell.gateway.port())) {
            // RFC 9110 §9.3.2: the GET's Content-Length, no body.
            c.send(request("HEAD", ns, "len=" + len));
            assertThat(c.readHead()).containsEntry("content-length", String.valueOf(len));
            // A chunked answer is re-framed as it is read: never spliced.
            c.send(get(ns, "len=" + len + "&chunked=1"));
            Map<String, String> head = c.readHead();
            assertThat(head).containsEntry("transfer-encoding", "chunked");
            assertThat(c.readChunked()).isEqualTo(StagedOwner.body(len));
            // The connection still carries a spliced body after both.
            assertThat(c.stagedGet(owner, ns, len)).isEqualTo(StagedOwner.body(len));
        }
        assertThat(spliced(cell) - before).isEqualTo(1);
    }

    /** TLS encrypts in the JVM: a body to a TLS client is copied, never spliced, and arrives whole. */
    @Test
    void aTlsClient_getsTheBodyCopied() throws Exception {
        String ns = cell.namespaceOwnedBy("staged-0");
        int len = 1024 * 1024;
        long before = spliced(cell);
        try (Wire c = new Wire(TlsWire.handshake(cell.tlsPort(), trusting))) {
            assertThat(c.stagedGet(owner, ns, len)).isEqualTo(StagedOwner.body(len));
        }
        assertThat(spliced(cell) - before).isZero();
    }

    @Test
    void pipeBudget_atItsLimitSplices_onePastCopies_andAClosedConnectionGivesItsSlotBack() throws Exception {
        try (StagedOwner own = StagedOwner.start();
                Cell one = cellWithPipes(own, "staged-1", 1)) {
            String ns = one.namespaceOwnedBy("staged-1");
            int len = 256 * 1024;
            Wire b = new Wire(one.gateway.port());
            try (b) {
                try (Wire a = new Wire(one.gateway.port())) {
                    long before = spliced(one);
                    assertThat(a.stagedGet(own, ns, len)).isEqualTo(StagedOwner.body(len));
                    assertThat(spliced(one) - before)
                            .as("the budget's one pipe")
                            .isEqualTo(1);
                    assertThat(one.gateway.splicePipesHeld()).isEqualTo(1);

                    before = spliced(one);
                    assertThat(b.stagedGet(own, ns, len)).isEqualTo(StagedOwner.body(len));
                    assertThat(spliced(one) - before)
                            .as("one past the budget: copied")
                            .isZero();

                    before = spliced(one);
                    assertThat(a.stagedGet(own, ns, len)).isEqualTo(StagedOwner.body(len));
                    assertThat(spliced(one) - before).as("a holds its pipe").isEqualTo(1);
                }
                await().atMost(BOUND).until(() -> one.gateway.splicePipesHeld() == 0);
                long before = spliced(one);
                assertThat(b.stagedGet(own, ns, len)).isEqualTo(StagedOwner.body(len));
                assertThat(spliced(one) - before)
                        .as("the slot a's close gave back")
                        .isEqualTo(1);
            }
        }
    }

    @Test
    void splicePipesZero_copiesEveryBody() throws Exception {
        try (StagedOwner own = StagedOwner.start();
                Cell off = cellWithPipes(own, "staged-2", 0)) {
            String ns = off.namespaceOwnedBy("staged-2");
            int len = 1024 * 1024;
            try (Wire c = new Wire(off.gateway.port())) {
                assertThat(c.stagedGet(own, ns, len)).isEqualTo(StagedOwner.body(len));
            }
            assertThat(spliced(off)).isZero();
        }
    }

    // ---- helpers ----

    /** The gateway goes on after a failed splice: a new exchange on a new client connection arrives whole. */
    private void assertNextExchangeWhole(String ns) throws IOException {
        try (Wire c = new Wire(cell.gateway.port())) {
            int len = 256 * 1024;
            assertThat(c.stagedGet(owner, ns, len)).isEqualTo(StagedOwner.body(len));
        }
    }

    /** A cell of its own whose ring member {@code member} is {@code own}, with a pipe budget of {@code pipes}. */
    private Cell cellWithPipes(StagedOwner own, String member, int pipes) throws IOException {
        return Cell.builder()
                .owners(1)
                .member(member, own.baseUri())
                .set("spector.server.splice-pipes", String.valueOf(pipes))
                .set("spector.server.transport", transport())
                .start();
    }

    /** The event loop of the gateway's connection from {@code w} (its owner connections share it). */
    private static EventLoop loopOf(Cell c, Wire w) {
        int port = w.localPort();
        return c.gateway.clientChannels().stream()
                .filter(ch -> ((InetSocketAddress) ch.remoteAddress()).getPort() == port)
                .findFirst()
                .orElseThrow()
                .eventLoop();
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(BOUND.toSeconds(), TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static long spliced(Cell c) {
        return c.gateway.forwarder().metrics().splicedResponses();
    }

    /** A GET of the staged owner's {@code big} answer in namespace {@code ns}, with {@code query}. */
    static String get(String ns, String query) {
        return request("GET", ns, query);
    }

    static String request(String method, String ns, String query) {
        return method + " /api/v1/namespaces/" + ns + "/big?" + query + " HTTP/1.1\r\nHost: gateway\r\n"
                + "Authorization: Bearer " + TOKEN + "\r\n\r\n";
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** One raw client connection; every read bounded by {@link RawClient#TIMEOUT_MS}. */
    static final class Wire implements AutoCloseable {
        private final Socket socket;
        private final InputStream in;
        private final OutputStream out;
        /** The fields of the last head read. */
        Map<String, String> lastHead = Map.of();

        Wire(int port) throws IOException {
            this(connect(port, 0));
        }

        /** A client whose socket takes at most about {@code receiveBuffer} bytes it has not read (SO_RCVBUF). */
        Wire(int port, int receiveBuffer) throws IOException {
            this(connect(port, receiveBuffer));
        }

        /** A client over a connected socket (a TLS one, say). */
        Wire(Socket socket) throws IOException {
            this.socket = socket;
            socket.setSoTimeout(RawClient.TIMEOUT_MS);
            in = socket.getInputStream();
            out = socket.getOutputStream();
        }

        private static Socket connect(int port, int receiveBuffer) throws IOException {
            Socket s = new Socket();
            if (receiveBuffer > 0) {
                s.setReceiveBufferSize(receiveBuffer); // before connect: the window scale is set then
            }
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), RawClient.TIMEOUT_MS);
            return s;
        }

        int localPort() {
            return socket.getLocalPort();
        }

        void send(String head) throws IOException {
            out.write(head.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
        }

        /** GETs a body of {@code len} bytes staged after its first {@link #FIRST}; returns the body read. */
        byte[] stagedGet(StagedOwner o, String ns, int len) throws IOException {
            send(get(ns, "len=" + len + "&first=" + FIRST));
            byte[] first = readStagedStart(len);
            o.release();
            return concat(first, readNBytes(len - FIRST));
        }

        /**
         * Reads a staged answer's head, checking its {@code Content-Length} is {@code len}, and the
         * {@link #FIRST} body bytes the owner sends before its pause; returns those bytes.
         */
        byte[] readStagedStart(int len) throws IOException {
            assertThat(readHead()).containsEntry("content-length", String.valueOf(len));
            return readNBytes(FIRST);
        }

        /** Reads a 200's head; returns its fields, names lower-cased. */
        Map<String, String> readHead() throws IOException {
            String status = RawClient.line(in);
            assertThat(status).startsWith("HTTP/1.1 200 ");
            Map<String, String> fields = new LinkedHashMap<>();
            for (String f = RawClient.line(in); !f.isEmpty(); f = RawClient.line(in)) {
                int colon = f.indexOf(':');
                fields.put(
                        f.substring(0, colon).strip().toLowerCase(Locale.ROOT),
                        f.substring(colon + 1).strip());
            }
            lastHead = fields;
            return fields;
        }

        byte[] readNBytes(int n) throws IOException {
            byte[] b = in.readNBytes(n);
            assertThat(b).as("bytes before the end of the stream").hasSize(n);
            return b;
        }

        byte[] readChunked() throws IOException {
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            for (int size = Integer.parseInt(RawClient.line(in).strip(), 16);
                    size > 0;
                    size = Integer.parseInt(RawClient.line(in).strip(), 16)) {
                body.write(readNBytes(size));
                RawClient.line(in);
            }
            RawClient.line(in);
            return body.toByteArray();
        }

        /** Reads until the gateway closes (FIN) or resets the connection. */
        byte[] readToEnd() throws IOException {
            return RawClient.readToEnd(in);
        }

        /** Closes with a reset (SO_LINGER 0): a client that went away mid-body. */
        void reset() throws IOException {
            socket.setSoLinger(true, 0);
            socket.close();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
