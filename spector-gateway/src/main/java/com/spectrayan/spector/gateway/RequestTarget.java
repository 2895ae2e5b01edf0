package com.spectrayan.spector.gateway;

import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import org.jspecify.annotations.Nullable;

/** TEMPORARY stand-in until the real normalizer lands (same API). */
final class RequestTarget {
    enum Form {
        ORIGIN,
        ABSOLUTE,
        ASTERISK
    }

    private final String path;
    private final @Nullable String query;
    private final @Nullable String authority;

    private RequestTarget(String path, @Nullable String query, @Nullable String authority) {
        this.path = path;
        this.query = query;
        this.authority = authority;
    }

    static RequestTarget parse(HttpMethod method, String rawTarget, HttpVersion version, HttpHeaders headers) {
        int q = rawTarget.indexOf('?');
        return new RequestTarget(
                q < 0 ? rawTarget : rawTarget.substring(0, q),
                q < 0 ? null : rawTarget.substring(q + 1),
                headers.get("host"));
    }

    static String normalizePath(String rawPath) {
        return rawPath;
    }

    Form form() {
        return Form.ORIGIN;
    }

    String path() {
        return path;
    }

    @Nullable
    String query() {
        return query;
    }

    String pathAndQuery() {
        return query == null ? path : path + "?" + query;
    }

    @Nullable
    String authority() {
        return authority;
    }
}
