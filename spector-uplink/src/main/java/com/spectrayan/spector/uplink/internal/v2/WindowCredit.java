package com.spectrayan.spector.uplink.internal.v2;

/**
 * One WINDOW_UPDATE to send: {@code increment} bytes of credit for {@code streamId} (0 for the
 * connection), as the receive windows decide it. The caller queues it as a control frame.
 *
 * @param streamId the stream, 0 for the connection
 * @param increment the credit, 1 .. 2^31-1
 */
public record WindowCredit(int streamId, int increment) {
    /** Checks the stream id (0 .. 2^31-1) and the increment (1 .. 2^31-1). */
    public WindowCredit {
        if (streamId < 0) {
            throw new IllegalArgumentException("streamId: " + streamId + " (expected: 0..2^31-1)");
        }
        if (increment <= 0) {
            throw new IllegalArgumentException("increment: " + increment + " (expected: 1..2^31-1)");
        }
    }
}
