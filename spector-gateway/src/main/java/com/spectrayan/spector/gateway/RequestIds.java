package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.Problem;
import com.spectrayan.spector.contract.SpectorHeaders;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.util.AsciiString;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;
import org.jspecify.annotations.Nullable;

/**
 * {@code X-Request-Id} and the W3C trace id of an exchange.
 *
 * <p>The id is taken from the request when the client is trusted (the rule of {@code
 * X-Forwarded-*}: one of {@code spector.server.trusted-proxies}, or a gateway replica on the peer
 * port) and well formed ({@link #MAX_CHARS} of {@code A-Z a-z 0-9 - _ . : + / = @}); otherwise it
 * is generated: 32 lowercase hex digits (128 random bits, as nginx's {@code $request_id}). Either
 * way it replaces the request's header, so the owner or worker receives exactly the id the client
 * gets back and the access log shows, as Envoy does with {@code x-request-id}. {@code traceparent}
 * and {@code tracestate} pass through unchanged; the trace id of a valid {@code traceparent} (W3C
 * Trace Context, version 00) goes into the access log.
 */
final class RequestIds {
    /** The header's name. */
    static final String HEADER = SpectorHeaders.REQUEST_ID;

    /** The header's name as an AsciiString made once (its hash cached: set and read per request). */
    static final AsciiString NAME = AsciiString.cached(HEADER);

    private static final AsciiString TRACEPARENT = AsciiString.cached("traceparent");

    /** The longest id taken from a client. */
    static final int MAX_CHARS = 128;

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private RequestIds() {}

    /** Returns the exchange's id, taken or generated, and sets it on {@code headers}. */
    static String take(HttpHeaders headers, boolean trusted) {
        String offered = trusted ? headers.get(NAME) : null;
        String id = offered != null && isWellFormed(offered) ? offered : generate();
        headers.set(NAME, id);
        return id;
    }

    /** Answers whether {@code id} may be taken from a trusted client. */
    static boolean isWellFormed(String id) {
        if (id.isEmpty() || id.length() > MAX_CHARS) {
            return false;
        }
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9')
                    || c == '-'
                    || c == '_'
                    || c == '.'
                    || c == ':'
                    || c == '+'
                    || c == '/'
                    || c == '='
                    || c == '@';
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    /** Returns a new id: 32 lowercase hex digits. */
    static String generate() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        char[] out = new char[32];
        hex(r.nextLong(), out, 0);
        hex(r.nextLong(), out, 16);
        return new String(out);
    }

    private static void hex(long v, char[] out, int at) {
        for (int i = 15; i >= 0; i--) {
            out[at + i] = HEX[(int) (v & 0xf)];
            v >>>= 4;
        }
    }

    /**
     * Returns the trace id of the request's {@code traceparent}, or null when it has none or it is
     * malformed (W3C Trace Context §3.2: {@code <version>-<32 hex>-<16 hex>-<2 hex flags>}, lower
     * case, neither id all zeros, version {@code ff} invalid; version {@code 00} exactly 55
     * characters, a later version at least that and a {@code -} after its flags).
     */
    static @Nullable String traceId(HttpHeaders headers) {
        String tp = headers.get(TRACEPARENT);
        if (tp == null || tp.length() < 55 || tp.charAt(2) != '-' || tp.charAt(35) != '-' || tp.charAt(52) != '-') {
            return null;
        }
        String version = tp.substring(0, 2);
        if (!isLowerHex(version) || version.equals("ff") || (version.equals("00") && tp.length() != 55)) {
            return null;
        }
        if (tp.length() > 55 && tp.charAt(55) != '-') {
            return null; // a later version's fields follow the flags after a dash
        }
        String trace = tp.substring(3, 35);
        String parent = tp.substring(36, 52);
        if (!isLowerHex(trace)
                || trace.chars().allMatch(c -> c == '0')
                || !isLowerHex(parent)
                || parent.chars().allMatch(c -> c == '0')
                || !isLowerHex(tp.substring(53, 55))) {
            return null;
        }
        return trace;
    }

    private static boolean isLowerHex(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
        }
        return true;
    }

    /** Returns the code of a problem+json response the gateway made ({@code urn:spector:error:CODE}), or null. */
    static @Nullable String problemCode(FullHttpResponse r) {
        String type = r.headers().get(HttpHeaderNames.CONTENT_TYPE);
        if (type == null || !type.startsWith(Problem.CONTENT_TYPE)) {
            return null;
        }
        String body = r.content().toString(StandardCharsets.UTF_8);
        int at = body.indexOf(Problem.TYPE_PREFIX);
        if (at < 0) {
            return null;
        }
        int start = at + Problem.TYPE_PREFIX.length();
        int end = start;
        while (end < body.length() && (Character.isUpperCase(body.charAt(end)) || body.charAt(end) == '_')) {
            end++;
        }
        return end > start ? body.substring(start, end) : null;
    }
}
