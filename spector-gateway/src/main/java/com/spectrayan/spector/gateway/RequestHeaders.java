package com.spectrayan.spector.gateway;

import com.spectrayan.spector.cluster.gateway.DecodedHeaders;
import com.spectrayan.spector.contract.HeaderPolicy;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A client request's headers as the decoder builds them, remembering every {@code Content-Length}
 * field line as it arrived: Netty's decoder keeps only the first of an HTTP/1.0 request's, but RFC
 * 9112 §6.3 item 5 makes differing values invalid for every version (400, then close); and
 * dropping an underscore spelling of a name the gateway owns ({@link
 * HeaderPolicy#isGatewayNameInDisguise}) as it arrives. Names are
 * checked while the decoder adds them, and not once {@link GatewayHandler} seals them
 * ({@link DecodedHeaders}).
 *
 * <p>Threading: built and read on the connection's event loop.
 */
final class RequestHeaders extends DecodedHeaders {
    /** Builds these for every request the client side decodes (HttpDecoderConfig#setHeadersFactory). */
    static final HttpHeadersFactory FACTORY = new HttpHeadersFactory() {
        @Override
        public HttpHeaders newHeaders() {
            return new RequestHeaders();
        }

        @Override
        public HttpHeaders newEmptyHeaders() {
            return new RequestHeaders();
        }
    };

    /**
     * The most field lines a client's request head may carry: past it, 431 and close. The head's
     * bytes are bounded already ({@code spector.server.max-header-size}), but 8 150 lines of
     * {@code a:} fit in those, each an entry for the gateway to keep and an owner to parse again.
     * Envoy's {@code max_headers_count} default; a browser sends about 20.
     */
    static final int MAX_FIELD_LINES = 100;

    private @Nullable List<String> contentLengths;
    private int fieldLines;

    private RequestHeaders() {}

    @Override
    public HttpHeaders add(CharSequence name, Object value) {
        fieldLines++;
        if (HeaderPolicy.isGatewayNameInDisguise(name)) {
            return this; // X_Spector_Tenant and the like: a CGI owner would read it as the gateway's own
        }
        if (HttpHeaderNames.CONTENT_LENGTH.contentEqualsIgnoreCase(name)) {
            List<String> seen = contentLengths;
            if (seen == null) {
                seen = new ArrayList<>(2);
                contentLengths = seen;
            }
            seen.add(String.valueOf(value));
        }
        return super.add(name, value);
    }

    /**
     * Returns why a request head carries too many field lines ({@link #MAX_FIELD_LINES}), or null.
     * Every line counts, the ones dropped as they arrived too.
     */
    static @Nullable String tooManyFieldLines(HttpHeaders headers) {
        int lines = headers instanceof RequestHeaders r ? r.fieldLines : headers.size();
        return lines > MAX_FIELD_LINES
                ? lines + " header field lines (expected: at most " + MAX_FIELD_LINES + ")"
                : null;
    }

    /**
     * Returns the first transfer coding of a request other than {@code chunked}, or null
     * ({@link HeaderPolicy#unknownTransferCoding}). The decoder takes a list whose last coding is
     * {@code chunked} ({@code gzip, chunked}) and undoes only the chunking.
     */
    static @Nullable String unknownTransferCoding(HttpHeaders headers) {
        return headers.contains(HttpHeaderNames.TRANSFER_ENCODING) // the usual request has none
                ? HeaderPolicy.unknownTransferCoding(headers.getAll(HttpHeaderNames.TRANSFER_ENCODING))
                : null;
    }

    /**
     * Returns why a request's Content-Length cannot be trusted, or null: every field line and
     * list member must be the same string of digits.
     */
    static @Nullable String contentLengthProblem(HttpHeaders headers) {
        List<String> fields = headers instanceof RequestHeaders r && r.contentLengths != null
                ? r.contentLengths
                : headers.getAll(HttpHeaderNames.CONTENT_LENGTH);
        if (fields.isEmpty() || (fields.size() == 1 && fields.get(0).indexOf(',') < 0)) {
            return null; // the common case; the decoder has checked a single value's digits
        }
        String first = null;
        for (String field : fields) {
            for (String member : field.split(",", -1)) {
                String v = member.strip();
                if (v.isEmpty() || !v.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
                    return "not a length: '" + (v.length() > 20 ? v.substring(0, 20) + "..." : v) + "'";
                }
                if (first == null) {
                    first = v;
                } else if (!first.equals(v)) {
                    return "differing values " + first + " and " + v + " (expected: one length)";
                }
            }
        }
        return fields.size() > 1 ? "sent on " + fields.size() + " field lines (expected: one)" : null;
    }
}
