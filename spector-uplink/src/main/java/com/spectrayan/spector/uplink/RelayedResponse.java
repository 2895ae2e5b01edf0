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
 * ends short of it fails INTERNAL. For a response without a body ({@link ResponseFraming#bodyless})
 * it is still meaningful: for a HEAD it is the length a GET would have had, for a 304 the selected
 * representation's (RFC 9110 §8.6).
 *
 * <p><b>Switching protocols</b> (RFC 9110 §15.2.2; docs/PROTOCOL.md section 9.7). A {@code 101}
 * ({@link #switching}) answers only a request that asked for an upgrade ({@link
 * RelayedRequest#upgrade()}); its body is the upstream's side of the switched connection: the
 * upstream's bytes, as they come, with no declared length. Its end is the upstream's half close
 * (a TCP FIN); the client's side keeps flowing in the request's body until that ends too, and the
 * exchange is over when both have ended. A failure of either, or the request's signal, ends both
 * (a stream RESET). Its headers are the upstream's end-to-end ones ({@code Sec-WebSocket-Accept},
 * {@code -Protocol}, {@code -Extensions}); each hop writes {@code Upgrade} and {@code Connection}
 * itself.
 *
 * @param status the status; 101 only with a body and an unknown length
 * @param headers the headers in order, repeats kept
 * @param contentLength the body's length in bytes as declared (0..{@link
 *     Limits#RELAY_LENGTH_BYTES}), or {@link ResponseFraming#UNKNOWN_LENGTH} (-1) when unknown
 *     (chunked, close-delimited, or a 101)
 * @param body the body pulled part by part, or null for HEAD, 1xx but 101, 204, 205 and 304
 */
public record RelayedResponse(
        int status,
        List<Header> headers,
        long contentLength,
        @Nullable BodySource body) {
    /** The status of a switch to the protocol the request asked for (RFC 9110 §15.2.2). */
    public static final int SWITCHING_PROTOCOLS = 101;

    public RelayedResponse {
        headers = List.copyOf(requireNonNull(headers, "headers"));
        if (contentLength != ResponseFraming.UNKNOWN_LENGTH && !Limits.RELAY_LENGTH_BYTES.allows(contentLength)) {
            throw new IllegalArgumentException("contentLength: " + contentLength + " (expected: -1 or 0.."
                    + Limits.RELAY_LENGTH_BYTES.max() + ")");
        }
        if (status == SWITCHING_PROTOCOLS && (body == null || contentLength != ResponseFraming.UNKNOWN_LENGTH)) {
            throw new IllegalArgumentException("status: 101 with " + (body == null ? "no body" : "a length")
                    + " (expected: the upstream's side of the connection as the body, no length)");
        }
    }

    /** A response whose length is unknown ({@link ResponseFraming#UNKNOWN_LENGTH}). */
    public RelayedResponse(int status, List<Header> headers, @Nullable BodySource body) {
        this(status, headers, ResponseFraming.UNKNOWN_LENGTH, body);
    }

    /**
     * Returns a {@code 101 Switching Protocols} whose body is the upstream's side of the switched
     * connection (see the class's contract).
     */
    public static RelayedResponse switching(List<Header> headers, BodySource fromUpstream) {
        return new RelayedResponse(
                SWITCHING_PROTOCOLS,
                headers,
                ResponseFraming.UNKNOWN_LENGTH,
                requireNonNull(fromUpstream, "fromUpstream"));
    }

    /** Answers whether this is a {@code 101}: the connection switched, both bodies stay open. */
    public boolean isSwitching() {
        return status == SWITCHING_PROTOCOLS;
    }
}
