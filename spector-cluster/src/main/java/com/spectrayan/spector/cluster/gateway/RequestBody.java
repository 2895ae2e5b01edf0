package com.spectrayan.spector.cluster.gateway;

/**
 * The client's request body as the forwarder pulls it: the client side delivers chunks to one
 * {@link Consumer} and stops reading from its socket while paused ({@code autoRead} off), so the
 * gateway reads the client only as fast as the owner takes the bytes.
 *
 * <p>Threading: every method is called on the client channel's event loop, which is also the
 * loop of every owner channel the exchange uses.
 */
public interface RequestBody {
    /** A body that is already complete and empty (GET, HEAD, ...). */
    RequestBody EMPTY = new RequestBody() {
        @Override
        public void start(Consumer consumer) {
            consumer.onEnd();
        }

        @Override
        public void pause() {}

        @Override
        public void resume() {}

        @Override
        public void discard() {}
    };

    /** Starts delivery to a consumer (called once). Chunks that arrived before are delivered first. */
    void start(Consumer consumer);

    /** Stops reading from the client until {@link #resume()}. */
    void pause();

    /** Reads from the client again. */
    void resume();

    /** The exchange is over: release what is buffered and drop what still arrives. */
    void discard();

    /** Receives the body. Whoever receives a {@code ByteBuf} releases it. */
    interface Consumer {
        /** A chunk of the body; the consumer owns (and releases) it. */
        void onChunk(io.netty.buffer.ByteBuf chunk);

        /** A read batch from the client ended: write out what {@link #onChunk} queued. */
        default void flush() {}

        /** The body ended. */
        void onEnd();

        /** The body failed (the client went away mid-body, or sent a malformed chunk). */
        void onError(Throwable error);
    }
}
