package com.spectrayan.spector.contract;

/**
 * The one rule for HTTP responses without a body, and for the content length a response may
 * declare, shared by every side that frames or relays a response: the gateway's client side, the
 * worker's {@code http-forward} target and both halves of the uplink relay.
 *
 * <p>A response has no content, whatever its headers say (RFC 9110 §6.4.1, RFC 9112 §6.3 rules 1
 * and 2), when it answers a HEAD request, or its status is 1xx (Informational), 204 (No Content)
 * or 304 (Not Modified). This class adds 205 (Reset Content): RFC 9110 §15.3.6 forbids a server
 * to generate content in a 205, so a 205 carries none here either, and an intermediary framing one
 * sends {@code Content-Length: 0} ({@link #contentLength}).
 *
 * <p>The length a bodyless response declares still means something for two of them (RFC 9110
 * §8.6): a HEAD response's Content-Length is the one a GET would have had, and a 304's is the
 * selected representation's. A 1xx or 204 response must not carry one.
 */
public final class ResponseFraming {
    /** The content length of a response that declares none: chunked or close-delimited. */
    public static final long UNKNOWN_LENGTH = -1;

    /** The status RFC 9110 §15.3.5 names No Content. */
    private static final int NO_CONTENT = 204;

    /** The status RFC 9110 §15.3.6 names Reset Content. */
    private static final int RESET_CONTENT = 205;

    /** The status RFC 9110 §15.4.5 names Not Modified. */
    private static final int NOT_MODIFIED = 304;

    private ResponseFraming() {}

    /**
     * Answers whether a response carries no body: it answers a HEAD, or its status is 1xx, 204,
     * 205 or 304 (RFC 9110 §6.4.1, §15.3.6; RFC 9112 §6.3). Such a response is complete after its
     * head; a sender sends no content and a receiver reads none.
     *
     * @param headRequest whether the request was a HEAD
     * @param status the response's status code
     */
    public static boolean bodyless(boolean headRequest, int status) {
        return headRequest
                || isInformational(status)
                || status == NO_CONTENT
                || status == RESET_CONTENT
                || status == NOT_MODIFIED;
    }

    /**
     * Returns the content length a response with this status may declare, given the one its origin
     * declared ({@link #UNKNOWN_LENGTH} when none): none for 1xx and 204, which must not carry a
     * Content-Length (RFC 9110 §8.6); 0 for 205, which has no content (RFC 9110 §15.3.6); else the
     * declared one, which for a HEAD response is the GET's length and for a 304 the selected
     * representation's.
     *
     * @param status the response's status code
     * @param declared the declared length in bytes, or {@link #UNKNOWN_LENGTH}
     * @throws IllegalArgumentException when {@code declared} is below {@link #UNKNOWN_LENGTH}
     */
    public static long contentLength(int status, long declared) {
        if (declared < UNKNOWN_LENGTH) {
            throw new IllegalArgumentException("declared: " + declared + " (expected: >= -1)");
        }
        if (isInformational(status) || status == NO_CONTENT) {
            return UNKNOWN_LENGTH;
        }
        if (status == RESET_CONTENT) {
            return 0;
        }
        return declared;
    }

    private static boolean isInformational(int status) {
        return status >= 100 && status <= 199;
    }
}
