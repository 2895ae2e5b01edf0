package com.spectrayan.spector.uplink.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.uplink.RelayedRequest;
import org.jspecify.annotations.Nullable;

/**
 * One relay as {@link GatewayRelay#relay} takes it: the worker's relay target and the caller's
 * request. The tenant and the lease id are the request's; its signal is the caller's.
 *
 * @param target the capability name of the relay target on the worker
 * @param request the caller's request, body and signal included
 */
public record RelayCall(String target, RelayedRequest request) {
    public RelayCall {
        requireNonNull(target, "target");
        requireNonNull(request, "request");
    }

    /** Returns the tenant the request is made for. */
    public String tenant() {
        return request.tenant();
    }

    /** Returns the lease the request runs under, or null. */
    public @Nullable String leaseId() {
        return request.leaseId();
    }
}
