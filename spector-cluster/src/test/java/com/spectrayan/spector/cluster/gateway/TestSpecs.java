package com.spectrayan.spector.cluster.gateway;

import java.time.Duration;

/** The forwarder settings the loopback forwarder tests share: two retargets, a 10 MiB body cap, short timeouts. */
final class TestSpecs {
    private TestSpecs() {}

    /**
     * A spec whose replay copy keeps {@code replayBytes} and that reads bodies of up to {@code
     * requestBufferBytes} first (0: bodies stream, the first attempt goes before any body byte).
     */
    static ForwarderSpec forwarder(int replayBytes, int requestBufferBytes) {
        return forwarder(replayBytes, requestBufferBytes, Duration.ofSeconds(3), ForwarderSpec.DEFAULT_HANDOFF_HOLD);
    }

    /** As {@link #forwarder(int, int)}, with this owner timeout and hand-off hold window. */
    static ForwarderSpec forwarder(
            int replayBytes, int requestBufferBytes, Duration ownerTimeout, Duration handoffHold) {
        return new ForwarderSpec(
                2,
                10L * 1024 * 1024,
                replayBytes,
                64L * 1024 * 1024,
                ownerTimeout,
                Duration.ofSeconds(9),
                Duration.ofSeconds(60),
                Duration.ofSeconds(300),
                ForwarderSpec.DEFAULT_OWNER_DOWN_AFTER,
                ForwarderSpec.DEFAULT_OWNER_DOWN_BACKOFF,
                ForwarderSpec.DEFAULT_OWNER_DOWN_BACKOFF_MAX,
                handoffHold,
                ForwarderSpec.DEFAULT_HANDOFF_MAX_HELD,
                ForwarderSpec.DEFAULT_HANDOFF_MAX_HELD_BYTES,
                requestBufferBytes);
    }
}
