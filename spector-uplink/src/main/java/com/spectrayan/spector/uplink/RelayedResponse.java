package com.spectrayan.spector.uplink;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.uplink.wire.Header;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One HTTP response as a relay target answers it, or as {@code GatewayRelay} returns it.
 *
 * <p>The content length travels beside the headers, never as a {@code Content-Length} header
 * (the relay drops framing headers and re-creates the framing on each hop). On the gateway, a
 * known length is one the worker declared and the relay holds it to: a body that runs past it or
 * ends short of it fails INTERNAL. For a response without a body ({@link
 * ResponseFraming#bodyless}) it is still meaningful: for a HEAD it is the length a GET would have
 * had, for a 304 the selected representation's (RFC 9110 §8.6).
 *
 * @param status the status (never 101)
 * @param headers the headers in order, repeats kept
 * @param contentLength the body's length in bytes as declared (0..{@link
 *     Limits#RELAY_LENGTH_BYTES}), or {@link ResponseFraming#UNKNOWN_LENGTH} (-1) when unknown
 *     (chunked or close-delimited)
 * @param body the body pulled part by part, or null for HEAD, 1xx, 204, 205 and 304
 */
public record RelayedResponse(
        int status,
        List<Header> headers,
        long contentLength,
        @Nullable BodySource body) {
    public RelayedResponse {
        headers = List.copyOf(requireNonNull(headers, "headers"));
        if (contentLength != ResponseFraming.UNKNOWN_LENGTH && !Limits.RELAY_LENGTH_BYTES.allows(contentLength)) {
            throw new IllegalArgumentException("contentLength: " + contentLength + " (expected: -1 or 0.."
                    + Limits.RELAY_LENGTH_BYTES.max() + ")");
        }
    }

    /** A response whose length is unknown ({@link ResponseFraming#UNKNOWN_LENGTH}). */
    public RelayedResponse(int status, List<Header> headers, @Nullable BodySource body) {
        this(status, headers, ResponseFraming.UNKNOWN_LENGTH, body);
    }
}
