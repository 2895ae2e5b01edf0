package com.spectrayan.spector.gateway;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Tuple;
import org.jspecify.annotations.Nullable;

/**
 * Generators of hostile and ordinary request bytes for {@link EdgeFuzzTest}, and what RFC 9112
 * and the gateway's design say must become of each request.
 *
 * <p>A generated {@link TrySpec} is a description; {@link TrySpec#render} turns it into bytes with
 * tags fresh for each execution (a header {@code X-Fuzz: fz<try>-<i>} as the first field line of
 * request {@code i}, and a namespace {@code fz<try>x<i>}), so the owners' request logs tell exactly
 * which request of which try reached them, even when a shrink re-runs the same description.
 *
 * <pre>
 *   METHOD SP target SP version CRLF
 *   X-Fuzz: fz&lt;try&gt;-&lt;i&gt; CRLF          never mutated: the tag
 *   Host, Authorization, framing fields, quirk fields (each line ended by CRLF, or LF)
 *   CRLF
 *   body (Content-Length octets, or chunked; perhaps truncated, perhaps hiding a smuggled head)
 * </pre>
 */
final class EdgeRequests {
    private EdgeRequests() {}

    // ---- the description ----

    enum Endpoint {
        ECHO,
        OBJECT
    }

    /** A change to the path's segments: dot-segments, empty segments, escapes, case. */
    enum TrickKind {
        DOT,
        DOTDOT_AFTER_SEGMENT,
        DOTDOT,
        EMPTY_SEGMENT,
        ENCODE_UNRESERVED,
        ENCODED_SLASH,
        ENCODED_CONTROL,
        UPPER_CASE,
        TRAILING,
        AUTH_PREFIX
    }

    record Trick(TrickKind kind, int a, int b) {}

    record PathSpec(Endpoint endpoint, List<Trick> tricks) {}

    enum Form {
        ORIGIN,
        ABSOLUTE,
        ASTERISK,
        AUTHORITY
    }

    record TargetSpec(Form form, int query, int authority) {}

    enum HostMode {
        ONE,
        MISSING,
        DUPLICATE,
        INVALID
    }

    record HostSpec(HostMode mode, int variant) {}

    enum Auth {
        VALID,
        MISSING,
        GARBAGE,
        WRONG_SECRET
    }

    /** How the body is framed; the shapes after {@code CHUNKED} are the smuggling ones. */
    enum Framing {
        NONE,
        LENGTH,
        CHUNKED,
        LENGTH_AND_CHUNKED,
        CHUNKED_TAB,
        CHUNKED_TAB_AND_LENGTH,
        CHUNKED_FOLDED_AND_LENGTH,
        CHUNKED_IDENTITY_AND_LENGTH,
        XCHUNKED_AND_LENGTH,
        CHUNKED_SPACE_COLON_AND_LENGTH,
        LENGTH_TWICE_SAME,
        LENGTH_TWICE_DIFFERENT,
        LENGTH_LIST_DIFFERENT,
        LENGTH_INVALID;

        boolean chunkedOnTheWire() {
            return this == CHUNKED
                    || this == LENGTH_AND_CHUNKED
                    || this == CHUNKED_TAB
                    || this == CHUNKED_TAB_AND_LENGTH
                    || this == CHUNKED_FOLDED_AND_LENGTH
                    || this == CHUNKED_IDENTITY_AND_LENGTH
                    || this == XCHUNKED_AND_LENGTH
                    || this == CHUNKED_SPACE_COLON_AND_LENGTH;
        }

        /** Whether a smuggled head can hide where only a wrong reading of the framing finds it. */
        boolean canSmuggle() {
            return (chunkedOnTheWire() && this != CHUNKED && this != CHUNKED_TAB)
                    || this == LENGTH_TWICE_DIFFERENT
                    || this == LENGTH_LIST_DIFFERENT;
        }

        /** The RFC 9112 rule that makes a request with this framing a 400, or null. */
        @Nullable
        String refusal() {
            return switch (this) {
                case CHUNKED_IDENTITY_AND_LENGTH, XCHUNKED_AND_LENGTH ->
                    "RFC 9112 §6.3: Transfer-Encoding whose final coding is not chunked is 400, then close";
                case CHUNKED_SPACE_COLON_AND_LENGTH ->
                    "RFC 9112 §5.1: whitespace between a field name and its colon is 400";
                case LENGTH_TWICE_DIFFERENT, LENGTH_LIST_DIFFERENT, LENGTH_INVALID ->
                    "RFC 9112 §6.3: an invalid Content-Length (differing values, not digits) is 400, then close";
                default -> null;
            };
        }
    }

    /** A defect of a chunked body. */
    enum ChunkFlaw {
        NONE,
        BAD_SIZE,
        HUGE_SIZE,
        NEGATIVE_SIZE,
        MISSING_DATA_CRLF,
        NO_LAST_CHUNK,
        BARE_LF_SIZE,
        BARE_LF_DATA,
        BARE_LF_LAST;

        /** Whether no reading of the body completes it: the upstream request must be aborted. */
        boolean breaks() {
            return this == BAD_SIZE
                    || this == HUGE_SIZE
                    || this == NEGATIVE_SIZE
                    || this == MISSING_DATA_CRLF
                    || this == NO_LAST_CHUNK;
        }
    }

    /** How chunk-size lines are written: hex case, leading zeros, extensions, a trailer. */
    record ChunkStyle(boolean upperHex, int zeros, int extension, boolean trailer) {}

    record BodySpec(
            Framing framing, int length, int chunks, ChunkStyle style, ChunkFlaw flaw, boolean smuggle, int truncate) {}

    /** Extra or odd field lines. */
    enum Quirk {
        EXPECT_CONTINUE,
        CONNECTION_CLOSE,
        CONNECTION_KEEP_ALIVE,
        OBS_FOLD,
        BARE_CR,
        NUL,
        BARE_LF_LINES,
        SPACE_BEFORE_COLON,
        LONG_FIELD
    }

    record RequestSpec(
            String method,
            PathSpec path,
            TargetSpec target,
            boolean http10,
            HostSpec host,
            Auth auth,
            BodySpec body,
            List<Quirk> quirks) {}

    enum MutationKind {
        REPLACE_BYTE,
        INSERT,
        DELETE,
        DUPLICATE_LINE,
        FLIP_CASE
    }

    /** A byte-level change after the tag line of a single request. */
    record Mutation(MutationKind kind, int position, int arg) {}

    /** One try: one request, or a pipelined pair; byte mutations apply to a single request only. */
    record TrySpec(List<RequestSpec> requests, List<Mutation> mutations) {
        boolean mutated() {
            return requests.size() == 1 && !mutations.isEmpty();
        }

        /**
         * Renders the bytes with tags of try {@code id}; {@code closeLast} adds {@code Connection:
         * close} to the last request, so that a gateway that answers it also closes.
         */
        Rendered render(long id, Context ctx, boolean closeLast) {
            return EdgeRequests.render(this, id, ctx, closeLast);
        }
    }

    /** What rendering needs from the running cell. */
    record Context(int port, String token, String wrongToken) {}

    // ---- what was sent, and what must become of it ----

    /**
     * One request as sent, with the rules that apply to it (empty or null when none does, and
     * always so for a mutated request, whose framing the test no longer knows).
     *
     * @param path what its path may be normalized to; null for asterisk- and authority-form
     * @param mustRefuse the rules by which every correct gateway refuses it (never forwards it)
     * @param refuseStatus the status of that refusal
     * @param mustClose why no later request on the connection may be answered or forwarded
     * @param incomplete why its body can never complete upstream (no 2xx from an owner)
     * @param body the body an owner must receive when it answers 2xx; null when unknown
     * @param served whether it is plainly valid (an echo, a valid token, one Host, clean framing, a
     *     path that normalizes to the echo's), so every correct gateway forwards it and its owner
     *     answers 200
     */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Sent(
            int index,
            String tag,
            String namespace,
            String method,
            boolean http10,
            String target,
            ExpectedPath.@Nullable Outcome path,
            @Nullable String query,
            @Nullable String smuggledTag,
            List<String> mustRefuse,
            int refuseStatus,
            @Nullable String mustClose,
            @Nullable String incomplete,
            byte @Nullable [] body,
            boolean served) {}

    /** The bytes of a try and its requests; {@code truncated} when the last body stops short. */
    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    record Rendered(long id, byte[] bytes, List<Sent> requests, boolean mutated, boolean truncated) {
        List<StrictResponses.Asked> asked() {
            List<StrictResponses.Asked> out = new ArrayList<>();
            for (Sent s : requests) {
                out.add(new StrictResponses.Asked(s.method(), s.http10()));
            }
            return out;
        }
    }

    /** Returns the tag of request {@code i} of try {@code id}. */
    static String tag(long id, int i) {
        return "fz" + id + "-" + i;
    }

    /** Returns the tag of a head smuggled in the body of request {@code i} of try {@code id}. */
    static String smuggledTag(long id, int i) {
        return "fz" + id + "-s" + i;
    }

    /** A parsed tag: the try, the request, and whether it names a smuggled head. */
    record Tag(long id, int index, boolean smuggled) {
        /** Parses the first token of an {@code X-Fuzz} value, or returns null. */
        static @Nullable Tag parse(@Nullable String value) {
            if (value == null) {
                return null;
            }
            String v = value.strip().split("[\\s,]", 2)[0];
            int dash = v.indexOf('-');
            if (!v.startsWith("fz") || dash < 3) {
                return null;
            }
            try {
                long id = Long.parseLong(v.substring(2, dash));
                boolean smuggled = v.startsWith("s", dash + 1);
                int index = Integer.parseInt(v.substring(dash + (smuggled ? 2 : 1)));
                return new Tag(id, index, smuggled);
            } catch (NumberFormatException e) {
                return null;
            }
        }
    }

    // ---- generators ----

    static Arbitrary<TrySpec> tries() {
        Arbitrary<List<RequestSpec>> requests = Arbitraries.frequencyOf(
                Tuple.of(6, request().list().ofSize(1)),
                Tuple.of(1, request().list().ofSize(2)));
        Arbitrary<List<Mutation>> mutations = Arbitraries.frequencyOf(
                Tuple.of(3, Arbitraries.just(List.<Mutation>of())),
                Tuple.of(1, mutation().list().ofMinSize(1).ofMaxSize(3)));
        return Combinators.combine(requests, mutations).as(TrySpec::new);
    }

    static Arbitrary<RequestSpec> request() {
        Arbitrary<String> method = Arbitraries.frequency(
                Tuple.of(30, "GET"),
                Tuple.of(25, "PUT"),
                Tuple.of(25, "POST"),
                Tuple.of(15, "HEAD"),
                Tuple.of(3, "OPTIONS"),
                Tuple.of(2, "get"));
        Arbitrary<List<Trick>> tricks = Arbitraries.frequencyOf(
                Tuple.of(5, Arbitraries.just(List.<Trick>of())),
                Tuple.of(5, trick().list().ofMinSize(1).ofMaxSize(3)));
        Arbitrary<PathSpec> path = Combinators.combine(
                        Arbitraries.frequency(Tuple.of(6, Endpoint.ECHO), Tuple.of(4, Endpoint.OBJECT)), tricks)
                .as(PathSpec::new);
        Arbitrary<TargetSpec> target = Combinators.combine(
                        Arbitraries.frequency(
                                Tuple.of(88, Form.ORIGIN),
                                Tuple.of(7, Form.ABSOLUTE),
                                Tuple.of(3, Form.ASTERISK),
                                Tuple.of(2, Form.AUTHORITY)),
                        Arbitraries.frequency(Tuple.of(7, 0), Tuple.of(1, 1), Tuple.of(1, 2), Tuple.of(1, 3)),
                        Arbitraries.integers().between(0, 1))
                .as(TargetSpec::new);
        Arbitrary<Boolean> http10 = Arbitraries.frequency(Tuple.of(9, false), Tuple.of(1, true));
        Arbitrary<HostSpec> host = Combinators.combine(
                        Arbitraries.frequency(
                                Tuple.of(88, HostMode.ONE),
                                Tuple.of(4, HostMode.MISSING),
                                Tuple.of(4, HostMode.DUPLICATE),
                                Tuple.of(4, HostMode.INVALID)),
                        Arbitraries.integers().between(0, 5))
                .as(HostSpec::new);
        Arbitrary<Auth> auth = Arbitraries.frequency(
                Tuple.of(88, Auth.VALID),
                Tuple.of(6, Auth.MISSING),
                Tuple.of(3, Auth.GARBAGE),
                Tuple.of(3, Auth.WRONG_SECRET));
        Arbitrary<List<Quirk>> quirks = Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.just(List.<Quirk>of())),
                Tuple.of(
                        4,
                        Arbitraries.of(Quirk.class)
                                .list()
                                .uniqueElements()
                                .ofMinSize(1)
                                .ofMaxSize(2)));
        return Combinators.combine(method, path, target, http10, host, auth, body(), quirks)
                .as(RequestSpec::new);
    }

    static Arbitrary<Trick> trick() {
        return Combinators.combine(
                        Arbitraries.of(TrickKind.class),
                        Arbitraries.integers().between(0, 63),
                        Arbitraries.integers().between(0, 63))
                .as(Trick::new);
    }

    static Arbitrary<BodySpec> body() {
        Arbitrary<Framing> framing = Arbitraries.frequency(
                Tuple.of(25, Framing.NONE),
                Tuple.of(25, Framing.LENGTH),
                Tuple.of(25, Framing.CHUNKED),
                Tuple.of(3, Framing.LENGTH_AND_CHUNKED),
                Tuple.of(2, Framing.CHUNKED_TAB),
                Tuple.of(2, Framing.CHUNKED_TAB_AND_LENGTH),
                Tuple.of(2, Framing.CHUNKED_FOLDED_AND_LENGTH),
                Tuple.of(2, Framing.CHUNKED_IDENTITY_AND_LENGTH),
                Tuple.of(2, Framing.XCHUNKED_AND_LENGTH),
                Tuple.of(2, Framing.CHUNKED_SPACE_COLON_AND_LENGTH),
                Tuple.of(2, Framing.LENGTH_TWICE_SAME),
                Tuple.of(2, Framing.LENGTH_TWICE_DIFFERENT),
                Tuple.of(2, Framing.LENGTH_LIST_DIFFERENT),
                Tuple.of(2, Framing.LENGTH_INVALID));
        Arbitrary<Integer> length = Arbitraries.frequencyOf(
                Tuple.of(2, Arbitraries.just(0)),
                Tuple.of(4, Arbitraries.integers().between(1, 16)),
                Tuple.of(4, Arbitraries.integers().between(17, 300)));
        Arbitrary<ChunkStyle> style = Combinators.combine(
                        Arbitraries.of(false, true),
                        Arbitraries.frequency(Tuple.of(8, 0), Tuple.of(3, 2), Tuple.of(1, 5000)),
                        Arbitraries.frequency(Tuple.of(8, 0), Tuple.of(1, 1), Tuple.of(1, 2), Tuple.of(1, 3)),
                        Arbitraries.frequency(Tuple.of(8, false), Tuple.of(1, true)))
                .as(ChunkStyle::new);
        Arbitrary<ChunkFlaw> flaw = Arbitraries.frequencyOf(
                Tuple.of(8, Arbitraries.just(ChunkFlaw.NONE)), Tuple.of(2, Arbitraries.of(ChunkFlaw.class)));
        Arbitrary<Integer> truncate = Arbitraries.frequencyOf(
                Tuple.of(85, Arbitraries.just(-1)),
                Tuple.of(15, Arbitraries.integers().between(0, 10_000)));
        return Combinators.combine(
                        framing,
                        length,
                        Arbitraries.integers().between(1, 4),
                        style,
                        flaw,
                        Arbitraries.of(false, true),
                        truncate)
                .as(BodySpec::new);
    }

    static Arbitrary<Mutation> mutation() {
        return Combinators.combine(
                        Arbitraries.of(MutationKind.class),
                        Arbitraries.integers().between(0, 100_000),
                        Arbitraries.integers().between(0, 31))
                .as(Mutation::new);
    }

    // ---- rendering ----

    private static final String[] DOTS = {"..", "%2e%2e", "%2E%2E", ".%2e", "%2e.", "%2E."};
    private static final String[] DOT = {".", "%2e", "%2E"};
    private static final String[] SLASHES = {"%2f", "%2F", "%5c", "%5C"};
    private static final String[] CONTROLS = {"%00", "%0a", "%0D", "%09", "%7f", "%1F"};
    private static final String[] TRAILING = {"", ".", "..", "%2e", "%2E%2e"};
    private static final String[] QUERIES = {"", "q=1", "a=%2e%2e/../b&c=./", "x=%2F%5c//"};
    private static final String[] INVALID_HOSTS = {"a b", "a/b", "a@b", "[::1", "h:x1", "h\\x"};
    private static final String[] INVALID_LENGTHS = {"+%d", "%da", "0x%x", "%d.0"};
    private static final String[] REPLACEMENTS = {"\r", "\n", "\0", " ", "\t", ":", ",", "0", "9", "a", "\u00ff"};
    private static final String[] INSERTS = {
        "\r\n",
        "\n",
        "\r",
        " ",
        "\t",
        "\r\n ",
        "\r\n\r\n",
        "Transfer-Encoding: chunked\r\n",
        "Content-Length: 3\r\n",
        "0\r\n\r\n",
        ",chunked",
        "Host: x\r\n"
    };

    private static Rendered render(TrySpec spec, long id, Context ctx, boolean closeLast) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        List<Sent> sent = new ArrayList<>();
        int tagEnd = 0;
        boolean http10 = spec.requests().get(0).http10();
        boolean mutated = spec.mutated();
        boolean[] truncated = new boolean[1];
        for (int i = 0; i < spec.requests().size(); i++) {
            boolean last = i == spec.requests().size() - 1;
            RequestSpec r = spec.requests().get(i);
            int start = out.size();
            Sent s = renderOne(r, id, i, http10, last && closeLast, last ? truncated : null, mutated, ctx, out);
            sent.add(s);
            if (i == 0) {
                tagEnd = start + headPrefixLength(out.toByteArray(), start);
            }
        }
        byte[] bytes = out.toByteArray();
        if (mutated) {
            for (Mutation m : spec.mutations()) {
                bytes = mutate(bytes, tagEnd, m);
            }
        }
        return new Rendered(id, bytes, List.copyOf(sent), mutated, truncated[0]);
    }

    /** Returns the length of the request line and the tag line from {@code start}. */
    private static int headPrefixLength(byte[] b, int start) {
        int lines = 0;
        for (int i = start; i < b.length; i++) {
            if (b[i] == '\n' && ++lines == 2) {
                return i + 1 - start;
            }
        }
        return b.length - start;
    }

    private static Sent renderOne(
            RequestSpec r,
            long id,
            int index,
            boolean http10,
            boolean close,
            boolean @Nullable [] truncated,
            boolean mutated,
            Context ctx,
            ByteArrayOutputStream out) {
        String ns = "fz" + id + "x" + index;
        String tag = tag(id, index);
        List<String> refusals = new ArrayList<>();
        boolean refuse401 = false;

        // The target.
        String rawPath = path(r.path(), ns, index);
        String query = QUERIES[r.target().query()];
        String target;
        ExpectedPath.Outcome outcome = null;
        switch (r.target().form()) {
            case ORIGIN -> {
                target = rawPath + (query.isEmpty() ? "" : "?" + query);
                outcome = ExpectedPath.of(rawPath);
            }
            case ABSOLUTE -> {
                String authority = r.target().authority() == 0 ? "127.0.0.1:" + ctx.port() : "example.com";
                target = "http://" + authority + rawPath + (query.isEmpty() ? "" : "?" + query);
                outcome = ExpectedPath.of(rawPath);
            }
            case ASTERISK -> {
                target = "*";
                if (!r.method().equals("OPTIONS")) {
                    refusals.add("design §2: asterisk-form is 400 except OPTIONS *");
                }
            }
            default -> {
                target = "example.com:443";
                refusals.add("design §2: authority-form is 400");
            }
        }
        if (outcome != null && outcome.mustRefuse()) {
            refusals.add("design §2: the path '" + rawPath
                    + "' climbs above the root or holds an encoded '/', '\\' or control");
        }
        if (outcome != null && !outcome.mustRefuse() && r.auth() != Auth.VALID && needsAuth(outcome)) {
            refuse401 = true;
            refusals.add("DESIGN §4: /api/v1/** (not /api/v1/auth/**) needs a valid bearer token; " + r.auth());
        }

        String version = http10 ? "HTTP/1.0" : "HTTP/1.1";
        List<String> lines = new ArrayList<>();

        // Host.
        String host = "127.0.0.1:" + ctx.port();
        boolean origin = r.target().form() != Form.ABSOLUTE;
        switch (r.host().mode()) {
            case ONE -> lines.add("Host: " + host);
            case MISSING -> {
                if (!http10 && origin) {
                    refusals.add("RFC 9112 §3.2: an HTTP/1.1 request without Host is 400");
                }
            }
            case DUPLICATE -> {
                lines.add("Host: " + host);
                lines.add("Host: " + (r.host().variant() % 2 == 0 ? host : "example.com"));
                if (origin) {
                    refusals.add("RFC 9112 §3.2: more than one Host field line is 400");
                }
            }
            case INVALID -> {
                String bad = INVALID_HOSTS[r.host().variant() % INVALID_HOSTS.length];
                lines.add("Host: " + bad);
                if (origin) {
                    refusals.add("RFC 9112 §3.2: an invalid Host ('" + bad + "') is 400");
                }
            }
        }

        // Authorization.
        switch (r.auth()) {
            case VALID -> lines.add("Authorization: Bearer " + ctx.token());
            case GARBAGE -> lines.add("Authorization: Bearer not.a-jwt");
            case WRONG_SECRET -> lines.add("Authorization: Bearer " + ctx.wrongToken());
            default -> {}
        }

        // The body and its framing.
        BodySpec b = r.body();
        byte[] content = content(b.length(), (int) (id % 26));
        byte[] data = content;
        String smuggled = null;
        int lengthAt = -1;
        if (b.smuggle() && b.framing().canSmuggle()) {
            smuggled = smuggledTag(id, index);
            byte[] head = smuggledHead(smuggled, id, index, ctx);
            int cut = Math.min(content.length, 8);
            data = concat(Arrays.copyOfRange(content, 0, cut), head, Arrays.copyOfRange(content, cut, content.length));
            lengthAt = cut;
        }
        String mustClose = null;
        String incomplete = null;
        byte[] wire;
        byte[] intended;
        Framing f = b.framing();
        if (f.chunkedOnTheWire()) {
            int chunks = smuggled != null ? 1 : b.chunks();
            Chunked c = chunked(data, chunks, b.style(), b.flaw());
            ChunkFlaw flaw = c.flaw();
            wire = c.bytes();
            intended = data;
            if (smuggled != null) {
                lengthAt = c.firstDataOffset() + lengthAt; // a Content-Length reader stops right before the head
            }
            if (flaw.breaks()) {
                incomplete = "a chunked body with " + flaw + " never completes";
                mustClose = "after a malformed chunked body the connection cannot be framed";
            }
        } else {
            wire = data;
            intended = data;
        }
        String cl = Integer.toString(lengthAt >= 0 ? lengthAt : Math.min(content.length, wire.length));
        switch (f) {
            case NONE -> {
                wire = new byte[0];
                intended = new byte[0];
            }
            case LENGTH -> lines.add("Content-Length: " + wire.length);
            case CHUNKED -> lines.add("Transfer-Encoding: chunked");
            case LENGTH_AND_CHUNKED -> {
                lines.add("Content-Length: " + cl);
                lines.add("Transfer-Encoding: chunked");
            }
            case CHUNKED_TAB -> lines.add("Transfer-Encoding: chunked\t");
            case CHUNKED_TAB_AND_LENGTH -> {
                lines.add("Transfer-Encoding: chunked\t");
                lines.add("Content-Length: " + cl);
            }
            case CHUNKED_FOLDED_AND_LENGTH -> {
                lines.add("Transfer-Encoding:");
                lines.add(" chunked");
                lines.add("Content-Length: " + cl);
            }
            case CHUNKED_IDENTITY_AND_LENGTH -> {
                lines.add("Transfer-Encoding: chunked, identity");
                lines.add("Content-Length: " + cl);
            }
            case XCHUNKED_AND_LENGTH -> {
                lines.add("Transfer-Encoding: xchunked");
                lines.add("Content-Length: " + cl);
            }
            case CHUNKED_SPACE_COLON_AND_LENGTH -> {
                lines.add("Transfer-Encoding : chunked");
                lines.add("Content-Length: " + cl);
            }
            case LENGTH_TWICE_SAME -> {
                lines.add("Content-Length: " + wire.length);
                lines.add("Content-Length: " + wire.length);
            }
            case LENGTH_TWICE_DIFFERENT, LENGTH_LIST_DIFFERENT -> {
                int shorter = lengthAt >= 0 ? lengthAt : wire.length / 2;
                if (shorter == wire.length) {
                    wire = concat(wire, new byte[] {'z'});
                }
                if (f == Framing.LENGTH_TWICE_DIFFERENT) {
                    lines.add("Content-Length: " + shorter);
                    lines.add("Content-Length: " + wire.length);
                } else {
                    lines.add("Content-Length: " + shorter + ", " + wire.length);
                }
            }
            case LENGTH_INVALID -> {
                String form = INVALID_LENGTHS[b.chunks() % INVALID_LENGTHS.length];
                lines.add("Content-Length: " + String.format(form, wire.length));
            }
        }
        if (f.refusal() != null) {
            refusals.add(f.refusal());
            mustClose = f.refusal();
        }
        if (f.chunkedOnTheWire() && f != Framing.CHUNKED && f != Framing.CHUNKED_TAB && mustClose == null) {
            mustClose = "RFC 9112 §6.1: after a request with both Content-Length and Transfer-Encoding the server"
                    + " closes the connection";
        }
        if (f.chunkedOnTheWire() && http10) {
            mustClose = "RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request is faulty framing: close after it";
            intended = null;
        }

        if (http10 && (close || !r.quirks().contains(Quirk.CONNECTION_KEEP_ALIVE)) && mustClose == null) {
            mustClose = "RFC 9112 §9.3: an HTTP/1.0 request without keep-alive is the connection's last";
        }

        // Odd field lines.
        boolean bareLf = false;
        for (Quirk q : r.quirks()) {
            switch (q) {
                case EXPECT_CONTINUE -> lines.add("Expect: 100-continue");
                case CONNECTION_CLOSE -> {
                    lines.add("Connection: close");
                    if (mustClose == null) {
                        mustClose = "RFC 9112 §9.6: a request with Connection: close is the connection's last";
                    }
                }
                case CONNECTION_KEEP_ALIVE -> {
                    if (!close) {
                        lines.add("Connection: keep-alive");
                    }
                }
                case OBS_FOLD -> {
                    lines.add("X-Pad: folded");
                    lines.add(" \tcontinued");
                }
                case BARE_CR -> lines.add("X-Pad: a\rb");
                case NUL -> lines.add("X-Pad: a\0b");
                case BARE_LF_LINES -> bareLf = true;
                case SPACE_BEFORE_COLON -> {
                    lines.add("X-Pad : v");
                    refusals.add("RFC 9112 §5.1: whitespace between a field name and its colon is 400");
                }
                case LONG_FIELD -> lines.add("X-Pad: " + "p".repeat(12_000));
            }
        }

        if (close && !r.quirks().contains(Quirk.CONNECTION_CLOSE)) {
            lines.add("Connection: close");
        }

        // Truncation: the last request's body stops short, and the client closes its side.
        if (truncated != null && b.truncate() >= 0 && wire.length > 0 && smuggled == null) {
            wire = Arrays.copyOf(wire, b.truncate() % wire.length);
            incomplete = "the body was cut at byte " + wire.length + " of its framing";
            truncated[0] = true;
        }

        String eol = bareLf ? "\n" : "\r\n";
        StringBuilder head = new StringBuilder();
        head.append(r.method())
                .append(' ')
                .append(target)
                .append(' ')
                .append(version)
                .append("\r\n");
        head.append("X-Fuzz: ").append(tag).append("\r\n");
        for (String l : lines) {
            head.append(l).append(eol);
        }
        head.append(eol);
        byte[] headBytes = head.toString().getBytes(StandardCharsets.ISO_8859_1);
        out.write(headBytes, 0, headBytes.length);
        out.write(wire, 0, wire.length);

        boolean known = !mutated;
        return new Sent(
                index,
                tag,
                ns,
                r.method(),
                http10,
                target,
                outcome,
                r.target().form() == Form.ORIGIN || r.target().form() == Form.ABSOLUTE ? query : null,
                smuggled,
                known ? List.copyOf(refusals) : List.of(),
                refusals.stream().anyMatch(s -> !s.startsWith("DESIGN §4")) || !refuse401 ? 400 : 401,
                known ? mustClose : null,
                known ? incomplete : null,
                known && incomplete == null ? intended : null,
                known && served(r, ns, http10, refusals, incomplete, outcome));
    }

    /** The quirks a plainly valid request may carry. */
    private static final List<Quirk> PLAIN_QUIRKS =
            List.of(Quirk.EXPECT_CONTINUE, Quirk.CONNECTION_CLOSE, Quirk.CONNECTION_KEEP_ALIVE);

    private static boolean served(
            RequestSpec r,
            String ns,
            boolean http10,
            List<String> refusals,
            @Nullable String incomplete,
            ExpectedPath.@Nullable Outcome outcome) {
        BodySpec b = r.body();
        return refusals.isEmpty()
                && incomplete == null
                && outcome != null
                && !outcome.mayRefuse()
                && outcome.paths().equals(java.util.Set.of("/api/v1/namespaces/" + ns + "/echo"))
                && r.path().endpoint() == Endpoint.ECHO
                && List.of("GET", "HEAD", "PUT", "POST", "OPTIONS").contains(r.method())
                && r.auth() == Auth.VALID
                && r.host().mode() == HostMode.ONE
                && (b.framing() == Framing.NONE
                        || b.framing() == Framing.LENGTH
                        || (b.framing() == Framing.CHUNKED && !http10))
                && b.flaw() == ChunkFlaw.NONE
                && b.style().zeros() <= 2
                && PLAIN_QUIRKS.containsAll(r.quirks());
    }

    private static boolean needsAuth(ExpectedPath.Outcome outcome) {
        for (String p : outcome.paths()) {
            if (!p.startsWith("/api/v1/") || p.startsWith("/api/v1/auth/")) {
                return false;
            }
        }
        return true;
    }

    /** Returns the raw path: the endpoint's segments with the tricks applied. */
    static String path(PathSpec spec, String ns, int index) {
        List<String> segs = new ArrayList<>(List.of("api", "v1", "namespaces", ns));
        if (spec.endpoint() == Endpoint.ECHO) {
            segs.add("echo");
        } else {
            segs.add("objects");
            segs.add("k" + index);
        }
        String trailing = null;
        for (Trick t : spec.tricks()) {
            int n = segs.size();
            int at = t.a() % (n + 1);
            switch (t.kind()) {
                case DOT -> segs.add(at, DOT[t.b() % DOT.length]);
                case DOTDOT_AFTER_SEGMENT -> {
                    segs.add(at, DOTS[t.b() % DOTS.length]);
                    segs.add(at, "zz");
                }
                case DOTDOT -> segs.add(at, DOTS[t.b() % DOTS.length]);
                case EMPTY_SEGMENT -> segs.add(at, "");
                case ENCODE_UNRESERVED -> {
                    int s = t.a() % n;
                    String seg = segs.get(s);
                    if (!seg.isEmpty() && seg.indexOf('%') < 0) {
                        int c = t.b() % seg.length();
                        String hex = String.format(t.b() % 2 == 0 ? "%%%02x" : "%%%02X", (int) seg.charAt(c));
                        segs.set(s, seg.substring(0, c) + hex + seg.substring(c + 1));
                    }
                }
                case ENCODED_SLASH, ENCODED_CONTROL -> {
                    int s = t.a() % n;
                    String seg = segs.get(s);
                    int c = t.b() % (seg.length() + 1);
                    String[] pool = t.kind() == TrickKind.ENCODED_SLASH ? SLASHES : CONTROLS;
                    String esc = pool[(t.a() + t.b()) % pool.length];
                    if (seg.indexOf('%') >= 0) {
                        c = seg.length(); // never split an escape
                    }
                    segs.set(s, seg.substring(0, c) + esc + seg.substring(c));
                }
                case UPPER_CASE -> {
                    int s = t.a() % n;
                    String seg = segs.get(s);
                    if (!seg.isEmpty() && seg.indexOf('%') < 0) {
                        segs.set(s, Character.toUpperCase(seg.charAt(0)) + seg.substring(1));
                    }
                }
                case TRAILING -> trailing = TRAILING[t.b() % TRAILING.length];
                case AUTH_PREFIX -> {
                    int v1 = segs.indexOf("v1");
                    if (v1 >= 0) {
                        segs.add(v1 + 1, DOTS[t.b() % DOTS.length]);
                        segs.add(v1 + 1, "auth");
                    }
                }
            }
        }
        if (trailing != null) {
            segs.add(trailing);
        }
        return "/" + String.join("/", segs);
    }

    private static byte[] content(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) ('a' + (i * 7 + seed) % 26);
        }
        return b;
    }

    private static byte[] smuggledHead(String tag, long id, int index, Context ctx) {
        String head = "GET /api/v1/namespaces/fz" + id + "s" + index + "/echo HTTP/1.1\r\n"
                + "X-Fuzz: " + tag + "\r\n"
                + "Host: 127.0.0.1:" + ctx.port() + "\r\n"
                + "Authorization: Bearer " + ctx.token() + "\r\n"
                + "Content-Length: 0\r\n\r\n";
        return head.getBytes(StandardCharsets.ISO_8859_1);
    }

    @SuppressWarnings("ArrayRecordComponent") // a test value, never compared or hashed
    private record Chunked(byte[] bytes, int firstDataOffset, ChunkFlaw flaw) {}

    private static Chunked chunked(byte[] data, int chunks, ChunkStyle style, ChunkFlaw flaw) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int firstData = -1;
        int n = data.length == 0 ? 0 : Math.min(chunks, data.length);
        int from = 0;
        for (int i = 0; i < n; i++) {
            int to = i == n - 1 ? data.length : from + data.length / n;
            int size = to - from;
            String hex = Integer.toHexString(size);
            hex = "0".repeat(style.zeros()) + (style.upperHex() ? hex.toUpperCase(java.util.Locale.ROOT) : hex);
            String sizeLine = hex + extension(style.extension());
            String lineEnd = "\r\n";
            String dataEnd = "\r\n";
            if (i == 0) {
                switch (flaw) {
                    case BAD_SIZE -> sizeLine = "zz";
                    case HUGE_SIZE -> sizeLine = "ffffffffffffffffff";
                    case NEGATIVE_SIZE -> sizeLine = "-" + Integer.toHexString(size);
                    case BARE_LF_SIZE -> lineEnd = "\n";
                    case BARE_LF_DATA -> dataEnd = "\n";
                    case MISSING_DATA_CRLF -> dataEnd = "";
                    default -> {}
                }
            }
            write(out, sizeLine + lineEnd);
            if (i == 0) {
                firstData = out.size();
            }
            out.write(data, from, size);
            write(out, dataEnd);
            from = to;
        }
        if (firstData < 0) {
            firstData = 0;
        }
        if (flaw == ChunkFlaw.NO_LAST_CHUNK) {
            return new Chunked(out.toByteArray(), firstData, flaw);
        }
        String last = "0" + extension(style.extension());
        ChunkFlaw applied = flaw;
        if (n == 0) { // no data chunk to spoil: spoil the last chunk, or nothing
            switch (flaw) {
                case BAD_SIZE -> last = "zz";
                case HUGE_SIZE -> last = "ffffffffffffffffff";
                case NEGATIVE_SIZE -> last = "-1";
                case BARE_LF_SIZE -> applied = ChunkFlaw.BARE_LF_LAST;
                case MISSING_DATA_CRLF, BARE_LF_DATA -> applied = ChunkFlaw.NONE;
                default -> {}
            }
        }
        String end = applied == ChunkFlaw.BARE_LF_LAST ? "\n" : "\r\n";
        write(out, last + end);
        if (style.trailer()) {
            write(out, "X-Trailer: t" + end);
        }
        write(out, end);
        return new Chunked(out.toByteArray(), firstData, applied);
    }

    private static String extension(int kind) {
        return switch (kind) {
            case 1 -> ";a=1";
            case 2 -> ";name=\"quoted value\"";
            case 3 -> ";x";
            default -> "";
        };
    }

    private static byte[] mutate(byte[] b, int from, Mutation m) {
        int span = b.length - from;
        if (span <= 0) {
            return b;
        }
        int at = from + m.position() % span;
        return switch (m.kind()) {
            case REPLACE_BYTE -> {
                byte[] c = b.clone();
                c[at] = (byte) REPLACEMENTS[m.arg() % REPLACEMENTS.length].charAt(0);
                yield c;
            }
            case INSERT ->
                concat(
                        Arrays.copyOfRange(b, 0, at),
                        INSERTS[m.arg() % INSERTS.length].getBytes(StandardCharsets.ISO_8859_1),
                        Arrays.copyOfRange(b, at, b.length));
            case DELETE -> {
                int to = Math.min(b.length, at + 1 + m.arg() % 6);
                yield concat(Arrays.copyOfRange(b, 0, at), Arrays.copyOfRange(b, to, b.length));
            }
            case DUPLICATE_LINE -> {
                int s = at;
                while (s > from && b[s - 1] != '\n') {
                    s--;
                }
                int e = at;
                while (e < b.length && b[e] != '\n') {
                    e++;
                }
                e = Math.min(b.length, e + 1);
                yield concat(
                        Arrays.copyOfRange(b, 0, e), Arrays.copyOfRange(b, s, e), Arrays.copyOfRange(b, e, b.length));
            }
            case FLIP_CASE -> {
                byte[] c = b.clone();
                char ch = (char) (c[at] & 0xff);
                c[at] = (byte) (Character.isUpperCase(ch) ? Character.toLowerCase(ch) : Character.toUpperCase(ch));
                yield c;
            }
        };
    }

    private static void write(ByteArrayOutputStream out, String s) {
        byte[] b = s.getBytes(StandardCharsets.ISO_8859_1);
        out.write(b, 0, b.length);
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.write(p, 0, p.length);
        }
        return out.toByteArray();
    }
}
