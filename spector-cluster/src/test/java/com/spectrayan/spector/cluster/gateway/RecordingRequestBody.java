package com.spectrayan.spector.cluster.gateway;

import io.netty.buffer.ByteBufAllocator;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A client body that records what the forwarder asks of it ({@code start}, {@code pause}, {@code
 * resume}, {@code discard}), in order, and delivers nothing, or, made with {@link #delivering},
 * one chunk and the end as it starts. Confined to the thread that calls it.
 */
final class RecordingRequestBody implements RequestBody {
    final List<String> calls = new ArrayList<>();
    private final byte @Nullable [] whole;

    RecordingRequestBody() {
        this(null);
    }

    private RecordingRequestBody(byte @Nullable [] whole) {
        this.whole = whole;
    }

    /** A body that delivers {@code bytes} as one chunk, and its end, when it is started. */
    static RecordingRequestBody delivering(byte[] bytes) {
        return new RecordingRequestBody(bytes.clone());
    }

    @Override
    public void start(Consumer consumer) {
        calls.add("start");
        byte[] b = whole;
        if (b != null) {
            consumer.onChunk(ByteBufAllocator.DEFAULT.buffer(b.length).writeBytes(b));
            consumer.flush();
            consumer.onEnd();
        }
    }

    @Override
    public void pause() {
        calls.add("pause");
    }

    @Override
    public void resume() {
        calls.add("resume");
    }

    @Override
    public void discard() {
        calls.add("discard");
    }
}
