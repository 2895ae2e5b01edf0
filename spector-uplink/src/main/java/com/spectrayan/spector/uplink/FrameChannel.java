package com.spectrayan.spector.uplink;

import com.spectrayan.spector.uplink.wire.CorruptFrameException;
import com.spectrayan.spector.uplink.wire.Frame;
import java.util.concurrent.CompletionStage;
import org.jspecify.annotations.Nullable;

/**
 * One uplink connection as its two halves see it: ordered frames both ways. The WebSocket
 * transport implements it on the gateway's and the worker's side; tests use {@link
 * InMemoryFrameChannels}.
 *
 * <p>The receiving side is a {@link Receiver}, given to the transport when it hands the connection
 * over (an {@code UplinkAcceptor}'s handler or an {@code UplinkDialer}'s {@code onConnected}
 * returns it), before any frame is read: so no frame waits for a receiver, and none is lost. Each
 * half of the relay is the receiver of its end.
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

    /** Closes the connection with a reason the peer sees. */
    void close(String reason);

    /**
     * Closes the connection because this end is going away (a gateway's drain): over WebSocket the
     * close status is 1001 Going Away (RFC 6455 section 7.4.1), which tells a worker to re-dial at
     * once rather than back off. The default is {@link #close}.
     */
    default void goAway(String reason) {
        close(reason);
    }

    /**
     * Closes the connection because the peer broke a bound of this side (e.g. it leaves too many
     * calls unanswered): over WebSocket the close status is 1008 Policy Violation. The default is
     * {@link #close}.
     */
    default void closeForPolicy(String reason) {
        close(reason);
    }

    /** Answers whether the connection is open. */
    boolean isOpen();

    /**
     * Receives one connection's frames and its close, on the connection's thread, one call at a
     * time and in order. It must not block: hop to an executor for anything slow.
     */
    interface Receiver {
        /** Takes the next frame read. */
        void onFrame(Frame frame);

        /** Takes the close, once; the cause is null for a clean close. No frame follows it. */
        void onClose(@Nullable Throwable cause);

        /**
         * Offers text that is not a frame of protocol v1 ({@link CorruptFrameException}): a receiver
         * that answers it (e.g. the worker's {@code BAD_REQUEST} to a corrupt call with an id)
         * returns true and the connection stays open. The default returns false: the transport then
         * closes the connection (WebSocket close code 1007).
         */
        default boolean onCorruptFrame(CorruptFrameException failure) {
            return false;
        }
    }
}
