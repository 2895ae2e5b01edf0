package com.spectrayan.spector.uplink;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.uplink.wire.Header;
import java.net.URI;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One HTTP request as a relay target receives it on the worker, or as the gateway hands it to
 * {@code GatewayRelay}. Headers are already filtered by the header policy.
 *
 * @param method the method
 * @param url the absolute http(s) URL
 * @param headers the headers in order, repeats kept
 * @param tenant the tenant the caller's token names
 * @param leaseId the lease the request runs under, if any
 * @param body the body, or null when the request has none
 * @param signal aborts when the exchange is cancelled, times out, or its uplink closes
 */
public record RelayedRequest(
        String method,
        URI url,
        List<Header> headers,
        String tenant,
        @Nullable String leaseId,
        @Nullable BodySource body,
        AbortSignal signal) {
    public RelayedRequest {
        requireNonNull(method, "method");
        requireNonNull(url, "url");
        headers = List.copyOf(requireNonNull(headers, "headers"));
        requireNonNull(tenant, "tenant");
        requireNonNull(signal, "signal");
    }
}
