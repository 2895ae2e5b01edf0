package com.spectrayan.spector.gateway;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A strict parser of every byte a server sent on one connection, for tests that must not let a
 * lenient client repair what the gateway wrote (RFC 9112). Each byte must belong to a well-formed
 * response: a status line, field lines ended by CRLF (no obs-fold, no bare CR or LF), and a body
 * framed as the request it answers allows.
 *
 * <pre>
 *   status-line  = "HTTP/1.1" SP 3DIGIT SP reason CRLF
 *   field-line   = token ":" OWS value OWS CRLF          (value: VCHAR, SP, HTAB, obs-text)
 *   body         = nothing                  for HEAD, 1xx, 204, 304
 *                | Content-Length octets    (one field line, 1*DIGIT)
 *                | chunked                  (HTTP/1.1 requests only; never with Content-Length)
 *                | the rest of the stream   (HTTP/1.0 requests only)
 * </pre>
 *
 * <p>Responses are matched to requests in order: the n-th final response answers the n-th request.
 * A stream cut by a reset may end anywhere (the server may reset a response it cannot finish); a
 * stream that ends with a FIN must end between responses.
 */
final class StrictResponses {
    /** The largest chunk the parser believes (the gateway's chunks are at most 64 KiB). */
    static final long MAX_CHUNK_BYTES = 16L << 20;

    /** What the parser needs to know of the request a response answers. */
    record Asked(String method, boolean http10) {
        boolean head() {
            return method.equals("HEAD");
        }
    }

    /** One final response: its status, field lines (names lower-cased) and decoded body. */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Response(int index, int status, List<Map.Entry<String, String>> fields, byte[] body, int interim) {
        /** Returns the values of a field, in order. */
        List<String> all(String name) {
            List<String> out = new ArrayList<>();
            for (Map.Entry<String, String> f : fields) {
                if (f.getKey().equals(name)) {
                    out.add(f.getValue());
                }
            }
            return out;
        }

        /** Returns the first value of a field, or null. */
        @Nullable
        String header(String name) {
            List<String> values = all(name);
            return values.isEmpty() ? null : values.get(0);
        }

        /** Answers whether the response says {@code Connection: close}. */
        boolean closes() {
            for (String v : all("connection")) {
                for (String token : v.split(",", -1)) {
                    if (token.strip().equalsIgnoreCase("close")) {
                        return true;
                    }
                }
            }
            return false;
        }

        String text() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /**
     * What the bytes held: the complete responses, the rule each malformed part broke, and whether
     * the stream was cut by a reset inside a response.
     */
    record Result(List<Response> responses, List<String> violations, boolean cut) {}

    private final byte[] in;
    private final boolean reset;
    private final List<Asked> asked;
    private final int spare;
    private int pos;
    private final List<Response> responses = new ArrayList<>();
    private final List<String> violations = new ArrayList<>();

    private StrictResponses(byte[] in, boolean reset, List<Asked> asked, int spare) {
        this.in = in;
        this.reset = reset;
        this.asked = asked;
        this.spare = spare;
    }

    /**
     * Parses what a server sent on one connection.
     *
     * @param in every byte read, up to the end of the stream
     * @param reset whether the stream ended by a reset (not a FIN)
     * @param asked the requests sent, in order
     * @param spare how many final responses beyond one per request are tolerated (a garbled
     *     request can make a server see one request more than the client meant, and answer it)
     */
    static Result parse(byte[] in, boolean reset, List<Asked> asked, int spare) {
        StrictResponses p = new StrictResponses(in, reset, asked, spare);
        boolean cut = p.run();
        return new Result(List.copyOf(p.responses), List.copyOf(p.violations), cut);
    }

    /** Thrown when the input ends inside a response. */
    private static final class Incomplete extends Exception {
        private static final long serialVersionUID = 1L;

        Incomplete(String where) {
            super(where, null, false, false);
        }
    }

    /** Thrown when a part breaks the grammar: the rest of the stream cannot be framed. */
    private static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String what) {
            super(what, null, false, false);
        }
    }

    private boolean run() {
        int interim = 0;
        while (pos < in.length) {
            int start = pos;
            try {
                String statusLine = line("status line");
                int status = status(statusLine);
                List<Map.Entry<String, String>> fields = fields("header section");
                if (status < 200) {
                    interim(status, fields);
                    interim++;
                    continue;
                }
                int index = responses.size();
                if (index >= asked.size() + spare) {
                    violations.add("response " + index + " (" + statusLine + ") but only " + asked.size()
                            + " requests were sent: more responses than requests");
                }
                Asked a = index < asked.size()
                        ? asked.get(index)
                        : new Asked("GET", !asked.isEmpty() && asked.get(0).http10());
                byte[] body = body(index, status, a, fields);
                Response r = new Response(index, status, fields, body, interim);
                responses.add(r);
                interim = 0;
                if (r.closes() && pos < in.length) {
                    violations.add("response " + index + " says Connection: close, yet " + (in.length - pos)
                            + " more bytes follow: " + Bytes.show(in, pos, 120));
                    return false;
                }
            } catch (Incomplete e) {
                if (!reset) {
                    violations.add("the stream ended with a FIN inside a response (" + e.getMessage() + "): "
                            + Bytes.show(in, start, 200));
                }
                return true;
            } catch (Malformed e) {
                violations.add(e.getMessage() + " at byte " + pos + ": " + Bytes.show(in, start, 200));
                return false;
            }
        }
        return false;
    }

    private static int status(String line) throws Malformed {
        if (line.length() < 13
                || !line.startsWith("HTTP/1.1 ")
                || line.charAt(12) != ' '
                || !Character.isDigit(line.charAt(9))
                || !Character.isDigit(line.charAt(10))
                || !Character.isDigit(line.charAt(11))
                || line.charAt(9) == '0') {
            throw new Malformed("not a status line \"HTTP/1.1 DDD reason\": '" + Bytes.escape(line) + "'");
        }
        for (int i = 13; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c != '\t' && (c < 0x20 || c == 0x7f)) {
                throw new Malformed("a control character in the reason phrase");
            }
        }
        int status = Integer.parseInt(line.substring(9, 12));
        if (status > 599) {
            throw new Malformed("status " + status + " (expected: 100..599)");
        }
        return status;
    }

    private void interim(int status, List<Map.Entry<String, String>> fields) {
        if (status == 101) {
            violations.add("a 101 response though no request asked for an upgrade");
        }
        int next = responses.size();
        if (next < asked.size() && asked.get(next).http10()) {
            violations.add(status + " sent to an HTTP/1.0 request (RFC 9110 §15.2: never a 1xx to 1.0)");
        }
        for (Map.Entry<String, String> f : fields) {
            if (f.getKey().equals("content-length") || f.getKey().equals("transfer-encoding")) {
                violations.add(status + " carries " + f.getKey() + " (RFC 9110 §8.6, RFC 9112 §6.1)");
            }
        }
    }

    private byte[] body(int index, int status, Asked a, List<Map.Entry<String, String>> fields)
            throws Incomplete, Malformed {
        List<String> lengths = new ArrayList<>();
        List<String> codings = new ArrayList<>();
        for (Map.Entry<String, String> f : fields) {
            if (f.getKey().equals("content-length")) {
                lengths.add(f.getValue());
            } else if (f.getKey().equals("transfer-encoding")) {
                codings.add(f.getValue());
            }
        }
        String what = "response " + index + " (" + status + " to " + a.method() + (a.http10() ? " 1.0" : "") + ")";
        if (lengths.size() > 1) {
            violations.add(what + " has " + lengths.size() + " Content-Length field lines");
        }
        long length = -1;
        if (!lengths.isEmpty()) {
            String v = lengths.get(0);
            if (v.isEmpty() || v.length() > 18 || !v.chars().allMatch(Character::isDigit)) {
                throw new Malformed(what + " has Content-Length '" + Bytes.escape(v) + "' (expected: 1*DIGIT)");
            }
            length = Long.parseLong(v);
        }
        boolean chunked = false;
        if (!codings.isEmpty()) {
            if (codings.size() > 1 || !codings.get(0).equalsIgnoreCase("chunked")) {
                violations.add(what + " has Transfer-Encoding " + codings + " (expected: one 'chunked')");
            }
            if (a.http10()) {
                violations.add(what + " has Transfer-Encoding, sent to an HTTP/1.0 request (RFC 9112 §6.1)");
            }
            if (length >= 0) {
                violations.add(what + " has both Content-Length and Transfer-Encoding (RFC 9112 §6.2)");
            }
            chunked = true;
        }
        if (status == 204 && (length >= 0 || chunked)) {
            violations.add(what + " carries framing on a 204 (RFC 9110 §8.6, RFC 9112 §6.1)");
        }
        if (a.head() || status == 204 || status == 304) {
            return new byte[0];
        }
        if (chunked) {
            return chunks(what);
        }
        if (length >= 0) {
            if (in.length - pos < length) {
                pos = in.length;
                throw new Incomplete(what + ": Content-Length " + length + ", fewer bytes came");
            }
            byte[] body = Arrays.copyOfRange(in, pos, pos + (int) length);
            pos += (int) length;
            return body;
        }
        if (!a.http10()) {
            violations.add(what + " has a body with neither Content-Length nor chunked framing (DESIGN §10: an"
                    + " HTTP/1.1 client gets chunked when the length is unknown)");
        }
        byte[] body = Arrays.copyOfRange(in, pos, in.length);
        pos = in.length;
        return body;
    }

    private byte[] chunks(String what) throws Incomplete, Malformed {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        while (true) {
            String sizeLine = line(what + ": chunk-size line");
            int semi = sizeLine.indexOf(';');
            String hex = semi < 0 ? sizeLine : sizeLine.substring(0, semi);
            if (hex.isEmpty() || hex.length() > 8 || !hex.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
                throw new Malformed(what + ": chunk-size '" + Bytes.escape(sizeLine) + "' (expected: 1*HEXDIG)");
            }
            long size = Long.parseLong(hex, 16);
            if (size > MAX_CHUNK_BYTES) {
                throw new Malformed(what + ": a chunk of " + size + " bytes");
            }
            if (size == 0) {
                fields(what + ": trailer section");
                return out.toByteArray();
            }
            if (in.length - pos < size + 2) {
                pos = in.length;
                throw new Incomplete(what + ": inside a chunk of " + size + " bytes");
            }
            out.write(in, pos, (int) size);
            pos += (int) size;
            if (in[pos] != '\r' || in[pos + 1] != '\n') {
                throw new Malformed(what + ": chunk data not followed by CRLF");
            }
            pos += 2;
        }
    }

    private List<Map.Entry<String, String>> fields(String where) throws Incomplete, Malformed {
        List<Map.Entry<String, String>> fields = new ArrayList<>();
        for (String l = line(where); !l.isEmpty(); l = line(where)) {
            if (l.charAt(0) == ' ' || l.charAt(0) == '\t') {
                throw new Malformed("obs-fold (a field line starting with whitespace) in the " + where);
            }
            int colon = l.indexOf(':');
            if (colon <= 0) {
                throw new Malformed("a field line without 'name:' in the " + where + ": '" + Bytes.escape(l) + "'");
            }
            String name = l.substring(0, colon);
            for (int i = 0; i < name.length(); i++) {
                if (!tchar(name.charAt(i))) {
                    throw new Malformed("field name '" + Bytes.escape(name) + "' is not a token");
                }
            }
            String value = l.substring(colon + 1);
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c != '\t' && (c < 0x20 || c == 0x7f)) {
                    throw new Malformed("a control character in field " + name);
                }
            }
            fields.add(Map.entry(name.toLowerCase(Locale.ROOT), value.strip()));
        }
        return fields;
    }

    /** Reads one CRLF-ended line (without its CRLF); a bare CR or LF is malformed. */
    private String line(String where) throws Incomplete, Malformed {
        int start = pos;
        for (int i = pos; i < in.length; i++) {
            byte b = in[i];
            if (b == '\n') {
                throw new Malformed("a bare LF in the " + where);
            }
            if (b == '\r') {
                if (i + 1 >= in.length) {
                    pos = in.length;
                    throw new Incomplete(where);
                }
                if (in[i + 1] != '\n') {
                    throw new Malformed("a bare CR in the " + where);
                }
                pos = i + 2;
                return new String(in, start, i - start, StandardCharsets.ISO_8859_1);
            }
            if (i - start > 64 * 1024) {
                throw new Malformed("a line over 64 KiB in the " + where);
            }
        }
        pos = in.length;
        throw new Incomplete(where);
    }

    private static boolean tchar(char c) {
        return (c >= 'a' && c <= 'z')
                || (c >= 'A' && c <= 'Z')
                || (c >= '0' && c <= '9')
                || "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
    }
}
