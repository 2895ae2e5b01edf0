package com.spectrayan.spector.cluster.gateway;

/**
 * An owner's bytes are not a valid HTTP/1.1 response: a status line, a field or a chunk that
 * Netty's decoder refused, framing that cannot be trusted (two lengths, a length with a transfer
 * coding, RFC 9112 §6.3), or a transfer coding other than {@code chunked}, which the gateway
 * cannot undo (§6.1; nginx answers the same 502, "upstream sent unknown Transfer-Encoding"). The
 * cause an attempt fails with: its connection is closed, never pooled (the decoder has stopped
 * reading it), and the request is not sent again (the owner answered, so it may have acted on
 * it). {@link ForwardProblems} maps it to 502. An expected failure: no stack trace.
 */
final class MalformedResponseException extends Exception {
    private static final long serialVersionUID = 1L;

    MalformedResponseException(String owner, String why) {
        super("owner " + owner + " sent a malformed response: " + why, null, false, false);
    }
}
