package com.spectrayan.spector.uplink;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.uplink.wire.Header;
import io.netty.channel.EventLoop;
import java.net.URI;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One HTTP request as a relay target receives it on the worker, or as the gateway hands it to
 * {@code GatewayRelay}. Headers are already filtered by the header policy, so the hop-by-hop
 * {@code Upgrade} and {@code Connection} never appear among them.
 *
 * <p><b>Upgrades</b> (RFC 9110 §7.8; docs/PROTOCOL.md section 9.7). A request with a non-null
 * {@link #upgrade()} asks to switch its connection to that protocol ({@code websocket}); it always
 * has a {@link #body()}, which is the client's side of the connection: nothing of it flows before
 * the answer, and after a {@code 101} ({@link RelayedResponse#isSwitching()}) it carries the
 * client's bytes as they come, for as long as the connection lives. Its end (null from {@link
 * BodySource#next()}) is the client's half close (a TCP FIN); a failure, or the {@link #signal()}
 * aborting, ends both directions. A target that answers anything but {@code 101} cancels it. A
 * target that performs the upgrade with an upstream asks anew with {@code Upgrade: <upgrade>} and
 * {@code Connection: upgrade}, as every hop does (the header is hop-by-hop), and passes the other
 * headers ({@code Sec-WebSocket-Key}, {@code -Version}, {@code -Protocol}, {@code -Extensions})
 * as they are, so the client's key and the upstream's accept match end to end.
 *
 * <p><b>The declared length</b> travels beside the headers, never as a {@code Content-Length}
 * header, as {@link RelayedResponse#contentLength()} does: the client's {@code Content-Length}
 * (docs/PROTOCOL.md sections 3, 9.3), or {@link ResponseFraming#UNKNOWN_LENGTH} for a chunked
 * body. It is a promise the relay holds the body to: on the gateway, a body that yields more bytes,
 * or ends with fewer, fails the relay instead of being sent; on the worker, the gateway's bytes
 * past it, or an end short of it, fail the relay and abort the {@link #signal()}, so the body's
 * reader gets a failure, never an end. The worker hands its target the part that completes the
 * length only together with the end, so a target never holds the whole of a body the relay then
 * fails. A target that frames the body upstream with {@code Content-Length: <contentLength>}
 * (the worker's {@code http-forward}) never sends an upstream a complete request that failed.
 *
 * @param method the method
 * @param url the absolute http(s) URL
 * @param headers the headers in order, repeats kept
 * @param tenant the tenant the caller's token names
 * @param leaseId the lease the request runs under, if any
 * @param body the body, or null when the request has none; never null with {@code upgrade}
 * @param signal aborts when the exchange is cancelled, times out, or its uplink closes
 * @param upgrade the protocol the request asks to switch to, an RFC 9110 token such as {@code
 *     websocket}, or null for an ordinary request
 * @param eventLoop the event loop the relay's uplink stream lives on, or null when it has none (v1,
 *     or a caller outside an uplink). A hint, never a duty: a target that does its I/O on an event
 *     loop of the same group may run the exchange there, so each part of either body goes from
 *     socket to socket on one thread, without a hop (the worker's {@code http-forward} does). Its
 *     bodies then say so with {@link BodySource#nonBlocking()}.
 * @param contentLength the body's declared length in bytes (0..{@link Limits#RELAY_LENGTH_BYTES};
 *     only 0 without a body), or {@link ResponseFraming#UNKNOWN_LENGTH} (-1) when unknown (a
 *     chunked body, or an upgrade)
 */
public record RelayedRequest(
        String method,
        URI url,
        List<Header> headers,
        String tenant,
        @Nullable String leaseId,
        @Nullable BodySource body,
        AbortSignal signal,
        @Nullable String upgrade,
        @Nullable EventLoop eventLoop,
        long contentLength) {
    public RelayedRequest {
        requireNonNull(method, "method");
        requireNonNull(url, "url");
        headers = List.copyOf(requireNonNull(headers, "headers"));
        requireNonNull(tenant, "tenant");
        requireNonNull(signal, "signal");
        if (upgrade != null && body == null) {
            throw new IllegalArgumentException(
                    "body: null with upgrade " + upgrade + " (expected: the client's side of the connection)");
        }
        if (contentLength != ResponseFraming.UNKNOWN_LENGTH
                && (!Limits.RELAY_LENGTH_BYTES.allows(contentLength)
                        || (body == null && contentLength > 0)
                        || upgrade != null)) {
            String expected = upgrade != null
                    ? "-1 with an upgrade"
                    : body == null ? "-1 or 0 without a body" : "-1 or 0.." + Limits.RELAY_LENGTH_BYTES.max();
            throw new IllegalArgumentException("contentLength: " + contentLength + " (expected: " + expected + ")");
        }
    }

    /** A request with no event-loop hint. */
    public RelayedRequest(
            String method,
            URI url,
            List<Header> headers,
            String tenant,
            @Nullable String leaseId,
            @Nullable BodySource body,
            AbortSignal signal,
            @Nullable String upgrade) {
        this(method, url, headers, tenant, leaseId, body, signal, upgrade, null, ResponseFraming.UNKNOWN_LENGTH);
    }

    /** An ordinary request, which asks for no upgrade. */
    public RelayedRequest(
            String method,
            URI url,
            List<Header> headers,
            String tenant,
            @Nullable String leaseId,
            @Nullable BodySource body,
            AbortSignal signal) {
        this(method, url, headers, tenant, leaseId, body, signal, null, null, ResponseFraming.UNKNOWN_LENGTH);
    }
}
