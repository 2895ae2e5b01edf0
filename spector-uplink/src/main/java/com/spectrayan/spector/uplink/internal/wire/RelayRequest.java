package com.spectrayan.spector.uplink.internal.wire;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.spectrayan.spector.contract.Limits;
import com.spectrayan.spector.contract.ResponseFraming;
import com.spectrayan.spector.contract.SpectorException;
import com.spectrayan.spector.uplink.wire.Header;
import com.spectrayan.spector.uplink.wire.RelayHeaders;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The input of {@code relay.request}: one HTTP exchange the gateway hands to a worker's relay
 * target. Its output is a {@link RelayOutcome}; its response comes as {@link RelayHead} and {@link
 * RelayChunk} pushes, and its request body (when {@code hasBody}) as {@link RelayBody} calls.
 *
 * <pre>
 * {"relayId":"r-1", "target":"app", "method":"PUT", "url":"https://app.local/a?x=1",
 *  "headers":[["content-type","text/plain"],["x-b","1"],["x-b","2"]],
 *  "tenant":"acme", "leaseId":"l-9", "hasBody":true, "length":11}
 *
 * relayId  [A-Za-z0-9._:-], 1..64 chars, unique among the connection's active relays
 * target   [a-z0-9][a-z0-9-]*, 1..64 chars
 * method   GET HEAD POST PUT PATCH DELETE OPTIONS (case-sensitive)
 * url      absolute http: or https: URL with a host, 1..4096 chars (see below)
 * headers  [name, value] pairs, filtered (RelayHeaders#forRequest), then at most 100
 * tenant   1..300 chars, no control chars
 * leaseId  optional, [A-Za-z0-9._:-], 1..128 chars
 * hasBody  boolean; true is refused with GET and HEAD
 * length   optional integer 0..2^53-1 (Limits#RELAY_LENGTH_BYTES): the request's Content-Length as
 *          the client declared it; absent when unknown (a chunked body); only 0 without a body
 * </pre>
 *
 * <p>The {@code length} member is new in v1 and optional, as {@code relay-head}'s is: a gateway
 * that omits it relays as before (the worker's target frames the body as it comes, chunked), and
 * a worker that does not know it ignores it. A worker holds the gateway to a length it declared:
 * {@code relay.body} chunks that add up to more, or an {@code end} after fewer bytes, fail the
 * relay BAD_REQUEST and abort the target's request.
 *
 * <p>The URL is printable ASCII without spaces (percent-encode the rest), {@code http} or {@code
 * https} in any case, then {@code ://}, a host (a name, an IPv4 address or an {@code [IPv6]}
 * literal) with an optional port 1..65535, and no user info (a worker never holds a credential)
 * and no fragment (no request carries one).
 *
 * <p>Every check runs in the constructor, so the sender (building one) and the receiver ({@link
 * #parse}) apply the same bounds. The constructor filters the headers first: building one with an
 * {@code Authorization} header drops it. Refusals are BAD_REQUEST naming the field.
 *
 * @param relayId the relay's id, chosen by the gateway
 * @param target the capability name of the relay target on the worker
 * @param method the request's method
 * @param url the request's absolute URL
 * @param headers the request's headers after filtering, in order, repeats kept
 * @param tenant the tenant the request is made for
 * @param leaseId the lease the request is made under, or null
 * @param hasBody whether {@code relay.body} calls carry a request body
 * @param length the body's declared length in bytes, or {@link ResponseFraming#UNKNOWN_LENGTH}
 *     (-1) when the input has no {@code length}
 */
public record RelayRequest(
        String relayId,
        String target,
        String method,
        String url,
        List<Header> headers,
        String tenant,
        @Nullable String leaseId,
        boolean hasBody,
        long length) {
    /** The operation's name. */
    public static final String OP = "relay.request";

    /** The methods a relayed request may have. */
    public static final List<String> METHODS = List.of("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS");

    /** Chars of an unknown method a refusal quotes; a longer one is shown by its length. */
    private static final int MAX_SHOWN_METHOD_CHARS = 16;

    public RelayRequest {
        Checks.id("relayId", requireNonNull(relayId, "relayId"), Limits.RELAY_ID_CHARS);
        headers = checkedExchange(target, method, url, headers, tenant, leaseId);
        if (hasBody && (method.equals("GET") || method.equals("HEAD"))) {
            throw SpectorException.badRequest("hasBody", "true with " + method + " (expected: false for GET and HEAD)");
        }
        checkLength(length, hasBody, "hasBody: false");
    }

    /**
     * Refuses a declared request length out of its bound ({@link Lengths#checked}), or above 0 for
     * a request without a body (its length, when declared, is 0). Shared with protocol v2's
     * request head, whose END_STREAM says there is no body.
     *
     * @param noBody how the head says there is no body, for the refusal ({@code hasBody: false})
     * @throws SpectorException BAD_REQUEST ({@code length})
     */
    public static void checkLength(long length, boolean hasBody, String noBody) {
        if (Lengths.checked(length) > 0 && !hasBody) {
            throw SpectorException.badRequest(
                    Lengths.FIELD, length + " with " + noBody + " (expected: absent or 0, a request without a body)");
        }
    }

    /**
     * Checks every field but {@code relayId} and {@code hasBody}, in the order the constructor
     * does, and returns the headers filtered ({@link RelayHeaders#forRequest}) and bounded. Shared
     * with protocol v2's request head, which has the same fields and bounds.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static List<Header> checkedExchange(
            String target, String method, String url, List<Header> headers, String tenant, @Nullable String leaseId) {
        Checks.target("target", requireNonNull(target, "target"), Limits.TARGET_CHARS);
        if (!METHODS.contains(requireNonNull(method, "method"))) {
            throw SpectorException.badRequest(
                    "method", shown(method) + " (expected: one of " + String.join(", ", METHODS) + ")");
        }
        checkUrl(requireNonNull(url, "url"));
        List<Header> checked = HeaderLists.checked(RelayHeaders.forRequest(headers));
        Checks.printable("tenant", requireNonNull(tenant, "tenant"), Limits.TENANT_CHARS);
        if (leaseId != null) {
            Checks.id("leaseId", leaseId, Limits.LEASE_ID_CHARS);
        }
        return checked;
    }

    /**
     * Reads and bounds a {@code relay.request} input.
     *
     * @throws SpectorException BAD_REQUEST naming the field that broke
     */
    public static RelayRequest parse(JsonNode input) {
        ObjectNode in = Inputs.object(input, "input");
        String relayId = Inputs.text(in, "relayId");
        return parseExchange(
                in,
                (target, method, url, headers, tenant, leaseId) -> new RelayRequest(
                        relayId,
                        target,
                        method,
                        url,
                        headers,
                        tenant,
                        leaseId,
                        Inputs.bool(in, "hasBody"),
                        Lengths.parse(in)));
    }

    /** Makes a record of the fields {@link #checkedExchange} checks. */
    @FunctionalInterface
    public interface ExchangeFactory<T> {
        /** Returns the record of these fields, checking them (a refusal is BAD_REQUEST). */
        T make(String target, String method, String url, List<Header> headers, String tenant, @Nullable String leaseId);
    }

    /**
     * Reads the members {@link #checkedExchange} checks, by JSON type, and makes a record of them
     * with {@code factory}. Shared with protocol v2's request head.
     *
     * @throws SpectorException BAD_REQUEST naming the member that is missing or of the wrong type
     */
    public static <T> T parseExchange(ObjectNode in, ExchangeFactory<T> factory) {
        return factory.make(
                Inputs.text(in, "target"),
                Inputs.text(in, "method"),
                Inputs.text(in, "url"),
                HeaderLists.parse(in),
                Inputs.text(in, "tenant"),
                Inputs.optionalText(in, "leaseId"));
    }

    /** Returns the input as sent; {@code leaseId} is left out when null, {@code length} when unknown. */
    public ObjectNode toJson() {
        ObjectNode node = JsonNodeFactory.instance.objectNode().put("relayId", relayId);
        putExchange(node, target, method, url, headers, tenant, leaseId);
        return Lengths.put(node.put("hasBody", hasBody), length);
    }

    /**
     * Writes the fields {@link #checkedExchange} checks into {@code node}, in the order of the
     * input; {@code leaseId} is left out when null. Shared with protocol v2's request head.
     */
    public static ObjectNode putExchange(
            ObjectNode node,
            String target,
            String method,
            String url,
            List<Header> headers,
            String tenant,
            @Nullable String leaseId) {
        node.put("target", target).put("method", method).put("url", url);
        node.set(HeaderLists.FIELD, HeaderLists.toJson(headers));
        node.put("tenant", tenant);
        if (leaseId != null) {
            node.put("leaseId", leaseId);
        }
        return node;
    }

    /** Returns a short token quoted, anything else by its length only. */
    private static String shown(String method) {
        boolean token = method.length() <= MAX_SHOWN_METHOD_CHARS
                && !method.isEmpty()
                && method.chars().allMatch(c -> Checks.isTchar((char) c));
        return token ? "'" + method + "'" : method.length() + " chars";
    }

    private static void checkUrl(String url) {
        Checks.length("url", url, Limits.URL_CHARS);
        for (int i = 0; i < url.length(); i++) {
            char c = url.charAt(i);
            if (c <= 0x20 || c >= 0x7f) {
                throw Checks.badChar("url", i, c, "printable ASCII, no space");
            }
        }
        String lower = url.toLowerCase(Locale.ROOT);
        int authorityStart;
        if (lower.startsWith("http://")) {
            authorityStart = "http://".length();
        } else if (lower.startsWith("https://")) {
            authorityStart = "https://".length();
        } else {
            throw SpectorException.badRequest("url", "not an absolute http or https URL (expected: http://host/...)");
        }
        if (url.indexOf('#') >= 0) {
            throw SpectorException.badRequest("url", "has a fragment (expected: none)");
        }
        int authorityEnd = authorityStart;
        while (authorityEnd < url.length() && url.charAt(authorityEnd) != '/' && url.charAt(authorityEnd) != '?') {
            authorityEnd++;
        }
        String authority = url.substring(authorityStart, authorityEnd);
        if (authority.indexOf('@') >= 0) {
            throw SpectorException.badRequest("url", "has user info (expected: none)");
        }
        String host;
        @Nullable String port;
        if (authority.startsWith("[")) {
            int close = authority.indexOf(']');
            if (close < 0) {
                throw SpectorException.badRequest("url", "has an unclosed IPv6 literal (expected: [address])");
            }
            host = authority.substring(1, close);
            String rest = authority.substring(close + 1);
            if (!rest.isEmpty() && !rest.startsWith(":")) {
                throw SpectorException.badRequest("url", "has text after its IPv6 literal (expected: a port)");
            }
            port = rest.isEmpty() ? null : rest.substring(1);
            if (host.isEmpty()
                    || !host.chars().allMatch(ch -> Character.digit(ch, 16) >= 0 || ch == ':' || ch == '.')) {
                throw SpectorException.badRequest(
                        "url", "has a malformed IPv6 literal (expected: hex digits, ':' and '.')");
            }
        } else {
            int colon = authority.indexOf(':');
            host = colon < 0 ? authority : authority.substring(0, colon);
            port = colon < 0 ? null : authority.substring(colon + 1);
            if (host.isEmpty()) {
                throw SpectorException.badRequest("url", "has no host (expected: http://host/...)");
            }
            for (int i = 0; i < host.length(); i++) {
                char c = host.charAt(i);
                if (!(Checks.isIdChar(c) && c != ':') && c != '~' && c != '%') {
                    throw SpectorException.badRequest(
                            "url",
                            "host char " + (i + 1) + " is " + Checks.describe(c) + " (expected: [A-Za-z0-9._~%-])");
                }
            }
        }
        if (port != null) {
            checkPort(port);
        }
        checkPath(url, authorityEnd);
    }

    /**
     * Refuses a path with a dot-segment, {@code .} or {@code ..} spelt raw, with {@code %2e}, or
     * with a {@code ;parameter} (Tomcat's {@code ..;}). The gateway removes them before it relays
     * (RFC 3986 §5.2.4), so only a broken or hostile gateway sends one; the worker's {@code
     * http-forward} puts the path behind its target's base, and a {@code ..} there would leave it
     * (the third review: {@code /base/../../etc/passwd} reached the upstream as sent).
     */
    private static void checkPath(String url, int from) {
        int end = url.indexOf('?', from);
        end = end < 0 ? url.length() : end;
        for (int pct = url.indexOf('%', from); pct >= 0 && pct + 2 < end; pct = url.indexOf('%', pct + 1)) {
            // An encoded '/', '\' or NUL: an upstream that decodes before it removes dot-segments
            // (nginx does) takes "..%2F..%2Fadmin" out of the target's base; the gateway refuses
            // them from clients, so only a broken or hostile gateway sends one (found by a review).
            if (url.regionMatches(true, pct, "%2f", 0, 3)
                    || url.regionMatches(true, pct, "%5c", 0, 3)
                    || url.regionMatches(pct, "%00", 0, 3)) {
                throw SpectorException.badRequest(
                        "url", "has an encoded '/', '\\' or NUL in its path (expected: none, as the gateway sends)");
            }
        }
        int start = from;
        while (start < end) {
            int slash = url.indexOf('/', start + 1);
            int segmentEnd = slash < 0 || slash > end ? end : slash;
            if (isDotSegment(url, start + 1, segmentEnd)) {
                throw SpectorException.badRequest(
                        "url", "has a dot-segment (expected: a normalized path, RFC 3986 section 5.2.4)");
            }
            start = segmentEnd;
        }
    }

    /** Answers whether {@code url[from, to)} is {@code .} or {@code ..}, a dot spelt {@code %2e}, before any {@code ;}. */
    private static boolean isDotSegment(String url, int from, int to) {
        int semi = url.indexOf(';', from);
        int end = semi >= 0 && semi < to ? semi : to;
        int dots = 0;
        int i = from;
        while (i < end) {
            if (url.charAt(i) == '.') {
                i++;
            } else if (url.regionMatches(true, i, "%2e", 0, 3) && i + 3 <= end) {
                i += 3;
            } else {
                return false;
            }
            dots++;
        }
        return dots == 1 || dots == 2;
    }

    private static void checkPort(String port) {
        boolean digits = !port.isEmpty() && port.length() <= 5 && port.chars().allMatch(c -> c >= '0' && c <= '9');
        int value = digits ? Integer.parseInt(port) : 0;
        if (value < 1 || value > 65_535) {
            throw SpectorException.badRequest("url", "has a bad port (expected: 1..65535)");
        }
    }
}
