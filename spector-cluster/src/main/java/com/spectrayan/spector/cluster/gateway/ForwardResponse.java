package com.spectrayan.spector.cluster.gateway;

import static java.util.Objects.requireNonNull;

import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;

/**
 * The head of an owner's answer as the client will see it; the body follows through {@link
 * ResponseSink#onChunk}.
 *
 * @param status the owner's status
 * @param headers the owner's headers, filtered (no hop-by-hop or framing names)
 * @param owner the member id that answered
 * @param attempts how many attempts the exchange took (1 to 3)
 * @param streaming whether the body is an event stream ({@code text/event-stream}): flushed per
 *     read, no Content-Length, only the idle timer applies
 * @param contentLength the owner's Content-Length, or -1 when chunked
 * @param retargets why the exchange took more than one attempt, in order, comma-separated
 *     ({@code moved}, {@code ask}, {@code stale-connection}, {@code fallback}); empty when it took one
 */
public record ForwardResponse(
        HttpResponseStatus status,
        HttpHeaders headers,
        String owner,
        int attempts,
        boolean streaming,
        long contentLength,
        String retargets) {
    public ForwardResponse {
        requireNonNull(status, "status");
        requireNonNull(headers, "headers");
        requireNonNull(owner, "owner");
        requireNonNull(retargets, "retargets");
    }

    /** A response of an exchange that took the attempts it took, without saying why. */
    public ForwardResponse(
            HttpResponseStatus status,
            HttpHeaders headers,
            String owner,
            int attempts,
            boolean streaming,
            long contentLength) {
        this(status, headers, owner, attempts, streaming, contentLength, "");
    }
}
