package com.spectrayan.spector.gateway;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.LogGate;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cell's {@code Via} entry on every request it sends inbound, and the forwarding loop that
 * entry finds.
 *
 * <p>RFC 9110 §7.6.3 asks a gateway to send {@code Via} in each request it forwards: the
 * received protocol's version and a pseudonym, {@code 1.1 spector-<cell id>}, appended to a
 * client's own entries (a field of its own; the client's are kept as they came). The same entry
 * coming back to a gateway of the cell means the request went round: a ring member, or a worker's
 * module, points at a gateway. Without a check the loop ran until the owner pools were exhausted
 * (512 hops for one request, the second review); with it the second arrival is answered {@code
 * 508 Loop Detected} (RFC 5842 §7.2), problem code {@code GATEWAY_ROUTING_FAILURE}, reason {@value
 * #LOOP}, and a WARN line (one per {@link #LOG_INTERVAL}) says what to fix. The pseudonym is the
 * cell's, not the replica's, as RFC 8586's {@code CDN-Loop} names a CDN and not its node: a loop
 * through two replicas of one cell is found on its first return to either. Envoy sends {@code
 * via} when configured to and detects no loop; nginx does neither.
 *
 * <p>Two cells chained on purpose need distinct cell ids (they need them anyway when they share a
 * Redis). A client can send the cell's entry itself and be refused: it only refuses itself, and
 * only once authenticated (the check follows the token's), so nobody without a token learns the
 * cell's id from a 508 or raises the loop's WARN. A hop that strips {@code Via} (Apache's {@code
 * ProxyVia Block}) defeats the check, as it defeats every proxy's; a client's {@code Connection:
 * via} does not ({@code HeaderPolicy.SET_BY_GATEWAY}).
 *
 * <p>Thread-safety: immutable, apart from the log gate's counter; any thread.
 */
final class Via {
    private static final Logger log = LoggerFactory.getLogger(Via.class);

    /** The problem's reason for a request that came back to its cell. */
    static final String LOOP = "loop-detected";

    /** RFC 5842 §7.2's status, which Netty does not name. */
    static final HttpResponseStatus LOOP_DETECTED = new HttpResponseStatus(508, "Loop Detected");

    /** At most one WARN line about loops per this interval. */
    static final Duration LOG_INTERVAL = Duration.ofSeconds(10);

    private final String pseudonym;
    private final AsciiString entry11;
    private final AsciiString entry10;
    private final LogGate loops = new LogGate(LOG_INTERVAL, System.nanoTime());

    /** The entry of the cell {@code cellId} (a routing name: a token, as a pseudonym must be). */
    Via(String cellId) {
        this.pseudonym = "spector-" + cellId;
        this.entry11 = AsciiString.cached("1.1 " + pseudonym);
        this.entry10 = AsciiString.cached("1.0 " + pseudonym);
    }

    /** Returns this cell's pseudonym, {@code spector-<cell id>}. */
    String pseudonym() {
        return pseudonym;
    }

    /**
     * Answers whether a request's {@code Via} names this cell already, and logs it (gated):
     * then it must not be forwarded again.
     */
    boolean loops(HttpHeaders headers, String path, String requestId) {
        if (!headers.contains(HttpHeaderNames.VIA)) {
            return false; // the usual request: one look-up, no list made
        }
        List<String> values = headers.getAll(HttpHeaderNames.VIA);
        for (String value : values) {
            if (names(value, pseudonym)) {
                long events = loops.event(System.nanoTime());
                if (events > 0) {
                    log.warn(
                            "a request for {} came back to cell {} ({} such request(s) since the last line; Via: {}),"
                                    + " request id {}: a ring member or a worker's module points at a gateway",
                            path,
                            pseudonym,
                            events,
                            cut(values.toString()),
                            requestId);
                }
                return true;
            }
        }
        return false;
    }

    /** Adds this cell's entry for a request received as {@code version}. */
    void append(HttpHeaders headers, HttpVersion version) {
        headers.add(HttpHeaderNames.VIA, version.minorVersion() == 0 ? entry10 : entry11);
    }

    /** The answer to a request that came back: 508, problem+json. */
    static SpectorException loopProblem() {
        return SpectorException.of(
                ErrorCode.GATEWAY_ROUTING_FAILURE,
                "the request came back to this cell: a ring member or a worker's module points at a gateway",
                Map.of("reason", LOOP));
    }

    /**
     * Answers whether one {@code Via} field value names {@code pseudonym} as a received-by: each
     * comma-separated entry is {@code protocol RWS received-by [RWS comment]}, and received-by may
     * carry a port ({@code pseudonym:port} names it too). A comma inside a comment can only make a
     * false match for the one who wrote it.
     */
    static boolean names(String value, String pseudonym) {
        int n = value.length();
        int i = 0;
        while (i < n) {
            int end = value.indexOf(',', i);
            if (end < 0) {
                end = n;
            }
            int p = skipSpace(value, i, end);
            int protocolEnd = p;
            while (protocolEnd < end && !isSpace(value.charAt(protocolEnd))) {
                protocolEnd++;
            }
            int by = skipSpace(value, protocolEnd, end);
            int byEnd = by;
            while (byEnd < end && !isSpace(value.charAt(byEnd)) && value.charAt(byEnd) != ':') {
                byEnd++;
            }
            if (by > protocolEnd
                    && byEnd - by == pseudonym.length()
                    && value.regionMatches(true, by, pseudonym, 0, pseudonym.length())) {
                return true;
            }
            i = end + 1;
        }
        return false;
    }

    private static int skipSpace(String s, int from, int end) {
        int i = from;
        while (i < end && isSpace(s.charAt(i))) {
            i++;
        }
        return i;
    }

    private static boolean isSpace(char c) {
        return c == ' ' || c == '\t';
    }

    private static String cut(String text) {
        return text.length() > 256 ? text.substring(0, 256) + "..." : text;
    }
}
