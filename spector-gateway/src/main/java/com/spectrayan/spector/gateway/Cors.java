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

    /** Adds the CORS headers of an actual (non-preflight) response for the request's Origin. */
    void decorate(HttpHeaders request, HttpHeaders response);
}
