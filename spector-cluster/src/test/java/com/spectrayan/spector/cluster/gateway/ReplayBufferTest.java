package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

final class ReplayBufferTest {
    private final EmbeddedChannel channel = new EmbeddedChannel();

    /** The budget of the tests that do not test the budget's own limit: 100 bytes. */
    private final ReplayBudget budget = new ReplayBudget(100);

    @AfterEach
    void close() {
        channel.finishAndReleaseAll();
    }

    private static ByteBuf chunk(String text) {
        return Unpooled.directBuffer().writeBytes(text.getBytes(StandardCharsets.US_ASCII));
    }

    /** Returns a replay (limit 100, {@link #budget}) that kept these chunks and holds their only reference. */
    private ReplayBuffer holding(String... texts) {
        ReplayBuffer replay = new ReplayBuffer(100, budget);
        for (String text : texts) {
            ByteBuf c = chunk(text);
            assertThat(replay.keep(c)).as("keeps %s", text).isTrue();
            c.release();
        }
        return replay;
    }

    /**
     * Asserts that {@code replay} dropped its copy for good: not replayable, nothing kept, all of
     * {@code budget} ({@code whole} bytes) back, and no slice of any chunk retained; then releases
     * the chunks.
     */
    private static void assertDroppedForGood(ReplayBuffer replay, ReplayBudget budget, long whole, ByteBuf... chunks) {
        assertThat(replay.isReplayable()).as("replayable").isFalse();
        assertThat(replay.bytes()).as("bytes kept").isZero();
        assertThat(budget.available()).as("the bytes went back").isEqualTo(whole);
        for (ByteBuf c : chunks) {
            assertThat(c.refCnt())
                    .as("a slice of %s released or never retained", c)
                    .isEqualTo(1);
        }
        for (ByteBuf c : chunks) {
            c.release();
        }
    }

    @Test
    void keep_withinLimitAndBudget_keepsACopyAndReserves() {
        ReplayBuffer replay = new ReplayBuffer(10, budget);
        ByteBuf c = chunk("hello");

        assertThat(replay.keep(c)).isTrue();

        assertThat(replay.bytes()).isEqualTo(5);
        assertThat(budget.available()).isEqualTo(95);
        assertThat(c.refCnt())
                .as("a chunk this small is copied (BodyChunks), not retained")
                .isEqualTo(1);
        c.release();
        assertThat(replay.writeTo(channel, ChannelFutureListener.CLOSE_ON_FAILURE))
                .isEqualTo(5);
        channel.flush();
        HttpContent kept = channel.readOutbound();
        assertThat(kept.content().toString(StandardCharsets.US_ASCII)).isEqualTo("hello");
        kept.release();
        replay.discard();
    }

    @Test
    void keep_aLargeChunk_keepsASlice() {
        ReplayBuffer replay =
                new ReplayBuffer(BodyChunks.MIN_SLICE_BYTES, new ReplayBudget(BodyChunks.MIN_SLICE_BYTES));
        ByteBuf c = Unpooled.directBuffer(BodyChunks.MIN_SLICE_BYTES).writeZero(BodyChunks.MIN_SLICE_BYTES);

        assertThat(replay.keep(c)).isTrue();

        assertThat(c.refCnt()).as("the kept slice retains the chunk").isEqualTo(2);
        c.release();
        replay.discard();
        assertThat(c.refCnt()).isZero();
    }

    /**
     * A keep past the limit drops the copy for good: whatever was kept goes back, and a later keep,
     * even of a chunk that would fit, is a no-op. Cases: "hello" kept, then "world" past the limit
     * of 8; "hello" past the limit of 4, then "a" refused.
     */
    @ParameterizedTest(name = "limit {0}: ''{1}'' kept {2}, then ''{3}'' refused")
    @CsvSource({"8, hello, true, world", "4, hello, false, a"})
    void keep_pastTheLimit_dropsTheCopyForGood(int limit, String first, boolean firstKept, String then) {
        ReplayBuffer replay = new ReplayBuffer(limit, budget);
        ByteBuf one = chunk(first);
        ByteBuf two = chunk(then);
        assertThat(replay.keep(one)).isEqualTo(firstKept);

        assertThat(replay.keep(two)).isFalse();

        assertDroppedForGood(replay, budget, 100, one, two);
    }

    @Test
    void keep_pastTheBudget_dropsTheCopyForGood() {
        ReplayBudget four = new ReplayBudget(4);
        ReplayBuffer replay = new ReplayBuffer(100, four);
        ByteBuf c = chunk("hello");

        assertThat(replay.keep(c)).isFalse();

        assertDroppedForGood(replay, four, 4, c);
    }

    @Test
    void keep_exactlyTheLimit_keeps() {
        ReplayBuffer replay = new ReplayBuffer(5, new ReplayBudget(5));
        ByteBuf c = chunk("hello");

        assertThat(replay.keep(c)).isTrue();

        assertThat(replay.isReplayable()).isTrue();
        c.release();
        replay.discard();
    }

    /**
     * A reserve takes a body's bytes from the budget ahead of its chunks: another exchange taking
     * the rest of the budget meanwhile refuses none of them, and a discard gives back what was
     * reserved and not used. At the limit it reserves; one past it, or with the budget a byte
     * short, it takes nothing.
     */
    @Test
    void reserve_aBodyAhead_keepsItsChunksWhateverTheBudgetLeft() {
        ReplayBudget twenty = new ReplayBudget(20); // half of it for bodies read ahead
        ReplayBuffer replay = new ReplayBuffer(10, twenty);

        assertThat(replay.reserve(10))
                .as("at the limit and at the budget's half")
                .isTrue();
        assertThat(twenty.tryReserve(10)).as("another exchange takes the rest").isTrue();
        ByteBuf one = chunk("hello");
        ByteBuf two = chunk("worl");
        assertThat(replay.keep(one)).isTrue();
        assertThat(replay.keep(two)).as("from the reserve, the budget empty").isTrue();
        assertThat(replay.bytes()).isEqualTo(9);
        assertThat(twenty.available()).isZero();

        replay.discard();
        assertThat(twenty.available())
                .as("the kept bytes and the reserve's unused byte back")
                .isEqualTo(10);
        assertThat(twenty.tryReserveAhead(10)).as("and the half's share").isTrue();
        assertThat(one.refCnt()).isEqualTo(1);
        one.release();
        two.release();
    }

    @Test
    void reserve_pastTheLimitOrTheBudget_takesNothing() {
        ReplayBudget ten = new ReplayBudget(10);

        assertThat(new ReplayBuffer(10, ten).reserve(11))
                .as("one past the limit")
                .isFalse();
        assertThat(new ReplayBuffer(100, new ReplayBudget(19)).reserve(10))
                .as("the budget's share for bodies read ahead (half) one byte short")
                .isFalse();
        assertThat(new ReplayBuffer(10, ten).reserve(0))
                .as("nothing to reserve")
                .isFalse();
        assertThat(ten.available()).isEqualTo(10);
    }

    @Test
    void keep_pastAReserve_takesTheRestFromTheBudget() {
        ReplayBudget budget7 = new ReplayBudget(7);
        ReplayBuffer replay = new ReplayBuffer(100, budget7);
        assertThat(replay.reserve(3)).isTrue();
        ByteBuf c = chunk("hello");

        assertThat(replay.keep(c)).as("3 reserved, 2 more from the budget").isTrue();

        assertThat(budget7.available()).isEqualTo(2);
        assertThat(replay.reserve(1)).as("a second reserve, bytes already kept").isFalse();
        c.release();
        replay.discard();
        assertThat(budget7.available()).isEqualTo(7);
    }

    @Test
    void writeTo_twice_writesTheSameBytesEachTime() {
        ReplayBuffer replay = holding("hel", "lo");

        for (int round = 0; round < 2; round++) {
            assertThat(replay.writeTo(channel, ChannelFutureListener.CLOSE_ON_FAILURE))
                    .isEqualTo(5);
            channel.flush();
            StringBuilder written = new StringBuilder();
            HttpContent content;
            while ((content = channel.readOutbound()) != null) {
                written.append(content.content().toString(StandardCharsets.US_ASCII));
                content.release();
            }
            assertThat(written).as("round %s", round).hasToString("hello");
        }
        replay.discard();
    }

    @Test
    void discard_givesEverythingBack_andEndsReplay() {
        ReplayBuffer replay = new ReplayBuffer(100, budget);
        ByteBuf c = chunk("hello");
        replay.keep(c);
        c.release();

        replay.discard();

        assertThat(c.refCnt()).isZero();
        assertThat(budget.available()).isEqualTo(100);
        assertThat(replay.isReplayable()).isFalse();
        assertThat(replay.writeTo(channel, ChannelFutureListener.CLOSE_ON_FAILURE))
                .isZero();
    }

    @Test
    void discard_twice_givesBackOnce() {
        ReplayBuffer replay = holding("hello");

        replay.discard();
        replay.discard();

        assertThat(budget.available()).isEqualTo(100);
    }
}
