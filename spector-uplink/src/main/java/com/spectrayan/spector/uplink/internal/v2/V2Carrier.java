package com.spectrayan.spector.uplink.internal.v2;

/**
 * A frame channel that carries a v2 link (the transport's {@code V2FrameChannel}): the relay
 * engines reach the link's streams through it, and the calls travel over the channel as on v1.
 */
public interface V2Carrier {
    /** Returns the v2 link underneath. */
    V2Connection connection();

    /**
     * Hands each stream the gateway opens on this link to {@code acceptor} (the worker's session
     * registers itself as it starts, before any frame reaches it); without one, streams go to a
     * receiver that is a {@link V2StreamAcceptor}, else they are refused.
     */
    void acceptStreams(V2StreamAcceptor acceptor);
}
