package com.spectrayan.spector.cluster.gateway;

import com.spectrayan.spector.contract.SpectorException;
import io.netty.buffer.ByteBuf;
import org.jspecify.annotations.Nullable;

/**
 * Where the forwarder delivers the answer: the client side of one exchange. The forwarder calls,
 * in order, {@link #onHead} once, {@link #onChunk} any number of times, then {@link #onEnd}; or
 * {@link #onError} once at any point, after which nothing else is called.
 *
 * <p>Threading: every method is called on the client channel's event loop. Backpressure: the
 * forwarder stops reading from the owner while {@link #isWritable()} is false and resumes when the
 * client side calls {@link GatewayForwarder.Exchange#onClientWritable()}.
 */
public interface ResponseSink {
    /** The owner's response head, with its headers already filtered by the header policy. */
    void onHead(ForwardResponse response);

    /** A chunk of the response body; the sink owns (and releases) it. Not flushed yet. */
    void onChunk(ByteBuf chunk);

    /** Writes out what {@link #onChunk} queued. */
    void flush();

    /** The response body ended. */
    void onEnd();

    /**
     * The response body ended with {@code last}, its last chunk (the sink owns it): a sink that
     * can writes the two at once. By default a chunk, then the end.
     */
    default void onEnd(ByteBuf last) {
        onChunk(last);
        onEnd();
    }

    /**
     * The exchange failed. Before the head ({@code headSent} false) the sink answers the client
     * with the error's problem+json; after it, the sink resets the client connection (the
     * response cannot be completed honestly).
     */
    void onError(SpectorException error, boolean headSent);

    /**
     * Called just before {@link #onError} when the exchange had made attempts: the last owner tried,
     * how many attempts, and the retarget causes ({@link ForwardResponse#retargets()}), for the
     * access log. Does nothing by default.
     */
    default void onGaveUp(String owner, int attempts, String retargets) {}

    /**
     * The owner switched protocols ({@code 101}) for a request that asked to upgrade: {@code owner}
     * is now the sink's (its HTTP handlers still in place; nothing else is called after this). The
     * sink writes the head to the client and splices the two connections, or closes {@code owner}.
     */
    default void onUpgrade(ForwardResponse head, io.netty.channel.Channel owner) {
        owner.close();
        onError(
                com.spectrayan.spector.contract.SpectorException.of(
                        com.spectrayan.spector.contract.ErrorCode.OWNER_UNREACHABLE,
                        "this client side cannot carry an upgraded connection"),
                false);
    }

    /** Answers whether the client connection takes more bytes now. */
    boolean isWritable();

    /**
     * Offers the client's socket for the rest of this response's body, moved by the kernel from
     * the owner's ({@link ResponseSplice}), or answers null. A sink that offers it framed the
     * response by its length, writes no byte of its own until {@link #onEnd}, and counts the
     * spliced bytes it hears of through {@link #onSpliced}. None by default.
     */
    default io.netty.channel.@Nullable Channel spliceTarget() {
        return null;
    }

    /** {@code bytes} more body bytes reached the client's socket by splice (for the access log). */
    default void onSpliced(long bytes) {}
}
