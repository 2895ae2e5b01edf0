package com.spectrayan.spector.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The fuzz test's oracle for path normalization, on the examples of RFC 3986 and issue 9. */
final class ExpectedPathTest {
    @Test
    void removeDotSegments_rfc3986Examples_matchTheRfc() {
        assertThat(ExpectedPath.removeDotSegments("/a/b/c/./../../g")).isEqualTo("/a/g");
        assertThat(ExpectedPath.removeDotSegments("/a/./b/")).isEqualTo("/a/b/");
        assertThat(ExpectedPath.removeDotSegments("/a/b/..")).isEqualTo("/a/");
        assertThat(ExpectedPath.removeDotSegments("/a/..")).isEqualTo("/");
    }

    @Test
    void of_pathClimbingAboveTheRoot_mustBeRefused() {
        assertThat(ExpectedPath.of("/..").mustRefuse()).isTrue();
        assertThat(ExpectedPath.of("/api/../../admin").mustRefuse()).isTrue();
        assertThat(ExpectedPath.of("/api/v1/%2e%2E/%2E%2e/%2e./x").mustRefuse()).isTrue();
    }

    @Test
    void of_encodedSlashBackslashOrControl_mustBeRefused() {
        assertThat(ExpectedPath.of("/api/v1/a%2fb").mustRefuse()).isTrue();
        assertThat(ExpectedPath.of("/api/v1/a%5Cb").mustRefuse()).isTrue();
        assertThat(ExpectedPath.of("/api/v1/a%00b").mustRefuse()).isTrue();
        assertThat(ExpectedPath.of("/api/v1/a%0ab").mustRefuse()).isTrue();
        assertThat(ExpectedPath.of("/api/v1/a%zz").mustRefuse()).isTrue();
    }

    @Test
    void of_dotsEscapesAndSlashes_normalizeToOnePath() {
        ExpectedPath.Outcome o = ExpectedPath.of("/api/v1/auth/.%2E/namespaces//n%31/./ech%6F");
        assertThat(o.paths()).containsExactly("/api/v1/namespaces/n1/echo");
        assertThat(o.mayRefuse()).isFalse();
        assertThat(o.accepts("/api/v1/namespaces/n1/echo")).isTrue();
        assertThat(o.accepts("/api/v1/auth/../namespaces/n1/echo")).isFalse();
    }

    @Test
    void of_reservedEscape_isKeptWithUpperCaseHex() {
        ExpectedPath.Outcome o = ExpectedPath.of("/api/v1/a%3ab");
        assertThat(o.paths()).containsExactly("/api/v1/a%3Ab");
        assertThat(o.accepts("/api/v1/a%3ab")).isTrue();
        assertThat(o.acceptsDecoded("/api/v1/a:b")).isTrue();
    }

    @Test
    void of_emptySegmentBeforeDotDot_acceptsEitherOrderOfTheSteps() {
        assertThat(ExpectedPath.of("/api/a//../b").paths()).containsExactlyInAnyOrder("/api/b", "/api/a/b");
    }
}
