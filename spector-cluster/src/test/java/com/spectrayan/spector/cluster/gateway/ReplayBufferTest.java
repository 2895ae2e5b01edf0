package com.spectrayan.spector.cluster.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

final class ReplayBufferTest {
    private final EmbeddedChannel channel = new EmbeddedChannel();

    @AfterEach
    void close() {
        channel.finishAndReleaseAll();
    }

    private static ByteBuf chunk(String text) {
        return Unpooled.directBuffer().writeBytes(text.getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    void keep_withinLimitAndBudget_keepsASliceAndReserves() {
        ReplayBudget budget = new ReplayBudget(100);
        ReplayBuffer replay = new ReplayBuffer(10, budget);
        ByteBuf c = chunk("hello");

        assertThat(replay.keep(c)).isTrue();

        assertThat(replay.bytes()).isEqualTo(5);
        assertThat(budget.available()).isEqualTo(95);
        assertThat(c.refCnt()).as("the kept slice retains the chunk").isEqualTo(2);
        c.release();
        replay.discard();
        assertThat(c.refCnt()).isZero();
    }

    @Test
    void keep_pastTheLimit_dropsTheCopyForGood() {
        ReplayBudget budget = new ReplayBudget(100);
        ReplayBuffer replay = new ReplayBuffer(8, budget);
        ByteBuf first = chunk("hello");
        ByteBuf second = chunk("world");
        assertThat(replay.keep(first)).isTrue();

        assertThat(replay.keep(second)).isFalse();

        assertThat(replay.isReplayable()).isFalse();
        assertThat(replay.bytes()).isZero();
        assertThat(budget.available()).as("the bytes went back").isEqualTo(100);
        assertThat(first.refCnt()).as("the first slice was released").isEqualTo(1);
        assertThat(second.refCnt()).as("the refused chunk was never retained").isEqualTo(1);
        first.release();
        second.release();
    }

    @Test
    void keep_pastTheBudget_dropsTheCopyForGood() {
        ReplayBudget budget = new ReplayBudget(4);
        ReplayBuffer replay = new ReplayBuffer(100, budget);
        ByteBuf c = chunk("hello");

        assertThat(replay.keep(c)).isFalse();

        assertThat(replay.isReplayable()).isFalse();
        assertThat(budget.available()).isEqualTo(4);
        c.release();
    }

    @Test
    void keep_afterARefusal_isANoOp() {
        ReplayBudget budget = new ReplayBudget(100);
        ReplayBuffer replay = new ReplayBuffer(4, budget);
        ByteBuf big = chunk("hello");
        ByteBuf small = chunk("a");
        assertThat(replay.keep(big)).isFalse();

        assertThat(replay.keep(small)).isFalse();

        assertThat(replay.bytes()).isZero();
        assertThat(budget.available()).isEqualTo(100);
        assertThat(small.refCnt()).isEqualTo(1);
        big.release();
        small.release();
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

    @Test
    void writeTo_twice_writesTheSameBytesEachTime() {
        ReplayBuffer replay = new ReplayBuffer(100, new ReplayBudget(100));
        ByteBuf a = chunk("hel");
        ByteBuf b = chunk("lo");
        replay.keep(a);
        replay.keep(b);
        a.release();
        b.release();

        for (int round = 0; round < 2; round++) {
            assertThat(replay.writeTo(channel)).isEqualTo(5);
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
        ReplayBudget budget = new ReplayBudget(100);
        ReplayBuffer replay = new ReplayBuffer(100, budget);
        ByteBuf c = chunk("hello");
        replay.keep(c);
        c.release();

        replay.discard();

        assertThat(c.refCnt()).isZero();
        assertThat(budget.available()).isEqualTo(100);
        assertThat(replay.isReplayable()).isFalse();
        assertThat(replay.writeTo(channel)).isZero();
    }

    @Test
    void discard_twice_givesBackOnce() {
        ReplayBudget budget = new ReplayBudget(100);
        ReplayBuffer replay = new ReplayBuffer(100, budget);
        ByteBuf c = chunk("hello");
        replay.keep(c);
        c.release();

        replay.discard();
        replay.discard();

        assertThat(budget.available()).isEqualTo(100);
    }
}
