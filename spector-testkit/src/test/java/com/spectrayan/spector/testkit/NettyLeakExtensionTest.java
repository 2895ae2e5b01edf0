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

    private static void leakOne() {
        ByteBufAllocator.DEFAULT.buffer(16).writeInt(42); // dropped on purpose, never released
    }
}
