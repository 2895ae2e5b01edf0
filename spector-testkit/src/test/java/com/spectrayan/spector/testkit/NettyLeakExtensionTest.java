package com.spectrayan.spector.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.netty.buffer.ByteBufAllocator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The leak check the scenario tests rely on does see a buffer that was never released. */
final class NettyLeakExtensionTest {
    @Test
    void collectLeaks_afterABufferIsDroppedUnreleased_reportsIt() {
        NettyLeakExtension.collectLeaks();
        leakOne();

        List<String> found = new ArrayList<>();
        await("the detector reports the dropped buffer")
                .atMost(Duration.ofSeconds(10))
                .until(() -> {
                    found.addAll(NettyLeakExtension.collectLeaks());
                    return !found.isEmpty();
                });

        assertThat(found).anySatisfy(leak -> assertThat(leak).contains("ByteBuf"));
    }

    /** What lets a test without buffers skip the collections: every tracked buffer is counted. */
    @Test
    void everyBufferMade_isCounted() {
        long before = NettyLeakExtension.tracked();
        ByteBufAllocator.DEFAULT.buffer(16).release();
        ByteBufAllocator.DEFAULT.directBuffer(16).release();
        assertThat(NettyLeakExtension.tracked() - before).isEqualTo(2);
    }

    /** A test that made no buffer costs no collection; one that made a buffer is collected after; a class always. */
    @Test
    void afterEach_collectsOnlyWhenABufferWasMadeSinceTheLastCollection() {
        NettyLeakExtension.collectLeaks();
        long collections = NettyLeakExtension.collections();

        NettyLeakExtension.checkIfBuffersMade();
        assertThat(NettyLeakExtension.collections()).as("nothing made").isEqualTo(collections);

        ByteBufAllocator.DEFAULT.buffer(16).release();
        NettyLeakExtension.checkIfBuffersMade();
        assertThat(NettyLeakExtension.collections()).as("a buffer made").isEqualTo(collections + 1);

        NettyLeakExtension.check();
        assertThat(NettyLeakExtension.collections())
                .as("the class's end, always")
                .isEqualTo(collections + 2);
    }

    private static void leakOne() {
        ByteBufAllocator.DEFAULT.buffer(16).writeInt(42); // dropped on purpose, never released
    }
}
