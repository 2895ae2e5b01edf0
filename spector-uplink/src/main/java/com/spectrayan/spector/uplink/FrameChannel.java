package com.spectrayan.spector.uplink;

import com.spectrayan.spector.uplink.wire.Frame;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * One uplink connection as its two halves see it: ordered frames both ways. The WebSocket
 * transport implements it on the gateway's and the worker's side; tests use {@link
 * InMemoryFrameChannels}.
 *
 * <p>Threading: received frames and the close are delivered one at a time, in order, on the
 * connection's own thread; a receiver never blocks it. {@link #send} may be called from any thread.
 */
public interface FrameChannel {
    /**
     * Sends a frame. The stage completes once the frame is written to the connection (not when
     * the peer processed it), and fails when the connection is closed.
     */
    CompletionStage<Void> send(Frame frame);

    /** Sets the receiver of incoming frames (once, before frames flow). */
    void onFrame(Consumer<Frame> receiver);

    /** Sets the callback run once when the connection closes; the cause is null for a clean close. */
    void onClose(Consumer<@Nullable Throwable> closed);

    /** Closes the connection with a reason the peer sees. */
    void close(String reason);

    /** Answers whether the connection is open. */
    boolean isOpen();
}
