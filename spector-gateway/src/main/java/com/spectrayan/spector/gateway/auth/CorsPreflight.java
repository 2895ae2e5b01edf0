package com.spectrayan.spector.gateway.auth;

import static java.util.Objects.requireNonNull;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The answer to an allowed CORS preflight: the headers of a {@code 204 No Content} response, in
 * the order they are written.
 *
 * @param headers header name to value: {@code Access-Control-Allow-Origin}, {@code
 *     -Allow-Methods}, {@code -Allow-Headers}, {@code -Max-Age} and {@code Vary}
 */
public record CorsPreflight(Map<String, String> headers) {
    /** The status of a preflight answer. */
    public static final int STATUS = 204;

    public CorsPreflight {
        headers = Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(headers, "headers")));
    }
}
