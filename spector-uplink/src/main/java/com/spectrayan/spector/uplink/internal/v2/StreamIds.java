package com.spectrayan.spector.uplink.internal.v2;

/**
 * The stream-id rules the windows share (docs/PROTOCOL.md section 9.2): the gateway opens streams
 * with odd ids, each above the last it opened on the link; even ids are reserved for a later
 * version, so no stream of this version has one.
 */
final class StreamIds {
    private StreamIds() {}

    /**
     * Checks that {@code streamId} may open after {@code highestOpened} (0 before the first):
     * odd, above it, at most {@link V2Limits#MAX_STREAM_ID}. A failure is the caller's bug: the
     * codec and the engines check the peer's ids before a stream is opened in the windows.
     */
    static void checkOpening(int streamId, int highestOpened) {
        if (streamId <= highestOpened || (streamId & 1) == 0) {
            throw new IllegalArgumentException("streamId: " + streamId + " (expected: odd, above " + highestOpened
                    + " (the highest opened), at most 2^31-1)");
        }
    }

    /**
     * Returns true when a frame on {@code streamId} (not 0, not open) names a stream that was never
     * opened, rather than one that closed: an even id, or one above the highest opened. RFC 9113
     * section 5.1 makes a flow-controlled frame on such an (idle) stream a connection error.
     */
    static boolean neverOpened(int streamId, int highestOpened) {
        return streamId > highestOpened || (streamId & 1) == 0;
    }

    /** The connection {@code PROTOCOL_ERROR} for a {@code frame} on {@code streamId}, never opened. */
    static FlowControlException neverOpenedError(String frame, int streamId, int highestOpened) {
        return FlowControlException.connectionOn(
                FlowControlException.Kind.PROTOCOL_ERROR,
                streamId,
                frame + " on a stream never opened (expected: odd, at most " + highestOpened + ")");
    }
}
