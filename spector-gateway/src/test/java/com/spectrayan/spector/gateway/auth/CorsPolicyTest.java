package com.spectrayan.spector.gateway.auth;

import static com.spectrayan.spector.gateway.auth.AuthFixtures.settings;
import static java.util.Objects.requireNonNull;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Preflight answers and actual-response headers of the CORS policy. */
final class CorsPolicyTest {
    private static final String APP = "https://app.example.com";

    private static CorsPolicy policy(String origins) {
        return CorsPolicy.create(settings(Map.of(
                "spector.security.enabled", "false",
                "spector.cors.allowed-origins", origins,
                "spector.cors.max-age", "10m")));
    }

    @Test
    void preflight_allowedOrigin_getsEveryHeader() {
        CorsPreflight answer = requireNonNull(
                policy(APP + ",http://localhost:3000").preflight(APP, "POST", "authorization, content-type"),
                "an allowed origin's preflight is answered");

        assertThat(answer.headers())
                .containsEntry("Access-Control-Allow-Origin", APP)
                .containsEntry("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
                .containsEntry(
                        "Access-Control-Allow-Headers",
                        "Authorization, Content-Type, Idempotency-Key, X-Idempotency-Key, X-Spector-Namespace,"
                                + " X-Spector-Tenant, Last-Event-ID")
                .containsEntry("Access-Control-Max-Age", "600")
                .doesNotContainKey("Access-Control-Allow-Credentials");
        assertThat(answer.headers().get("Vary")).as("caches keep origins apart").contains("Origin");
        assertThat(CorsPreflight.STATUS).isEqualTo(204);
    }

    @Test
    void preflight_disallowedOriginMethodOrHeader_isNull() {
        CorsPolicy cors = policy(APP);

        assertThat(cors.preflight("https://evil.example.com", "GET", null))
                .as("another origin")
                .isNull();
        assertThat(cors.preflight("https://app.example.com:8443", "GET", null))
                .as("another port")
                .isNull();
        assertThat(cors.preflight("http://app.example.com", "GET", null))
                .as("another scheme")
                .isNull();
        assertThat(cors.preflight(APP, "TRACE", null))
                .as("a method not allowed")
                .isNull();
        assertThat(cors.preflight(APP, "post", null))
                .as("methods are case-sensitive")
                .isNull();
        assertThat(cors.preflight(APP, "GET", "Authorization, X-Secret"))
                .as("a header not allowed")
                .isNull();
        assertThat(cors.preflight(APP, "GET", "")).as("no request headers").isNotNull();
    }

    @Test
    void preflight_star_allowsAnyOriginAndEchoesIt() {
        CorsPolicy cors = policy("*");

        CorsPreflight answer = requireNonNull(
                cors.preflight("https://anything.example.org", "GET", null), "* allows any http(s) origin");

        assertThat(answer.headers())
                .as("the origin is echoed, never *")
                .containsEntry("Access-Control-Allow-Origin", "https://anything.example.org");
        assertThat(cors.preflight("null", "GET", null))
                .as("the opaque origin is never allowed")
                .isNull();
    }

    @Test
    void preflight_originAtTheLengthLimit_isAnsweredAndOnePastIsNull() {
        CorsPolicy cors = policy("*");
        String prefix = "https://";
        String atLimit = prefix + "a".repeat(CorsPolicy.MAX_ORIGIN_CHARS - prefix.length());

        assertThat(cors.preflight(atLimit, "GET", null))
                .as("%d chars", CorsPolicy.MAX_ORIGIN_CHARS)
                .isNotNull();
        assertThat(cors.preflight(atLimit + "a", "GET", null))
                .as("one char past")
                .isNull();
        assertThat(cors.preflight("https://a.example\r\nSet-Cookie: x", "GET", null))
                .as("control chars are never echoed")
                .isNull();
    }

    @Test
    void preflight_requestHeadersAtTheCountLimit_isAnsweredAndOnePastIsNull() {
        CorsPolicy cors = policy(APP);
        String atLimit = IntStream.range(0, CorsPolicy.MAX_REQUEST_HEADERS)
                .mapToObj(i -> "content-type")
                .collect(Collectors.joining(","));

        assertThat(cors.preflight(APP, "GET", atLimit)).isNotNull();
        assertThat(cors.preflight(APP, "GET", atLimit + ",content-type")).isNull();
    }

    @Test
    void actualResponseHeaders_allowedOrigin_getsAllowOriginAndVary() {
        CorsPolicy cors = policy(APP);

        assertThat(cors.actualResponseHeaders(APP))
                .containsExactly(Map.entry("Access-Control-Allow-Origin", APP), Map.entry("Vary", "Origin"));
        assertThat(cors.actualResponseHeaders("https://evil.example.com"))
                .as("another origin gets Vary only")
                .containsExactly(Map.entry("Vary", "Origin"));
        assertThat(cors.actualResponseHeaders(null)).containsExactly(Map.entry("Vary", "Origin"));
    }

    @Test
    void corsOff_noOriginsConfigured_writesNothing() {
        CorsPolicy off = CorsPolicy.create(settings(Map.of("spector.security.enabled", "false")));

        assertThat(off.enabled()).isFalse();
        assertThat(off.preflight(APP, "GET", null)).isNull();
        assertThat(off.actualResponseHeaders(APP))
                .as("no CORS header while CORS is off")
                .isEmpty();
    }

    @Test
    void isPreflight_needsOptionsOriginAndRequestMethod() {
        assertThat(CorsPolicy.isPreflight("OPTIONS", APP, "POST")).isTrue();
        assertThat(CorsPolicy.isPreflight("OPTIONS", APP, null))
                .as("a plain OPTIONS")
                .isFalse();
        assertThat(CorsPolicy.isPreflight("OPTIONS", null, "POST"))
                .as("no origin")
                .isFalse();
        assertThat(CorsPolicy.isPreflight("POST", APP, "POST"))
                .as("not OPTIONS")
                .isFalse();
    }
}
