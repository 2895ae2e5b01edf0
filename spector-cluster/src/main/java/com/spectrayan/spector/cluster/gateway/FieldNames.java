package com.spectrayan.spector.cluster.gateway;

import io.netty.util.AsciiString;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The field names owners send on nearly every response, made once: the response decoder hands
 * out one of these instead of a new name (an {@link AsciiString} and its bytes, then a hash of it
 * at every look-up) when the bytes on the wire are exactly these bytes, case included, so what the
 * client receives is still byte for byte what the owner sent (RFC 9110 §5.1: names compare without
 * case, but a gateway that changes their case is not transparent). Netty's request decoder does the
 * same for five request names ({@code HttpRequestDecoder.splitHeaderName}); its response decoder
 * for none. The 1 KiB exchange of issue 14 had eight names made per response.
 *
 * <p>Each name is kept as written in most servers' responses (nginx, Node, Go, Jetty, Netty) and in
 * lower case (uvicorn, and any HTTP/2-minded server). Immutable after class initialisation;
 * shared by every event loop.
 */
final class FieldNames {
    private static final String[] COMMON = {
        "Date",
        "Server",
        "Content-Type",
        "Content-Length",
        "Connection",
        "Keep-Alive",
        "Transfer-Encoding",
        "Last-Modified",
        "ETag",
        "Etag",
        "Accept-Ranges",
        "Cache-Control",
        "Vary",
        "Content-Encoding",
        "Expires",
        "Location",
        "Set-Cookie",
        "Retry-After",
        "X-Request-Id",
        "Access-Control-Allow-Origin",
        "Strict-Transport-Security",
        "X-Content-Type-Options",
        "Idempotency-Key",
        "Traceparent"
    };

    /** The longest name kept; a longer one is never looked for. */
    static final int MAX_LENGTH = 32;

    /** The names by their length: {@code BY_LENGTH[n]} holds those of {@code n} bytes. */
    private static final AsciiString[][] BY_LENGTH = build();

    private FieldNames() {}

    private static AsciiString[][] build() {
        List<List<AsciiString>> lists = new ArrayList<>();
        for (int n = 0; n <= MAX_LENGTH; n++) {
            lists.add(new ArrayList<>());
        }
        for (String name : COMMON) {
            for (String form : new String[] {name, name.toLowerCase(Locale.ROOT)}) {
                List<AsciiString> same = lists.get(form.length());
                AsciiString cached = AsciiString.cached(form);
                if (!same.contains(cached)) {
                    same.add(cached);
                }
            }
        }
        AsciiString[][] out = new AsciiString[MAX_LENGTH + 1][];
        for (int n = 0; n <= MAX_LENGTH; n++) {
            out[n] = lists.get(n).toArray(new AsciiString[0]);
        }
        return out;
    }

    /** The kept name whose bytes are exactly {@code bytes[start, start + length)}, or null. */
    static @Nullable AsciiString known(byte[] bytes, int start, int length) {
        if (length > MAX_LENGTH) {
            return null;
        }
        for (AsciiString name : BY_LENGTH[length]) {
            byte[] own = name.array();
            int offset = name.arrayOffset();
            int i = 0;
            while (i < length && own[offset + i] == bytes[start + i]) {
                i++;
            }
            if (i == length) {
                return name;
            }
        }
        return null;
    }
}
