package com.spectrayan.spector.uplink.internal.v2;

import io.netty.buffer.ByteBuf;

/**
 * Where a {@link FrameScheduler} writes its frames: the link's encoder and WebSocket channel in
 * production, a recording sink in tests. Called only on the link channel's event loop, from the
 * scheduler; no method may block.
 */
public interface FrameSink {
    /** Writes one control frame (HEADERS, RESET, WINDOW_UPDATE, PING, GOAWAY, CALL), unflushed. */
    void control(Object frame);

    /**
     * Writes one DATA frame of {@code slice}'s readable bytes (at most {@link V2Limits#DATA_SLICE})
     * on {@code streamId}, unflushed. The sink owns {@code slice} from this call and releases it
     * (or hands it on to what does); an empty slice carries only END_STREAM.
     */
    void data(int streamId, ByteBuf slice, boolean endStream);

    /** Flushes what was written: called once per batch of writes. */
    void flush();

    /** Returns whether the socket takes more writes now (the channel's {@code isWritable()}). */
    boolean isWritable();
}
