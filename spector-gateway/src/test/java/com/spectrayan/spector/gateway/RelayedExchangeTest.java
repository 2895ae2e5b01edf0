package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.testkit.RecordingUpstream;
import com.spectrayan.spector.testkit.Waits;
import com.spectrayan.spector.uplink.BodySource;
import com.spectrayan.spector.uplink.RelayTarget;
import com.spectrayan.spector.uplink.RelayedRequest;
import com.spectrayan.spector.uplink.RelayedResponse;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link RelayedExchange} against a real gateway and a worker over the real uplink (v1, whose
 * window of 4 {@code relay.body} calls makes the relay take the client's body one part at a time
 * as the worker takes it): its read-ahead of the client's request body at its limit.
 */
final class RelayedExchangeTest {
    private static final String WORKER = "ra";
    private static final Duration WAIT = Duration.ofSeconds(20);
    /** The most one socket read brings (Netty's adaptive receive buffer tops out at 64 KiB). */
    private static final int ONE_READ = 64 * 1024;

    private final SteppingTarget target = new SteppingTarget();
    private final ExecutorService writer = Executors.newSingleThreadExecutor();
    private RelayCell relayCell;

    @BeforeEach
    void start() throws Exception {
        relayCell = RelayCell.start(Cell.builder(), WORKER, (c, httpForward) -> Map.of("step", target));
    }

    @AfterEach
    void stop() {
        writer.shutdownNow();
        relayCell.close();
    }

    /** What the client side of the exchange shows on its event loop, in one look. */
    private record Look(int readAhead, boolean reading) {}

    private static Look look(Channel client) {
        try {
            return client.eventLoop()
                    .submit(() -> new Look(
                            RelayedExchange.readAhead(client.pipeline()
                                    .get(GatewayHandler.class)
                                    .connection()
                                    .exchange()),
                            client.config().isAutoRead()))
                    .get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException | ExecutionException | TimeoutException e) {
            throw new AssertionError("the client connection's loop did not answer within " + WAIT, e);
        }
    }

    /** Returns the gateway's channel of the client connection whose exchange is a relay. */
    private Channel relayedClient() {
        Channel[] found = {null};
        Waits.until("the gateway relays a client's exchange", WAIT, () -> {
            for (Channel ch : relayCell.cell.gateway.clientChannels()) {
                if (ch.pipeline().get(GatewayHandler.class) != null && look(ch).readAhead() >= 0) {
                    found[0] = ch;
                    return true;
                }
            }
            return false;
        });
        return Objects.requireNonNull(found[0]);
    }

    /**
     * Records the read-ahead at each {@code read()} the client channel is asked for, once told to
     * watch: from the tail of the pipeline, where every {@code channel.read()} starts (turning
     * {@code autoRead} on asks for one). While reading is off nothing asks, so the first read
     * after a stall is the one that resumed it.
     */
    private static final class ReadWatch extends ChannelDuplexHandler {
        final List<Integer> reads = new CopyOnWriteArrayList<>();
        volatile boolean watching;
        /** The most the read-ahead held after a read of the client's body (it sits before the gateway's handler). */
        volatile int peak;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.fireChannelRead(msg);
            int now = RelayedExchange.readAhead(
                    ctx.pipeline().get(GatewayHandler.class).connection().exchange());
            peak = Math.max(peak, now);
        }

        @Override
        public void read(ChannelHandlerContext ctx) {
            if (watching) {
                reads.add(RelayedExchange.readAhead(
                        ctx.pipeline().get(GatewayHandler.class).connection().exchange()));
            }
            ctx.read();
        }
    }

    /**
     * With a relay whose worker stops taking the body, the gateway reads the client's body ahead
     * by at most {@link RelayedExchange#READ_AHEAD_HIGH_BYTES} plus the one socket read that
     * crosses it, then stops reading the client's socket ({@code autoRead} off). As the worker
     * takes parts one at a time, the client stays unread while more than {@link
     * RelayedExchange#READ_AHEAD_LOW_BYTES} is read ahead, and is read again as soon as the relay
     * took it down to that mark (within one part of it). Every byte of 8 MiB arrives in order (its
     * SHA-256).
     */
    @Test
    void requestReadAhead_stopsAtItsBound_andResumesAtItsLowMark() throws Exception {
        int length = 8 * 1024 * 1024;
        byte[] data = new byte[length];
        new java.util.Random(12).nextBytes(data);
        try (WireClient client = new WireClient(relayCell.cell.gateway.port())) {
            client.send(WireClient.head(
                    "PUT", "/relay/" + WORKER + "/step/up", Cell.token(Cell.TENANT), "Content-Length: " + length));
            target.called(WAIT);
            Channel ch = relayedClient();
            ReadWatch watch = new ReadWatch();
            ch.eventLoop()
                    .submit(() -> ch.pipeline()
                            .addBefore(
                                    ch.pipeline().context(GatewayHandler.class).name(), "read-watch", watch))
                    .get(WAIT.toSeconds(), TimeUnit.SECONDS);
            CompletableFuture<Void> sent = CompletableFuture.runAsync(() -> client.send(data), writer);

            // The relay also takes what its window to the worker holds, before or after the
            // read-ahead fills (either, by the loop's read batches): the bound is seen at its peak.
            Waits.until(
                    "the read-ahead fills to its bound while the worker takes nothing, and the client is unread",
                    WAIT,
                    () -> watch.peak >= RelayedExchange.READ_AHEAD_HIGH_BYTES && !look(ch).reading());
            assertThat(watch.peak)
                    .as("the read-ahead at its peak")
                    .isLessThanOrEqualTo(RelayedExchange.READ_AHEAD_HIGH_BYTES + ONE_READ);
            org.awaitility.Awaitility.await("the read-ahead stays within its bound, the client unread")
                    .during(Duration.ofMillis(300))
                    .atMost(Duration.ofSeconds(5))
                    .until(
                            () -> look(ch),
                            l -> !l.reading() && l.readAhead() <= RelayedExchange.READ_AHEAD_HIGH_BYTES + ONE_READ);
            watch.watching = true; // nothing asks for a read while it stalls

            int parts = 0;
            while (watch.reads.isEmpty()) {
                Look stalled = look(ch);
                assertThat(stalled.reading()).as("the client is unread").isFalse();
                assertThat(stalled.readAhead())
                        .as("while more than the low mark is read ahead")
                        .isGreaterThan(RelayedExchange.READ_AHEAD_LOW_BYTES);
                assertThat(target.takeOne()).as("the worker takes a part").isTrue();
                parts++;
                Waits.until(
                        "the relay takes a part of the read-ahead",
                        WAIT,
                        () -> !watch.reads.isEmpty() || look(ch).readAhead() < stalled.readAhead());
            }
            assertThat(parts)
                    .as("parts the worker took before the client was read again")
                    .isGreaterThan(1);
            assertThat(watch.reads.get(0))
                    .as("the read-ahead when the client was read again: at the low mark, within one part")
                    .isLessThanOrEqualTo(RelayedExchange.READ_AHEAD_LOW_BYTES)
                    .isGreaterThan(RelayedExchange.READ_AHEAD_LOW_BYTES - ONE_READ);

            String answer = target.takeRest();
            Waits.done(sent, "the client's whole body is written", WAIT);
            WireClient.Response r = client.read();
            assertThat(r.status()).as("%s", r).isEqualTo(200);
            assertThat(r.text()).isEqualTo(answer);
            assertThat(answer).as("every byte, in order").isEqualTo(length + " " + RecordingUpstream.sha256(data));
        }
    }

    /** Asks the relayed exchange on {@code client}'s loop whether it could send its body again. */
    private static boolean replayable(Channel client) throws Exception {
        return client.eventLoop()
                .submit(() -> {
                    ClientConnection.Exchange ex = Objects.requireNonNull(
                            client.pipeline()
                                    .get(GatewayHandler.class)
                                    .connection()
                                    .exchange(),
                            "an exchange");
                    return ((RelayedExchange) ex).replay() != null;
                })
                .get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * Which relayed bodies a refused stream may send again (docs/PROTOCOL.md section 9.4): one read
     * whole before the relay started, as a small {@code Content-Length} body is; not a chunked one
     * that outgrew the buffer ({@code request-buffer-bytes}, 64 KiB) and so streams. Regression (a
     * review): the chunked one offered a replay that, reading on past the buffer, found its copies
     * dropped there and failed the upload mid-body (a reset stream, an aborted upload at the
     * target) where a clean {@code 503} was due. Both uploads then complete, every byte.
     */
    @Test
    void onlyABodyReadWholeFirst_canBeSentAgain() throws Exception {
        byte[] small = new byte[20_000];
        new java.util.Random(3).nextBytes(small);
        try (WireClient client = new WireClient(relayCell.cell.gateway.port())) {
            client.send(WireClient.head(
                    "PUT",
                    "/relay/" + WORKER + "/step/small",
                    Cell.token(Cell.TENANT),
                    "Content-Length: " + small.length));
            client.send(small);
            target.called(WAIT);
            assertThat(replayable(relayedClient()))
                    .as("read whole first: kept for a replay")
                    .isTrue();
            assertThat(target.takeRest()).isEqualTo(small.length + " " + RecordingUpstream.sha256(small));
            assertThat(client.read().status()).isEqualTo(200);
        }

        SteppingTarget second = new SteppingTarget();
        relayCell.close();
        relayCell = RelayCell.start(Cell.builder(), WORKER, (c, httpForward) -> Map.of("step", second));
        byte[] large = new byte[100_000]; // past the 64 KiB buffer: the relay starts before its end
        new java.util.Random(4).nextBytes(large);
        try (WireClient client = new WireClient(relayCell.cell.gateway.port())) {
            client.send(WireClient.head(
                    "PUT", "/relay/" + WORKER + "/step/large", Cell.token(Cell.TENANT), "Transfer-Encoding: chunked"));
            // In parts of 1 000 bytes: the relay (v1: four relay.body calls in flight while the
            // target takes none) has taken four of them, far from the buffer, when it is asked.
            java.io.ByteArrayOutputStream chunked = new java.io.ByteArrayOutputStream();
            for (int at = 0; at < large.length; at += 1000) {
                chunked.writeBytes("3e8\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                chunked.write(large, at, 1000);
                chunked.writeBytes("\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            }
            client.send(chunked.toByteArray());
            second.called(WAIT);
            assertThat(replayable(relayedClient()))
                    .as("it streams: never sent again")
                    .isFalse();
            client.send("0\r\n\r\n");
            assertThat(second.takeRest()).isEqualTo(large.length + " " + RecordingUpstream.sha256(large));
            assertThat(client.read().status()).isEqualTo(200);
        }
    }

    /**
     * A relay target that takes its request's body only when the test says: one part at a time,
     * or the rest; it then answers 200 with {@code "<bytes> <SHA-256 hex>"}. One call at a time.
     */
    private static final class SteppingTarget implements RelayTarget {
        private final CompletableFuture<BodySource> body = new CompletableFuture<>();
        private final CompletableFuture<RelayedResponse> answer = new CompletableFuture<>();
        private final ByteArrayOutputStream taken = new ByteArrayOutputStream();

        @Override
        public CompletionStage<RelayedResponse> handle(RelayedRequest request) {
            body.complete(Objects.requireNonNull(request.body(), "the upload's body"));
            return answer;
        }

        void called(Duration within) {
            Waits.done(body, "the worker's target is called", within);
        }

        /** Takes the next part; answers whether there was one (false at the end). */
        boolean takeOne() {
            ByteBuffer part =
                    Waits.done(Waits.done(body, "the target's body", WAIT).next(), "the next part", WAIT);
            if (part == null) {
                return false;
            }
            byte[] bytes = new byte[part.remaining()];
            part.get(bytes);
            taken.writeBytes(bytes);
            return true;
        }

        /** Takes the rest of the body (each part waited for within {@link #WAIT}) and answers; returns the answer's text. */
        String takeRest() {
            while (takeOne()) {
                // the next part
            }
            byte[] all = taken.toByteArray();
            String text = all.length + " " + RecordingUpstream.sha256(all);
            answer.complete(new RelayedResponse(200, List.of(), DialedWorker.body(text)));
            return text;
        }
    }
}
