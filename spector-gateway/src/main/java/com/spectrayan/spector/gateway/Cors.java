package com.spectrayan.spector.gateway;

import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import org.jspecify.annotations.Nullable;

/** CORS at the edge: answers preflights and adds the response headers browsers need. */
interface Cors {
    /** No CORS: no preflight is answered, no header added. */
    Cors OFF = new Cors() {
        @Override
        public @Nullable FullHttpResponse preflight(HttpMethod method, HttpHeaders request) {
            return null;
        }

        @Override
        public void decorate(HttpHeaders request, HttpHeaders response) {}
    };

    /** Returns the answer to a CORS preflight, or null when the request is not one. */
    @Nullable
    FullHttpResponse preflight(HttpMethod method, HttpHeaders request);

    /**
     * Adds the CORS headers of an actual (non-preflight) response for the request's Origin to the
     * response's own headers: nothing already there is removed or replaced, {@code Origin} is
     * merged into an existing {@code Vary}, and a response that already carries {@code
     * Access-Control-Allow-Origin} (an upstream that answers CORS itself) keeps its own answer.
     */
    void decorate(HttpHeaders request, HttpHeaders response);

    /** Answers whether a page of {@code origin} may send credentials (the token cookie) to the gateway. */
    default boolean allowsCredentialsFrom(String origin) {
        return false;
    }
}
