package com.spectrayan.spector.cluster.gateway;

import io.netty.channel.Channel;

/**
 * The rest of a response body moving from the owner's socket to the client's in the kernel, on
 * whichever transport the two connections run: {@link ResponseSplice} on epoll, {@link UringSplice}
 * on io_uring. An attempt holds one while it runs ({@link Attempt#splice}); both report through
 * {@link ResponseSplice.Events} and keep the same contract (its notes).
 */
interface KernelSplice {

    /** Answers whether the kernel can splice from {@code owner} to {@code client} on their transport. */
    static boolean possible(Channel owner, Channel client) {
        return ResponseSplice.possible(owner, client) || UringSplice.possible(owner, client);
    }

    /**
     * Starts moving {@code length} (> 0) bytes from {@code owner} to {@code client}, which must be
     * {@link #possible}; the owner's codec must already be out of its pipeline.
     */
    static KernelSplice start(Channel owner, Channel client, long length, ResponseSplice.Events events) {
        return UringSplice.possible(owner, client)
                ? UringSplice.start(owner, client, length, events)
                : ResponseSplice.start(owner, client, length, events);
    }

    /** Answers whether the splice still runs (and reports). */
    boolean isActive();

    /**
     * Answers whether the splice waits for the client, not the owner: the owner's input ended (the
     * rest of the body is in the gateway's hands), or bytes read from the owner wait for the
     * client's socket. The owner's idle timer counts only the other waits ({@link Attempt}).
     */
    boolean waitsForClient();

    /** Stops reporting; the caller closes the owner connection, which drops what is queued. */
    void cancel();
}
