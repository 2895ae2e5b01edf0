package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.uplink.AbortSignal;
import com.spectrayan.spector.uplink.BodySource;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link RelaySplice} on an {@link EmbeddedChannel} (its loop runs the tasks the test lets run):
 * the client's side pulled read by read, the worker's written, each end a half close, and a
 * failure or a close ending both (docs/PROTOCOL.md section 9.7). Leak detection (PARANOID) checks
 * that every buffer was released once.
 */
final class RelaySpliceTest {
    private final EmbeddedChannel client = new EmbeddedChannel();
    private final AbortSignal signal = new AbortSignal();
    private final RelaySplice splice =
            new RelaySplice(client.eventLoop(), signal, Duration.ofMinutes(1), new GatewayMetrics());
    private final WorkerSide worker = new WorkerSide();

    @AfterEach
    void closeChannel() {
        client.finishAndReleaseAll();
    }

    /** The worker's side, fed by the test; records a cancel. */
    private static final class WorkerSide implements BodySource {
        final ArrayDeque<CompletableFuture<@Nullable ByteBuf>> reads = new ArrayDeque<>();

        @Nullable
        Throwable cancelled;

        @Override
        public CompletionStage<@Nullable ByteBuf> nextBuf() {
            CompletableFuture<@Nullable ByteBuf> read = new CompletableFuture<>();
            reads.add(read);
            return read;
        }

        @Override
        public CompletionStage<@Nullable ByteBuffer> next() {
            throw new AssertionError("the splice reads buffers");
        }

        @Override
        public void cancel(Throwable reason) {
            cancelled = reason;
        }
    }

    private static ByteBuf bytes(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    private static String text(@Nullable ByteBuf part) {
        assertThat(part).as("a part").isNotNull();
        ByteBuf b = java.util.Objects.requireNonNull(part);
        try {
            return b.toString(StandardCharsets.US_ASCII);
        } finally {
            b.release();
        }
    }

    private <T> T done(CompletionStage<T> stage) {
        client.runPendingTasks();
        CompletableFuture<T> f = stage.toCompletableFuture();
        assertThat(f).as("completed once the loop ran").isDone();
        return f.join();
    }

    @Test
    void nextBuf_beforeTheSwitch_waitsAndGetsTheCodecsBytesFirst() {
        CompletionStage<@Nullable ByteBuf> early = splice.nextBuf();
        client.runPendingTasks();
        assertThat(early.toCompletableFuture())
                .as("nothing is read before the 101")
                .isNotDone();

        splice.start(client, bytes("held by the codec"), worker);
        client.runPendingTasks();

        assertThat(text(done(early))).isEqualTo("held by the codec");
        client.writeInbound(bytes("read later"));
        assertThat(text(done(splice.nextBuf()))).isEqualTo("read later");
        assertThat(splice.bytesUp()).isEqualTo(27);
    }

    @Test
    void workerBytes_writtenToTheClientAsTheyCome() {
        splice.start(client, Unpooled.EMPTY_BUFFER, worker);
        client.runPendingTasks();

        java.util.Objects.requireNonNull(worker.reads.poll()).complete(bytes("from the worker"));
        client.runPendingTasks();

        assertThat(text(client.readOutbound())).isEqualTo("from the worker");
        assertThat(worker.reads).as("the next part is asked for").hasSize(1);
        assertThat(splice.bytesDown()).isEqualTo(15);
    }

    /** The client's FIN ends the request body (the relay's END_STREAM); the worker's side goes on. */
    @Test
    void clientFin_endsTheClientsSideOnly() {
        splice.start(client, Unpooled.EMPTY_BUFFER, worker);
        CompletionStage<@Nullable ByteBuf> read = splice.nextBuf();
        client.runPendingTasks();

        client.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);

        assertThat(done(read)).as("the end").isNull();
        assertThat(client.isOpen()).as("the worker's side still flows").isTrue();
        java.util.Objects.requireNonNull(worker.reads.poll()).complete(bytes("after the fin"));
        client.runPendingTasks();
        assertThat(text(client.readOutbound())).isEqualTo("after the fin");

        java.util.Objects.requireNonNull(worker.reads.poll()).complete(null); // the worker's end
        client.runPendingTasks();
        assertThat(client.isOpen()).as("both halves ended: closed").isFalse();
        assertThat(signal.isAborted()).as("a clean end aborts nothing").isFalse();
    }

    /** RESET aborts both: the worker's side failing closes the client connection. */
    @Test
    void workerSideFails_closesTheClient() {
        splice.start(client, Unpooled.EMPTY_BUFFER, worker);
        client.runPendingTasks();

        java.util.Objects.requireNonNull(worker.reads.poll())
                .completeExceptionally(new IllegalStateException("the worker reset the stream"));
        client.runPendingTasks();

        assertThat(client.isOpen()).isFalse();
    }

    /** The client going away before both ends aborts the relay (RESET CANCEL) and cancels the worker's side. */
    @Test
    void clientCloses_midStream_abortsTheRelayAndReleasesWhatItHeld() {
        splice.start(client, Unpooled.EMPTY_BUFFER, worker);
        client.runPendingTasks();
        client.writeInbound(bytes("never taken"));

        client.close();
        client.runPendingTasks();

        assertThat(signal.isAborted()).isTrue();
        assertThat(worker.cancelled).isNotNull();
        assertThat(splice.closeFuture().toCompletableFuture()).isDone();
    }
}
