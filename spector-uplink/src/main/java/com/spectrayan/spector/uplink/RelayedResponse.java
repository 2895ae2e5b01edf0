package com.spectrayan.spector.uplink;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.uplink.wire.Header;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * One HTTP response as a relay target answers it, or as {@code GatewayRelay} returns it.
 *
 * @param status the status (never 101)
 * @param headers the headers in order, repeats kept
 * @param body the body pulled part by part, or null for 204, 205, 304 and HEAD
 */
public record RelayedResponse(
        int status, List<Header> headers, @Nullable BodySource body) {
    public RelayedResponse {
        headers = List.copyOf(requireNonNull(headers, "headers"));
    }
}
