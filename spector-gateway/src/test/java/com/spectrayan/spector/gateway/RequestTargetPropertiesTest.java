package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import com.spectrayan.spector.contract.ErrorCode;
import com.spectrayan.spector.contract.SpectorException;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.util.List;
import java.util.Locale;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.statistics.StatisticsCollector;

/**
 * Properties of {@link RequestTarget} over hostile input: whatever the target, it is refused with
 * BAD_REQUEST or normalized into a path that no owner could resolve differently.
 */
final class RequestTargetPropertiesTest {
    /** Tokens a valid path is made of, dots and escaped dots among them. */
    private static final String[] SAFE_TOKENS = {
        "/", "//", ".", "..", "%2e", "%2E", "%41", "%c3%a9", "a", "b", "e", "E", "f", "F", "2", "5", "c", ":", "@", "~",
        ";", "="
    };

    /** Tokens of the other tricks in the issue: escaped '/' and '\', broken escapes, controls. */
    private static final String[] HOSTILE_TOKENS = {
        "%2f", "%2F", "%5c", "%5C", "%", "%e", "%2", "%zz", "%00", "%0a", "\\", "?", "#", " ", "\u0000", "\t", "\r",
        "\n", "\u001f", "\u007f", "\u00e9"
    };

    /** The characters of the tokens, for strings that split them at any point. */
    private static final String CHARS = "/.%2eEfF5c\\?#abAZ09-_~:@!;= \u0000\t\r\n\u001f\u007f\u00e9";

    private static final HttpHeaders HOST = hosts("gw.example");

    /** Headers as a decoder may hand them over: unvalidated, so that any generated value gets through. */
    private static HttpHeaders hosts(String value) {
        return DefaultHttpHeadersFactory.headersFactory()
                .withValidation(false)
                .newHeaders()
                .add(HttpHeaderNames.HOST, value);
    }

    @Provide
    Arbitrary<String> hostile() {
        Arbitrary<String> tokens = Arbitraries.frequencyOf(
                        Tuple.of(8, Arbitraries.of(SAFE_TOKENS)), Tuple.of(1, Arbitraries.of(HOSTILE_TOKENS)))
                .list()
                .ofMaxSize(24)
                .map(l -> String.join("", l));
        Arbitrary<String> chars = Arbitraries.strings().withChars(CHARS).ofMaxLength(40);
        Arbitrary<String> any = Arbitraries.frequencyOf(Tuple.of(3, tokens), Tuple.of(1, chars));
        return Arbitraries.frequencyOf(Tuple.of(1, any), Tuple.of(3, any.map(s -> "/" + s)));
    }

    @Provide
    Arbitrary<List<String>> safeSegments() {
        return Arbitraries.of("a", "b", "x.y", "...", "..", ".", "%2e", "%2E%2e", ".%2e", "", "%41")
                .list()
                .ofMaxSize(12);
    }

    @Provide
    Arbitrary<String> hostValues() {
        return Arbitraries.strings()
                .withChars("[]:.0123456789abcdefvV@ ,%-_~!\tx")
                .ofMaxLength(24);
    }

    /**
     * RFC 3986 §5.2.4 and RFC 9112 §3.2.1: any target is refused with BAD_REQUEST, or parses into a
     * path that starts with '/', has no dot-segment, empty segment, escaped '/', '\' or '.', nor a
     * control character, and is its own normal form; a query is the raw text after the first '?'.
     */
    @Property(tries = 3000)
    void parse_anyTarget_refusedOrNormalized(@ForAll("hostile") String target) {
        RequestTarget parsed;
        try {
            parsed = RequestTarget.parse(HttpMethod.GET, target, HttpVersion.HTTP_1_1, HOST);
        } catch (SpectorException e) {
            assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
            outcome("refused");
            return;
        }
        int end = target.indexOf('?') < 0 ? target.length() : target.indexOf('?');
        outcome(parsed.path().equals(target.substring(0, end)) ? "kept" : "rewritten");
        assertNormalized(parsed.path());
        int q = target.indexOf('?');
        assertThat(parsed.query()).isEqualTo(q < 0 ? null : target.substring(q + 1));
    }

    /** RFC 3986 §6.2.2: normalization is idempotent; a normalized path normalizes to itself. */
    @Property(tries = 3000)
    void normalizePath_anyPath_idempotent(@ForAll("hostile") String path) {
        String once;
        try {
            once = RequestTarget.normalizePath(path);
        } catch (SpectorException e) {
            assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
            outcome("refused");
            return;
        }
        outcome(once.equals(path) ? "kept" : "rewritten");
        assertNormalized(once);
    }

    /**
     * RFC 3986 §5.2.4, against a model of the depth: a rest path of safe segments is refused exactly
     * when a '..' (plain or escaped) climbs above its root; otherwise, appended to a base path, it
     * stays under that base.
     */
    @Property(tries = 2000)
    void normalizePath_restUnderBase_neverEscapes(@ForAll("safeSegments") List<String> segments) {
        String rest = "/" + String.join("/", segments);
        boolean climbs = false;
        int depth = 0;
        for (String segment : segments) {
            String decoded = segment.replace("%2e", ".").replace("%2E", ".").replace("%41", "A");
            if (decoded.equals("..")) {
                depth--;
                climbs |= depth < 0;
            } else if (!decoded.isEmpty() && !decoded.equals(".")) {
                depth++;
            }
        }
        String normalized;
        try {
            normalized = RequestTarget.normalizePath(rest);
        } catch (SpectorException e) {
            assertThat(climbs).as("refused %s: %s", rest, e.getMessage()).isTrue();
            outcome("refused");
            return;
        }
        outcome(normalized.equals(rest) ? "kept" : "rewritten");
        assertThat(climbs).as("accepted %s as %s", rest, normalized).isFalse();
        String joined = RequestTarget.normalizePath("/base" + normalized);
        assertThat(joined).isEqualTo("/base" + normalized).startsWith("/base/");
    }

    /**
     * RFC 9112 §3.2 and RFC 3986 §3.2.2: any Host value is refused with BAD_REQUEST or accepted as
     * an authority that has no whitespace, comma or userinfo and is its own normal form.
     */
    @Property(tries = 2000)
    void parse_anyHost_refusedOrValidAuthority(@ForAll("hostValues") String host) {
        HttpHeaders headers = hosts(host);
        String authority;
        try {
            authority = RequestTarget.parse(HttpMethod.GET, "/", HttpVersion.HTTP_1_1, headers)
                    .authority();
        } catch (SpectorException e) {
            assertThat(e.code()).isEqualTo(ErrorCode.BAD_REQUEST);
            outcome("refused");
            return;
        }
        if (authority == null) {
            assertThat(host.strip()).isEmpty();
            outcome("none");
            return;
        }
        outcome(authority.equals(host) ? "kept" : "rewritten");
        assertThat(authority).doesNotContain(" ", "\t", ",", "@").isNotEmpty();
        HttpHeaders again = hosts(authority);
        assertThat(RequestTarget.parse(HttpMethod.GET, "/", HttpVersion.HTTP_1_1, again)
                        .authority())
                .isEqualTo(authority);
    }

    /**
     * The one-scan shortcut of dot-segment removal (issue 14) answers exactly as the segment-by-
     * segment pass: a path it calls normal is one the full pass returns unchanged, and every other
     * path is the full pass's, refusals included. Paths of '/', '.', letters and up to 140
     * segments, so the segment bound is crossed too.
     */
    @Property(tries = 3000)
    void removeDotSegments_shortcut_agreesWithTheFullPass(@ForAll("dotPaths") String path) {
        String full;
        try {
            full = RequestTarget.removeDotSegmentsInFull(path);
        } catch (SpectorException e) {
            assertThat(RequestTarget.isNormal(path)).as("normal: %s", path).isFalse();
            return;
        }
        if (RequestTarget.isNormal(path)) {
            assertThat(full).isEqualTo(path);
        }
        Statistics.label("normal").collect(RequestTarget.isNormal(path));
    }

    @Provide
    Arbitrary<String> dotPaths() {
        Arbitrary<String> small = Arbitraries.of("/", "/.", "/..", "/a", "/a.", "/.a", "/..a", "/...", "//", "/b.c")
                .list()
                .ofMaxSize(8)
                .map(l -> String.join("", l));
        Arbitrary<String> many = Arbitraries.integers()
                .between(RequestTarget.MAX_SEGMENTS - 2, RequestTarget.MAX_SEGMENTS + 2)
                .map(n -> "/s".repeat(n));
        return Arbitraries.frequencyOf(Tuple.of(9, small), Tuple.of(1, many)).map(s -> s.isEmpty() ? "/" : s);
    }

    /**
     * Counts an outcome, and fails the property (at its end) when under 5% of its tries were refused
     * or under 5% accepted, so that a generator that drifted to all-valid or all-garbage is caught.
     */
    private static void outcome(String outcome) {
        StatisticsCollector collector = Statistics.label("outcome");
        collector.collect(outcome);
        collector.coverage(coverage -> {
            coverage.check("refused").percentage(p -> p >= 5);
            coverage.checkQuery(values -> !values.contains("refused")).percentage(p -> p >= 5);
        });
    }

    private static void assertNormalized(String path) {
        assertThat(path).startsWith("/").doesNotContain("//");
        for (String segment : path.substring(1).split("/", -1)) {
            assertThat(segment).as("segment of %s", path).isNotEqualTo(".").isNotEqualTo("..");
        }
        assertThat(path.toUpperCase(Locale.ROOT)).doesNotContain("%2F", "%5C", "%2E");
        assertThat(path.chars().noneMatch(c -> c < 0x20 || c == 0x7F))
                .as("no control in %s", path)
                .isTrue();
        assertThat(RequestTarget.normalizePath(path)).isEqualTo(path);
    }
}
