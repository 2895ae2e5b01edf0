package com.spectrayan.spector.gateway;

import static java.util.Objects.requireNonNull;

import com.spectrayan.spector.contract.SpectorException;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The request target of one request and its effective authority, parsed, checked and normalized
 * once, before the gateway decides anything from them (the skip list, edge auth, routing, the relay
 * route). What is forwarded is {@link #pathAndQuery()}, never the raw target.
 *
 * <p>Design notes:
 *
 * <pre>
 *  raw target ─┬─ "/..."            origin-form    ─┐
 *              ├─ "http[s]://a/..." absolute-form  ─┼─► path ─► escapes ─► segments ─► dot removal ─► path()
 *              ├─ "*" (OPTIONS)     asterisk-form   │            (%XX)     ('//' → '/')  (RFC 3986 §5.2.4)
 *              └─ anything else     400             └─► query: checked, kept byte for byte ─► query()
 *  Host field ─── one line, one value, OWS trimmed ─► uri-host [":" port] ─► authority()
 *                 (absolute-form: its authority wins, RFC 9112 §3.2.2)
 * </pre>
 *
 * <ul>
 *   <li><b>One pass, then segments.</b> The first pass checks every character of the path against
 *       RFC 3986 {@code pchar} and every escape for two hex digits; it decodes escapes of unreserved
 *       characters (so {@code %2e} is a dot before dots are looked at, and {@code %7E} is {@code ~}),
 *       writes every other escape with upper-case hex (RFC 3986 §6.2.2.1), and refuses an escaped
 *       {@code /}, {@code \}, NUL or control character: decoded, each would change what an owner's
 *       router or file system sees. The second pass removes dot-segments exactly as RFC 3986 §5.2.4,
 *       except that a {@code ..} with nothing left to remove is a 400 rather than clamped at the root:
 *       a client that climbs above the root is probing, not lost.
 *   <li><b>Slashes are merged.</b> Runs of {@code /} become one, as nginx's default {@code
 *       merge_slashes on}; a trailing {@code /} is kept. Merging happens before dot removal, so {@code
 *       /a//../b} is {@code /b}. Owners therefore never see an empty segment.
 *   <li><b>The query is not rewritten</b>: only checked for RFC 3986 query characters and well-formed
 *       escapes. Its meaning belongs to the owner.
 *   <li><b>Host.</b> Checked in every form (RFC 9112 §3.2: missing in HTTP/1.1, more than one line,
 *       or not a valid {@code uri-host [":" port]} is 400), then ignored when the target is in
 *       absolute-form. A list ({@code a,b}) is refused: a comma is a legal reg-name character, but a
 *       Host that holds one is two values folded by an intermediary. A reg-name is checked for its
 *       characters and length only (so {@code 999.1.1.1} is a name, as RFC 3986 §3.2.2 reads); an
 *       IPv6 literal is checked by the RFC 3986 grammar; a zone id is refused. An empty port ({@code
 *       h:}) is allowed by RFC 3986 and dropped, as §6.2.3 normalizes it. Case is left as received.
 *       OWS is trimmed here too, though Netty's decoder already trims it, so headers built elsewhere
 *       are judged the same way.
 *   <li><b>Bounds.</b> The raw target is already bounded by the decoder's initial-line limit;
 *       {@link #MAX_SEGMENTS} bounds the work of dot removal, {@link #MAX_REG_NAME_CHARS} the host.
 *       A refusal's reason quotes at most {@link #MAX_QUOTED_CHARS} characters of client input, with
 *       anything but printable ASCII escaped, so a hostile target can neither flood nor forge a log.
 *   <li><b>Threads.</b> Immutable; the static methods hold no state and may run on any thread.
 * </ul>
 *
 * <p>Every refusal is a {@link SpectorException} with code {@code BAD_REQUEST}, field {@code target}
 * or {@code host}, and a reason saying what is wrong; nothing else is thrown for any input.
 */
final class RequestTarget {
    /** Most path segments, counted before dot-segment removal: bounds the work per request. */
    static final int MAX_SEGMENTS = 128;

    /** Most characters of a reg-name host: a DNS name is at most 255 octets (RFC 1035 §2.3.4). */
    static final int MAX_REG_NAME_CHARS = 255;

    /** Highest port number (a port is 16 bits, RFC 793). */
    static final int MAX_PORT = 65_535;

    /** Most digits of a port, so that {@code 00080} passes and a 6-digit run never reaches parseInt. */
    static final int MAX_PORT_DIGITS = 5;

    /** Most characters of client input a refusal's reason quotes, so that a reason stays a log line. */
    static final int MAX_QUOTED_CHARS = 100;

    /** The request target as its form says it was written. */
    enum Form {
        /** {@code /path?query} (RFC 9112 §3.2.1). */
        ORIGIN,
        /** {@code http://authority/path?query} (RFC 9112 §3.2.2). */
        ABSOLUTE,
        /** {@code *}, only with OPTIONS (RFC 9112 §3.2.4). */
        ASTERISK
    }

    private static final String TARGET = "target";
    private static final String HOST = "host";
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();
    private static final String SUB_DELIMS = "!$&'()*+,;=";

    private final Form form;
    private final String path;
    private final @Nullable String query;
    private final String pathAndQuery;
    private final @Nullable String authority;

    private RequestTarget(Form form, String path, @Nullable String query, @Nullable String authority) {
        this.form = form;
        this.path = path;
        this.query = query;
        this.pathAndQuery = query == null ? path : path + '?' + query;
        this.authority = authority;
    }

    /**
     * Parses, checks and normalizes the target and Host of one request.
     *
     * @throws SpectorException BAD_REQUEST, field {@code target} or {@code host}, with a reason saying
     *     what is wrong
     */
    static RequestTarget parse(HttpMethod method, String rawTarget, HttpVersion version, HttpHeaders headers) {
        requireNonNull(method, "method");
        requireNonNull(rawTarget, "rawTarget");
        requireNonNull(version, "version");
        requireNonNull(headers, "headers");
        @Nullable String host = host(version, headers);
        if (HttpMethod.CONNECT.equals(method)) {
            // Whatever its target's form: an origin-form CONNECT is malformed (§3.2.3), and a 2xx to
            // any CONNECT is a tunnel to the client (RFC 9110 §9.3.6), which the owner's answer is not.
            throw refused(TARGET, "authority-form (CONNECT) is not served: " + quote(rawTarget));
        }
        if (rawTarget.isEmpty()) {
            throw refused(TARGET, "empty request target");
        }
        if (rawTarget.indexOf('#') >= 0) {
            throw refused(TARGET, "fragment ('#') in the target: " + quote(rawTarget));
        }
        if (rawTarget.charAt(0) == '/') {
            int q = rawTarget.indexOf('?');
            String rawPath = q < 0 ? rawTarget : rawTarget.substring(0, q);
            String query = q < 0 ? null : checkQuery(rawTarget.substring(q + 1));
            return new RequestTarget(Form.ORIGIN, normalizePath(rawPath), query, host);
        }
        if (rawTarget.equals("*")) {
            if (!HttpMethod.OPTIONS.equals(method)) {
                throw refused(TARGET, "asterisk-form ('*') is only for OPTIONS, not " + quote(method.name()));
            }
            return new RequestTarget(Form.ASTERISK, "*", null, host);
        }
        String lower = rawTarget.toLowerCase(Locale.ROOT);
        if (lower.startsWith("http://")) {
            return absolute(rawTarget, "http://".length());
        }
        if (lower.startsWith("https://")) {
            return absolute(rawTarget, "https://".length());
        }
        int colon = rawTarget.indexOf(':');
        if (colon > 0 && isScheme(rawTarget.substring(0, colon)) && rawTarget.startsWith("//", colon + 1)) {
            throw refused(
                    TARGET, "scheme " + quote(rawTarget.substring(0, colon)) + " not served (expected: http or https)");
        }
        throw refused(TARGET, "not origin-form ('/'), absolute-form (http:// or https://) or '*': " + quote(rawTarget));
    }

    /**
     * Normalizes a path on its own, by the rules of {@link #parse}: for the relay's rest path, which
     * is appended to a target's base path and so must not climb.
     *
     * @throws SpectorException BAD_REQUEST, field {@code target}, with a reason saying what is wrong
     */
    static String normalizePath(String rawPath) {
        requireNonNull(rawPath, "rawPath");
        if (rawPath.isEmpty() || rawPath.charAt(0) != '/') {
            throw refused(TARGET, "path does not start with '/': " + quote(rawPath));
        }
        return removeDotSegments(checkAndDecode(rawPath));
    }

    /** Returns the form the target was written in. */
    Form form() {
        return form;
    }

    /** Returns the normalized path: it starts with {@code /}, or is {@code *} for {@link Form#ASTERISK}. */
    String path() {
        return path;
    }

    /** Returns the raw query after the first {@code ?}, unchanged, or null when there was no {@code ?}. */
    @Nullable
    String query() {
        return query;
    }

    /** Returns what is forwarded: the normalized path, then {@code ?} and the query if there was one. */
    String pathAndQuery() {
        return pathAndQuery;
    }

    /**
     * Returns the effective {@code host[:port]}: the absolute-form authority, else the Host value;
     * null when there is none (HTTP/1.0 without Host, or an empty Host).
     */
    @Nullable
    String authority() {
        return authority;
    }

    @Override
    public String toString() {
        return "RequestTarget{" + form + ' ' + pathAndQuery + ", authority=" + authority + '}';
    }

    private static RequestTarget absolute(String rawTarget, int authorityStart) {
        int end = authorityStart;
        while (end < rawTarget.length() && rawTarget.charAt(end) != '/' && rawTarget.charAt(end) != '?') {
            end++;
        }
        String rawAuthority = rawTarget.substring(authorityStart, end);
        if (rawAuthority.indexOf('@') >= 0) {
            throw refused(TARGET, "userinfo ('@') in the authority: " + quote(rawAuthority));
        }
        if (rawAuthority.isEmpty()) {
            throw refused(TARGET, "absolute-form without a host: " + quote(rawTarget));
        }
        String authority = authority(TARGET, rawAuthority);
        String rest = rawTarget.substring(end);
        int q = rest.indexOf('?');
        String rawPath = q < 0 ? rest : rest.substring(0, q);
        String query = q < 0 ? null : checkQuery(rest.substring(q + 1));
        String path = rawPath.isEmpty() ? "/" : normalizePath(rawPath);
        return new RequestTarget(Form.ABSOLUTE, path, query, authority);
    }

    private static @Nullable String host(HttpVersion version, HttpHeaders headers) {
        List<String> values = headers.getAll(HttpHeaderNames.HOST);
        if (values.isEmpty()) {
            boolean http11 = version.majorVersion() > 1 || (version.majorVersion() == 1 && version.minorVersion() >= 1);
            if (http11) {
                throw refused(HOST, "missing (required in " + version.text() + ")");
            }
            return null;
        }
        if (values.size() > 1) {
            throw refused(HOST, values.size() + " Host field lines (expected: 1)");
        }
        String value = trimOws(values.get(0));
        if (value.isEmpty()) {
            return null;
        }
        if (value.indexOf(',') >= 0) {
            throw refused(HOST, "a list of values (expected: one uri-host[:port]): " + quote(value));
        }
        return authority(HOST, value);
    }

    /** Checks {@code uri-host [":" port]}; returns it without an empty port. */
    private static String authority(String field, String value) {
        String hostPart;
        String port;
        if (value.charAt(0) == '[') {
            int close = value.indexOf(']');
            if (close < 0) {
                throw refused(field, "IP literal without ']': " + quote(value));
            }
            String literal = value.substring(1, close);
            if (!isIpv6(literal) && !isIpvFuture(literal)) {
                throw refused(field, "not an IPv6 or IPvFuture literal: " + quote(value));
            }
            hostPart = value.substring(0, close + 1);
            String after = value.substring(close + 1);
            if (!after.isEmpty() && after.charAt(0) != ':') {
                throw refused(field, "characters after the IP literal: " + quote(value));
            }
            port = after.isEmpty() ? null : after.substring(1);
        } else {
            int colon = value.indexOf(':');
            hostPart = colon < 0 ? value : value.substring(0, colon);
            port = colon < 0 ? null : value.substring(colon + 1);
            if (hostPart.isEmpty()) {
                throw refused(field, "empty host: " + quote(value));
            }
            if (hostPart.length() > MAX_REG_NAME_CHARS) {
                throw refused(
                        field,
                        "host name of " + hostPart.length() + " characters (expected: at most " + MAX_REG_NAME_CHARS
                                + ")");
            }
            checkRegName(field, hostPart, value);
        }
        if (port == null) {
            return value;
        }
        if (port.isEmpty()) {
            return hostPart;
        }
        if (port.length() > MAX_PORT_DIGITS || !allDigits(port)) {
            throw refused(field, "port is not 1.." + MAX_PORT_DIGITS + " digits: " + quote(value));
        }
        if (Integer.parseInt(port) > MAX_PORT) {
            throw refused(field, "port " + port + " (expected: 0.." + MAX_PORT + ")");
        }
        return value;
    }

    private static void checkRegName(String field, String name, String value) {
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c == '%') {
                escape(field, name, i, "host");
                i += 2;
            } else if (!isUnreserved(c) && SUB_DELIMS.indexOf(c) < 0) {
                throw refused(field, describe(c) + " in the host: " + quote(value));
            }
        }
    }

    /** Checks every character and escape of a path; decodes unreserved escapes, upper-cases the rest. */
    private static String checkAndDecode(String rawPath) {
        int plain = 0;
        while (plain < rawPath.length() && isPlainPathChar(rawPath.charAt(plain))) {
            plain++;
        }
        if (plain == rawPath.length()) {
            return rawPath; // the usual path: nothing to decode, no copy (issue 14)
        }
        StringBuilder out = new StringBuilder(rawPath.length());
        for (int i = 0; i < rawPath.length(); i++) {
            char c = rawPath.charAt(i);
            if (c == '%') {
                int v = escape(TARGET, rawPath, i, "path");
                if (v == '/') {
                    throw refused(TARGET, "encoded '/' (%2F) in the path: " + quote(rawPath));
                }
                if (v == '\\') {
                    throw refused(TARGET, "encoded '\\' (%5C) in the path: " + quote(rawPath));
                }
                if (v == 0) {
                    throw refused(TARGET, "encoded NUL (%00) in the path: " + quote(rawPath));
                }
                if (v < 0x20 || v == 0x7F) {
                    throw refused(
                            TARGET,
                            "encoded control character (%" + HEX[v >> 4] + HEX[v & 15] + ") in the path: "
                                    + quote(rawPath));
                }
                if (isUnreserved((char) v)) {
                    out.append((char) v);
                } else {
                    out.append('%').append(HEX[v >> 4]).append(HEX[v & 15]);
                }
                i += 2;
            } else if (c == '/' || isPchar(c)) {
                out.append(c);
            } else {
                throw refused(TARGET, describe(c) + " in the path: " + quote(rawPath));
            }
        }
        return out.toString();
    }

    /**
     * Removes dot-segments (RFC 3986 §5.2.4) from a checked path, merging runs of '/'; a '..' with
     * no segment left to remove is refused.
     */
    private static String removeDotSegments(String path) {
        return isNormal(path) ? path : removeDotSegmentsInFull(path);
    }

    /**
     * Answers whether a checked path is already what {@link #removeDotSegmentsInFull} makes of it:
     * no empty segment ({@code //}), no {@code .} or {@code ..} segment, at most {@link
     * #MAX_SEGMENTS} segments. One scan and no copy, for the usual path (issue 14).
     */
    static boolean isNormal(String path) {
        int n = path.length();
        int segments = 0;
        for (int i = 0; i < n; i++) {
            if (path.charAt(i) != '/' || i + 1 == n) {
                continue;
            }
            char c = path.charAt(i + 1);
            if (c == '/') {
                return false;
            }
            if (c == '.') {
                int after = i + 2; // past "/."
                if (after == n || path.charAt(after) == '/' || path.charAt(after) == ';') {
                    return false; // "." or ".;"
                }
                if (path.charAt(after) == '.'
                        && (after + 1 == n || path.charAt(after + 1) == '/' || path.charAt(after + 1) == ';')) {
                    return false; // ".." or "..;"
                }
            }
            if (++segments > MAX_SEGMENTS) {
                return false; // the full pass says why
            }
        }
        return true;
    }

    /** {@link #removeDotSegments} for any checked path: segment by segment. */
    static String removeDotSegmentsInFull(String path) {
        List<String> kept = new ArrayList<>();
        int segments = 0;
        boolean endsInDot = false;
        int start = 1;
        while (start <= path.length()) {
            int end = path.indexOf('/', start);
            if (end < 0) {
                end = path.length();
            }
            if (end > start) {
                if (++segments > MAX_SEGMENTS) {
                    throw refused(TARGET, "path has more than " + MAX_SEGMENTS + " segments");
                }
                String segment = path.substring(start, end);
                int semicolon = segment.indexOf(';');
                if (semicolon >= 0 && isDotSegment(segment.substring(0, semicolon))) {
                    // RFC 3986 keeps "..;x" a segment of its own, but a back end that drops path
                    // parameters first (Tomcat, Spring MVC) reads a "..": /api/v1/auth/..;/x would
                    // skip edge auth here and climb there. Refused, as Spring Security's firewall does.
                    throw refused(
                            TARGET,
                            "a dot-segment with parameters (" + quote(segment) + ") in the path: " + quote(path));
                }
                endsInDot = isDotSegment(segment);
                if (segment.equals("..")) {
                    if (kept.isEmpty()) {
                        throw refused(TARGET, "path climbs above the root: " + quote(path));
                    }
                    kept.remove(kept.size() - 1);
                } else if (!endsInDot) {
                    kept.add(segment);
                }
            }
            start = end + 1;
        }
        if (kept.isEmpty()) {
            return "/";
        }
        StringBuilder out = new StringBuilder(path.length());
        for (String segment : kept) {
            out.append('/').append(segment);
        }
        if (endsInDot || path.endsWith("/")) {
            out.append('/');
        }
        return out.toString();
    }

    private static boolean isDotSegment(String segment) {
        return segment.equals(".") || segment.equals("..");
    }

    /** A path character that {@link #checkAndDecode} keeps as it is: {@code /} or a pchar ({@code %} is none). */
    private static boolean isPlainPathChar(char c) {
        return c == '/' || isPchar(c);
    }

    /**
     * The characters outside RFC 3986's query that browsers send as they are: the WHATWG URL
     * standard's query percent-encode set leaves them raw, so {@code ?a[]=1} (PHP's arrays), {@code
     * ?filter={x}} or {@code ?q=a|b} arrive unescaped, and nginx, HAProxy and Envoy pass them. None
     * can end the target, split a field or change the path; they are forwarded as they came. The
     * backslash is not among them (a path-confusion character, refused here as before).
     */
    static final String BROWSER_QUERY_CHARS = "[]{}|^`";

    /**
     * Returns {@code query} with each of {@link #BROWSER_QUERY_CHARS} percent-encoded (as RFC 3986
     * section 2.1 would have had the client send it), the rest unchanged: for a relayed request,
     * whose URL must be a URI.
     */
    static String escapeBrowserQueryChars(String query) {
        StringBuilder out = null;
        for (int i = 0; i < query.length(); i++) {
            char c = query.charAt(i);
            if (BROWSER_QUERY_CHARS.indexOf(c) >= 0) {
                if (out == null) {
                    out = new StringBuilder(query.length() + 8).append(query, 0, i);
                }
                out.append('%')
                        .append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xF, 16)));
            } else if (out != null) {
                out.append(c);
            }
        }
        return out == null ? query : out.toString();
    }

    /**
     * Checks a query for RFC 3986 query characters, {@link #BROWSER_QUERY_CHARS} and well-formed
     * escapes; returns it unchanged.
     */
    private static String checkQuery(String query) {
        for (int i = 0; i < query.length(); i++) {
            char c = query.charAt(i);
            if (c == '%') {
                escape(TARGET, query, i, "query");
                i += 2;
            } else if (!isPchar(c) && c != '/' && c != '?' && BROWSER_QUERY_CHARS.indexOf(c) < 0) {
                throw refused(TARGET, describe(c) + " in the query: " + quote(query));
            }
        }
        return query;
    }

    /** Returns the octet of the escape at {@code s[i] == '%'}, or refuses a malformed one. */
    private static int escape(String field, String s, int i, String where) {
        if (i + 2 >= s.length()) {
            throw refused(field, "truncated percent-encoding in the " + where + ": " + quote(s));
        }
        if (!isHex(s.charAt(i + 1)) || !isHex(s.charAt(i + 2))) {
            throw refused(
                    field,
                    "malformed percent-encoding " + quote(s.substring(i, i + 3)) + " in the " + where + ": "
                            + quote(s));
        }
        return Character.digit(s.charAt(i + 1), 16) << 4 | Character.digit(s.charAt(i + 2), 16);
    }

    private static boolean isPchar(char c) {
        return isUnreserved(c) || SUB_DELIMS.indexOf(c) >= 0 || c == ':' || c == '@';
    }

    private static boolean isUnreserved(char c) {
        return isAlpha(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == '~';
    }

    private static boolean isAlpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static boolean isHex(char c) {
        return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }

    private static boolean allDigits(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (!isDigit(s.charAt(i))) {
                return false;
            }
        }
        return true;
    }

    /** RFC 3986 §3.1: {@code ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )}. */
    private static boolean isScheme(String s) {
        if (!isAlpha(s.charAt(0))) {
            return false;
        }
        for (int i = 1; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!isAlpha(c) && !isDigit(c) && c != '+' && c != '-' && c != '.') {
                return false;
            }
        }
        return true;
    }

    /** RFC 3986 §3.2.2 {@code IPv6address}: 8 groups of 1-4 hex digits, one "::" for a run of zeros. */
    private static boolean isIpv6(String s) {
        int n = s.length();
        int groups = 0;
        boolean compressed = false;
        int i = 0;
        if (s.startsWith("::")) {
            compressed = true;
            i = 2;
        } else if (s.startsWith(":")) {
            return false;
        }
        while (i < n) {
            int j = i;
            while (j < n && j - i <= 4 && isHex(s.charAt(j))) {
                j++;
            }
            if (j < n && s.charAt(j) == '.') {
                if (!isIpv4(s.substring(i))) {
                    return false;
                }
                groups += 2;
                break;
            }
            if (j == i || j - i > 4) {
                return false;
            }
            groups++;
            if (j == n) {
                break;
            }
            if (s.charAt(j) != ':') {
                return false;
            }
            i = j + 1;
            if (i < n && s.charAt(i) == ':') {
                if (compressed) {
                    return false;
                }
                compressed = true;
                i++;
            } else if (i == n) {
                return false;
            }
        }
        return compressed ? groups <= 7 : groups == 8;
    }

    /** RFC 3986 §3.2.2 {@code IPv4address}: four dec-octets 0-255, no leading zero. */
    private static boolean isIpv4(String s) {
        String[] octets = s.split("\\.", -1);
        if (octets.length != 4) {
            return false;
        }
        for (String octet : octets) {
            if (octet.isEmpty()
                    || octet.length() > 3
                    || !allDigits(octet)
                    || (octet.length() > 1 && octet.charAt(0) == '0')
                    || Integer.parseInt(octet) > 255) {
                return false;
            }
        }
        return true;
    }

    /** RFC 3986 §3.2.2 {@code IPvFuture}: {@code "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )}. */
    private static boolean isIpvFuture(String s) {
        if (s.length() < 4 || (s.charAt(0) != 'v' && s.charAt(0) != 'V')) {
            return false;
        }
        int dot = s.indexOf('.');
        if (dot < 2) {
            return false;
        }
        for (int i = 1; i < dot; i++) {
            if (!isHex(s.charAt(i))) {
                return false;
            }
        }
        if (dot == s.length() - 1) {
            return false;
        }
        for (int i = dot + 1; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!isUnreserved(c) && SUB_DELIMS.indexOf(c) < 0 && c != ':') {
                return false;
            }
        }
        return true;
    }

    private static String trimOws(String s) {
        int start = 0;
        int end = s.length();
        while (start < end && (s.charAt(start) == ' ' || s.charAt(start) == '\t')) {
            start++;
        }
        while (end > start && (s.charAt(end - 1) == ' ' || s.charAt(end - 1) == '\t')) {
            end--;
        }
        return s.substring(start, end);
    }

    /** Names a refused character without echoing it raw. */
    private static String describe(char c) {
        if (c == 0) {
            return "NUL";
        }
        if (c == '\\') {
            return "'\\'";
        }
        if (c == ' ') {
            return "space";
        }
        if (c < 0x20 || c == 0x7F) {
            return "control character " + codePoint(c);
        }
        if (c > 0x7E) {
            return "non-ASCII character " + codePoint(c);
        }
        return "character '" + c + "'";
    }

    private static String codePoint(char c) {
        return String.format(Locale.ROOT, "U+%04X", (int) c);
    }

    /**
     * Quotes client input for a reason: at most {@link #MAX_QUOTED_CHARS} characters, anything but
     * printable ASCII written as {@code \\uXXXX}.
     */
    private static String quote(String s) {
        int n = Math.min(s.length(), MAX_QUOTED_CHARS);
        StringBuilder out = new StringBuilder(n + 24).append('\'');
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7F) {
                out.append(c);
            } else {
                out.append(String.format(Locale.ROOT, "\\u%04X", (int) c));
            }
        }
        out.append('\'');
        if (s.length() > n) {
            out.append("... (").append(s.length()).append(" characters)");
        }
        return out.toString();
    }

    private static SpectorException refused(String field, String reason) {
        return SpectorException.badRequest(field, reason);
    }
}
