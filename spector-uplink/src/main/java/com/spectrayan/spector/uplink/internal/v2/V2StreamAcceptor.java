package com.spectrayan.spector.uplink.internal.v2;

/**
 * The worker's taker of the streams a gateway opens on a v2 link: the receiver of a v2 link (the
 * worker's {@code UplinkSession}) implements it beside {@code FrameChannel.Receiver}, and the
 * transport hands it each new stream ({@link V2Connection.Listener#onStream}). A receiver that
 * does not implement it has every stream refused {@code REFUSED_STREAM}.
 */
public interface V2StreamAcceptor {
    /**
     * Takes a stream the gateway opened, on the link's event loop: sets its handler ({@link
     * V2Stream#handler}) before returning, or resets it.
     *
     * @param endStream whether the request has no body (END_STREAM on its head)
     */
    void onStream(V2Stream stream, RequestHead head, boolean endStream);
}
