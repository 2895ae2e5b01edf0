package com.spectrayan.spector.uplink.internal.gateway;

import com.spectrayan.spector.uplink.internal.wire.RelayChunk;
import com.spectrayan.spector.uplink.internal.wire.RelayHead;

/**
 * Receives the pushes of one {@code relay.request} call, routed by the call's frame id before
 * their schema is checked. Called on the connection's thread, one at a time; must not block.
 */
public interface RelayHooks {
    /** The relayed response's head arrived. */
    void onRelayHead(RelayHead head);

    /** The next part of the relayed response's body arrived. */
    void onRelayChunk(RelayChunk chunk);

    /** A push of this relay failed its schema (e.g. a 101 head, a chunk that is not base64). */
    void onRelayInvalid(Throwable problem);
}
